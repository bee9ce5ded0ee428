import { accounts, documentAllocations, documents, journalEntries, outboxEvents } from '@firm/db';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let other: Awaited<ReturnType<typeof createOtherFirm>>;
const code: Record<string, string> = {};
let vendor: string;
let keyNo = 0;

beforeAll(async () => {
  t = await createTestApp();
  other = await createOtherFirm(t.database.db);
  for (const a of await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId))) {
    code[a.code] = a.id;
  }
  vendor = (await json('/api/v1/contacts', { kind: 'vendor', name: 'Paper Supply Co' })).id;
});
afterAll(() => t.close());

const post = (url: string, payload: unknown, headers: Record<string, string> = t.orgHeaders) =>
  t.app.inject({ method: 'POST', url, headers, payload: payload as object });
const json = async (url: string, payload: unknown) => (await post(url, payload)).json().data;
const key = () => ({ 'idempotency-key': `bp-${++keyNo}` });

const bill = (cents: number, contactId = vendor) =>
  json('/api/v1/bills', {
    contactId,
    date: '2026-05-01',
    dueDate: '2026-05-31',
    lines: [{ accountId: code['6300'], unitPriceCents: cents }],
  });
const openOf = async (id: string) =>
  (await t.app.inject({ method: 'GET', url: `/api/v1/bills/${id}`, headers: t.orgHeaders })).json().data;

async function written() {
  const db = t.database.db;
  return {
    documents: (await db.select({ n: count() }).from(documents).where(eq(documents.organizationId, t.orgId)))[0]?.n,
    entries: (await db.select({ n: count() }).from(journalEntries).where(eq(journalEntries.organizationId, t.orgId)))[0]
      ?.n,
    allocations: (await db.select({ n: count() }).from(documentAllocations))[0]?.n,
  };
}

describe('POST /bill-payments', () => {
  it('pays a bill in the header form and replays the receipt for the same key', async () => {
    const b = await bill(10_000);
    const body = {
      txnDate: '2026-05-10',
      sourceAccountId: code['1000'],
      vendorId: vendor,
      memo: 'May paper',
      allocations: [{ billId: b.id, amountCents: 4_000 }],
    };
    const headers = { ...t.orgHeaders, ...key() };
    const res = await post('/api/v1/bill-payments', body, headers);
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({
      status: 'posted',
      journalEntryId: expect.any(String),
      postedAt: expect.any(String),
    });
    expect(await openOf(b.id)).toMatchObject({ status: 'partially_paid', openBalanceCents: 6_000 });
    const replay = await post('/api/v1/bill-payments', body, headers);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(res.json());
    expect((await openOf(b.id)).openBalanceCents).toBe(6_000);
    const payments = await t.app.inject({
      method: 'GET',
      url: `/api/v1/bill-payments?contactId=${vendor}`,
      headers: t.orgHeaders,
    });
    expect(payments.json().data).toHaveLength(1);
    expect(payments.json().data[0]).toMatchObject({ journalEntryId: res.json().journalEntryId, totalCents: 4_000 });
    const entry = await t.app.inject({
      method: 'GET',
      url: `/api/v1/entries/${res.json().journalEntryId}`,
      headers: t.orgHeaders,
    });
    expect(entry.json().data).toMatchObject({ source: 'bill_payment', totalCents: 4_000 });
    const [event] = await t.database.db
      .select()
      .from(outboxEvents)
      .where(eq(outboxEvents.type, 'bill_payment.created'));
    expect(event?.payload).toEqual(payments.json().data[0]);
  });

  it('pays in the company-path form with a credit card and a vendor credit', async () => {
    const b = await bill(5_000);
    const credit = await json('/api/v1/vendor-credits', {
      contactId: vendor,
      date: '2026-05-02',
      lines: [{ accountId: code['6300'], unitPriceCents: 1_000 }],
    });
    const res = await post(
      `/api/v1/companies/${t.orgId}/bill-payments`,
      {
        date: '2026-05-11',
        sourceAccountId: code['2100'],
        vendorId: vendor,
        allocations: [{ billId: b.id, amountCents: 5_000 }],
        credits: [{ vendorCreditId: credit.id, amountCents: 1_000 }],
      },
      { ...t.auth, ...key() },
    );
    expect(res.statusCode).toBe(201);
    expect(res.json()).toMatchObject({ status: 'posted', createdAt: expect.any(String) });
    expect(await openOf(b.id)).toMatchObject({ status: 'paid', openBalanceCents: 0 });
  });

  it('needs an Idempotency-Key', async () => {
    const b = await bill(100);
    const res = await post('/api/v1/bill-payments', {
      txnDate: '2026-05-10',
      sourceAccountId: code['1000'],
      vendorId: vendor,
      allocations: [{ billId: b.id, amountCents: 100 }],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
  });

  it('refuses bad allocations with 422 and writes nothing', async () => {
    const b = await bill(1_000);
    const otherVendor = (await json('/api/v1/contacts', { kind: 'vendor', name: 'Other vendor' })).id;
    const otherBill = await bill(1_000, otherVendor);
    const theirVendor = (
      await post(
        '/api/v1/contacts',
        { kind: 'vendor', name: 'Theirs' },
        {
          authorization: other.authorization,
          'x-organization-id': other.orgId,
        },
      )
    ).json().data.id;
    const theirBill = (
      await post(
        '/api/v1/bills',
        {
          contactId: theirVendor,
          date: '2026-05-01',
          lines: [{ accountId: other.accounts.find((a) => a.code === '6300')?.id, unitPriceCents: 1_000 }],
        },
        { authorization: other.authorization, 'x-organization-id': other.orgId },
      )
    ).json().data;
    const voided = await bill(1_000);
    await post(`/api/v1/bills/${voided.id}/void`, { reason: 'duplicate' });
    const base = { txnDate: '2026-05-12', sourceAccountId: code['1000'], vendorId: vendor };
    const cases: [string, object, string][] = [
      ['over-allocation', { ...base, allocations: [{ billId: b.id, amountCents: 1_001 }] }, 'OVER_ALLOCATION'],
      [
        'a bill of another vendor',
        { ...base, allocations: [{ billId: otherBill.id, amountCents: 1 }] },
        'INVALID_ALLOCATION',
      ],
      [
        'a bill of another organization',
        { ...base, allocations: [{ billId: theirBill.id, amountCents: 1 }] },
        'INVALID_ALLOCATION',
      ],
      ['a voided bill', { ...base, allocations: [{ billId: voided.id, amountCents: 1 }] }, 'INVALID_ALLOCATION'],
      [
        'the same bill twice',
        {
          ...base,
          allocations: [
            { billId: b.id, amountCents: 1 },
            { billId: b.id, amountCents: 1 },
          ],
        },
        'DUPLICATE_ALLOCATION',
      ],
      [
        'allocations above the amount',
        { ...base, amountCents: 5, allocations: [{ billId: b.id, amountCents: 6 }] },
        'ALLOCATION_EXCEEDS_PAYMENT',
      ],
      [
        'an income account to pay from',
        { ...base, sourceAccountId: code['4000'], allocations: [{ billId: b.id, amountCents: 1 }] },
        'INVALID_ACCOUNT',
      ],
    ];
    for (const [name, body, errorCode] of cases) {
      const before = await written();
      const res = await post('/api/v1/bill-payments', body, { ...t.orgHeaders, ...key() });
      expect(res.statusCode, name).toBe(422);
      expect(res.json().error.code, name).toBe(errorCode);
      expect(await written(), name).toEqual(before);
    }
    const theirMessage = (
      await post(
        '/api/v1/bill-payments',
        { ...base, allocations: [{ billId: theirBill.id, amountCents: 1 }] },
        { ...t.orgHeaders, ...key() },
      )
    ).json().error.message;
    const unknownMessage = (
      await post(
        '/api/v1/bill-payments',
        { ...base, allocations: [{ billId: '00000000-0000-4000-8000-000000000000', amountCents: 1 }] },
        { ...t.orgHeaders, ...key() },
      )
    ).json().error.message;
    expect(theirMessage).toBe(unknownMessage);
    expect((await openOf(b.id)).openBalanceCents).toBe(1_000);
  });

  it('lets exactly one of several concurrent payments take the rest of a bill', async () => {
    const b = await bill(10_000);
    const pay = (i: number) =>
      post(
        '/api/v1/bill-payments',
        {
          txnDate: '2026-05-15',
          sourceAccountId: code['1000'],
          vendorId: vendor,
          allocations: [{ billId: b.id, amountCents: 6_000 }],
        },
        { ...t.orgHeaders, 'idempotency-key': `race-${i}` },
      );
    const results = await Promise.all([1, 2, 3, 4].map(pay));
    const statuses = results.map((r) => r.statusCode).sort();
    expect(statuses).toEqual([201, 422, 422, 422]);
    for (const r of results.filter((x) => x.statusCode === 422)) expect(r.json().error.code).toBe('OVER_ALLOCATION');
    expect(await openOf(b.id)).toMatchObject({ status: 'partially_paid', openBalanceCents: 4_000 });
  });
});
