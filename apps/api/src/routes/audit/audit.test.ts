import { createApiKey } from '@firm/identity';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const list = (query: string, headers: Record<string, string> = t.auth) =>
  t.app.inject({ method: 'GET', url: `/api/v1/audit-events${query}`, headers });

const createAccount = (orgId: string, code: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/accounts',
    headers: { ...t.auth, 'x-organization-id': orgId, 'x-request-id': `req-${code}-0001` },
    payload: { code, name: `Account ${code}`, type: 'expense' },
  });

describe('audit events', () => {
  it('records account changes with who, what, where and the request id, newest first', async () => {
    const created = (await createAccount(t.orgId, '6901')).json().data;
    await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/accounts/${created.id}`,
      headers: t.orgHeaders,
      payload: { name: 'Renamed' },
    });
    await t.app.inject({ method: 'DELETE', url: `/api/v1/accounts/${created.id}`, headers: t.orgHeaders });

    const res = await list(`?organizationId=${t.orgId}`);
    expect(res.statusCode).toBe(200);
    const mine = res.json().data.filter((e: { resourceId: string }) => e.resourceId === created.id);
    expect(mine.map((e: { action: string }) => e.action)).toEqual([
      'account.deleted',
      'account.updated',
      'account.created',
    ]);
    expect(mine[2]).toMatchObject({
      organizationId: t.orgId,
      actor: { kind: 'api_key', id: t.demo.apiKeyId },
      resourceType: 'account',
      requestId: 'req-6901-0001',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(mine[1].data).toEqual({ changed: { name: 'Renamed' } });
  });

  it('pages with a cursor, filters by action and time, and a narrowed key sees only its organizations', async () => {
    const second = t.demo.organizations[1]?.id as string;
    await createAccount(t.orgId, '6902');
    await createAccount(second, '6903');
    await createAccount(second, '6904');

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; nextCursor: string | null } = (
        await list(`?action=account.created&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      seen.push(...page.data.map((e) => e.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    expect(seen.length).toBeGreaterThanOrEqual(4);

    const future = await list(`?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect(future.json().data).toEqual([]);

    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      organizationIds: [second],
      scopes: ['audit:read'],
    });
    const narrowed = { authorization: `Bearer ${key}` };
    const theirs = (await list('', narrowed)).json().data;
    expect(theirs.length).toBeGreaterThanOrEqual(2);
    expect(theirs.every((e: { organizationId: string }) => e.organizationId === second)).toBe(true);
    expect((await list(`?organizationId=${t.orgId}`, narrowed)).statusCode).toBe(404);
  });

  it('never shows another firm’s events, and needs audit:read', async () => {
    const other = await createOtherFirm(t.database.db, 'audit-other');
    await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { authorization: other.authorization, 'x-organization-id': other.orgId },
      payload: { code: '6905', name: 'Theirs', type: 'expense' },
    });
    const ours = (await list('?limit=1000')).json().data;
    expect(ours.some((e: { organizationId: string }) => e.organizationId === other.orgId)).toBe(false);
    expect((await list(`?organizationId=${other.orgId}`)).statusCode).toBe(404);

    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['accounts:read'] });
    const res = await list('', { authorization: `Bearer ${key}` });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
    expect((await list('?cursor=nonsense')).statusCode).toBe(400);
  });
});
