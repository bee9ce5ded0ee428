import { contacts } from '@firm/db';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const create = (payload: unknown, headers: Record<string, string> = t.orgHeaders) =>
  t.app.inject({ method: 'POST', url: '/api/v1/contacts', headers, payload: payload as object });
const contactCount = async () =>
  (await t.database.db.select({ n: count() }).from(contacts).where(eq(contacts.organizationId, t.orgId)))[0]?.n;

describe('contacts', () => {
  it('creates, reads, updates, archives and lists contacts in both forms', async () => {
    const created = await create({
      kind: 'customer',
      name: 'Northwind Traders',
      email: 'ap@northwind.test',
      billingAddress: { line1: '1 Main St', city: 'Springfield', country: 'US' },
      taxId: '12-3456789',
    });
    expect(created.statusCode).toBe(201);
    const contact = created.json().data;
    expect(contact).toMatchObject({ kind: 'customer', archived: false, billingAddress: { city: 'Springfield' } });
    const read = await t.app.inject({ method: 'GET', url: `/api/v1/contacts/${contact.id}`, headers: t.orgHeaders });
    expect(read.json().data.id).toBe(contact.id);
    await create({ kind: 'vendor', name: 'acme supplies' });
    await create({ kind: 'both', name: 'Bolt & Co' });

    const vendors = await t.app.inject({ method: 'GET', url: '/api/v1/contacts?kind=vendor', headers: t.orgHeaders });
    expect(vendors.json().data.map((c: { name: string }) => c.name)).toEqual(['acme supplies', 'Bolt & Co']);
    const page1 = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${t.orgId}/contacts?limit=2`,
      headers: t.auth,
    });
    const page2 = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${t.orgId}/contacts?limit=2&cursor=${page1.json().nextCursor}`,
      headers: t.auth,
    });
    expect([...page1.json().data, ...page2.json().data].map((c: { name: string }) => c.name)).toEqual([
      'acme supplies',
      'Bolt & Co',
      'Northwind Traders',
    ]);

    const archived = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/contacts/${contact.id}`,
      headers: t.orgHeaders,
      payload: { archived: true, phone: '555-0100' },
    });
    expect(archived.statusCode).toBe(200);
    expect(archived.json().data).toMatchObject({ archived: true, phone: '555-0100' });
    const active = await t.app.inject({ method: 'GET', url: '/api/v1/contacts', headers: t.orgHeaders });
    expect(active.json().data.map((c: { id: string }) => c.id)).not.toContain(contact.id);
  });

  it('refuses a name already used (case-insensitively) with 409 and writes nothing', async () => {
    await create({ kind: 'customer', name: 'Duplicate Ltd' });
    const before = await contactCount();
    const res = await create({ kind: 'vendor', name: 'DUPLICATE LTD' });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('CONTACT_NAME_TAKEN');
    expect(await contactCount()).toBe(before);
  });

  it.each([
    ['an unknown kind', { kind: 'supplier', name: 'X' }],
    ['a blank name', { kind: 'customer', name: '   ' }],
    ['a bad email', { kind: 'customer', name: 'X', email: 'not-an-email' }],
    ['an unknown field', { kind: 'customer', name: 'X', balance: 1 }],
  ])('refuses %s with 400 and writes nothing', async (_name, payload) => {
    const before = await contactCount();
    const res = await create(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
    expect(await contactCount()).toBe(before);
  });

  it('hides another tenant’s contact with 404', async () => {
    const other = await createOtherFirm(t.database.db);
    const theirs = (
      await create(
        { kind: 'customer', name: 'Theirs' },
        { authorization: other.authorization, 'x-organization-id': other.orgId },
      )
    ).json().data;
    const res = await t.app.inject({ method: 'GET', url: `/api/v1/contacts/${theirs.id}`, headers: t.orgHeaders });
    expect(res.statusCode).toBe(404);
    expect(res.json().error.code).toBe('CONTACT_NOT_FOUND');
    const patched = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/contacts/${theirs.id}`,
      headers: t.orgHeaders,
      payload: { name: 'Mine now' },
    });
    expect(patched.statusCode).toBe(404);
  });

  it('keeps the vendor side of a contact that has bills', async () => {
    const both = (await create({ kind: 'both', name: 'Two Sided' })).json().data;
    const expense = (
      await t.app.inject({ method: 'GET', url: '/api/v1/accounts?type=expense', headers: t.orgHeaders })
    ).json().data[0].id;
    const billed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/bills',
      headers: t.orgHeaders,
      payload: { contactId: both.id, date: '2026-05-01', lines: [{ accountId: expense, unitPriceCents: 100 }] },
    });
    expect(billed.statusCode).toBe(201);
    const res = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/contacts/${both.id}`,
      headers: t.orgHeaders,
      payload: { kind: 'customer' },
    });
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('INVALID_STATE');
  });
});
