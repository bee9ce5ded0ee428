import { randomUUID } from 'node:crypto';
import { createBankAccount, insertBankTransaction } from '@firm/banking';
import { bankingWrites } from '@firm/banking/testing';
import { createContact, createDocument } from '@firm/documents';
import { createApiKey } from '@firm/identity';
import { createEmbeddedPlatform } from '@firm/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let checkingId: string;
const ctx = () => ({ firmId: t.demo.firmId, actor: { kind: 'test', id: 'tester' } });

beforeAll(async () => {
  t = await createTestApp();
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/bank-accounts',
    headers: t.orgHeaders,
    payload: { accountId: t.account('1000'), institution: 'First Platypus Bank', mask: '0000' },
  });
  expect(res.statusCode).toBe(201);
  checkingId = res.json().data.id;
});
afterAll(() => t.close());

const row = (amountCents: number, date: string, description: string, counterparty: string | null = null) =>
  t.database.db.transaction((tx) =>
    insertBankTransaction(tx, ctx(), t.orgId, {
      bankAccountId: checkingId,
      date,
      amountCents,
      description,
      counterparty,
      sourceType: 'aggregator_bank_feed',
      externalId: randomUUID(),
    }),
  );

const post = (
  url: string,
  payload: object,
  key: string | null = randomUUID(),
  headers: Record<string, string> = t.orgHeaders,
) =>
  t.app.inject({
    method: 'POST',
    url,
    headers: { ...headers, ...(key ? { 'idempotency-key': key } : {}) },
    payload,
  });

const get = (url: string, headers: Record<string, string> = t.orgHeaders) =>
  t.app.inject({ method: 'GET', url, headers });

describe('bank accounts', () => {
  it('lists bank accounts in both forms and refuses a non-bank ledger account and a second register', async () => {
    const header = await get('/api/v1/bank-accounts');
    const path = await get(`/api/v1/companies/${t.orgId}/bank-accounts`, t.auth);
    expect(header.json().data).toEqual(path.json().data);
    expect(header.json().data[0]).toMatchObject({
      id: checkingId,
      accountId: t.account('1000'),
      accountSubtype: 'bank',
      name: 'Business Checking',
      mask: '0000',
      currency: 'USD',
      feedConnectionId: null,
    });
    const wrong = await post('/api/v1/bank-accounts', { accountId: t.account('6100') }, null);
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().error.code).toBe('INVALID_ACCOUNT');
    const again = await post('/api/v1/bank-accounts', { accountId: t.account('1000') }, null);
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('BANK_ACCOUNT_TAKEN');
  });
});

describe('bank transactions', () => {
  it('lists with filters and a cursor, in both forms and per account', async () => {
    await row(-1_899, '2026-05-02', 'UBER *TRIP', 'Uber');
    await row(250_000, '2026-05-03', 'ACH DEPOSIT ACME CORP', 'Acme Corp');
    await row(-6_500, '2026-05-04', 'SQ *BLUE BOTTLE COFFEE', 'Blue Bottle Coffee');
    const all = await get('/api/v1/bank-transactions?startDate=2026-05-01&endDate=2026-05-31');
    expect(all.statusCode).toBe(200);
    expect(all.json().data.map((r: { date: string }) => r.date)).toEqual(['2026-05-04', '2026-05-03', '2026-05-02']);
    expect(all.json().data[1]).toMatchObject({
      amountCents: 250_000,
      sourceType: 'aggregator_bank_feed',
      status: 'unreviewed',
      reconciled: false,
      reconciliationId: null,
      journalEntryId: null,
      documentIds: [],
    });
    const moneyIn = await get('/api/v1/bank-transactions?minAmountCents=1&startDate=2026-05-01');
    expect(moneyIn.json().data.map((r: { counterparty: string }) => r.counterparty)).toEqual(['Acme Corp']);
    const text = await get(`/api/v1/companies/${t.orgId}/bank-transactions?q=coffee`, t.auth);
    expect(text.json().data.map((r: { counterparty: string }) => r.counterparty)).toEqual(['Blue Bottle Coffee']);
    const first = await get(`/api/v1/bank-accounts/${checkingId}/transactions?limit=2&startDate=2026-05-01`);
    const second = await get(
      `/api/v1/bank-accounts/${checkingId}/transactions?limit=2&startDate=2026-05-01&cursor=${first.json().nextCursor}`,
    );
    expect([...first.json().data, ...second.json().data].map((r: { id: string }) => r.id)).toEqual(
      all.json().data.map((r: { id: string }) => r.id),
    );
    expect(second.json().nextCursor).toBeNull();
  });

  it('reclassifies once per Idempotency-Key, replaying the stored response', async () => {
    const id = await row(-12_000, '2026-05-10', 'STAPLES 0042', 'Staples');
    const key = randomUUID();
    const body = { accountId: t.account('6300'), reason: 'office supplies' };
    const first = await post(`/api/v1/bank-transactions/${id}/reclassify`, body, key);
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toMatchObject({ status: 'categorized', lines: [{ accountId: t.account('6300') }] });
    const before = await bankingWrites(t.database.db, t.orgId);
    const replay = await post(`/api/v1/bank-transactions/${id}/reclassify`, body, key);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(first.json());
    expect(await bankingWrites(t.database.db, t.orgId)).toEqual(before);
    const reused = await post(`/api/v1/bank-transactions/${id}/reclassify`, { ...body, reason: 'other' }, key);
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    const missing = await post(`/api/v1/bank-transactions/${id}/reclassify`, body, null);
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    expect(await bankingWrites(t.database.db, t.orgId)).toEqual(before);
  });

  it('answers 404 for another firm’s bank transaction and writes nothing', async () => {
    const other = await createOtherFirm(t.database.db, 'bank-other');
    const otherCtx = { firmId: other.firmId, actor: { kind: 'test', id: 'x' } };
    const cardAccount = other.accounts.find((a) => a.code === '1000')?.id as string;
    const theirId = await t.database.db.transaction(async (tx) => {
      const bank = await createBankAccount(tx, otherCtx, other.orgId, { accountId: cardAccount });
      return insertBankTransaction(tx, otherCtx, other.orgId, {
        bankAccountId: bank.id,
        date: '2026-05-01',
        amountCents: -100,
        description: 'theirs',
        sourceType: 'manual',
      });
    });
    const before = await bankingWrites(t.database.db, other.orgId);
    const read = await get(`/api/v1/bank-transactions/${theirId}`);
    expect(read.statusCode).toBe(404);
    expect(read.json().error.code).toBe('BANK_TRANSACTION_NOT_FOUND');
    for (const action of ['reclassify', 'exclude', 'reconcile']) {
      const res = await post(
        `/api/v1/bank-transactions/${theirId}/${action}`,
        action === 'reclassify' ? { accountId: t.account('6300'), reason: 'x' } : {},
      );
      expect(res.statusCode, action).toBe(404);
    }
    expect(await bankingWrites(t.database.db, other.orgId)).toEqual(before);
  });

  it('lists match candidates for a row', async () => {
    const id = await row(5_000, '2026-05-13', 'ACH DEPOSIT');
    const res = await get(`/api/v1/bank-transactions/${id}/match-candidates`);
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual([]);
    expect((await get(`/api/v1/bank-transactions/${randomUUID()}/match-candidates`)).statusCode).toBe(404);
  });

  it('takes an action whose fields are all optional without a body', async () => {
    const id = await row(-250, '2026-05-12', 'ATM FEE');
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/bank-transactions/${id}/exclude`,
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().data.status).toBe('excluded');
  });

  it('needs bank:write to act and bank:read to list', async () => {
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['bank:read'] });
    const headers = { authorization: `Bearer ${key}`, 'x-organization-id': t.orgId };
    expect((await get('/api/v1/bank-transactions', headers)).statusCode).toBe(200);
    const id = await row(-100, '2026-05-11', 'FEE');
    const res = await post(`/api/v1/bank-transactions/${id}/exclude`, {}, randomUUID(), headers);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
  });
});

describe('register rows of posting routes', () => {
  it('writes the bill payment’s register row with the posting, and lets the bank’s row take its place', async () => {
    const db = t.database.db;
    const { vendor, bill } = await db.transaction(async (tx) => {
      const v = await createContact(tx, ctx(), t.orgId, { kind: 'vendor', name: 'Register Vendor' });
      const b = await createDocument(tx, ctx(), t.orgId, 'bill', {
        contactId: v.id,
        date: '2026-05-20',
        lines: [{ accountId: t.account('6300'), unitPriceCents: 33_300 }],
      });
      return { vendor: v, bill: b };
    });
    const paid = await post('/api/v1/bill-payments', {
      txnDate: '2026-05-21',
      sourceAccountId: t.account('1000'),
      vendorId: vendor.id,
      allocations: [{ billId: bill.id, amountCents: 33_300 }],
    });
    expect(paid.statusCode, paid.body).toBe(201);
    const [registered] = paid.json().bankTransactionIds;
    const postingRow = (await get(`/api/v1/bank-transactions/${registered}`)).json().data;
    expect(postingRow).toMatchObject({ sourceType: 'posting', status: 'matched', amountCents: -33_300 });
    const cashBefore = (await get('/api/v1/accounts/' + t.account('1000'))).json().data;

    const feedRow = await row(-33_300, '2026-05-22', 'ACH PAYMENT REGISTER VENDOR');
    const candidates = (await get(`/api/v1/bank-transactions/${feedRow}/match-candidates`)).json().data;
    const payment = candidates.find((c: { type: string }) => c.type === 'bill_payment');
    expect(payment).toMatchObject({ exact: true, amountCents: 33_300 });
    const matched = await post(`/api/v1/bank-transactions/${feedRow}/match`, {
      documents: [{ documentId: payment.documentId }],
    });
    expect(matched.statusCode, matched.body).toBe(200);
    expect(matched.json().data).toMatchObject({ status: 'matched', journalEntryIds: [paid.json().journalEntryId] });
    expect((await get(`/api/v1/bank-transactions/${registered}`)).statusCode).toBe(404);
    expect((await get('/api/v1/accounts/' + t.account('1000'))).json().data).toEqual(cashBefore);
  });
});

describe('register rows of payments, whichever door they come through', () => {
  it('gives a customer payment deposited to a bank-linked account its register row, which the feed row replaces', async () => {
    const db = t.database.db;
    const { customer, invoice } = await db.transaction(async (tx) => {
      const c = await createContact(tx, ctx(), t.orgId, { kind: 'customer', name: 'Register Customer' });
      const i = await createDocument(tx, ctx(), t.orgId, 'invoice', {
        contactId: c.id,
        date: '2026-05-20',
        lines: [{ accountId: t.account('4100'), unitPriceCents: 48_000 }],
      });
      return { customer: c, invoice: i };
    });
    const paid = await post(
      '/api/v1/customer-payments',
      {
        contactId: customer.id,
        date: '2026-05-23',
        depositAccountId: t.account('1000'),
        allocations: [{ invoiceId: invoice.id, amountCents: 48_000 }],
      },
      null,
    );
    expect(paid.statusCode, paid.body).toBe(201);
    const { id: paymentId, bankTransactionIds } = paid.json().data;
    expect(bankTransactionIds).toHaveLength(1);
    expect((await get(`/api/v1/bank-transactions/${bankTransactionIds[0]}`)).json().data).toMatchObject({
      bankAccountId: checkingId,
      sourceType: 'posting',
      status: 'matched',
      amountCents: 48_000,
      date: '2026-05-23',
    });
    const cashBefore = (await get('/api/v1/accounts/' + t.account('1000'))).json().data;

    const feedRow = await row(48_000, '2026-05-24', 'DEPOSIT REGISTER CUSTOMER');
    const candidates = (await get(`/api/v1/bank-transactions/${feedRow}/match-candidates`)).json().data;
    const payment = candidates.find((c: { documentId: string }) => c.documentId === paymentId);
    expect(payment).toMatchObject({ type: 'customer_payment', exact: true });
    const matched = await post(`/api/v1/bank-transactions/${feedRow}/match`, {
      documents: [{ documentId: paymentId }],
    });
    expect(matched.statusCode, matched.body).toBe(200);
    expect((await get(`/api/v1/bank-transactions/${bankTransactionIds[0]}`)).statusCode).toBe(404);
    expect((await get('/api/v1/accounts/' + t.account('1000'))).json().data).toEqual(cashBefore);
  });

  it('gives an agent’s BillPayment through a bank-linked account its register row, and none through a card without one', async () => {
    const db = t.database.db;
    const { vendor, bills } = await db.transaction(async (tx) => {
      const v = await createContact(tx, ctx(), t.orgId, { kind: 'vendor', name: 'Agent Paid Vendor' });
      const bill = (cents: number) =>
        createDocument(tx, ctx(), t.orgId, 'bill', {
          contactId: v.id,
          date: '2026-06-02',
          lines: [{ accountId: t.account('6300'), unitPriceCents: cents }],
        });
      return { vendor: v, bills: [await bill(12_500), await bill(7_000)] };
    });
    const platform = createEmbeddedPlatform(db, {
      firmId: t.demo.firmId,
      organizationId: t.orgId,
      acctCompanyId: t.orgId,
      actor: { kind: 'test', id: 'agent' },
    });
    const pay = (billId: string, amount: number, payType: object) =>
      platform.create('BillPayment', {
        VendorRef: { value: vendor.id },
        TxnDate: '2026-06-05',
        TotalAmt: amount,
        ...payType,
        Line: [{ Amount: amount, LinkedTxn: [{ TxnId: billId, TxnType: 'Bill' }] }],
      });
    const byCheck = await pay(bills[0]?.id as string, 125, {
      PayType: 'Check',
      CheckPayment: { BankAccountRef: { value: t.account('1000') } },
    });
    expect(byCheck.bankTransactionIds).toHaveLength(1);
    expect((await get(`/api/v1/bank-transactions/${byCheck.bankTransactionIds?.[0]}`)).json().data).toMatchObject({
      bankAccountId: checkingId,
      sourceType: 'posting',
      status: 'matched',
      amountCents: -12_500,
    });
    const byCard = await pay(bills[1]?.id as string, 70, {
      PayType: 'CreditCard',
      CreditCardPayment: { CCAccountRef: { value: t.account('2100') } },
    });
    expect(byCard.bankTransactionIds).toEqual([]);
  });
});

describe('register rows of purchases, deposits and transfers', () => {
  it('writes one register row per bank-linked side with the posting, and replays the same ids', async () => {
    const savings = await post('/api/v1/bank-accounts', { accountId: t.account('1010'), mask: '1010' }, null);
    expect(savings.statusCode).toBe(201);
    const savingsId = savings.json().data.id;
    const key = randomUUID();
    const purchase = {
      date: '2026-08-03',
      sourceAccountId: t.account('1000'),
      categoryAccountId: t.account('6100'),
      amountCents: 4_321,
      description: 'Printer paper',
    };
    const paid = await post(`/api/v1/companies/${t.orgId}/purchases`, purchase, key, t.auth);
    expect(paid.statusCode, paid.body).toBe(201);
    const ids: string[] = paid.json().bankTransactionIds;
    expect(ids).toHaveLength(1);
    expect((await get(`/api/v1/bank-transactions/${ids[0]}`)).json().data).toMatchObject({
      bankAccountId: checkingId,
      sourceType: 'posting',
      status: 'categorized',
      amountCents: -4_321,
      date: '2026-08-03',
      description: 'Printer paper',
      journalEntryId: paid.json().journalEntryId,
      reconciled: false,
    });
    const replay = await post(`/api/v1/companies/${t.orgId}/purchases`, purchase, key, t.auth);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(paid.json());

    const moved = await post('/api/v1/transfers', {
      txnDate: '2026-08-04',
      fromAccountId: t.account('1000'),
      toAccountId: t.account('1010'),
      amount: 50_000,
    });
    expect(moved.statusCode, moved.body).toBe(201);
    const [into, out] = moved.json().bankTransactionIds;
    expect((await get(`/api/v1/bank-transactions/${out}`)).json().data).toMatchObject({
      bankAccountId: checkingId,
      amountCents: -50_000,
    });
    expect((await get(`/api/v1/bank-transactions/${into}`)).json().data).toMatchObject({
      bankAccountId: savingsId,
      amountCents: 50_000,
      description: 'Transfer',
    });

    const deposited = await post('/api/v1/deposits', {
      txnDate: '2026-08-05',
      destinationAccountId: t.account('1010'),
      payerName: 'Interest',
      lines: [{ accountId: t.account('4100'), amount: 125 }],
    });
    expect(deposited.statusCode, deposited.body).toBe(201);
    expect(deposited.json().bankTransactionIds).toHaveLength(1);

    // A card without a register, and a journal entry, write no register row.
    const card = await post(
      `/api/v1/companies/${t.orgId}/purchases`,
      {
        ...purchase,
        sourceAccountId: t.account('2100'),
      },
      randomUUID(),
      t.auth,
    );
    expect(card.statusCode, card.body).toBe(201);
    expect(card.json().bankTransactionIds).toBeUndefined();
  });

  it('offers a posting’s row to the bank’s row of the same money, which takes its place: booked once', async () => {
    const paid = await post(
      `/api/v1/companies/${t.orgId}/purchases`,
      {
        date: '2026-08-10',
        sourceAccountId: t.account('1000'),
        categoryAccountId: t.account('6100'),
        amountCents: 7_777,
        description: 'Office chairs',
      },
      randomUUID(),
      t.auth,
    );
    const [postingRow] = paid.json().bankTransactionIds;
    const cashBefore = (await get('/api/v1/accounts/' + t.account('1000'))).json().data;
    const feedRow = await row(-7_777, '2026-08-12', 'CHAIRS INC', 'Chairs Inc');
    const candidates = (await get(`/api/v1/bank-transactions/${feedRow}/match-candidates`)).json().data;
    expect(candidates).toContainEqual(
      expect.objectContaining({
        type: 'posting',
        documentId: null,
        bankTransactionId: postingRow,
        journalEntryId: paid.json().journalEntryId,
        amountCents: 7_777,
        exact: true,
      }),
    );

    const refusals: [object, number, string][] = [
      [{ bankTransactionId: postingRow, documents: [{ documentId: randomUUID() }] }, 400, 'VALIDATION_ERROR'],
      [{}, 400, 'VALIDATION_ERROR'],
      [{ bankTransactionId: postingRow, differenceAccountId: t.account('6100') }, 400, 'VALIDATION_ERROR'],
      [{ bankTransactionId: await row(-1_234, '2026-08-12', 'NOT A POSTING') }, 422, 'INVALID_ALLOCATION'],
      [{ bankTransactionId: randomUUID() }, 422, 'INVALID_ALLOCATION'],
      [{ bankTransactionId: feedRow }, 422, 'INVALID_ALLOCATION'],
    ];
    const writesBefore = await bankingWrites(t.database.db, t.orgId);
    for (const [body, status, code] of refusals) {
      const res = await post(`/api/v1/bank-transactions/${feedRow}/match`, body);
      expect(res.statusCode, res.body).toBe(status);
      expect(res.json().error.code).toBe(code);
    }
    expect(await bankingWrites(t.database.db, t.orgId)).toEqual(writesBefore);
    const otherAmount = await row(-7_000, '2026-08-12', 'CHAIRS INC PARTIAL');
    const mismatch = await post(`/api/v1/bank-transactions/${otherAmount}/match`, { bankTransactionId: postingRow });
    expect(mismatch.statusCode).toBe(422);
    expect(mismatch.json().error.code).toBe('AMOUNT_MISMATCH');

    const matched = await post(`/api/v1/bank-transactions/${feedRow}/match`, { bankTransactionId: postingRow });
    expect(matched.statusCode, matched.body).toBe(200);
    expect(matched.json().data).toMatchObject({
      status: 'matched',
      sourceType: 'aggregator_bank_feed',
      journalEntryIds: [paid.json().journalEntryId],
    });
    expect((await get(`/api/v1/bank-transactions/${postingRow}`)).statusCode).toBe(404);
    expect((await get('/api/v1/accounts/' + t.account('1000'))).json().data).toEqual(cashBefore);
    const again = (await get(`/api/v1/bank-transactions/${feedRow}/match-candidates`)).json().data;
    expect(again.some((c: { bankTransactionId: string | null }) => c.bankTransactionId === postingRow)).toBe(false);
  });
});

describe('reconciliations', () => {
  it('opens, reconciles, refuses to finish unbalanced, finishes, lists and reports', async () => {
    const deposit = await row(80_000, '2026-06-02', 'DEPOSIT');
    const fee = await row(-1_500, '2026-06-03', 'MONTHLY FEE');
    await post(`/api/v1/bank-transactions/${deposit}/reclassify`, { accountId: t.account('4100'), reason: 'r' });
    await post(`/api/v1/bank-transactions/${fee}/reclassify`, { accountId: t.account('6100'), reason: 'r' });
    const noSession = await post(`/api/v1/bank-transactions/${deposit}/reconcile`, {});
    expect(noSession.statusCode).toBe(409);
    expect(noSession.json().error.code).toBe('NO_OPEN_RECONCILIATION');

    const opened = await post('/api/v1/reconciliations', {
      bankAccountId: checkingId,
      statementEndDate: '2026-06-30',
      statementEndingBalanceCents: 78_500,
    });
    expect(opened.statusCode).toBe(201);
    const session = opened.json().data;
    expect(session).toMatchObject({ status: 'open', openingBalanceCents: 0 });
    const second = await post('/api/v1/reconciliations', {
      bankAccountId: checkingId,
      statementEndDate: '2026-07-31',
      statementEndingBalanceCents: 0,
    });
    expect(second.json().error.code).toBe('RECONCILIATION_OPEN');

    // Rows of May, categorized earlier in this file, are part of the books too; reconcile only June's.
    await post(`/api/v1/bank-transactions/${deposit}/reconcile`, { reconciliationId: session.id });
    const before = await bankingWrites(t.database.db, t.orgId);
    const unbalanced = await post(`/api/v1/reconciliations/${session.id}/finish`, {});
    expect(unbalanced.statusCode).toBe(422);
    expect(unbalanced.json().error.code).toBe('RECONCILIATION_UNBALANCED');
    expect(await bankingWrites(t.database.db, t.orgId)).toEqual(before);

    await post(`/api/v1/bank-transactions/${fee}/reconcile`, {});
    const finished = await post(`/api/v1/reconciliations/${session.id}/finish`, {});
    expect(finished.statusCode).toBe(200);
    expect(finished.json().data).toMatchObject({ status: 'finished', clearedBalanceCents: 78_500, reconciledCount: 2 });

    const listed = await get(`/api/v1/companies/${t.orgId}/reconciliations?bankAccountId=${checkingId}`, t.auth);
    expect(listed.json().data.map((r: { id: string }) => r.id)).toEqual([session.id]);
    const report = await get('/api/v1/reports/bank-reconciliation-status?endDate=2026-06-30');
    expect(report.statusCode).toBe(200);
    expect(report.json().rows[0]).toMatchObject({
      bankAccountId: checkingId,
      lastReconciledDate: '2026-06-30',
      lastReconciledBalanceCents: 78_500,
      openReconciliationId: null,
    });
    const reconciled = await get(`/api/v1/bank-transactions/${fee}`);
    expect(reconciled.json().data).toMatchObject({ reconciled: true, reconciliationId: session.id });
  });
});
