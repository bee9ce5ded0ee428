import { accounts, items } from '@firm/db';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
const code: Record<string, string> = {};
beforeAll(async () => {
  t = await createTestApp();
  for (const a of await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId))) {
    code[a.code] = a.id;
  }
});
afterAll(() => t.close());

const post = (url: string, payload: unknown) =>
  t.app.inject({ method: 'POST', url, headers: t.orgHeaders, payload: payload as object });
const itemCount = async () =>
  (await t.database.db.select({ n: count() }).from(items).where(eq(items.organizationId, t.orgId)))[0]?.n;

describe('items', () => {
  it('creates, reads, lists, updates and archives an item', async () => {
    const res = await post('/api/v1/items', {
      name: 'Design hour',
      unitPriceCents: 12_500,
      incomeAccountId: code['4100'],
      expenseAccountId: code['6800'],
    });
    expect(res.statusCode).toBe(201);
    const item = res.json().data;
    expect(item).toMatchObject({ kind: 'service', unitPriceCents: 12_500, archived: false });
    const read = await t.app.inject({ method: 'GET', url: `/api/v1/items/${item.id}`, headers: t.orgHeaders });
    expect(read.json().data.name).toBe('Design hour');
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/items/${item.id}`,
      headers: t.orgHeaders,
      payload: { unitPriceCents: 13_000, archived: true },
    });
    expect(patched.json().data).toMatchObject({ unitPriceCents: 13_000, archived: true });
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/items?includeArchived=true',
      headers: t.orgHeaders,
    });
    expect(list.json().data.map((i: { id: string }) => i.id)).toContain(item.id);
    const company = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${t.orgId}/items?includeArchived=true`,
      headers: t.auth,
    });
    expect(company.json()).toEqual(list.json());
  });

  it.each([
    ['no account', { name: 'A' }, 400, 'VALIDATION_ERROR'],
    ['an expense account as income account', { name: 'B', incomeAccountId: 'x6300' }, 422, 'INVALID_ACCOUNT'],
    ['a negative price', { name: 'C', unitPriceCents: -1, incomeAccountId: 'x4000' }, 400, 'VALIDATION_ERROR'],
    ['a receivables account as expense account', { name: 'D', expenseAccountId: 'x1200' }, 422, 'INVALID_ACCOUNT'],
  ])('refuses %s and writes nothing', async (_name, body, status, errorCode) => {
    const payload = Object.fromEntries(
      Object.entries(body).map(([k, v]) => [k, typeof v === 'string' && v.startsWith('x') ? code[v.slice(1)] : v]),
    );
    const before = await itemCount();
    const res = await post('/api/v1/items', payload);
    expect(res.statusCode).toBe(status);
    expect(res.json().error.code).toBe(errorCode);
    expect(await itemCount()).toBe(before);
  });

  it('refuses a duplicate name with 409 and another tenant’s account with 422', async () => {
    await post('/api/v1/items', { name: 'Widget', incomeAccountId: code['4000'] });
    const before = await itemCount();
    const dup = await post('/api/v1/items', { name: 'widget', incomeAccountId: code['4000'] });
    expect(dup.statusCode).toBe(409);
    expect(dup.json().error.code).toBe('ITEM_NAME_TAKEN');
    const other = await createOtherFirm(t.database.db);
    const foreign = await post('/api/v1/items', {
      name: 'Foreign',
      incomeAccountId: other.accounts.find((a) => a.code === '4000')?.id,
    });
    expect(foreign.statusCode).toBe(422);
    expect(foreign.json().error.code).toBe('INVALID_ACCOUNT');
    expect(await itemCount()).toBe(before);
  });
});
