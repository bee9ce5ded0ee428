import { accounts, documentAllocations, documentLines, documents, journalEntries, organizations } from '@firm/db';
import { and, count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let other: Awaited<ReturnType<typeof createOtherFirm>>;
const code: Record<string, string> = {};
let customer: string;
let vendor: string;

beforeAll(async () => {
  t = await createTestApp();
  other = await createOtherFirm(t.database.db);
  for (const a of await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId))) {
    code[a.code] = a.id;
  }
  customer = (await post('/api/v1/contacts', { kind: 'customer', name: 'Acme Corp' })).json().data.id;
  vendor = (await post('/api/v1/contacts', { kind: 'vendor', name: 'Paper Supply Co' })).json().data.id;
});
afterAll(() => t.close());

function post(url: string, payload: unknown, headers: Record<string, string> = t.orgHeaders) {
  return t.app.inject({ method: 'POST', url, headers, payload: payload as object });
}
const get = (url: string, headers: Record<string, string> = t.orgHeaders) =>
  t.app.inject({ method: 'GET', url, headers });
const patch = (url: string, payload: unknown) =>
  t.app.inject({ method: 'PATCH', url, headers: t.orgHeaders, payload: payload as object });

/** Rows the organization has in every table a document write touches. */
async function written() {
  const db = t.database.db;
  const n = async (table: typeof documents | typeof journalEntries) =>
    (await db.select({ n: count() }).from(table).where(eq(table.organizationId, t.orgId)))[0]?.n;
  return {
    documents: await n(documents),
    entries: await n(journalEntries),
    lines: (await db.select({ n: count() }).from(documentLines).where(eq(documentLines.organizationId, t.orgId)))[0]?.n,
    allocations: (
      await db.select({ n: count() }).from(documentAllocations).where(eq(documentAllocations.organizationId, t.orgId))
    )[0]?.n,
  };
}

const invoiceBody = (cents = 10_000, extra: object = {}) => ({
  contactId: customer,
  date: '2026-04-01',
  dueDate: '2026-04-30',
  lines: [{ accountId: code['4000'], quantity: 1, unitPriceCents: cents }],
  ...extra,
});

describe('invoices over HTTP', () => {
  it('creates, reads, lists (both forms), edits and voids an invoice', async () => {
    const created = await post('/api/v1/invoices', invoiceBody(10_000, { number: 'INV-100' }));
    expect(created.statusCode).toBe(201);
    const invoice = created.json().data;
    expect(invoice).toMatchObject({ type: 'invoice', status: 'open', totalCents: 10_000, openBalanceCents: 10_000 });

    const read = await get(`/api/v1/invoices/${invoice.id}`);
    expect(read.json().data.lines[0]).toMatchObject({ quantity: 1, unitPriceCents: 10_000, amountCents: 10_000 });
    const listed = await get(`/api/v1/companies/${t.orgId}/invoices?contactId=${customer}&status=open`, t.auth);
    expect(listed.statusCode).toBe(200);
    expect(listed.json().data.map((d: { id: string }) => d.id)).toContain(invoice.id);
    expect((await get('/api/v1/invoices?startDate=2027-01-01')).json().data).toEqual([]);

    const edited = await patch(`/api/v1/invoices/${invoice.id}`, {
      lines: [{ accountId: code['4000'], quantity: 1.5, unitPriceCents: 333 }],
    });
    expect(edited.statusCode).toBe(200);
    expect(edited.json().data).toMatchObject({ totalCents: 500, openBalanceCents: 500 }); // 499.5 -> 500 (even)
    const oldEntry = await get(`/api/v1/entries/${invoice.journalEntryId}`);
    expect(oldEntry.json().data.status).toBe('void');

    const voided = await post(`/api/v1/invoices/${invoice.id}/void`, { reason: 'issued in error' });
    expect(voided.statusCode).toBe(200);
    expect(voided.json().data).toMatchObject({ status: 'void', openBalanceCents: 0, voidReason: 'issued in error' });
    const again = await post(`/api/v1/invoices/${invoice.id}/void`, { reason: 'twice' });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('INVALID_STATE');
  });

  it('hides another tenant’s invoice (404) and refuses its ids in bodies (422) without revealing them', async () => {
    const theirCustomer = (
      await post(
        '/api/v1/contacts',
        { kind: 'customer', name: 'Theirs' },
        {
          authorization: other.authorization,
          'x-organization-id': other.orgId,
        },
      )
    ).json().data.id;
    const before = await written();
    const bad = await post('/api/v1/invoices', { ...invoiceBody(), contactId: theirCustomer });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().error.code).toBe('INVALID_CONTACT');
    const unknown = await post('/api/v1/invoices', {
      ...invoiceBody(),
      contactId: '00000000-0000-4000-8000-000000000000',
    });
    expect(unknown.json().error.message.replace(/[0-9a-f-]{36}/, 'ID')).toBe(
      bad.json().error.message.replace(/[0-9a-f-]{36}/, 'ID'),
    );
    expect(await written()).toEqual(before);
    const mine = (await post('/api/v1/invoices', invoiceBody())).json().data;
    const theirs = await get(`/api/v1/invoices/${mine.id}`, {
      authorization: other.authorization,
      'x-organization-id': other.orgId,
    });
    expect(theirs.statusCode).toBe(404);
    expect(theirs.json().error.code).toBe('DOCUMENT_NOT_FOUND');
    expect((await get(`/api/v1/bills/${mine.id}`)).statusCode).toBe(404);
  });

  it('requires documents scopes', async () => {
    const { createApiKey } = await import('@firm/identity');
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['documents:read'] });
    const res = await post('/api/v1/invoices', invoiceBody(), {
      authorization: `Bearer ${key}`,
      'x-organization-id': t.orgId,
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
  });
});

describe('bad input writes nothing', () => {
  const cases: [string, string, () => object, number, string][] = [
    [
      'a line with neither item nor account',
      '/api/v1/invoices',
      () => invoiceBody(1, { lines: [{ unitPriceCents: 5 }] }),
      422,
      'LINE_TARGET_REQUIRED',
    ],
    [
      'a negative quantity',
      '/api/v1/invoices',
      () => invoiceBody(1, { lines: [{ accountId: code['4000'], quantity: -1, unitPriceCents: 5 }] }),
      400,
      'VALIDATION_ERROR',
    ],
    [
      'a negative price',
      '/api/v1/bills',
      () => ({ contactId: vendor, date: '2026-04-01', lines: [{ accountId: code['6300'], unitPriceCents: -5 }] }),
      400,
      'VALIDATION_ERROR',
    ],
    [
      'more than four decimals of quantity',
      '/api/v1/invoices',
      () => invoiceBody(1, { lines: [{ accountId: code['4000'], quantity: 1.00001, unitPriceCents: 5 }] }),
      400,
      'VALIDATION_ERROR',
    ],
    [
      'a bill to a customer-only contact',
      '/api/v1/bills',
      () => ({ contactId: customer, date: '2026-04-01', lines: [{ accountId: code['6300'], unitPriceCents: 5 }] }),
      422,
      'WRONG_CONTACT_KIND',
    ],
    [
      'an invoice to a vendor-only contact',
      '/api/v1/invoices',
      () => ({ ...invoiceBody(), contactId: vendor }),
      422,
      'WRONG_CONTACT_KIND',
    ],
    [
      'a line on the receivables account',
      '/api/v1/invoices',
      () => invoiceBody(1, { lines: [{ accountId: code['1200'], unitPriceCents: 5 }] }),
      422,
      'INVALID_ACCOUNT',
    ],
    ['a zero total', '/api/v1/invoices', () => invoiceBody(0), 422, 'ZERO_TOTAL'],
    ['a sales receipt without a bank account', '/api/v1/sales-receipts', () => invoiceBody(), 400, 'VALIDATION_ERROR'],
    [
      'a due date before the date',
      '/api/v1/invoices',
      () => invoiceBody(1, { dueDate: '2026-03-01' }),
      400,
      'VALIDATION_ERROR',
    ],
    ['an unknown field', '/api/v1/invoices', () => invoiceBody(1, { total: 5 }), 400, 'VALIDATION_ERROR'],
  ];
  it.each(cases)('refuses %s', async (_name, url, body, status, errorCode) => {
    const before = await written();
    const res = await post(url, body());
    expect(res.statusCode).toBe(status);
    expect(res.json().error).toMatchObject({ code: errorCode, retryable: false });
    expect(await written()).toEqual(before);
  });

  it('refuses a tax rate of another organization', async () => {
    const rate = await post(
      '/api/v1/tax-rates',
      { name: 'Theirs', rateBps: 500, liabilityAccountId: other.accounts.find((a) => a.code === '2200')?.id },
      { authorization: other.authorization, 'x-organization-id': other.orgId },
    );
    expect(rate.statusCode).toBe(201);
    const before = await written();
    const res = await post(
      '/api/v1/invoices',
      invoiceBody(1, { lines: [{ accountId: code['4000'], unitPriceCents: 5, taxRateId: rate.json().data.id }] }),
    );
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('INVALID_TAX_RATE');
    expect(await written()).toEqual(before);
  });

  it('refuses a document dated in a closed period', async () => {
    await t.database.db
      .update(organizations)
      .set({ booksClosedThrough: '2025-12-31' })
      .where(eq(organizations.id, t.orgId));
    const before = await written();
    const res = await post('/api/v1/invoices', invoiceBody(100, { date: '2025-12-15', dueDate: null }));
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('PERIOD_CLOSED');
    expect(await written()).toEqual(before);
    await t.database.db.update(organizations).set({ booksClosedThrough: null }).where(eq(organizations.id, t.orgId));
  });

  it('refuses editing a paid invoice and voiding it while paid; voiding the payment reopens it', async () => {
    const invoice = (await post('/api/v1/invoices', invoiceBody(2_000))).json().data;
    const payment = await post('/api/v1/customer-payments', {
      contactId: customer,
      date: '2026-04-05',
      depositAccountId: code['1000'],
      allocations: [{ invoiceId: invoice.id, amountCents: 2_000 }],
    });
    expect(payment.statusCode).toBe(201);
    expect(payment.json().data).toMatchObject({ type: 'customer_payment', totalCents: 2_000, status: 'applied' });
    expect((await get(`/api/v1/invoices/${invoice.id}`)).json().data).toMatchObject({
      status: 'paid',
      openBalanceCents: 0,
    });

    const before = await written();
    const edit = await patch(`/api/v1/invoices/${invoice.id}`, { memo: 'changed' });
    expect(edit.statusCode).toBe(422);
    expect(edit.json().error.code).toBe('DOCUMENT_NOT_EDITABLE');
    const voidPaid = await post(`/api/v1/invoices/${invoice.id}/void`, { reason: 'no' });
    expect(voidPaid.statusCode).toBe(422);
    expect(voidPaid.json().error.code).toBe('DOCUMENT_HAS_PAYMENTS');
    expect(await written()).toEqual(before);
    expect((await get(`/api/v1/invoices/${invoice.id}`)).json().data.memo).toBeNull();

    const voided = await post(`/api/v1/customer-payments/${payment.json().data.id}/void`, { reason: 'bounced' });
    expect(voided.statusCode).toBe(200);
    expect((await get(`/api/v1/invoices/${invoice.id}`)).json().data).toMatchObject({
      status: 'open',
      openBalanceCents: 2_000,
    });
  });

  it('records a payment received before its invoice, allocated to nothing, as wholly unapplied', async () => {
    const payment = await post('/api/v1/customer-payments', {
      contactId: customer,
      date: '2026-04-06',
      depositAccountId: code['1000'],
      amountCents: 1_500,
      allocations: [],
    });
    expect(payment.statusCode, payment.body).toBe(201);
    expect(payment.json().data).toMatchObject({ totalCents: 1_500, status: 'open', openBalanceCents: 1_500 });
  });

  it('refuses customer payments that over-allocate, repeat an invoice, exceed the amount, or hit a void invoice', async () => {
    const invoice = (await post('/api/v1/invoices', invoiceBody(1_000))).json().data;
    const voidInvoice = (await post('/api/v1/invoices', invoiceBody(1_000))).json().data;
    await post(`/api/v1/invoices/${voidInvoice.id}/void`, { reason: 'dup' });
    const base = { contactId: customer, date: '2026-04-06', depositAccountId: code['1000'] };
    const cases: [object, string][] = [
      [{ ...base, allocations: [{ invoiceId: invoice.id, amountCents: 1_001 }] }, 'OVER_ALLOCATION'],
      [
        {
          ...base,
          allocations: [
            { invoiceId: invoice.id, amountCents: 1 },
            { invoiceId: invoice.id, amountCents: 2 },
          ],
        },
        'DUPLICATE_ALLOCATION',
      ],
      [
        { ...base, amountCents: 10, allocations: [{ invoiceId: invoice.id, amountCents: 11 }] },
        'ALLOCATION_EXCEEDS_PAYMENT',
      ],
      [{ ...base, allocations: [{ invoiceId: voidInvoice.id, amountCents: 1 }] }, 'INVALID_ALLOCATION'],
    ];
    for (const [body, errorCode] of cases) {
      const before = await written();
      const res = await post('/api/v1/customer-payments', body);
      expect(res.statusCode, errorCode).toBe(422);
      expect(res.json().error.code).toBe(errorCode);
      expect(await written()).toEqual(before);
    }
  });
});

describe('other documents', () => {
  it('records sales and refund receipts against a bank account', async () => {
    const receipt = await post('/api/v1/sales-receipts', { ...invoiceBody(700), bankAccountId: code['1000'] });
    expect(receipt.statusCode).toBe(201);
    expect(receipt.json().data).toMatchObject({ status: 'paid', openBalanceCents: 0, bankAccountId: code['1000'] });
    const refund = await post('/api/v1/refund-receipts', { ...invoiceBody(200), bankAccountId: code['1000'] });
    expect(refund.statusCode).toBe(201);
    const entry = (await get(`/api/v1/entries/${refund.json().data.journalEntryId}`)).json().data;
    expect(entry.source).toBe('refund_receipt');
  });

  it('applies a credit memo through a customer payment', async () => {
    const invoice = (await post('/api/v1/invoices', invoiceBody(5_000))).json().data;
    const memo = (await post('/api/v1/credit-memos', { ...invoiceBody(1_000), dueDate: undefined })).json().data;
    expect(memo).toMatchObject({ type: 'credit_memo', status: 'open', openBalanceCents: 1_000 });
    const payment = await post('/api/v1/customer-payments', {
      contactId: customer,
      date: '2026-04-07',
      depositAccountId: code['1000'],
      allocations: [{ invoiceId: invoice.id, amountCents: 5_000 }],
      credits: [{ creditMemoId: memo.id, amountCents: 1_000 }],
    });
    expect(payment.statusCode).toBe(201);
    expect(payment.json().data.totalCents).toBe(4_000);
    expect((await get(`/api/v1/credit-memos/${memo.id}`)).json().data.status).toBe('applied');
    expect((await get(`/api/v1/invoices/${invoice.id}`)).json().data.status).toBe('paid');
  });

  it('converts an estimate to an invoice', async () => {
    const estimate = (await post('/api/v1/estimates', invoiceBody(900))).json().data;
    expect(estimate.journalEntryId).toBeNull();
    const converted = await post(`/api/v1/estimates/${estimate.id}/convert`, { date: '2026-04-10' });
    expect(converted.statusCode).toBe(201);
    expect(converted.json().data.estimate.status).toBe('converted');
    expect(converted.json().data.invoice).toMatchObject({ totalCents: 900, estimateId: estimate.id });
    const again = await post(`/api/v1/estimates/${estimate.id}/convert`, {});
    expect(again.statusCode).toBe(409);
  });

  it('records a vendor credit and lists bills by company path', async () => {
    const credit = await post('/api/v1/vendor-credits', {
      contactId: vendor,
      date: '2026-04-01',
      lines: [{ accountId: code['6300'], unitPriceCents: 300 }],
    });
    expect(credit.statusCode).toBe(201);
    const list = await get(`/api/v1/companies/${t.orgId}/vendor-credits`, t.auth);
    expect(list.json().data.map((d: { id: string }) => d.id)).toContain(credit.json().data.id);
    const unrelated = await t.database.db
      .select({ n: count() })
      .from(documents)
      .where(and(eq(documents.organizationId, other.orgId)));
    expect(unrelated[0]?.n).toBe(0);
  });
});

describe('every document list, both forms', () => {
  const paths = [
    'invoices',
    'customer-payments',
    'sales-receipts',
    'credit-memos',
    'refund-receipts',
    'estimates',
    'bills',
    'vendor-credits',
    'bill-payments',
  ];
  it.each(paths)('lists %s by header and by company path, and 404s an unknown id', async (path) => {
    const header = await get(`/api/v1/${path}?limit=2`);
    expect(header.statusCode).toBe(200);
    const company = await get(`/api/v1/companies/${t.orgId}/${path}?limit=2`, t.auth);
    expect(company.json()).toEqual(header.json());
    if (header.json().nextCursor) {
      const next = await get(`/api/v1/${path}?limit=2&cursor=${header.json().nextCursor}`);
      expect(next.statusCode).toBe(200);
    }
    const missing = await get(`/api/v1/${path}/00000000-0000-4000-8000-000000000000`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('DOCUMENT_NOT_FOUND');
    const theirs = await get(`/api/v1/companies/${other.orgId}/${path}`, t.auth);
    expect(theirs.statusCode).toBe(404);
  });
});

describe('items, tax and closed periods on documents', () => {
  it('prices a line by item with tax, half-even per line, and reads the payment back', async () => {
    const item = (
      await post('/api/v1/items', { name: 'Widget', unitPriceCents: 1_005, incomeAccountId: code['4000'] })
    ).json().data;
    const rate = (
      await post('/api/v1/tax-rates', { name: 'Sales 10%', rateBps: 1_000, liabilityAccountId: code['2200'] })
    ).json().data;
    const res = await post('/api/v1/invoices', {
      contactId: customer,
      date: '2026-04-02',
      lines: [
        { itemId: item.id, quantity: 0.5, taxRateId: rate.id },
        { itemId: item.id, quantity: 0.5, taxRateId: rate.id },
      ],
    });
    expect(res.statusCode).toBe(201);
    // 0.5 × 1005 = 502.5 -> 502 per line; 10 % of 502 = 50.2 -> 50 per line.
    expect(res.json().data).toMatchObject({ subtotalCents: 1_004, taxCents: 100, totalCents: 1_104 });
    expect(res.json().data.lines[0]).toMatchObject({ accountId: code['4000'], amountCents: 502, taxCents: 50 });
    const payment = (
      await post('/api/v1/customer-payments', {
        contactId: customer,
        date: '2026-04-03',
        depositAccountId: code['1000'],
        amountCents: 2_000,
        allocations: [{ invoiceId: res.json().data.id, amountCents: 1_104 }],
      })
    ).json().data;
    const read = await get(`/api/v1/customer-payments/${payment.id}`);
    expect(read.json().data).toMatchObject({ status: 'partially_applied', openBalanceCents: 896 });
    expect(read.json().data.allocations).toEqual([
      { paymentId: payment.id, documentId: res.json().data.id, amountCents: 1_104, voided: false },
    ]);
  });

  it('refuses to void or edit a document dated in a closed period', async () => {
    const bill = (
      await post('/api/v1/bills', {
        contactId: vendor,
        date: '2026-01-10',
        lines: [{ accountId: code['6300'], unitPriceCents: 100 }],
      })
    ).json().data;
    await t.database.db
      .update(organizations)
      .set({ booksClosedThrough: '2026-01-31' })
      .where(eq(organizations.id, t.orgId));
    const before = await written();
    const voided = await post(`/api/v1/bills/${bill.id}/void`, { reason: 'late' });
    expect(voided.statusCode).toBe(422);
    expect(voided.json().error.code).toBe('PERIOD_CLOSED');
    const edited = await patch(`/api/v1/bills/${bill.id}`, { date: '2026-02-10' });
    expect(edited.statusCode).toBe(422);
    expect(edited.json().error.code).toBe('PERIOD_CLOSED');
    expect(await written()).toEqual(before);
    expect((await get(`/api/v1/bills/${bill.id}`)).json().data).toMatchObject({ status: 'open', date: '2026-01-10' });
    await t.database.db.update(organizations).set({ booksClosedThrough: null }).where(eq(organizations.id, t.orgId));
  });
});
