import { apiKeys } from '@firm/db';
import { createApiKey, generateSecret, revokeApiKey } from '@firm/identity';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });

describe('API key authentication', () => {
  it('accepts the key and records when it was used', async () => {
    const res = await get('/api/v1/organizations', t.auth);
    expect(res.statusCode).toBe(200);
    expect(
      res
        .json()
        .data.map((o: { name: string }) => o.name)
        .sort(),
    ).toEqual(['Bluebird Design Studio', 'Northwind Bakery LLC']);
    const [row] = await t.database.db.select().from(apiKeys).where(eq(apiKeys.id, t.demo.apiKeyId));
    expect(row?.lastUsedAt).toBeInstanceOf(Date);
  });

  it.each([
    ['no header', {}],
    ['not a bearer', { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` }],
    ['garbled', { authorization: 'Bearer dk_live_garbage' }],
    ['a well-formed key nobody issued', { authorization: `Bearer ${generateSecret('dk_live_')}` }],
  ])('rejects %s with 401 UNAUTHENTICATED', async (_name, headers) => {
    const res = await get('/api/v1/organizations', headers as Record<string, string>);
    expect(res.statusCode).toBe(401);
    expect(res.json().error).toMatchObject({ code: 'UNAUTHENTICATED', retryable: false });
  });

  it('rejects a key with one character changed (checksum) and a truncated key', async () => {
    const key = t.demo.apiKey;
    const flipped = key.slice(0, 12) + (key[12] === 'A' ? 'B' : 'A') + key.slice(13);
    for (const bad of [flipped, key.slice(0, -1)]) {
      const res = await get('/api/v1/organizations', { authorization: `Bearer ${bad}` });
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('UNAUTHENTICATED');
    }
  });

  it('rejects a key revoked elsewhere once its cached lookup expires', async () => {
    const { key, record } = await createApiKey(t.database.db, { firmId: t.demo.firmId });
    expect((await get('/api/v1/organizations', { authorization: `Bearer ${key}` })).statusCode).toBe(200);
    // Revoked straight in the database, as the CLI does from another process.
    await revokeApiKey(t.database.db, record.id);
    await new Promise((resolve) => setTimeout(resolve, t.app.config.AUTH_CACHE_TTL_MS + 50));
    const res = await get('/api/v1/organizations', { authorization: `Bearer ${key}` });
    expect(res.statusCode).toBe(401);
    expect(res.json().error.code).toBe('UNAUTHENTICATED');
  });

  it('rejects a revoked key at once when lookups are not kept', async () => {
    const uncached = await createTestApp({ config: { AUTH_CACHE_TTL_MS: 0 } });
    try {
      const { key, record } = await createApiKey(uncached.database.db, { firmId: uncached.demo.firmId });
      const call = () =>
        uncached.app.inject({ url: '/api/v1/organizations', headers: { authorization: `Bearer ${key}` } });
      expect((await call()).statusCode).toBe(200);
      await revokeApiKey(uncached.database.db, record.id);
      expect((await call()).statusCode).toBe(401);
    } finally {
      await uncached.close();
    }
  });

  it('sees a change to the organization made through this process at once', async () => {
    const headers = { authorization: `Bearer ${t.demo.apiKey}`, 'x-organization-id': t.orgId };
    const before = await get(`/api/v1/companies/${t.orgId}`, headers);
    expect(before.statusCode).toBe(200);
    const res = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/books',
      headers,
      payload: { fiscalYearStartMonth: before.json().data.fiscalYearStartMonth === 4 ? 5 : 4 },
    });
    expect(res.statusCode).toBe(200);
    const after = await get(`/api/v1/companies/${t.orgId}`, headers);
    expect(after.json().data.fiscalYearStartMonth).toBe(res.json().data.fiscalYearStartMonth);
    await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/books',
      headers,
      payload: { fiscalYearStartMonth: before.json().data.fiscalYearStartMonth },
    });
  });
});

describe('scopes', () => {
  it('answers 403 INSUFFICIENT_SCOPE naming the missing scope', async () => {
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['accounts:read'] });
    const headers = { authorization: `Bearer ${key}`, 'x-organization-id': t.orgId };
    expect((await get('/api/v1/accounts', headers)).statusCode).toBe(200);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers,
      payload: { code: '9999', name: 'X', type: 'expense' },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toMatchObject({ code: 'INSUFFICIENT_SCOPE', details: [{ scope: 'accounts:write' }] });
    expect(res.json().error.message).toContain('accounts:write');
  });
});

describe('organization selection', () => {
  it('needs x-organization-id on organization-header routes', async () => {
    const res = await get('/api/v1/accounts', t.auth);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('ORGANIZATION_REQUIRED');
  });

  it('rejects a malformed x-organization-id with 400', async () => {
    const res = await get('/api/v1/accounts', { ...t.auth, 'x-organization-id': 'not-a-uuid' });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
  });

  it('answers 404 for an organization of another firm, in both forms', async () => {
    const other = await createOtherFirm(t.database.db, 'org-select');
    const header = await get('/api/v1/accounts', { ...t.auth, 'x-organization-id': other.orgId });
    expect(header.statusCode).toBe(404);
    expect(header.json().error.code).toBe('ORGANIZATION_NOT_FOUND');
    const path = await get(`/api/v1/companies/${other.orgId}/accounts`, t.auth);
    expect(path.statusCode).toBe(404);
    const company = await get(`/api/v1/companies/${other.orgId}`, t.auth);
    expect(company.statusCode).toBe(404);
    // and the other firm cannot see ours
    const back = await get(`/api/v1/companies/${t.orgId}`, { authorization: other.authorization });
    expect(back.statusCode).toBe(404);
  });

  it('answers 404 for an unknown or malformed company id', async () => {
    expect((await get('/api/v1/companies/00000000-0000-4000-8000-000000000000', t.auth)).statusCode).toBe(404);
    expect((await get('/api/v1/companies/nope', t.auth)).statusCode).toBe(404);
  });

  it('a key narrowed to one organization sees only that one', async () => {
    const [first, second] = t.demo.organizations as unknown as [{ id: string }, { id: string }];
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, organizationIds: [first.id] });
    const headers = { authorization: `Bearer ${key}` };
    const list = await get('/api/v1/companies', headers);
    expect(list.json().data.map((o: { id: string }) => o.id)).toEqual([first.id]);
    expect((await get(`/api/v1/companies/${first.id}`, headers)).statusCode).toBe(200);
    expect((await get(`/api/v1/companies/${second.id}`, headers)).statusCode).toBe(404);
    expect((await get('/api/v1/accounts', { ...headers, 'x-organization-id': second.id })).statusCode).toBe(404);
  });
});

describe('GET /api/v1/companies', () => {
  it('lists the same records as /organizations, paginated', async () => {
    const companies = (await get('/api/v1/companies', t.auth)).json();
    const organizations = (await get('/api/v1/organizations', t.auth)).json();
    expect(companies).toEqual(organizations);
    const page1 = (await get('/api/v1/companies?limit=1', t.auth)).json();
    expect(page1.data).toHaveLength(1);
    const page2 = (await get(`/api/v1/companies?limit=1&cursor=${page1.nextCursor}`, t.auth)).json();
    expect(page2.data).toHaveLength(1);
    expect(page2.nextCursor).toBeNull();
    expect([page1.data[0].id, page2.data[0].id]).toEqual(companies.data.map((o: { id: string }) => o.id));
  });

  it('rejects a forged cursor and an out-of-range limit with 400', async () => {
    expect((await get('/api/v1/companies?cursor=!!!', t.auth)).statusCode).toBe(400);
    expect((await get('/api/v1/companies?limit=0', t.auth)).statusCode).toBe(400);
    expect((await get('/api/v1/companies?limit=1001', t.auth)).statusCode).toBe(400);
  });

  it('returns the company record', async () => {
    const res = await get(`/api/v1/companies/${t.orgId}`, t.auth);
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ id: t.orgId, name: 'Northwind Bakery LLC', currency: 'USD' });
  });
});
