import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../testing';

let t: TestApp;
let doc: {
  openapi: string;
  paths: Record<
    string,
    Record<string, { responses: Record<string, unknown>; security?: unknown; 'x-required-scope'?: string }>
  >;
  'x-error-codes': Record<string, { status: number }>;
};
beforeAll(async () => {
  t = await createTestApp();
  const res = await t.app.inject({ method: 'GET', url: '/api/openapi.json' });
  expect(res.statusCode).toBe(200);
  doc = res.json();
});
afterAll(() => t.close());

const toOpenApiPath = (url: string) => url.replace(/:([A-Za-z]+)/g, '{$1}');

describe('GET /api/openapi.json', () => {
  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(doc as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('lists every route', () => {
    expect(t.app.routeTable.length).toBeGreaterThan(10);
    for (const { method, url } of t.app.routeTable) {
      expect(doc.paths[toOpenApiPath(url)]?.[method.toLowerCase()], `${method} ${url}`).toBeDefined();
    }
  });

  it('documents error responses on every operation, and auth errors and the scope on protected ones', () => {
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const statuses = Object.keys(op.responses);
        expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['400', '500']));
        if (path.startsWith('/api/v1')) {
          expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403', '404', '429']));
          expect(op['x-required-scope'], `${method} ${path}`).toMatch(/^[a-z]+:[a-z]+$/);
          expect(op.security).toEqual([{ bearerAuth: [] }]);
        }
      }
    }
  });

  it('declares every tag an operation uses', () => {
    const declared = new Set(((doc as { tags?: { name: string }[] }).tags ?? []).map((t) => t.name));
    for (const operations of Object.values(doc.paths as Record<string, Record<string, { tags?: string[] }>>)) {
      for (const operation of Object.values(operations))
        for (const tag of operation.tags ?? []) expect(declared).toContain(tag);
    }
    expect(declared).toContain('invoices');
  });

  it('publishes the error code table and the organization header', () => {
    expect(doc['x-error-codes'].VALIDATION_ERROR).toMatchObject({ status: 400 });
    expect(doc['x-error-codes'].INSUFFICIENT_SCOPE).toMatchObject({ status: 403 });
    const list = doc.paths['/api/v1/accounts']?.get as unknown as { parameters: { name: string; in: string }[] };
    expect(list.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'x-organization-id', in: 'header' })]),
    );
  });
});
