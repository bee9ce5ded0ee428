import { accounts, rowsOf } from '@firm/db';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let other: Awaited<ReturnType<typeof createOtherFirm>>;
let theirHeaders: Record<string, string>;
const code: Record<string, string> = {};
const theirCode: Record<string, string> = {};
let customer: string;
let vendor: string;
let keyNo = 0;

const UNKNOWN = '00000000-0000-4000-8000-000000000000';

const inject = (method: 'GET' | 'POST' | 'PATCH', url: string, payload?: unknown, headers = t.orgHeaders) =>
  t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
const post = (url: string, payload: unknown, headers: Record<string, string> = t.orgHeaders) =>
  inject('POST', url, payload, headers as typeof t.orgHeaders);
const get = (url: string, headers: Record<string, string> = t.orgHeaders) =>
  inject('GET', url, undefined, headers as typeof t.orgHeaders);
const patch = (url: string, payload: unknown, headers: Record<string, string> = t.orgHeaders) =>
  inject('PATCH', url, payload, headers as typeof t.orgHeaders);
const created = async (url: string, payload: unknown, headers: Record<string, string> = t.orgHeaders) => {
  const res = await post(url, payload, headers);
  expect(res.statusCode, `${url}: ${res.body}`).toBe(201);
  return res.json().data;
};
const withKey = (key = `hostile-${++keyNo}`) => ({ ...t.orgHeaders, 'idempotency-key': key });

/**
 * Every row a document, payment, posting or idempotent request can write or change, in both tenants: counts
 * and a digest of the mutable columns, so that a refused request that updated a row is caught as well.
 */
async function written() {
  const [row] = rowsOf<Record<string, string>>(
    await t.database.db.execute(sql`
      select
        (select count(*) from documents)::text as documents,
        (select md5(coalesce(string_agg(concat_ws('|', id, status, open_cents, total_cents, journal_entry_id, updated_at), ',' order by id), '')) from documents) as document_state,
        (select count(*) from document_lines)::text as document_lines,
        (select md5(coalesce(string_agg(concat_ws('|', id, voided_at), ',' order by id), ''))
           from document_allocations) as allocations,
        (select md5(coalesce(string_agg(concat_ws('|', id, status), ',' order by id), '')) from journal_entries) as entries,
        (select count(*) from journal_lines)::text as journal_lines,
        (select md5(coalesce(string_agg(concat_ws('|', account_id, day, amount_cents), ',' order by account_id, day), ''))
           from account_daily_balances) as balances,
        (select count(*) from audit_events)::text as audit_events,
        (select count(*) from outbox_events)::text as outbox_events,
        (select count(*) from idempotency_keys)::text as idempotency_keys,
        (select count(*) from contacts)::text as contacts`),
  );
  return row;
}

/** Expects the request to be refused with this status and code, having written nothing anywhere. */
async function refused(
  send: () => Promise<{ statusCode: number; json(): { error: { code: string; message: string } }; body: string }>,
  status: number,
  errorCode: string,
) {
  const before = await written();
  const res = await send();
  expect(res.statusCode, res.body).toBe(status);
  expect(res.json().error.code, res.body).toBe(errorCode);
  expect(await written()).toEqual(before);
  return res.json().error;
}

const bill = (cents: number, extra: object = {}) =>
  created('/api/v1/bills', {
    contactId: vendor,
    date: '2026-05-01',
    dueDate: '2026-05-31',
    lines: [{ accountId: code['6300'], unitPriceCents: cents }],
    ...extra,
  });
const invoice = (cents: number, extra: object = {}) =>
  created('/api/v1/invoices', {
    contactId: customer,
    date: '2026-05-01',
    lines: [{ accountId: code['4000'], unitPriceCents: cents }],
    ...extra,
  });
const billPayment = (allocations: { billId: string; amountCents: number }[], extra: object = {}) => ({
  txnDate: '2026-05-20',
  sourceAccountId: code['1000'],
  vendorId: vendor,
  allocations,
  ...extra,
});
const readBill = async (id: string) => (await get(`/api/v1/bills/${id}`)).json().data;

async function agingMatchesControl(asOf = '2026-12-31') {
  for (const report of ['ar-aging', 'ap-aging']) {
    const data = (await get(`/api/v1/reports/${report}?asOf=${asOf}`)).json().data;
    expect(data.totals.totalCents, report).toBe(data.controlAccountBalanceCents);
  }
}

beforeAll(async () => {
  t = await createTestApp();
  other = await createOtherFirm(t.database.db, 'hostile-other');
  theirHeaders = { authorization: other.authorization, 'x-organization-id': other.orgId };
  for (const a of await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId))) {
    code[a.code] = a.id;
  }
  for (const a of other.accounts) theirCode[a.code] = a.id;
  customer = (await created('/api/v1/contacts', { kind: 'customer', name: 'Acme Corp' })).id;
  vendor = (await created('/api/v1/contacts', { kind: 'vendor', name: 'Paper Supply Co' })).id;
});
afterAll(() => t.close());

describe('another tenant’s ids', () => {
  let theirs: { customer: string; vendor: string; invoice: string; bill: string; item: string; rate: string };
  let theirPayment: string;

  beforeAll(async () => {
    const theirCustomer = (await created('/api/v1/contacts', { kind: 'customer', name: 'C' }, theirHeaders)).id;
    const theirVendor = (await created('/api/v1/contacts', { kind: 'vendor', name: 'V' }, theirHeaders)).id;
    const theirInvoice = await created(
      '/api/v1/invoices',
      { contactId: theirCustomer, date: '2026-05-01', lines: [{ accountId: theirCode['4000'], unitPriceCents: 500 }] },
      theirHeaders,
    );
    const theirBill = await created(
      '/api/v1/bills',
      { contactId: theirVendor, date: '2026-05-01', lines: [{ accountId: theirCode['6300'], unitPriceCents: 500 }] },
      theirHeaders,
    );
    const item = await created(
      '/api/v1/items',
      { name: 'Their widget', unitPriceCents: 100, incomeAccountId: theirCode['4000'] },
      theirHeaders,
    );
    const rate = await created(
      '/api/v1/tax-rates',
      { name: 'Their tax', rateBps: 500, liabilityAccountId: theirCode['2200'] },
      theirHeaders,
    );
    const payment = await post(
      '/api/v1/bill-payments',
      {
        txnDate: '2026-05-10',
        sourceAccountId: theirCode['1000'],
        vendorId: theirVendor,
        allocations: [{ billId: theirBill.id, amountCents: 100 }],
      },
      { ...theirHeaders, 'idempotency-key': 'theirs-1' },
    );
    expect(payment.statusCode).toBe(201);
    theirPayment = (await get(`/api/v1/bill-payments?contactId=${theirVendor}`, theirHeaders)).json().data[0].id;
    theirs = {
      customer: theirCustomer,
      vendor: theirVendor,
      invoice: theirInvoice.id,
      bill: theirBill.id,
      item: item.id,
      rate: rate.id,
    };
  });

  it('answers 404 DOCUMENT_NOT_FOUND for their documents in the path, exactly as for an unknown id', async () => {
    for (const [path, id] of [
      ['invoices', theirs.invoice],
      ['bills', theirs.bill],
      ['bill-payments', theirPayment],
    ] as const) {
      const theirRead = await refused(() => get(`/api/v1/${path}/${id}`), 404, 'DOCUMENT_NOT_FOUND');
      const unknownRead = await refused(() => get(`/api/v1/${path}/${UNKNOWN}`), 404, 'DOCUMENT_NOT_FOUND');
      expect(theirRead.message).toBe(unknownRead.message);
      await refused(() => post(`/api/v1/${path}/${id}/void`, { reason: 'not mine' }), 404, 'DOCUMENT_NOT_FOUND');
    }
    await refused(() => patch(`/api/v1/invoices/${theirs.invoice}`, { memo: 'x' }), 404, 'DOCUMENT_NOT_FOUND');
    await refused(() => patch(`/api/v1/bills/${theirs.bill}`, { memo: 'x' }), 404, 'DOCUMENT_NOT_FOUND');
    await refused(() => get(`/api/v1/contacts/${theirs.customer}/statement`), 404, 'CONTACT_NOT_FOUND');
    await refused(() => get(`/api/v1/items/${theirs.item}`), 404, 'ITEM_NOT_FOUND');
    await refused(() => get(`/api/v1/tax-rates/${theirs.rate}`), 404, 'TAX_RATE_NOT_FOUND');
    expect((await get(`/api/v1/invoices/${theirs.invoice}`, theirHeaders)).json().data.status).toBe('open');
  });

  it('answers 422 for their ids in a body, with the same words as for an unknown id', async () => {
    const line = { accountId: code['4000'], unitPriceCents: 100 };
    const cases: [string, (id: string) => object, string, string][] = [
      ['contact', (id) => ({ contactId: id, date: '2026-05-01', lines: [line] }), 'INVALID_CONTACT', theirs.customer],
      [
        'item',
        (id) => ({ contactId: customer, date: '2026-05-01', lines: [{ itemId: id }] }),
        'INVALID_ITEM',
        theirs.item,
      ],
      [
        'account',
        (id) => ({ contactId: customer, date: '2026-05-01', lines: [{ accountId: id, unitPriceCents: 1 }] }),
        'INVALID_ACCOUNT',
        theirCode['4000'] as string,
      ],
      [
        'tax rate',
        (id) => ({ contactId: customer, date: '2026-05-01', lines: [{ ...line, taxRateId: id }] }),
        'INVALID_TAX_RATE',
        theirs.rate,
      ],
    ];
    for (const [, body, errorCode, theirId] of cases) {
      const theirError = await refused(() => post('/api/v1/invoices', body(theirId)), 422, errorCode);
      const unknownError = await refused(() => post('/api/v1/invoices', body(UNKNOWN)), 422, errorCode);
      expect(theirError.message.replaceAll(theirId, 'ID')).toBe(unknownError.message.replaceAll(UNKNOWN, 'ID'));
    }
    const mine = await invoice(1_000);
    await refused(() => patch(`/api/v1/invoices/${mine.id}`, { contactId: theirs.customer }), 422, 'INVALID_CONTACT');
  });

  it('refuses their vendor, paying account and bills in a bill payment (422), like unknown ones', async () => {
    const b = await bill(1_000);
    const byVendor = await refused(
      () =>
        post(
          '/api/v1/bill-payments',
          billPayment([{ billId: b.id, amountCents: 1 }], { vendorId: theirs.vendor }),
          withKey(),
        ),
      422,
      'INVALID_CONTACT',
    );
    const byUnknownVendor = await refused(
      () =>
        post(
          '/api/v1/bill-payments',
          billPayment([{ billId: b.id, amountCents: 1 }], { vendorId: UNKNOWN }),
          withKey(),
        ),
      422,
      'INVALID_CONTACT',
    );
    expect(byVendor.message.replaceAll(theirs.vendor, 'ID')).toBe(byUnknownVendor.message.replaceAll(UNKNOWN, 'ID'));
    await refused(
      () =>
        post(
          '/api/v1/bill-payments',
          billPayment([{ billId: b.id, amountCents: 1 }], { sourceAccountId: theirCode['1000'] }),
          withKey(),
        ),
      422,
      'INVALID_ACCOUNT',
    );
    await refused(
      () =>
        post(
          '/api/v1/customer-payments',
          {
            contactId: customer,
            date: '2026-05-20',
            depositAccountId: code['1000'],
            allocations: [{ invoiceId: theirs.invoice, amountCents: 1 }],
          },
          t.orgHeaders,
        ),
      422,
      'INVALID_ALLOCATION',
    );
    // Their company in the path of our key: 404, and nothing is paid.
    await refused(
      () =>
        post(
          `/api/v1/companies/${other.orgId}/bill-payments`,
          {
            date: '2026-05-20',
            sourceAccountId: theirCode['1000'],
            vendorId: theirs.vendor,
            allocations: [{ billId: theirs.bill, amountCents: 1 }],
          },
          { ...t.auth, 'idempotency-key': 'their-company' },
        ),
      404,
      'ORGANIZATION_NOT_FOUND',
    );
    expect((await get(`/api/v1/bills/${theirs.bill}`, theirHeaders)).json().data.openBalanceCents).toBe(400);
  });
});

describe('allocations', () => {
  it('refuses the same bill twice, as a bill and again as a credit, and allocations above the amount', async () => {
    const b = await bill(1_000);
    const credit = await created('/api/v1/vendor-credits', {
      contactId: vendor,
      date: '2026-05-02',
      lines: [{ accountId: code['6300'], unitPriceCents: 300 }],
    });
    const cases: [object, number, string][] = [
      [
        billPayment([
          { billId: b.id, amountCents: 500 },
          { billId: b.id, amountCents: 500 },
        ]),
        422,
        'DUPLICATE_ALLOCATION',
      ],
      [
        billPayment([{ billId: b.id, amountCents: 500 }], { credits: [{ vendorCreditId: b.id, amountCents: 1 }] }),
        422,
        'DUPLICATE_ALLOCATION',
      ],
      [
        billPayment([{ billId: b.id, amountCents: 500 }], {
          credits: [
            { vendorCreditId: credit.id, amountCents: 100 },
            { vendorCreditId: credit.id, amountCents: 100 },
          ],
        }),
        422,
        'DUPLICATE_ALLOCATION',
      ],
      [
        billPayment([{ billId: credit.id, amountCents: 100 }]),
        422,
        'INVALID_ALLOCATION', // a vendor credit is not a bill
      ],
      [billPayment([{ billId: b.id, amountCents: 600 }], { amountCents: 599 }), 422, 'ALLOCATION_EXCEEDS_PAYMENT'],
      [
        // The credit covers part of the allocation, and the amount still falls short of the rest.
        billPayment([{ billId: b.id, amountCents: 600 }], {
          amountCents: 299,
          credits: [{ vendorCreditId: credit.id, amountCents: 300 }],
        }),
        422,
        'ALLOCATION_EXCEEDS_PAYMENT',
      ],
      [
        billPayment([{ billId: b.id, amountCents: 500 }], {
          credits: [{ vendorCreditId: credit.id, amountCents: 301 }],
        }),
        422,
        'OVER_ALLOCATION',
      ],
      [
        // Credits worth the whole payment leave nothing to pay.
        billPayment([{ billId: b.id, amountCents: 300 }], {
          credits: [{ vendorCreditId: credit.id, amountCents: 300 }],
        }),
        422,
        'ZERO_TOTAL',
      ],
      [billPayment([{ billId: b.id, amountCents: 0 }]), 400, 'VALIDATION_ERROR'],
      [billPayment([{ billId: b.id, amountCents: -5 }]), 400, 'VALIDATION_ERROR'],
      [billPayment([{ billId: b.id, amountCents: 1.5 }]), 400, 'VALIDATION_ERROR'],
      [billPayment([]), 400, 'VALIDATION_ERROR'],
      [billPayment([{ billId: b.id, amountCents: 1 }], { txnDate: '2026-04-30' }), 422, 'INVALID_ALLOCATION'],
    ];
    for (const [body, status, errorCode] of cases) {
      await refused(() => post('/api/v1/bill-payments', body, withKey()), status, errorCode);
    }
    expect(await readBill(b.id)).toMatchObject({ status: 'open', openBalanceCents: 1_000 });
  });

  it('refuses allocations whose sum exceeds what can be represented', async () => {
    const big = Number.MAX_SAFE_INTEGER - 1;
    const bigVendor = (await created('/api/v1/contacts', { kind: 'vendor', name: 'Big Vendor' })).id;
    const b1 = await bill(big, { contactId: bigVendor });
    const b2 = await bill(big, { contactId: bigVendor });
    try {
      await refused(
        () =>
          post(
            '/api/v1/bill-payments',
            billPayment(
              [
                { billId: b1.id, amountCents: big },
                { billId: b2.id, amountCents: big },
              ],
              { vendorId: bigVendor },
            ),
            withKey(),
          ),
        400,
        'VALIDATION_ERROR',
      );
    } finally {
      await post(`/api/v1/bills/${b1.id}/void`, { reason: 'too large' });
      await post(`/api/v1/bills/${b2.id}/void`, { reason: 'too large' });
    }
  });

  it('refuses a bill payment to a customer-only contact and to an archived vendor', async () => {
    const b = await bill(100);
    await refused(
      () =>
        post(
          '/api/v1/bill-payments',
          billPayment([{ billId: b.id, amountCents: 1 }], { vendorId: customer }),
          withKey(),
        ),
      422,
      'WRONG_CONTACT_KIND',
    );
    const archived = (await created('/api/v1/contacts', { kind: 'vendor', name: 'Gone Vendor' })).id;
    const theirBill = await bill(100, { contactId: archived });
    expect((await patch(`/api/v1/contacts/${archived}`, { archived: true })).statusCode).toBe(200);
    await refused(
      () =>
        post(
          '/api/v1/bill-payments',
          billPayment([{ billId: theirBill.id, amountCents: 1 }], { vendorId: archived }),
          withKey(),
        ),
      422,
      'INVALID_CONTACT',
    );
  });

  it('voids a payment, reopens the bill, pays it again, and refuses a second void', async () => {
    const b = await bill(2_500);
    const key = withKey();
    const first = await post('/api/v1/bill-payments', billPayment([{ billId: b.id, amountCents: 2_500 }]), key);
    expect(first.statusCode).toBe(201);
    expect(await readBill(b.id)).toMatchObject({ status: 'paid', openBalanceCents: 0 });
    await refused(() => post(`/api/v1/bills/${b.id}/void`, { reason: 'paid' }), 422, 'DOCUMENT_HAS_PAYMENTS');
    await refused(() => patch(`/api/v1/bills/${b.id}`, { memo: 'paid' }), 422, 'DOCUMENT_NOT_EDITABLE');
    const paymentId = (await readBill(b.id)).allocations[0].paymentId;
    const voided = await post(`/api/v1/bill-payments/${paymentId}/void`, { reason: 'cheque lost' });
    expect(voided.statusCode).toBe(200);
    expect(voided.json().data).toMatchObject({ status: 'void', openBalanceCents: 0 });
    expect(await readBill(b.id)).toMatchObject({ status: 'open', openBalanceCents: 2_500 });
    await refused(() => post(`/api/v1/bill-payments/${paymentId}/void`, { reason: 'again' }), 409, 'INVALID_STATE');
    // The key of the voided payment still replays its receipt; it does not pay again.
    const replay = await post('/api/v1/bill-payments', billPayment([{ billId: b.id, amountCents: 2_500 }]), key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expect(await readBill(b.id)).toMatchObject({ status: 'open', openBalanceCents: 2_500 });

    const second = await post('/api/v1/bill-payments', billPayment([{ billId: b.id, amountCents: 2_500 }]), withKey());
    expect(second.statusCode).toBe(201);
    const paid = await readBill(b.id);
    expect(paid).toMatchObject({ status: 'paid', openBalanceCents: 0 });
    expect(paid.allocations.map((a: { voided: boolean }) => a.voided)).toEqual([true, false]);
    // Voided, then paid: editing stays refused while the new payment applies.
    await refused(() => patch(`/api/v1/bills/${b.id}`, { memo: 'paid again' }), 422, 'DOCUMENT_NOT_EDITABLE');
    await agingMatchesControl();
  });

  it('lets an invoice be edited once the payment on it is void, and not a partially paid one', async () => {
    const inv = await invoice(1_000, { date: '2026-05-02' });
    const pay = await created('/api/v1/customer-payments', {
      contactId: customer,
      date: '2026-05-03',
      depositAccountId: code['1000'],
      allocations: [{ invoiceId: inv.id, amountCents: 400 }],
    });
    await refused(() => patch(`/api/v1/invoices/${inv.id}`, { memo: 'partly paid' }), 422, 'DOCUMENT_NOT_EDITABLE');
    await refused(
      () => patch(`/api/v1/invoices/${inv.id}`, { lines: [{ accountId: code['4000'], unitPriceCents: 300 }] }),
      422,
      'DOCUMENT_NOT_EDITABLE',
    );
    expect((await post(`/api/v1/customer-payments/${pay.id}/void`, { reason: 'bounced' })).statusCode).toBe(200);
    const edited = await patch(`/api/v1/invoices/${inv.id}`, {
      lines: [{ accountId: code['4000'], unitPriceCents: 300 }],
    });
    expect(edited.statusCode).toBe(200);
    expect(edited.json().data).toMatchObject({ status: 'open', totalCents: 300, openBalanceCents: 300 });
    await agingMatchesControl();
  });

  it('refuses to apply a credit memo that is void, or to edit one that is applied', async () => {
    const inv = await invoice(1_000, { date: '2026-05-02' });
    const memo = await created('/api/v1/credit-memos', {
      contactId: customer,
      date: '2026-05-02',
      lines: [{ accountId: code['4000'], unitPriceCents: 200 }],
    });
    await created('/api/v1/customer-payments', {
      contactId: customer,
      date: '2026-05-04',
      depositAccountId: code['1000'],
      allocations: [{ invoiceId: inv.id, amountCents: 500 }],
      credits: [{ creditMemoId: memo.id, amountCents: 100 }],
    });
    await refused(() => patch(`/api/v1/credit-memos/${memo.id}`, { memo: 'x' }), 422, 'DOCUMENT_NOT_EDITABLE');
    await refused(() => post(`/api/v1/credit-memos/${memo.id}/void`, { reason: 'x' }), 422, 'DOCUMENT_HAS_PAYMENTS');
    const unused = await created('/api/v1/credit-memos', {
      contactId: customer,
      date: '2026-05-02',
      lines: [{ accountId: code['4000'], unitPriceCents: 200 }],
    });
    expect((await post(`/api/v1/credit-memos/${unused.id}/void`, { reason: 'dup' })).statusCode).toBe(200);
    await refused(
      () =>
        post('/api/v1/customer-payments', {
          contactId: customer,
          date: '2026-05-04',
          depositAccountId: code['1000'],
          allocations: [{ invoiceId: inv.id, amountCents: 300 }],
          credits: [{ creditMemoId: unused.id, amountCents: 100 }],
        }),
      422,
      'INVALID_ALLOCATION',
    );
  });
});

describe('lines', () => {
  const line = (extra: object) => ({
    contactId: customer,
    date: '2026-05-01',
    lines: [{ accountId: code['4000'], unitPriceCents: 100, ...extra }],
  });
  it.each([
    ['a negative quantity', { quantity: -2 }],
    ['a zero quantity', { quantity: 0 }],
    ['five decimals of quantity', { quantity: 0.00005 }],
    ['a quantity above the maximum', { quantity: 1_000_000_001 }],
    ['a negative price', { unitPriceCents: -1 }],
    ['a fractional price', { unitPriceCents: 10.5 }],
    ['a price above 2^53-1', { unitPriceCents: Number.MAX_SAFE_INTEGER + 2 }],
    ['a quantity given as text', { quantity: '1' }],
  ])('refuses %s with 400 and writes nothing', async (_name, extra) => {
    await refused(() => post('/api/v1/invoices', line(extra)), 400, 'VALIDATION_ERROR');
  });

  it.each([
    ['quantity × price above 2^53-1', [{ quantity: 2, unitPriceCents: 2 ** 52 }]],
    [
      'the largest quantity at the largest price',
      [{ quantity: 1_000_000_000, unitPriceCents: Number.MAX_SAFE_INTEGER }],
    ],
    [
      'a total of two lines above 2^53-1',
      [
        { quantity: 1, unitPriceCents: 2 ** 52 },
        { quantity: 1, unitPriceCents: 2 ** 52 },
      ],
    ],
  ])('refuses %s and writes nothing', async (_name, lines) => {
    const before = await written();
    const res = await post('/api/v1/invoices', {
      contactId: customer,
      date: '2026-05-01',
      lines: (lines as object[]).map((l) => ({ accountId: code['4000'], ...l })),
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
    expect(await written()).toEqual(before);
  });

  it('refuses tax that takes a line above 2^53-1 and writes nothing', async () => {
    const rate = await created('/api/v1/tax-rates', {
      name: 'Full rate',
      rateBps: 10_000,
      liabilityAccountId: code['2200'],
    });
    const before = await written();
    const res = await post('/api/v1/invoices', {
      contactId: customer,
      date: '2026-05-01',
      lines: [{ accountId: code['4000'], unitPriceCents: 2 ** 52 + 1, taxRateId: rate.id }],
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(res.json().error.code).toBe('VALIDATION_ERROR');
    expect(await written()).toEqual(before);
  });

  it('accepts the largest representable total exactly', async () => {
    const doc = await invoice(Number.MAX_SAFE_INTEGER);
    expect(doc).toMatchObject({ totalCents: Number.MAX_SAFE_INTEGER, openBalanceCents: Number.MAX_SAFE_INTEGER });
    const entry = (await get(`/api/v1/entries/${doc.journalEntryId}`)).json().data;
    expect(entry.totalCents).toBe(Number.MAX_SAFE_INTEGER);
    expect((await post(`/api/v1/invoices/${doc.id}/void`, { reason: 'test' })).statusCode).toBe(200);
  });

  it('rounds x.5 cents half to even, per line, for amounts and tax', async () => {
    const rate = await created('/api/v1/tax-rates', {
      name: 'Ten percent',
      rateBps: 1_000,
      liabilityAccountId: code['2200'],
    });
    const cases: [number, number, number, number][] = [
      // quantity, unit price, amount, tax at 10 %
      [0.5, 1, 0, 0], // 0.5 -> 0
      [1.5, 1, 2, 0], // 1.5 -> 2; 0.2 -> 0
      [2.5, 1, 2, 0], // 2.5 -> 2
      [0.0001, 5_000, 0, 0], // 0.5 -> 0
      [0.0003, 5_000, 2, 0], // 1.5 -> 2
      [0.5, 5, 2, 0], // 2.5 -> 2
      [0.5, 7, 4, 0], // 3.5 -> 4
      [1, 5, 5, 0], // tax 0.5 -> 0
      [1, 15, 15, 2], // tax 1.5 -> 2
      [1, 25, 25, 2], // tax 2.5 -> 2
      [1, 35, 35, 4], // tax 3.5 -> 4
      [0.5, 51, 26, 3], // 25.5 -> 26; tax 2.6 -> 3
      [1.0001, 5_000, 5_000, 500], // 5000.5 -> 5000
      [1.0003, 5_000, 5_002, 500], // 5001.5 -> 5002; tax 500.2 -> 500
    ];
    const res = await post('/api/v1/invoices', {
      contactId: customer,
      date: '2026-05-01',
      lines: cases.map(([quantity, unitPriceCents]) => ({
        accountId: code['4000'],
        quantity,
        unitPriceCents,
        taxRateId: rate.id,
      })),
    });
    expect(res.statusCode, res.body).toBe(201);
    const doc = res.json().data;
    cases.forEach(([quantity, price, amount, tax], i) => {
      expect(doc.lines[i], `${quantity} × ${price}`).toMatchObject({ quantity, amountCents: amount, taxCents: tax });
    });
    const subtotal = cases.reduce((s, c) => s + c[2], 0);
    const tax = cases.reduce((s, c) => s + c[3], 0);
    expect(doc).toMatchObject({ subtotalCents: subtotal, taxCents: tax, totalCents: subtotal + tax });
    const entry = (await get(`/api/v1/entries/${doc.journalEntryId}`)).json().data;
    expect(entry.totalCents).toBe(subtotal + tax);
    expect((await post(`/api/v1/invoices/${doc.id}/void`, { reason: 'test' })).statusCode).toBe(200);
  });

  it('takes a large quantity with four decimals that binary floating point cannot hold exactly', async () => {
    const res = await post('/api/v1/invoices', {
      contactId: customer,
      date: '2026-05-01',
      lines: [{ accountId: code['4000'], quantity: 1_655_225.4366, unitPriceCents: 3 }],
    });
    expect(res.statusCode, res.body).toBe(201);
    // 1655225.4366 × 3 = 4965676.3098 -> 4965676
    expect(res.json().data.lines[0]).toMatchObject({ quantity: 1_655_225.4366, amountCents: 4_965_676 });
    expect((await post(`/api/v1/invoices/${res.json().data.id}/void`, { reason: 'test' })).statusCode).toBe(200);
  });

  it('refuses a document whose lines all round to zero cents', async () => {
    await refused(
      () =>
        post('/api/v1/invoices', {
          contactId: customer,
          date: '2026-05-01',
          lines: [{ accountId: code['4000'], quantity: 0.0001, unitPriceCents: 5_000 }],
        }),
      422,
      'ZERO_TOTAL',
    );
  });
});

describe('closed periods through PATCH /books', () => {
  it('refuses documents, edits, payments and voids dated on or before the close, and writes nothing', async () => {
    const early = await bill(800, { date: '2026-02-10', dueDate: '2026-03-10' });
    const earlyInvoice = await invoice(800, { date: '2026-02-10' });
    const key = withKey();
    const earlyPayment = await post(
      '/api/v1/bill-payments',
      billPayment([{ billId: early.id, amountCents: 300 }], { txnDate: '2026-02-20' }),
      key,
    );
    expect(earlyPayment.statusCode).toBe(201);
    const paymentId = (await readBill(early.id)).allocations[0].paymentId;
    const closed = await patch('/api/v1/books', { booksClosedThrough: '2026-02-28' });
    expect(closed.statusCode, closed.body).toBe(200);
    try {
      await refused(() => post('/api/v1/bills', { ...closedBill(), date: '2026-02-28' }), 422, 'PERIOD_CLOSED');
      await refused(
        () => post('/api/v1/invoices', { contactId: customer, date: '2026-01-31', lines: closedBill().lines }),
        422,
        'PERIOD_CLOSED',
      );
      await refused(() => patch(`/api/v1/invoices/${earlyInvoice.id}`, { memo: 'late' }), 422, 'PERIOD_CLOSED');
      await refused(() => post(`/api/v1/invoices/${earlyInvoice.id}/void`, { reason: 'late' }), 422, 'PERIOD_CLOSED');
      // An open document moved into the closed period.
      const open = await bill(100, { date: '2026-03-05', dueDate: '2026-03-05' });
      await refused(() => patch(`/api/v1/bills/${open.id}`, { date: '2026-02-27' }), 422, 'PERIOD_CLOSED');
      await refused(
        () =>
          post(
            '/api/v1/bill-payments',
            billPayment([{ billId: early.id, amountCents: 100 }], { txnDate: '2026-02-25' }),
            withKey('closed-1'),
          ),
        422,
        'PERIOD_CLOSED',
      );
      await refused(() => post(`/api/v1/bill-payments/${paymentId}/void`, { reason: 'late' }), 422, 'PERIOD_CLOSED');
      // A payment after the close may still pay a bill from before it.
      const later = await post(
        '/api/v1/bill-payments',
        billPayment([{ billId: early.id, amountCents: 100 }], { txnDate: '2026-03-01' }),
        withKey('closed-1'),
      );
      expect(later.statusCode, later.body).toBe(201);
      // The refused attempt left no idempotency record: the same key went on to pay.
      expect(await readBill(early.id)).toMatchObject({ status: 'partially_paid', openBalanceCents: 400 });
      const replay = await post(
        '/api/v1/bill-payments',
        billPayment([{ billId: early.id, amountCents: 300 }], { txnDate: '2026-02-20' }),
        key,
      );
      expect(replay.headers['idempotent-replayed']).toBe('true');
    } finally {
      expect((await patch('/api/v1/books', { booksClosedThrough: null })).statusCode).toBe(200);
    }
    await agingMatchesControl('2026-03-31');
  });

  const closedBill = () => ({
    contactId: vendor,
    date: '2026-02-28',
    lines: [{ accountId: code['6300'], unitPriceCents: 100 }],
  });
});

describe('idempotency of POST /bill-payments', () => {
  it('replays the same body, and refuses another body or the other route form under the key', async () => {
    const b = await bill(3_000);
    const key = withKey();
    const body = billPayment([{ billId: b.id, amountCents: 1_000 }], { memo: 'first' });
    const first = await post('/api/v1/bill-payments', body, key);
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    // Same body with its keys in another order: the same request.
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const replay = await refusedOrReplayed(() => post('/api/v1/bill-payments', reordered, key));
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    for (const changed of [
      { ...body, memo: 'second' },
      billPayment([{ billId: b.id, amountCents: 1_001 }], { memo: 'first' }),
      { ...body, reference: 'R-1' },
    ]) {
      await refused(() => post('/api/v1/bill-payments', changed, key), 422, 'IDEMPOTENCY_KEY_REUSED');
    }
    expect(await readBill(b.id)).toMatchObject({ openBalanceCents: 2_000 });
    // The company-path form is another request: the key is taken there too.
    const company = () =>
      post(
        `/api/v1/companies/${t.orgId}/bill-payments`,
        {
          date: '2026-05-20',
          sourceAccountId: code['1000'],
          vendorId: vendor,
          allocations: [{ billId: b.id, amountCents: 1_000 }],
        },
        { ...t.auth, 'idempotency-key': key['idempotency-key'] },
      );
    await refused(company, 422, 'IDEMPOTENCY_KEY_REUSED');
    expect(await readBill(b.id)).toMatchObject({ openBalanceCents: 2_000 });
  });

  it('does not store a refusal: the key can be used again once the body is right', async () => {
    const b = await bill(500);
    const key = withKey();
    await refused(
      () => post('/api/v1/bill-payments', billPayment([{ billId: b.id, amountCents: 501 }]), key),
      422,
      'OVER_ALLOCATION',
    );
    const ok = await post('/api/v1/bill-payments', billPayment([{ billId: b.id, amountCents: 500 }]), key);
    expect(ok.statusCode).toBe(201);
    expect(ok.headers['idempotent-replayed']).toBeUndefined();
  });

  it('pays once when the same key and body arrive together', async () => {
    const b = await bill(700);
    const key = withKey();
    const body = billPayment([{ billId: b.id, amountCents: 700 }]);
    const results = await Promise.all([1, 2, 3].map(() => post('/api/v1/bill-payments', body, key)));
    for (const r of results) expect([201, 409], r.body).toContain(r.statusCode);
    for (const r of results.filter((x) => x.statusCode === 409)) {
      expect(r.json().error).toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', retryable: true });
    }
    const entries = new Set(results.filter((r) => r.statusCode === 201).map((r) => r.json().journalEntryId));
    expect(entries.size).toBe(1);
    const payments = (await get(`/api/v1/bill-payments?contactId=${vendor}&limit=1000`)).json().data;
    expect(
      payments.filter((p: { allocations: { documentId: string }[] }) => p.allocations[0]?.documentId === b.id),
    ).toHaveLength(1);
  });
});

/** A replayed request writes nothing but may be answered as the original was. */
async function refusedOrReplayed<T>(send: () => Promise<T>): Promise<T> {
  const before = await written();
  const res = await send();
  expect(await written()).toEqual(before);
  return res;
}

describe('races', () => {
  it('voids a bill or pays it, never both, when a void and a payment race', async () => {
    for (let round = 0; round < 6; round++) {
      const b = await bill(1_000);
      const [voided, paid] = await Promise.all([
        post(`/api/v1/bills/${b.id}/void`, { reason: 'race' }),
        post('/api/v1/bill-payments', billPayment([{ billId: b.id, amountCents: 1_000 }]), withKey()),
      ]);
      const after = await readBill(b.id);
      if (voided.statusCode === 200) {
        expect(paid.statusCode, paid.body).toBe(422);
        expect(paid.json().error.code).toBe('INVALID_ALLOCATION');
        expect(after).toMatchObject({ status: 'void', allocations: [] });
      } else {
        expect(voided.statusCode, voided.body).toBe(422);
        expect(voided.json().error.code).toBe('DOCUMENT_HAS_PAYMENTS');
        expect(paid.statusCode).toBe(201);
        expect(after).toMatchObject({ status: 'paid', openBalanceCents: 0 });
      }
    }
    await agingMatchesControl();
  });

  it('lets two payments on different bills and a shared vendor credit not over-apply the credit', async () => {
    const b1 = await bill(1_000);
    const b2 = await bill(1_000);
    const credit = await created('/api/v1/vendor-credits', {
      contactId: vendor,
      date: '2026-05-01',
      lines: [{ accountId: code['6300'], unitPriceCents: 600 }],
    });
    const results = await Promise.all(
      [b2, b1].map((b) =>
        post(
          '/api/v1/bill-payments',
          billPayment([{ billId: b.id, amountCents: 1_000 }], {
            credits: [{ vendorCreditId: credit.id, amountCents: 400 }],
          }),
          withKey(),
        ),
      ),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([201, 422]);
    expect(results.find((r) => r.statusCode === 422)?.json().error.code).toBe('OVER_ALLOCATION');
    const after = (await get(`/api/v1/vendor-credits/${credit.id}`)).json().data;
    expect(after).toMatchObject({ status: 'partially_applied', openBalanceCents: 200 });
    await agingMatchesControl();
  });

  it('voids a payment once when two voids race, and reopens the bill once', async () => {
    const b = await bill(900);
    expect(
      (await post('/api/v1/bill-payments', billPayment([{ billId: b.id, amountCents: 900 }]), withKey())).statusCode,
    ).toBe(201);
    const paymentId = (await readBill(b.id)).allocations[0].paymentId;
    const results = await Promise.all(
      [1, 2].map(() => post(`/api/v1/bill-payments/${paymentId}/void`, { reason: 'race' })),
    );
    expect(results.map((r) => r.statusCode).sort()).toEqual([200, 409]);
    expect(await readBill(b.id)).toMatchObject({ status: 'open', openBalanceCents: 900 });
    await agingMatchesControl();
  });
});

describe('entries that belong to documents', () => {
  it('refuses to void a document’s or a payment’s entry through /entries (409), so aging keeps matching', async () => {
    const b = await bill(1_234);
    const inv = await invoice(4_321);
    await refused(
      () => post(`/api/v1/entries/${b.journalEntryId}/void`, { reason: 'behind the bill’s back' }),
      409,
      'INVALID_STATE',
    );
    await refused(
      () => post(`/api/v1/entries/${inv.journalEntryId}/void`, { reason: 'behind the invoice’s back' }),
      409,
      'INVALID_STATE',
    );
    const paid = await post('/api/v1/bill-payments', billPayment([{ billId: b.id, amountCents: 1_000 }]), withKey());
    expect(paid.statusCode).toBe(201);
    await refused(
      () => post(`/api/v1/entries/${paid.json().journalEntryId}/void`, { reason: 'behind the payment’s back' }),
      409,
      'INVALID_STATE',
    );
    expect(await readBill(b.id)).toMatchObject({ status: 'partially_paid', openBalanceCents: 234 });
    await agingMatchesControl();

    // Through the documents, the same entries are voided (or replaced) as before.
    const paymentId = (await readBill(b.id)).allocations[0].paymentId;
    expect((await post(`/api/v1/bill-payments/${paymentId}/void`, { reason: 'stopped' })).statusCode).toBe(200);
    expect((await get(`/api/v1/entries/${paid.json().journalEntryId}`)).json().data.status).toBe('void');
    const edited = await patch(`/api/v1/bills/${b.id}`, { lines: [{ accountId: code['6300'], unitPriceCents: 999 }] });
    expect(edited.statusCode, edited.body).toBe(200);
    expect((await get(`/api/v1/entries/${b.journalEntryId}`)).json().data.status).toBe('void');
    await refused(
      () => post(`/api/v1/entries/${edited.json().data.journalEntryId}/void`, { reason: 'new entry' }),
      409,
      'INVALID_STATE',
    );
    expect((await post(`/api/v1/bills/${b.id}/void`, { reason: 'properly' })).statusCode).toBe(200);
    expect((await get(`/api/v1/entries/${edited.json().data.journalEntryId}`)).json().data.status).toBe('void');
    expect((await post(`/api/v1/invoices/${inv.id}/void`, { reason: 'properly' })).statusCode).toBe(200);
    await agingMatchesControl();
  });
});
