import { accounts } from '@firm/db';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
const code: Record<string, string> = {};
let customer: string;
let vendor: string;

const post = (url: string, payload: unknown, headers: Record<string, string> = t.orgHeaders) =>
  t.app.inject({ method: 'POST', url, headers, payload: payload as object });
const data = async (url: string, headers: Record<string, string> = t.orgHeaders) => {
  const res = await t.app.inject({ method: 'GET', url, headers });
  expect(res.statusCode, url).toBe(200);
  return res.json().data;
};

beforeAll(async () => {
  t = await createTestApp();
  for (const a of await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId))) {
    code[a.code] = a.id;
  }
  customer = (await post('/api/v1/contacts', { kind: 'customer', name: 'Acme Corp' })).json().data.id;
  vendor = (await post('/api/v1/contacts', { kind: 'vendor', name: 'Paper Supply Co' })).json().data.id;
  const line = (account: string, cents: number) => [{ accountId: code[account], unitPriceCents: cents }];
  const oldInvoice = (
    await post('/api/v1/invoices', { contactId: customer, date: '2026-01-05', lines: line('4000', 50_000) })
  ).json().data;
  await post('/api/v1/invoices', {
    contactId: customer,
    date: '2026-03-10',
    dueDate: '2026-04-09',
    lines: line('4000', 7_000),
  });
  await post('/api/v1/customer-payments', {
    contactId: customer,
    date: '2026-03-20',
    depositAccountId: code['1000'],
    amountCents: 20_000,
    allocations: [{ invoiceId: oldInvoice.id, amountCents: 15_000 }],
  });
  const bill = (
    await post('/api/v1/bills', {
      contactId: vendor,
      date: '2026-02-01',
      dueDate: '2026-03-01',
      lines: line('6300', 9_000),
    })
  ).json().data;
  await post('/api/v1/vendor-credits', { contactId: vendor, date: '2026-03-05', lines: line('6300', 1_000) });
  await post(
    '/api/v1/bill-payments',
    {
      txnDate: '2026-03-15',
      sourceAccountId: code['1000'],
      vendorId: vendor,
      allocations: [{ billId: bill.id, amountCents: 3_000 }],
    },
    { ...t.orgHeaders, 'idempotency-key': 'aging-1' },
  );
});
afterAll(() => t.close());

const controlBalance = async (asOf: string, subtype: string) => {
  const tb = await data(`/api/v1/reports/trial-balance?endDate=${asOf}`);
  return tb.rows
    .filter((r: { subtype: string }) => r.subtype === subtype)
    .reduce((s: number, r: { debitCents: number; creditCents: number }) => s + r.debitCents - r.creditCents, 0);
};

describe('aging reports', () => {
  it('buckets receivables and reconciles with accounts receivable in the trial balance at several dates', async () => {
    const report = await data('/api/v1/reports/ar-aging?asOf=2026-03-31');
    expect(report.contacts).toHaveLength(1);
    // 35,000 left on the January invoice (due 2026-01-05, 85 days), 7,000 not yet due, 5,000 unapplied (11 days).
    expect(report.totals).toEqual({
      currentCents: 7_000,
      days1To30Cents: -5_000,
      days31To60Cents: 0,
      days61To90Cents: 35_000,
      over90Cents: 0,
      totalCents: 37_000,
    });
    for (const asOf of ['2026-01-01', '2026-01-05', '2026-03-19', '2026-03-20', '2026-03-31', '2026-12-31']) {
      const r = await data(`/api/v1/reports/ar-aging?asOf=${asOf}`);
      expect(r.totals.totalCents, asOf).toBe(await controlBalance(asOf, 'accounts_receivable'));
      expect(r.controlAccountBalanceCents, asOf).toBe(r.totals.totalCents);
    }
  });

  it('reconciles payables with accounts payable (a credit) in both forms', async () => {
    for (const asOf of ['2026-02-01', '2026-03-05', '2026-03-15', '2026-06-30']) {
      const header = await data(`/api/v1/reports/ap-aging?asOf=${asOf}`);
      const company = await data(`/api/v1/companies/${t.orgId}/reports/ap-aging?asOf=${asOf}`, t.auth);
      expect(company).toEqual(header);
      expect(header.totals.totalCents, asOf).toBe(-(await controlBalance(asOf, 'accounts_payable')));
    }
    const june = await data('/api/v1/reports/ap-aging?asOf=2026-06-30');
    // The bill (6,000 open, due 2026-03-01) and the vendor credit (1,000, dated 2026-03-05) are both over 90 days.
    expect(june.totals).toMatchObject({ totalCents: 5_000, over90Cents: 5_000, days61To90Cents: 0 });
  });

  it('gives a contact’s statement of open documents', async () => {
    const statement = await data(`/api/v1/contacts/${customer}/statement?asOf=2026-03-31`);
    expect(statement).toMatchObject({ contactName: 'Acme Corp', receivableCents: 37_000, payableCents: 0 });
    expect(statement.documents.map((d: { type: string }) => d.type)).toEqual([
      'invoice',
      'customer_payment',
      'invoice',
    ]);
    const company = await data(`/api/v1/companies/${t.orgId}/contacts/${customer}/statement?asOf=2026-03-31`, t.auth);
    expect(company).toEqual(statement);
    const missing = await t.app.inject({
      method: 'GET',
      url: '/api/v1/contacts/00000000-0000-4000-8000-000000000000/statement',
      headers: t.orgHeaders,
    });
    expect(missing.statusCode).toBe(404);
  });

  it('refuses a malformed date with 400', async () => {
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/reports/ar-aging?asOf=2026-02-30',
      headers: t.orgHeaders,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
  });
});
