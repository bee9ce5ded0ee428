import { encodeCursor } from '@firm/core';
import { randomUUID } from 'node:crypto';
import { rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jsonDepth, MAX_JSON_DEPTH } from './json-body';
import { createTestApp, type TestApp } from './testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const count = async (table: string) =>
  rowsOf<{ n: number }>(await t.database.db.execute(sql.raw(`select count(*)::int as n from ${table}`)))[0]?.n;
const nested = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;

describe('deeply nested JSON', () => {
  it('measures depth without being fooled by brackets in strings', () => {
    expect(jsonDepth('{"a":[1,{"b":"[[[["}]}')).toBe(3);
    expect(jsonDepth('"\\"[["')).toBe(0);
    expect(jsonDepth(nested(10_000), MAX_JSON_DEPTH)).toBe(MAX_JSON_DEPTH + 1);
  });

  it('is refused with 400 on the unauthenticated client registration, and nothing is registered', async () => {
    const before = await count('oauth_clients');
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/register',
      headers: { 'content-type': 'application/json' },
      payload: `{"client_name":"x","redirect_uris":["https://app.example/cb"],"extra":${nested(10_000)}}`,
    });
    expect(res.statusCode).toBe(400);
    // The registration endpoint answers in RFC 7591's error shape.
    expect(res.json()).toEqual({
      error: 'invalid_client_metadata',
      error_description: expect.stringContaining(`more than ${MAX_JSON_DEPTH} levels deep`),
    });
    expect(await count('oauth_clients')).toBe(before);
  });

  it('is refused with 400 on a posting route, and nothing is posted', async () => {
    const before = await count('journal_entries');
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/journal-entries',
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
      payload: `{"date":"2026-01-05","lines":${nested(100_000)}}`,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
    expect(await count('journal_entries')).toBe(before);
  });

  it('still takes a body nested exactly to the limit (then validates it as usual)', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/journal-entries',
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
      payload: `{"date":"2026-01-05","memo":${nested(MAX_JSON_DEPTH - 1)}}`,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.details.some((d: { field: string }) => d.field.startsWith('body.'))).toBe(true);
  });

  it('keeps refusing prototype poisoning', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { ...t.orgHeaders, 'content-type': 'application/json' },
      payload: '{"__proto__":{"admin":true},"code":"9999","name":"x","type":"asset"}',
    });
    expect(res.statusCode).toBe(400);
  });
});

describe('date-times Postgres cannot hold', () => {
  const refused = [
    '2026-01-01T00:00:00+18:57',
    '2026-01-01T00:00:00-16:00',
    '0000-01-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-01-01T24:00:00Z',
    '2026-01-01',
  ];
  for (const since of refused) {
    it(`refuses since=${since} on audit events and webhook deliveries with 400`, async () => {
      const audit = await t.app.inject({
        method: 'GET',
        url: `/api/v1/audit-events?since=${encodeURIComponent(since)}`,
        headers: t.auth,
      });
      expect(audit.statusCode).toBe(400);
      expect(audit.json().error).toMatchObject({ code: 'VALIDATION_ERROR', retryable: false });
      const deliveries = await t.app.inject({
        method: 'GET',
        url: `/api/v1/webhooks/${randomUUID()}/deliveries?since=${encodeURIComponent(since)}`,
        headers: t.auth,
      });
      expect(deliveries.statusCode).toBe(400);
    });
  }

  it('accepts the edges Postgres holds', async () => {
    for (const since of ['2026-01-01T00:00:00+15:59', '0001-01-01T00:00:00Z', '2026-01-01T00:00:00.123456Z']) {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/audit-events?since=${encodeURIComponent(since)}`,
        headers: t.auth,
      });
      expect(res.statusCode, since).toBe(200);
    }
  });
});

describe('forged cursors', () => {
  it('refuses an audit cursor whose timestamp JavaScript parses but Postgres does not', async () => {
    for (const forged of [
      encodeCursor(['1', randomUUID()]),
      encodeCursor(['2026-01-01T00:00:00+18:57', randomUUID()]),
      encodeCursor(['Tue Jan 06 2026', randomUUID()]),
    ]) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/audit-events?cursor=${forged}`, headers: t.auth });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.details).toEqual([{ field: 'cursor', message: expect.any(String) }]);
    }
  });

  it('refuses a text key carrying a NUL character', async () => {
    const forged = encodeCursor(['10\u0000', randomUUID()]);
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/accounts?cursor=${forged}`, headers: t.orgHeaders });
    expect(res.statusCode).toBe(400);
  });
});

describe('methods', () => {
  it('answers 405 with Allow for a method a known route does not take', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/api/v1/accounts', headers: t.orgHeaders });
    expect(res.statusCode).toBe(405);
    expect(res.headers.allow).toBe('GET, HEAD, POST');
    const postOnly = await t.app.inject({ method: 'GET', url: '/api/v1/journal-entries', headers: t.orgHeaders });
    expect(postOnly.statusCode).toBe(405);
    expect(postOnly.headers.allow).toBe('POST');
    expect(res.json().error).toMatchObject({ code: 'METHOD_NOT_ALLOWED', retryable: false });
  });

  it('answers 405 on a parameterized path too', async () => {
    const res = await t.app.inject({ method: 'PUT', url: `/api/v1/accounts/${randomUUID()}`, headers: t.auth });
    expect(res.statusCode).toBe(405);
    expect(String(res.headers.allow).split(', ')).toEqual(expect.arrayContaining(['GET', 'HEAD', 'PATCH']));
  });

  it('keeps 404 for a path no route takes', async () => {
    const res = await t.app.inject({ method: 'DELETE', url: '/api/v1/nothing-here', headers: t.auth });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('ROUTE_NOT_FOUND');
  });
});

describe('unknown methods', () => {
  it('answers a method no route takes (QUERY, PROPFIND) with 405 and Allow, over a real socket', async () => {
    const { request } = await import('node:http');
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    for (const method of ['QUERY', 'PROPFIND']) {
      const { status, allow, body } = await new Promise<{ status: number; allow: string; body: string }>(
        (resolve, reject) => {
          const req = request(`${address}/api/v1/accounts`, { method, headers: t.orgHeaders }, (res) => {
            let text = '';
            res.on('data', (c: Buffer) => (text += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, allow: String(res.headers.allow), body: text }));
          });
          req.on('error', reject);
          req.end();
        },
      );
      expect({ method, status }).toEqual({ method, status: 405 });
      expect(allow).toBe('GET, HEAD, POST');
      expect(JSON.parse(body).error.code).toBe('METHOD_NOT_ALLOWED');
    }
  });
});

describe('a body sent to no route', () => {
  it('is 404, not a complaint about the body', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/nothing-here',
      headers: { ...t.auth, 'content-type': 'application/json' },
      payload: '{not json',
    });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('ROUTE_NOT_FOUND');
  });
});

describe('rules the schemas state', () => {
  it('states exactly one of debit and credit per line, and no NUL in request text, in the OpenAPI document', async () => {
    const doc = JSON.stringify((await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json());
    expect(doc).toContain('"oneOf":[{"required":["debitCents"]},{"required":["creditCents"]}]');
    expect(doc).toContain('"pattern":"^[^\\\\u0000]*$"');
  });

  it('refuses a line with both a debit and a credit with 400, and posts nothing', async () => {
    const before = await count('journal_entries');
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/companies/${t.orgId}/journal-entries`,
      headers: { ...t.auth, 'idempotency-key': randomUUID() },
      payload: {
        date: '2026-01-05',
        lines: [
          { accountId: t.account('1000'), debitCents: 100, creditCents: 100 },
          { accountId: t.account('1000'), creditCents: 100 },
        ],
      },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
    expect(res.json().error.details).toContainEqual({ field: 'body.lines.0', message: expect.any(String) });
    expect(await count('journal_entries')).toBe(before);
  });
});
