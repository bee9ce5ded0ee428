import { recordVersions } from '@firm/db';
import { COVERAGE } from '@firm/gateway';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

/**
 * Optimistic concurrency under real concurrency: N writers that all read SyncToken 0 send their change at once, and
 * exactly one gets through. On Postgres the requests run on separate connections and wait on each other's row
 * locks; on the embedded database they run one after another, which must give the same answer.
 */
const WRITERS = 6;

let t: TestApp;
let base: string;
beforeAll(async () => {
  t = await createTestApp();
  base = `/agent/v1/acct/clients/${t.orgId}`;
});
afterAll(() => t.close());

let keyNo = 0;
const send = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  t.app.inject({
    method,
    url,
    headers: { ...t.auth, ...(method === 'POST' ? { 'idempotency-key': `sync-${++keyNo}` } : {}) },
    ...(payload ? { payload } : {}),
  });

async function created(res: Awaited<ReturnType<typeof send>>): Promise<{ Id: string; SyncToken: string }> {
  expect(res.statusCode, res.body).toBe(201);
  const data = res.json().data;
  return data.data ?? data;
}

/** Sends every request at once and tells how each ended. */
async function race(requests: (() => ReturnType<typeof send>)[]) {
  const answers = await Promise.all(requests.map((r) => r()));
  const ok = answers.filter((a) => a.statusCode === 200);
  const stale = answers.filter((a) => a.statusCode === 409 && a.json().error.code === 'STALE_SYNC_TOKEN');
  // A writer that waited for a delete finds the record deleted, as one that came after it would.
  const gone = answers.filter((a) => a.statusCode === 404 && a.json().error.code === 'RECORD_NOT_FOUND');
  const other = answers
    .filter((a) => !ok.includes(a) && !stale.includes(a) && !gone.includes(a))
    .map((a) => `${a.statusCode} ${a.body}`);
  return { ok, stale, gone, other };
}

function winner<T>(ok: T[]): T {
  expect(ok).toHaveLength(1);
  return ok[0] as T;
}

async function versionOf(id: string): Promise<number> {
  const [row] = await t.database.db
    .select({ version: recordVersions.version })
    .from(recordVersions)
    .where(and(eq(recordVersions.organizationId, t.orgId), eq(recordVersions.recordId, id)));
  return row?.version ?? 0;
}

const expense = (amount: number) => ({
  Amount: amount,
  DetailType: 'AccountBasedExpenseLineDetail',
  AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6300') } },
});
const sale = (amount: number) => ({
  Amount: amount,
  DetailType: 'SalesItemLineDetail',
  SalesItemLineDetail: { ItemAccountRef: { value: t.account('4000') }, Qty: 1 },
});

let customerId = '';
let vendorId = '';

/** A payload that creates one record of each entity the gateway can update. */
const ENTITY_PAYLOADS: Record<string, (n: number) => object> = {
  Account: (n) => ({ Name: `Race account ${n}`, AcctNum: `69${n}0`, AccountType: 'Expense' }),
  Customer: (n) => ({ DisplayName: `Race customer ${n}` }),
  Vendor: (n) => ({ DisplayName: `Race vendor ${n}` }),
  Item: (n) => ({ Name: `Race item ${n}`, Type: 'Service', IncomeAccountRef: { value: t.account('4000') } }),
};

/** A payload that creates one transaction of each type, some of which need an open document to pay. */
const TRANSACTION_PAYLOADS: Record<string, () => Promise<object>> = {
  invoice: async () => ({ CustomerRef: { value: customerId }, TxnDate: '2026-04-01', Line: [sale(100)] }),
  'sales-receipt': async () => ({
    CustomerRef: { value: customerId },
    TxnDate: '2026-04-01',
    DepositToAccountRef: { value: t.account('1000') },
    Line: [sale(50)],
  }),
  'credit-memo': async () => ({ CustomerRef: { value: customerId }, TxnDate: '2026-04-01', Line: [sale(20)] }),
  'refund-receipt': async () => ({
    CustomerRef: { value: customerId },
    TxnDate: '2026-04-01',
    DepositToAccountRef: { value: t.account('1000') },
    Line: [sale(10)],
  }),
  estimate: async () => ({ CustomerRef: { value: customerId }, TxnDate: '2026-04-01', Line: [sale(70)] }),
  bill: async () => ({ VendorRef: { value: vendorId }, TxnDate: '2026-04-01', Line: [expense(80)] }),
  'vendor-credit': async () => ({ VendorRef: { value: vendorId }, TxnDate: '2026-04-01', Line: [expense(5)] }),
  payment: async () => {
    const invoice = await created(await transaction('invoice'));
    return {
      CustomerRef: { value: customerId },
      TxnDate: '2026-04-10',
      TotalAmt: 100,
      DepositToAccountRef: { value: t.account('1000') },
      Line: [{ Amount: 100, LinkedTxn: [{ TxnId: invoice.Id, TxnType: 'Invoice' }] }],
    };
  },
  'bill-payment': async () => {
    const bill = await created(await transaction('bill'));
    return {
      VendorRef: { value: vendorId },
      PayType: 'Check',
      TxnDate: '2026-04-10',
      TotalAmt: 80,
      CheckPayment: { BankAccountRef: { value: t.account('1000') } },
      Line: [{ Amount: 80, LinkedTxn: [{ TxnId: bill.Id, TxnType: 'Bill' }] }],
    };
  },
  'journal-entry': async () => ({
    TxnDate: '2026-04-01',
    Line: [
      {
        Amount: 30,
        DetailType: 'JournalEntryLineDetail',
        JournalEntryLineDetail: { PostingType: 'Debit', AccountRef: { value: t.account('6300') } },
      },
      {
        Amount: 30,
        DetailType: 'JournalEntryLineDetail',
        JournalEntryLineDetail: { PostingType: 'Credit', AccountRef: { value: t.account('1000') } },
      },
    ],
  }),
  purchase: async () => ({ TxnDate: '2026-04-01', AccountRef: { value: t.account('1000') }, Line: [expense(12)] }),
  deposit: async () => ({
    TxnDate: '2026-04-01',
    DepositToAccountRef: { value: t.account('1000') },
    Line: [
      { Amount: 40, DetailType: 'DepositLineDetail', DepositLineDetail: { AccountRef: { value: t.account('4000') } } },
    ],
  }),
  transfer: async () => ({
    TxnDate: '2026-04-01',
    FromAccountRef: { value: t.account('1000') },
    ToAccountRef: { value: t.account('1010') },
    Amount: 25,
  }),
};

async function transaction(entityType: string) {
  const build = TRANSACTION_PAYLOADS[entityType];
  if (!build) throw new Error(`no payload for ${entityType}`);
  const payload = await build();
  return send('POST', `${base}/transactions`, { entityType, payload });
}

const updatable = COVERAGE.filter((e) => e.operations.includes('update'));
const entities = updatable.filter((e) => !e.transactionType);
const transactions = COVERAGE.filter((e) => e.transactionType);

describe('gateway writes with one SyncToken, sent at once', () => {
  beforeAll(async () => {
    customerId = (await created(await send('POST', `${base}/entities/Customer`, { DisplayName: 'Race payer' }))).Id;
    vendorId = (await created(await send('POST', `${base}/entities/Vendor`, { DisplayName: 'Race payee' }))).Id;
  });

  it('covers every entity and transaction type the gateway writes', () => {
    expect(Object.keys(ENTITY_PAYLOADS).sort()).toEqual(entities.map((e) => e.entity).sort());
    expect(Object.keys(TRANSACTION_PAYLOADS).sort()).toEqual(transactions.map((e) => e.transactionType).sort());
  });

  it.each(entities.map((e) => e.entity))('%s update: one writer gets through, the rest are stale', async (entity) => {
    const record = await created(await send('POST', `${base}/entities/${entity}`, ENTITY_PAYLOADS[entity]?.(1)));
    const { ok, stale, other } = await race(
      Array.from(
        { length: WRITERS },
        (_, i) => () =>
          send('PATCH', `${base}/entities/${entity}/${record.Id}`, { SyncToken: '0', Description: `writer ${i}` }),
      ),
    );
    expect(other).toEqual([]);
    expect(ok).toHaveLength(1);
    expect(stale).toHaveLength(WRITERS - 1);
    const now = (await send('GET', `${base}/entities/${entity}/${record.Id}`)).json().data;
    expect(now.SyncToken).toBe('1');
    expect(stale.every((s) => s.json().error.details[0].current.SyncToken === '1')).toBe(true);
  });

  it.each(transactions.filter((e) => e.operations.includes('update')).flatMap((e) => e.transactionType ?? []))(
    '%s update: one writer gets through, the rest are stale',
    async (entityType) => {
      const record = await created(await transaction(entityType));
      const { ok, stale, other } = await race(
        Array.from(
          { length: WRITERS },
          (_, i) => () =>
            send('PATCH', `${base}/transactions/${record.Id}`, {
              entityType,
              payload: { SyncToken: '0', PrivateNote: `writer ${i}` },
            }),
        ),
      );
      expect(other).toEqual([]);
      expect(ok).toHaveLength(1);
      expect(stale).toHaveLength(WRITERS - 1);
      const now = (await send('GET', `${base}/transactions/${record.Id}?entityType=${entityType}`)).json().data;
      expect(now.SyncToken).toBe('1');
      expect(now.PrivateNote).toBe(winner(ok).json().data.data.PrivateNote);
    },
  );

  it.each(transactions.flatMap((e) => e.transactionType ?? []))(
    '%s delete: one writer voids it, the rest find it deleted',
    async (entityType) => {
      const record = await created(await transaction(entityType));
      const { ok, gone, other } = await race(
        Array.from(
          { length: WRITERS },
          () => () => send('DELETE', `${base}/transactions/${record.Id}`, { entityType, syncToken: '0' }),
        ),
      );
      expect(other).toEqual([]);
      expect(ok).toHaveLength(1);
      expect(gone).toHaveLength(WRITERS - 1);
      // One void, not several: the version is the one the winner reported.
      expect(await versionOf(record.Id)).toBe(Number(winner(ok).json().data.data.SyncToken));
    },
  );

  it('an update and a delete sent at once with one SyncToken: one of them, never both', async () => {
    const record = await created(await transaction('bill'));
    const { ok, stale, gone, other } = await race([
      () =>
        send('PATCH', `${base}/transactions/${record.Id}`, {
          entityType: 'bill',
          payload: { SyncToken: '0', PrivateNote: 'edit' },
        }),
      () => send('DELETE', `${base}/transactions/${record.Id}`, { entityType: 'bill', syncToken: '0' }),
      () =>
        send('PATCH', `${base}/transactions/${record.Id}`, {
          entityType: 'bill',
          payload: { SyncToken: '0', PrivateNote: 'edit 2' },
        }),
    ]);
    expect(other).toEqual([]);
    expect(ok).toHaveLength(1);
    expect(stale.length + gone.length).toBe(2);
    expect(await versionOf(record.Id)).toBe(Number(winner(ok).json().data.data.SyncToken));
  });
});
