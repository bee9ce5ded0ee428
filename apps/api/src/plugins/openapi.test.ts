import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Validator } from '@seriousme/openapi-schema-validator';
import Fastify from 'fastify';
import { Type } from 'typebox';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../testing';
import { openapiPlugin } from './openapi';

let t: TestApp;
let doc: {
  openapi: string;
  paths: Record<
    string,
    Record<
      string,
      { responses: Record<string, unknown>; security?: unknown; 'x-required-scope'?: string; description?: string }
    >
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

/** The partner API's operations without a credential: each is authorised by a signature in its own URL. */
const PUBLIC_V1 = ['get /api/v1/companies/{companyId}/attachments/{attachmentId}/download'];

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
        if (PUBLIC_V1.includes(`${method} ${path}`)) {
          expect(op.security, `${method} ${path}`).toEqual([]);
          expect(op['x-required-scope'], `${method} ${path}`).toBeUndefined();
        } else if (path.startsWith('/api/v1')) {
          expect(statuses, `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403', '404', '429']));
          expect(op['x-required-scope'], `${method} ${path}`).toMatch(/^[a-z]+:[a-z]+$/);
          expect(op.security).toEqual([{ bearerAuth: [] }]);
        }
      }
    }
  });

  it('states each operation’s scope once, even where routes share a schema', async () => {
    // A second app in the same process (the generated client's, a test's) must not find the first one's notes.
    const again = await createTestApp();
    try {
      const second = (await again.app.inject({ method: 'GET', url: '/api/openapi.json' })).json() as typeof doc;
      expect(JSON.stringify(second.paths)).toBe(JSON.stringify(doc.paths));
    } finally {
      await again.close();
    }
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        expect(op.description?.split('Requires scope').length ?? 1, `${method} ${path}`).toBeLessThanOrEqual(2);
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
    const list = doc.paths['/api/v1/accounts']?.get as unknown as { parameters: { $ref?: string }[] };
    const parameters = (doc as unknown as { components: { parameters: Record<string, unknown> } }).components
      .parameters;
    const resolved = list.parameters.map((p) => (p.$ref ? parameters[p.$ref.split('/').pop() as string] : p));
    expect(resolved).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'x-organization-id', in: 'header' })]),
    );
  });

  it('gives every operation a unique operationId and states its security, public ones []', () => {
    const ids: string[] = [];
    for (const [path, ops] of Object.entries(doc.paths)) {
      for (const [method, op] of Object.entries(ops)) {
        const { operationId, security } = op as { operationId?: string; security?: unknown[] };
        expect(operationId, `${method} ${path}`).toMatch(/^[a-z]+[A-Za-z0-9]*$/);
        ids.push(operationId as string);
        expect(security, `${method} ${path}`).toBeDefined();
        // /metrics takes its own token; /mcp a bearer credential whose scopes each tool checks.
        if (!op['x-required-scope'] && path !== '/metrics' && path !== '/mcp')
          expect(security, `${method} ${path}`).toEqual([]);
      }
    }
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/api/v1/companies/{companyId}/accounts']?.get).toMatchObject({
      operationId: 'getCompaniesByCompanyIdAccounts',
    });
  });

  it('shares named component schemas by $ref and stays small', async () => {
    const text = JSON.stringify(doc);
    // About 0.5 MB with every route so far. The bound catches schemas inlined where a $ref should be shared (each
    // would cost tens of kilobytes), not the document growing a route at a time.
    expect(text.length).toBeLessThan(650_000);
    const schemas = (doc as unknown as { components: { schemas: Record<string, unknown> } }).components.schemas;
    expect(Object.keys(schemas)).toEqual(expect.arrayContaining(['Error', 'ErrorBody', 'Account', 'JournalEntry']));
    // Every reference resolves.
    for (const [, name] of text.matchAll(/"\$ref":"#\/components\/schemas\/([^"]+)"/g)) {
      expect(schemas, name).toHaveProperty(name as string);
    }
    // Error responses are one shared response, whose body is the Error schema.
    expect(doc.paths['/api/v1/accounts']?.get?.responses['404']).toEqual({ $ref: '#/components/responses/Error' });
    const responses = (doc as unknown as { components: { responses: Record<string, unknown> } }).components.responses;
    expect(responses.Error).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
    });
    for (const [, name] of text.matchAll(/"\$ref":"#\/components\/(?:responses|parameters)\/([^"]+)"/g)) {
      expect(text).toContain(`"${name}":`);
    }
    expect((doc as unknown as { servers: { url: string }[] }).servers.map((s) => s.url)).toEqual(['/', '/agent/v1']);
  });

  it('declares every error of the JSON APIs as application/json, file downloads included', () => {
    const components = (doc as unknown as { components: { responses: Record<string, Response> } }).components;
    type Response = { $ref?: string; content?: Record<string, { schema?: { $ref?: string } }> };
    const resolve = (r: Response): Response =>
      r.$ref ? resolve(components.responses[r.$ref.split('/').pop() as string] as Response) : r;
    for (const [path, ops] of Object.entries(doc.paths)) {
      if (!path.startsWith('/api/v1') && !path.startsWith('/agent/v1')) continue;
      for (const [method, op] of Object.entries(ops)) {
        for (const [status, response] of Object.entries(op.responses as Record<string, Response>)) {
          if (Number(status) < 400) continue;
          const content = resolve(response).content ?? {};
          expect(Object.keys(content), `${method} ${path} ${status}`).toEqual(['application/json']);
          expect(content['application/json']?.schema, `${method} ${path} ${status}`).toEqual({
            $ref: '#/components/schemas/Error',
          });
        }
      }
    }
    // The export's file stays a file.
    const file = resolve(doc.paths['/api/v1/reports/export']?.get?.responses['200'] as Response);
    expect(Object.keys(file.content ?? {})).toEqual([
      'application/pdf',
      'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
      'text/csv',
    ]);
  });

  it('states once that unknown query parameters are ignored, and no route can refuse them', async () => {
    const { description } = (doc as unknown as { info: { description: string } }).info;
    expect(description).toContain('Query parameters a route does not know are ignored, on every route');
    const app = Fastify();
    try {
      await app.register(openapiPlugin, { origin: undefined });
      const strict = { schema: { querystring: Type.Object({ a: Type.String() }, { additionalProperties: false }) } };
      expect(() => app.get('/strict', strict, async () => ({}))).toThrow(/ignores query parameters it does not know/);
      expect(() =>
        app.get('/lenient', { schema: { querystring: Type.Object({ a: Type.String() }) } }, async () => ({})),
      ).not.toThrow();
    } finally {
      await app.close();
    }
  });

  it('passes Redocly’s recommended rules with no error', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'openapi-'));
    try {
      await writeFile(join(dir, 'openapi.json'), JSON.stringify(doc));
      const cli = join(import.meta.dirname, '..', '..', '..', '..', 'node_modules', '@redocly', 'cli', 'bin', 'cli.js');
      const run = await promisify(execFile)(
        process.execPath,
        [cli, 'lint', join(dir, 'openapi.json'), '--extends', 'recommended', '--format', 'json'],
        {
          env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
          maxBuffer: 1 << 26,
        },
      ).catch((err: { stdout: string }) => err);
      const report = JSON.parse(run.stdout) as {
        totals: { errors: number };
        problems: { ruleId: string; severity: string }[];
      };
      expect(report.problems.filter((p) => p.severity === 'error')).toEqual([]);
      expect(report.totals.errors).toBe(0);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
