import { finishReconciliation, openReconciliation, reclassifyBankTransaction } from '@firm/banking';
import { type BankingFixture, createBankingFixture } from '@firm/banking/testing';
import { isDomainError } from '@firm/core';
import { closeRuleSettings, type Db } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createDocument, createPayment, voidDocument, voidPayment } from '@firm/documents';
import {
  createAccount,
  createDraftEntry,
  createScheduledEntry,
  postEntry,
  postTransaction,
  runDueScheduledEntries,
  setBooksClosedThrough,
} from '@firm/ledger';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { type ChecklistItem, computeChecklist } from './checklist';
import { listCloseRules, setCloseRule } from './rules';

let database: TestDatabase;
let db: Db;
let f: BankingFixture;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());
beforeEach(async () => {
  f = await createBankingFixture(db);
});

const MARCH = { periodStart: '2026-03-01', periodEnd: '2026-03-31' };
const checklist = () => computeChecklist(db, { firmId: f.firmId, organizationId: f.orgId, ...MARCH });
const itemsOf = async (kind: string): Promise<ChecklistItem[]> => (await checklist()).filter((i) => i.kind === kind);
const ids = (item: ChecklistItem | undefined) => item?.evidence.map((e) => e.id) ?? [];

const journal = (date: string, debit: string, credit: string, cents: number) =>
  db.transaction((tx) =>
    postTransaction(tx, f.ctx, f.orgId, {
      kind: 'journal_entry',
      date,
      lines: [
        { accountId: f.account(debit), debitCents: cents },
        { accountId: f.account(credit), creditCents: cents },
      ],
    }),
  );
const bill = (date: string, cents: number, number: string, contactId = f.vendor.id, account = '6300') =>
  db.transaction((tx) =>
    createDocument(tx, f.ctx, f.orgId, 'bill', {
      contactId,
      date,
      dueDate: date,
      number,
      lines: [{ accountId: f.account(account), description: 'Supplies', unitPriceCents: cents }],
    }),
  );
const invoice = (date: string, dueDate: string, cents: number) =>
  db.transaction((tx) =>
    createDocument(tx, f.ctx, f.orgId, 'invoice', {
      contactId: f.customer.id,
      date,
      dueDate,
      lines: [{ accountId: f.account('4000'), description: 'Goods', unitPriceCents: cents }],
    }),
  );
const voidBill = (id: string) => db.transaction((tx) => voidDocument(tx, f.ctx, f.orgId, 'bill', id, 'entered twice'));
const reconcile = (bankAccountId: string, through: string, balanceCents = 0) =>
  db.transaction(async (tx) => {
    const session = await openReconciliation(tx, f.ctx, f.orgId, {
      bankAccountId,
      statementEndDate: through,
      statementEndingBalanceCents: balanceCents,
    });
    await finishReconciliation(tx, f.ctx, f.orgId, session.id);
  });

describe('the checklist rules', () => {
  it('lists bank and card registers not reconciled through the period end until they are', async () => {
    const before = await itemsOf('bank_account_unreconciled');
    expect(before.map((i) => ids(i)[0]).sort()).toEqual([f.checking.id, f.card.id].sort());
    expect(before[0]).toMatchObject({ severity: 'blocking' });
    await reconcile(f.checking.id, '2026-02-28');
    expect((await itemsOf('bank_account_unreconciled')).find((i) => ids(i)[0] === f.checking.id)?.message).toContain(
      'reconciled through 2026-02-28',
    );
    await reconcile(f.checking.id, '2026-03-31');
    await reconcile(f.card.id, '2026-04-30');
    expect(await itemsOf('bank_account_unreconciled')).toEqual([]);
  });

  it('lists rows dated in the period waiting for review, and forgets them once reviewed', async () => {
    const row = await f.row({ amountCents: -2_500, date: '2026-03-10' });
    await f.row({ amountCents: -1_000, date: '2026-04-02' });
    const [item, ...rest] = await itemsOf('bank_rows_unreviewed');
    expect(rest).toEqual([]);
    expect(ids(item)).toEqual([f.checking.id, row]);
    expect(item?.message).toContain('1 row');
    await db.transaction((tx) =>
      reclassifyBankTransaction(tx, f.ctx, f.orgId, row, { accountId: f.account('6100'), reason: 'bank fee' }),
    );
    expect(await itemsOf('bank_rows_unreviewed')).toEqual([]);
  });

  it('lists a suspense or uncategorized account with a balance until it is cleared', async () => {
    const uncategorized = await db.transaction((tx) =>
      createAccount(tx, f.ctx, f.orgId, { code: '6999', name: 'Uncategorized Expense', type: 'expense' }),
    );
    const post = (debit: string, credit: string) =>
      db.transaction((tx) =>
        postTransaction(tx, f.ctx, f.orgId, {
          kind: 'journal_entry',
          date: '2026-03-12',
          lines: [
            { accountId: debit, debitCents: 4_200 },
            { accountId: credit, creditCents: 4_200 },
          ],
        }),
      );
    await post(uncategorized.id, f.account('3000'));
    const [item] = await itemsOf('suspense_balance');
    expect(ids(item)).toEqual([uncategorized.id]);
    expect(item?.message).toContain('42.00');
    await post(f.account('6300'), uncategorized.id);
    expect(await itemsOf('suspense_balance')).toEqual([]);
  });

  it('lists an overdrawn bank, receivables in credit and payables in debit at the period end', async () => {
    await journal('2026-03-05', '6100', '1000', 50_000);
    await journal('2026-03-06', '2000', '3000', 7_000);
    await journal('2026-03-07', '3100', '1200', 3_000);
    await journal('2026-04-05', '1000', '3000', 90_000);
    const items = await itemsOf('balance_wrong_side');
    expect(items.map((i) => ids(i)[0]).sort()).toEqual(
      [f.account('1000'), f.account('1200'), f.account('2000')].sort(),
    );
    expect(items.find((i) => ids(i)[0] === f.account('1000'))?.message).toContain('is overdrawn by 500.00');
    await journal('2026-03-20', '1000', '3000', 50_000);
    await journal('2026-03-21', '3000', '2000', 7_000);
    await journal('2026-03-22', '1200', '3100', 3_000);
    expect(await itemsOf('balance_wrong_side')).toEqual([]);
  });

  it('lists draft entries dated in the period until they are posted', async () => {
    const draft = await db.transaction((tx) =>
      createDraftEntry(tx, f.ctx, f.orgId, {
        date: '2026-03-31',
        memo: 'Accrue wages',
        lines: [
          { accountId: f.account('6900'), debitCents: 1_000 },
          { accountId: f.account('2200'), creditCents: 1_000 },
        ],
      }),
    );
    await db.transaction((tx) =>
      createDraftEntry(tx, f.ctx, f.orgId, {
        date: '2026-04-01',
        lines: [
          { accountId: f.account('6900'), debitCents: 1_000 },
          { accountId: f.account('2200'), creditCents: 1_000 },
        ],
      }),
    );
    const [item, ...rest] = await itemsOf('draft_entries');
    expect(rest).toEqual([]);
    expect(ids(item)).toEqual([draft.id]);
    await db.transaction((tx) => postEntry(tx, f.ctx, f.orgId, draft.id));
    expect(await itemsOf('draft_entries')).toEqual([]);
  });

  it('lists a scheduled entry that has not run for the period until it runs', async () => {
    const rent = await createScheduledEntry(db, f.ctx, f.orgId, {
      name: 'Rent',
      lines: [
        { accountId: f.account('6400'), debitCents: 100_000 },
        { accountId: f.account('2000'), creditCents: 100_000 },
      ],
      schedule: { frequency: 'monthly', dayOfMonth: 5, startDate: '2026-03-05' },
    });
    const [item] = await itemsOf('scheduled_entry_missed');
    expect(ids(item)).toEqual([rent.id]);
    expect(item?.message).toBe('Scheduled entry "Rent" has not run for 2026-03-05');
    await runDueScheduledEntries(db, { now: new Date('2026-04-01T00:00:00Z'), organizationId: f.orgId });
    expect(await itemsOf('scheduled_entry_missed')).toEqual([]);
  });

  it('lists a scheduled entry whose occurrence in the period failed until it is posted', async () => {
    const accrual = await createScheduledEntry(db, f.ctx, f.orgId, {
      name: 'Accrued interest',
      lines: [
        { accountId: f.account('7000'), debitCents: 5_000 },
        { accountId: f.account('2200'), creditCents: 5_000 },
      ],
      schedule: { frequency: 'monthly', dayOfMonth: 31, startDate: '2026-03-31', endDate: '2026-03-31' },
    });
    const closeBooks = (date: string | null) => db.transaction((tx) => setBooksClosedThrough(tx, f.ctx, f.orgId, date));
    await closeBooks('2026-03-31');
    await runDueScheduledEntries(db, { now: new Date('2026-04-01T00:00:00Z'), organizationId: f.orgId });
    const [item, ...rest] = await itemsOf('scheduled_entry_missed');
    expect(rest).toEqual([]);
    expect(ids(item)).toEqual([accrual.id]);
    expect(item?.message).toBe('Scheduled entry "Accrued interest" failed for 2026-03-31 (PERIOD_CLOSED)');
    await closeBooks(null);
    await runDueScheduledEntries(db, { now: new Date('2026-04-02T00:00:00Z'), organizationId: f.orgId });
    expect(await itemsOf('scheduled_entry_missed')).toEqual([]);
  });

  it('lists invoices over 90 days past due at the period end, by the tuned number of days', async () => {
    const old = await invoice('2025-11-01', '2025-11-20', 30_000);
    await invoice('2026-01-10', '2026-02-09', 20_000);
    const [item, ...rest] = await itemsOf('receivables_overdue');
    expect(rest).toEqual([]);
    expect(ids(item)).toEqual([old.id]);
    expect(item).toMatchObject({ severity: 'advisory' });
    expect(item?.message).toContain('131 days past due');
    await setCloseRule(db, f.firmId, 'receivables_overdue', { thresholds: { days: 30 } });
    expect(await itemsOf('receivables_overdue')).toHaveLength(2);
    await setCloseRule(db, f.firmId, 'receivables_overdue', { thresholds: { days: 200 } });
    expect(await itemsOf('receivables_overdue')).toEqual([]);
    await setCloseRule(db, f.firmId, 'receivables_overdue', { thresholds: { days: null } });
    await db.transaction((tx) => voidDocument(tx, f.ctx, f.orgId, 'invoice', old.id, 'never delivered'));
    expect(await itemsOf('receivables_overdue')).toEqual([]);
  });

  it('lists bills over 90 days past due until they are settled', async () => {
    const old = await bill('2025-12-01', 9_900, 'B-1');
    expect(ids((await itemsOf('payables_overdue'))[0])).toEqual([old.id]);
    await voidBill(old.id);
    expect(await itemsOf('payables_overdue')).toEqual([]);
  });

  it('lists a customer payment left unapplied until it is voided', async () => {
    const { document } = await db.transaction((tx) =>
      createPayment(tx, f.ctx, f.orgId, {
        type: 'customer_payment',
        contactId: f.customer.id,
        date: '2026-03-15',
        bankAccountId: f.account('1000'),
        amountCents: 12_000,
        allocations: [],
      }),
    );
    const [item] = await itemsOf('unapplied_credits');
    expect(ids(item)).toEqual([document.id]);
    expect(item?.message).toContain('120.00 unapplied');
    await db.transaction((tx) => voidPayment(tx, f.ctx, f.orgId, 'customer_payment', document.id, 'bounced'));
    expect(await itemsOf('unapplied_credits')).toEqual([]);
  });

  it('lists a vendor billed in each of the three months before the period and not in it', async () => {
    await bill('2025-12-03', 8_900, 'S-12');
    await bill('2026-01-03', 8_900, 'S-01');
    const last = await bill('2026-02-03', 8_900, 'S-02');
    const other = await f.contact('vendor', 'Occasional Co');
    await bill('2026-01-05', 1_000, 'O-1', other.id);
    await bill('2026-02-05', 1_000, 'O-2', other.id);
    const [item, ...rest] = await itemsOf('recurring_bill_missing');
    expect(rest).toEqual([]);
    expect(ids(item)).toEqual([f.vendor.id, last.id]);
    await setCloseRule(db, f.firmId, 'recurring_bill_missing', { thresholds: { months: 2 } });
    expect(await itemsOf('recurring_bill_missing')).toHaveLength(2);
    await setCloseRule(db, f.firmId, 'recurring_bill_missing', { thresholds: { months: 3 } });
    await bill('2026-03-03', 8_900, 'S-03');
    expect(await itemsOf('recurring_bill_missing')).toEqual([]);
  });

  it('lists two bills of one vendor and amount a few days apart until one is voided', async () => {
    const first = await bill('2026-03-10', 45_000, 'D-1');
    const copy = await bill('2026-03-12', 45_000, 'D-2');
    await bill('2026-03-30', 45_000, 'D-3');
    const [item, ...rest] = await itemsOf('possible_duplicate');
    expect(rest).toEqual([]);
    expect(ids(item)).toEqual([first.id, copy.id]);
    await setCloseRule(db, f.firmId, 'possible_duplicate', { thresholds: { days: 1 } });
    expect(await itemsOf('possible_duplicate')).toEqual([]);
    await setCloseRule(db, f.firmId, 'possible_duplicate', { thresholds: { days: 3 } });
    await voidBill(copy.id);
    expect(await itemsOf('possible_duplicate')).toEqual([]);
  });

  it('lists an expense account far above its trailing three-month average, by share and amount', async () => {
    for (const date of ['2025-12-10', '2026-01-10', '2026-02-10']) await journal(date, '6300', '3000', 20_000);
    await journal('2026-03-10', '6300', '3000', 20_000);
    await journal('2026-03-11', '6600', '3000', 40_000);
    expect(await itemsOf('expense_spike')).toEqual([]);
    await journal('2026-03-20', '6300', '3000', 100_000);
    const items = await itemsOf('expense_spike');
    expect(items.map((i) => ids(i)[0])).toEqual([f.account('6300')]);
    expect(items[0]?.message).toContain('1,200.00 in the period against a three-month average of 200.00');
    await setCloseRule(db, f.firmId, 'expense_spike', { thresholds: { amountCents: 200_000 } });
    expect(await itemsOf('expense_spike')).toEqual([]);
    await setCloseRule(db, f.firmId, 'expense_spike', { thresholds: { amountCents: null, percent: 600 } });
    expect(await itemsOf('expense_spike')).toEqual([]);
    await setCloseRule(db, f.firmId, 'expense_spike', { thresholds: { percent: null } });
    expect(await itemsOf('expense_spike')).toHaveLength(1);
    await setCloseRule(db, f.firmId, 'expense_spike', { enabled: false });
    expect(await itemsOf('expense_spike')).toEqual([]);
  });

  it('lists a payment entered into a statement already reconciled', async () => {
    await reconcile(f.checking.id, '2026-03-31');
    const { document } = await db.transaction((tx) =>
      createPayment(tx, f.ctx, f.orgId, {
        type: 'customer_payment',
        contactId: f.customer.id,
        date: '2026-03-20',
        bankAccountId: f.account('1000'),
        amountCents: 5_000,
        allocations: [],
      }),
    );
    expect(ids((await itemsOf('entered_after_reconciliation'))[0])).toEqual([document.id]);
    await db.transaction((tx) => voidPayment(tx, f.ctx, f.orgId, 'customer_payment', document.id, 'wrong date'));
    expect(await itemsOf('entered_after_reconciliation')).toEqual([]);
  });

  it('keeps an item’s key while the same problem holds', async () => {
    await bill('2025-12-01', 9_900, 'K-1');
    const [a] = await itemsOf('payables_overdue');
    await bill('2026-03-02', 100, 'K-2');
    const [b] = await itemsOf('payables_overdue');
    expect(b?.key).toBe(a?.key);
    expect(a?.key).toMatch(/^payables_overdue:[0-9a-f]{32}$/);
  });
});

describe('a firm’s rule settings', () => {
  const refusal = async (work: Promise<unknown>) => {
    const err = await work.then(
      () => null,
      (e: unknown) => e,
    );
    if (!isDomainError(err)) throw new Error(`expected a DomainError, got ${String(err)}`);
    return err;
  };
  const settingsRows = () => db.select().from(closeRuleSettings).where(eq(closeRuleSettings.firmId, f.firmId));

  it('lists the catalogue with defaults, then the firm’s values', async () => {
    const before = await listCloseRules(db, f.firmId);
    // Every rule is on, but receipts_missing, which a firm turns on when it keeps receipts.
    expect(before.filter((r) => !r.enabled).map((r) => r.kind)).toEqual(['receipts_missing']);
    expect(before.find((r) => r.kind === 'expense_spike')?.thresholds).toEqual([
      expect.objectContaining({ name: 'percent', value: 50, default: 50 }),
      expect.objectContaining({ name: 'amountCents', value: 50_000, default: 50_000 }),
    ]);
    await setCloseRule(db, f.firmId, 'possible_duplicate', { enabled: false, thresholds: { days: 5 } });
    const after = (await listCloseRules(db, f.firmId)).find((r) => r.kind === 'possible_duplicate');
    expect(after).toMatchObject({ enabled: false, thresholds: [expect.objectContaining({ value: 5, default: 3 })] });
  });

  it('turns an advisory rule off and on again', async () => {
    await bill('2025-12-01', 9_900, 'A-1');
    await setCloseRule(db, f.firmId, 'payables_overdue', { enabled: false });
    expect(await itemsOf('payables_overdue')).toEqual([]);
    await setCloseRule(db, f.firmId, 'payables_overdue', { enabled: true });
    expect(await itemsOf('payables_overdue')).toHaveLength(1);
  });

  it('refuses to turn a blocking rule off, an unknown threshold, a negative or fractional one, writing nothing', async () => {
    const blocking = await refusal(setCloseRule(db, f.firmId, 'bank_rows_unreviewed', { enabled: false }));
    expect(blocking.code).toBe('VALIDATION_ERROR');
    expect(blocking.details?.[0]?.field).toBe('enabled');
    const unknown = await refusal(setCloseRule(db, f.firmId, 'expense_spike', { thresholds: { ratio: 2 } }));
    expect(unknown.details?.[0]?.field).toBe('thresholds.ratio');
    for (const value of [-1, 2.5]) {
      const bad = await refusal(setCloseRule(db, f.firmId, 'expense_spike', { thresholds: { percent: value } }));
      expect(bad.code).toBe('VALIDATION_ERROR');
    }
    expect((await refusal(setCloseRule(db, f.firmId, 'no_such_rule', {}))).code).toBe('NOT_FOUND');
    expect(await settingsRows()).toEqual([]);
  });

  it('applies the settings given instead of reading them', async () => {
    await bill('2025-12-01', 9_900, 'G-1');
    const settings = new Map([['payables_overdue', { enabled: false, thresholds: {} }]]);
    const items = await computeChecklist(db, { firmId: f.firmId, organizationId: f.orgId, ...MARCH }, settings);
    expect(items.filter((i) => i.kind === 'payables_overdue')).toEqual([]);
  });
});
