import { accounts, taxRates } from '@firm/db';
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
const rateCount = async () =>
  (await t.database.db.select({ n: count() }).from(taxRates).where(eq(taxRates.organizationId, t.orgId)))[0]?.n;

describe('tax rates', () => {
  it('creates, reads, updates and lists tax rates', async () => {
    const res = await post('/api/v1/tax-rates', { name: 'City 2.5%', rateBps: 250, liabilityAccountId: code['2200'] });
    expect(res.statusCode).toBe(201);
    const rate = res.json().data;
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/tax-rates/${rate.id}`,
      headers: t.orgHeaders,
      payload: { rateBps: 275 },
    });
    expect(patched.json().data.rateBps).toBe(275);
    const read = await t.app.inject({ method: 'GET', url: `/api/v1/tax-rates/${rate.id}`, headers: t.orgHeaders });
    expect(read.json().data.name).toBe('City 2.5%');
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/tax-rates', headers: t.orgHeaders });
    expect(list.json().data).toHaveLength(1);
    const company = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${t.orgId}/tax-rates`,
      headers: t.auth,
    });
    expect(company.json()).toEqual(list.json());
  });

  it.each([
    ['a rate above 100 %', { name: 'X', rateBps: 10_001, liabilityAccountId: 'x2200' }, 400, 'VALIDATION_ERROR'],
    ['a non-liability account', { name: 'X', rateBps: 100, liabilityAccountId: 'x4000' }, 422, 'INVALID_ACCOUNT'],
    ['the payables account', { name: 'X', rateBps: 100, liabilityAccountId: 'x2000' }, 422, 'INVALID_ACCOUNT'],
    ['a duplicate name', { name: 'city 2.5%', rateBps: 100, liabilityAccountId: 'x2200' }, 409, 'TAX_RATE_NAME_TAKEN'],
  ])('refuses %s and writes nothing', async (_name, body, status, errorCode) => {
    const payload = Object.fromEntries(
      Object.entries(body).map(([k, v]) => [k, typeof v === 'string' && v.startsWith('x') ? code[v.slice(1)] : v]),
    );
    const before = await rateCount();
    const res = await post('/api/v1/tax-rates', payload);
    expect(res.statusCode).toBe(status);
    expect(res.json().error.code).toBe(errorCode);
    expect(await rateCount()).toBe(before);
  });

  it('hides another tenant’s tax rate with 404', async () => {
    const other = await createOtherFirm(t.database.db, 'other-tax');
    const theirs = await t.app.inject({
      method: 'POST',
      url: '/api/v1/tax-rates',
      headers: { authorization: other.authorization, 'x-organization-id': other.orgId },
      payload: { name: 'Theirs', rateBps: 1, liabilityAccountId: other.accounts.find((a) => a.code === '2200')?.id },
    });
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/v1/tax-rates/${theirs.json().data.id}`,
      headers: t.orgHeaders,
    });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('TAX_RATE_NOT_FOUND');
  });
});
