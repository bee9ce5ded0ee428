import { type DomainError, isDomainError } from '@firm/core';
import { accounts, auditEvents, type Db, journalEntries, organizations, outboxEvents } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { and, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type OpeningBalancesInput,
  parseAmount,
  parseOpeningBalancesCsv,
  postOpeningBalances,
} from './opening-balances';
import { presentAccount } from './accounts';
import { trialBalance } from './reports';
import { createLedgerFixture, type LedgerFixture, rollupMismatches } from './testing';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const post = (f: LedgerFixture, input: OpeningBalancesInput) =>
  db.transaction((tx) => postOpeningBalances(tx, f.ctx, f.orgId, input));

const refusal = async (p: Promise<unknown>): Promise<DomainError> => {
  try {
    await p;
  } catch (err) {
    if (isDomainError(err)) return err;
    throw err;
  }
  throw new Error('expected a refusal');
};

const accountCount = async (orgId: string) =>
  (await db.select({ id: accounts.id }).from(accounts).where(eq(accounts.organizationId, orgId))).length;

const balances = async (orgId: string) => {
  const tb = await trialBalance(db, orgId, { endDate: '2099-12-31' });
  return Object.fromEntries(tb.rows.map((r) => [r.code, r.debitCents - r.creditCents]));
};

describe('amounts', () => {
  it('reads exact cents from decimal strings and refuses the rest', () => {
    expect(parseAmount('1250')).toEqual({ cents: 125000 });
    expect(parseAmount(' 0.1 ')).toEqual({ cents: 10 });
    expect(parseAmount('19.99')).toEqual({ cents: 1999 });
    expect(parseAmount('')).toBeNull();
    expect(parseAmount(null)).toBeNull();
    for (const bad of ['-5', '1.234', '1,000.00', 'abc', '1e3', '.5', '99999999999999999999']) {
      expect(parseAmount(bad), bad).toHaveProperty('problem');
    }
  });
});

describe('CSV', () => {
  it('reads rows by header, numbering them by line, and refuses a file without the columns', () => {
    const parsed = parseOpeningBalancesCsv(
      '\uFEFFCode,Name,Debit,Credit,Type\n1000,Cash,"1,5",,\n\n2000,AP,,10.00,liability\n',
    );
    expect(parsed.rowNumbers).toEqual([2, 4]);
    expect(parsed.rows[0]).toMatchObject({ accountCode: '1000', name: 'Cash', debit: '1,5', credit: '' });
    expect(parsed.rows[1]).toMatchObject({ accountCode: '2000', credit: '10.00', type: 'liability' });
    expect(parsed.columns.accountCode).toBe('Code');
    const err = (() => {
      try {
        parseOpeningBalancesCsv('foo,bar\n1,2\n');
      } catch (e) {
        return e as DomainError;
      }
    })();
    expect(err?.code).toBe('OPENING_BALANCES_INVALID');
    expect(err?.details?.map((d) => d.column)).toEqual(['code', 'debit']);
  });

  it('numbers rows by their line with CRLF line ends too', () => {
    const parsed = parseOpeningBalancesCsv('code,debit,credit\r\n\r\n1000,5,\r\n2000,,5\r\n');
    expect(parsed.rowNumbers).toEqual([3, 4]);
  });

  it('a name column without a code finds the account by name', () => {
    const parsed = parseOpeningBalancesCsv('name,debit,credit\nBusiness Checking,5,\n');
    expect(parsed.rows[0]).toMatchObject({ accountName: 'Business Checking', debit: '5' });
  });
});

describe('posting opening balances', () => {
  it('posts one balanced entry whose trial balance is the input, the difference to opening balance equity', async () => {
    const f = await createLedgerFixture(db);
    const result = await post(f, {
      date: '2026-01-01',
      rows: [
        { accountCode: '1000', debit: '1500.25' },
        { account: 'Accounts Receivable', debit: '200' },
        { accountName: 'Accounts Payable', credit: '300.10' },
      ],
    });
    expect(result.entry.source).toBe('opening_balance');
    expect(result.entry.status).toBe('posted');
    expect(result.entry.date).toBe('2026-01-01');
    expect(result.difference).toMatchObject({ cents: 140015, side: 'credit' });
    expect(result.difference.account).toMatchObject({ code: '3050', name: 'Opening balance equity' });
    expect(result.createdAccounts.map((a) => [a.code, a.type])).toEqual([['3050', 'equity']]);
    expect(await balances(f.orgId)).toEqual({ '1000': 150025, '1200': 20000, '2000': -30010, '3050': -140015 });
    expect(await rollupMismatches(db, f.orgId)).toEqual([]);
  });

  it('creates missing accounts with the row type or the type of the code range, and refuses when it cannot tell', async () => {
    const f = await createLedgerFixture(db);
    const before = await accountCount(f.orgId);
    const refused = await refusal(
      post(f, {
        date: '2026-01-01',
        createMissingAccounts: true,
        rows: [
          { accountCode: '1234', debit: '10' },
          { accountCode: 'X1', credit: '10' },
          { account: 'Petty cash', debit: '1' },
        ],
      }),
    );
    expect(refused.code).toBe('OPENING_BALANCES_INVALID');
    expect(refused.details).toEqual([
      expect.objectContaining({ row: 2, column: 'accountCode', reason: 'type_unknown' }),
      expect.objectContaining({ row: 3, column: 'account', reason: 'unknown_account' }),
    ]);
    expect(await accountCount(f.orgId)).toBe(before);

    const result = await post(f, {
      date: '2026-01-01',
      createMissingAccounts: true,
      rows: [
        { accountCode: '1234', debit: '100', name: 'Petty cash' },
        { accountCode: '2345', credit: '40' },
        { accountCode: '3456', credit: '10' },
        { accountCode: 'X1', credit: '50', type: 'credit card' },
        { accountCode: '5678', debit: '0' },
      ],
    });
    const made = Object.fromEntries(result.createdAccounts.map((a) => [a.code, [a.type, a.subtype, a.name]]));
    expect(made).toEqual({
      '1234': ['asset', 'other_current_asset', 'Petty cash'],
      '2345': ['liability', 'other_current_liability', 'Account 2345'],
      '3456': ['equity', 'equity', 'Account 3456'],
      X1: ['liability', 'credit_card', 'Account X1'],
      '5678': ['expense', 'cost_of_sales', 'Account 5678'],
    });
    expect(result.difference).toMatchObject({ cents: 0, side: null, account: null });
    expect(await balances(f.orgId)).toEqual({ '1234': 10000, '2345': -4000, '3456': -1000, X1: -5000 });
    const events = await db
      .select({ action: auditEvents.action })
      .from(auditEvents)
      .where(and(eq(auditEvents.organizationId, f.orgId), eq(auditEvents.action, 'account.created')));
    expect(events).toHaveLength(5);
    // Each created account goes out as the API shows it.
    const petty = result.createdAccounts.find((a) => a.code === '1234');
    const [sent] = await db
      .select({ payload: outboxEvents.payload })
      .from(outboxEvents)
      .where(and(eq(outboxEvents.organizationId, f.orgId), sql`${outboxEvents.payload}->>'code' = '1234'`));
    expect(sent?.payload).toEqual(petty && presentAccount(petty));
    const [stored] = await db
      .select()
      .from(accounts)
      .where(eq(accounts.id, petty?.id as string));
    expect(stored && presentAccount(stored)).toEqual(petty && presentAccount(petty));
  });

  it('reports every bad row together and writes nothing', async () => {
    const f = await createLedgerFixture(db);
    await db.update(organizations).set({ booksClosedThrough: '2026-03-31' }).where(eq(organizations.id, f.orgId));
    const before = await accountCount(f.orgId);
    const refused = await refusal(
      post(f, {
        date: '2026-01-01',
        createMissingAccounts: true,
        rows: [
          { accountCode: '9999', debit: '1', type: 'planet' },
          { accountCode: '1000', debit: '-5' },
          { accountCode: '1010', debit: '1.234' },
          { accountCode: '1100', debit: '5', credit: '5' },
          { accountCode: '1000', debit: '1' },
          { accountCode: '4000', debit: '1', type: 'asset' },
          {},
          { accountCode: 'bad code!', debit: '1' },
        ],
      }),
    );
    expect(refused.code).toBe('OPENING_BALANCES_INVALID');
    expect(refused.details?.map((d) => [d.row, d.column, d.reason])).toEqual([
      [undefined, 'date', 'period_closed'],
      [1, 'type', 'bad_type'],
      [2, 'debit', 'bad_amount'],
      [3, 'debit', 'bad_amount'],
      [4, 'credit', 'debit_and_credit'],
      [5, 'accountCode', 'duplicate_account'],
      [6, 'type', 'type_mismatch'],
      [7, 'account', 'missing_account'],
      [8, 'accountCode', 'bad_code'],
    ]);
    expect(await accountCount(f.orgId)).toBe(before);
    const entries = await db.select().from(journalEntries).where(eq(journalEntries.organizationId, f.orgId));
    expect(entries).toEqual([]);
  });

  it('names the other reasons: ambiguous, archived, a long name, too many rows, no free equity code, a closed entry to replace', async () => {
    const f = await createLedgerFixture(db);
    await db.insert(accounts).values([
      { organizationId: f.orgId, code: 'T1', name: 'Twin', type: 'asset', subtype: 'bank' },
      { organizationId: f.orgId, code: 'T2', name: 'twin', type: 'asset', subtype: 'bank' },
      { organizationId: f.orgId, code: 'OLD', name: 'Old', type: 'asset', subtype: 'bank', archived: true },
    ]);
    const refused = await refusal(
      post(f, {
        date: '2026-01-01',
        createMissingAccounts: true,
        rows: [
          { accountName: 'TWIN', debit: '1' },
          { accountCode: 'OLD', debit: '1' },
          { accountCode: '1999', name: 'x'.repeat(201), debit: '1' },
          { account: 'Nowhere', debit: '1' },
        ],
      }),
    );
    expect(refused.details?.map((d) => [d.row, d.column, d.reason])).toEqual([
      [1, 'accountName', 'ambiguous_account'],
      [2, 'accountCode', 'archived_account'],
      [3, 'name', 'bad_name'],
      [4, 'account', 'unknown_account'],
    ]);
    const many = await refusal(post(f, { date: '2026-01-01', rows: Array.from({ length: 10_001 }, () => ({})) }));
    expect(many.details?.map((d) => d.reason)).toEqual(['too_many_rows']);

    // Every code of 3000-3099 taken: the difference has nowhere to go.
    const g = await createLedgerFixture(db);
    await db.execute(sql`
      insert into accounts (id, organization_id, code, name, type, subtype)
      select gen_random_uuid(), ${g.orgId}::uuid, g::text, 'Equity ' || g, 'equity', 'equity' from generate_series(3000, 3099) g
      on conflict do nothing`);
    const full = await refusal(post(g, { date: '2026-01-01', rows: [{ accountCode: '1000', debit: '1' }] }));
    expect(full.details?.map((d) => d.reason)).toEqual(['no_equity_code']);

    // The opening entry to replace is in closed books: it cannot be voided.
    const h = await createLedgerFixture(db);
    const balanced = [
      { accountCode: '1000', debit: '1' },
      { accountCode: '3000', credit: '1' },
    ];
    await post(h, { date: '2026-01-01', rows: balanced });
    await db.update(organizations).set({ booksClosedThrough: '2026-01-31' }).where(eq(organizations.id, h.orgId));
    const closed = await refusal(post(h, { date: '2026-02-01', replace: true, rows: balanced }));
    expect(closed.details?.map((d) => [d.column, d.reason])).toEqual([['replace', 'period_closed']]);
  });

  it('a second opening is refused unless replace, which voids the first', async () => {
    const f = await createLedgerFixture(db);
    const rows = [
      { accountCode: '1000', debit: '100' },
      { accountCode: '3000', credit: '100' },
    ];
    const first = await post(f, { date: '2026-01-01', rows });
    const again = await refusal(post(f, { date: '2026-01-01', rows }));
    expect(again.code).toBe('OPENING_BALANCES_EXIST');
    const second = await post(f, {
      date: '2026-02-01',
      replace: true,
      rows: [
        { accountCode: '1000', debit: '70' },
        { accountCode: '3000', credit: '70' },
      ],
    });
    expect(second.replacedEntryId).toBe(first.entry.id);
    const [old] = await db.select().from(journalEntries).where(eq(journalEntries.id, first.entry.id));
    expect(old?.status).toBe('void');
    expect(await balances(f.orgId)).toEqual({ '1000': 7000, '3000': -7000 });
    expect(await rollupMismatches(db, f.orgId)).toEqual([]);
  });

  it('two openings at once for one company: one is posted, the other refused', async () => {
    const f = await createLedgerFixture(db);
    const rows = [
      { accountCode: '1000', debit: '1' },
      { accountCode: '3000', credit: '1' },
    ];
    const outcomes = await Promise.allSettled([
      post(f, { date: '2026-01-01', rows }),
      post(f, { date: '2026-01-02', rows }),
    ]);
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
    const [refused] = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
    expect((refused?.reason as DomainError).code).toBe('OPENING_BALANCES_EXIST');
    const posted = await db
      .select()
      .from(journalEntries)
      .where(and(eq(journalEntries.organizationId, f.orgId), eq(journalEntries.source, 'opening_balance')));
    expect(posted).toHaveLength(1);
  });

  it('closes the books through the day before, and refuses an archived company', async () => {
    const f = await createLedgerFixture(db);
    const result = await post(f, {
      date: '2026-03-01',
      closeBooksBefore: true,
      rows: [
        { accountCode: '1000', debit: '5' },
        { accountCode: '3000', credit: '5' },
      ],
    });
    expect(result.booksClosedThrough).toBe('2026-02-28');
    const [org] = await db.select().from(organizations).where(eq(organizations.id, f.orgId));
    expect(org?.booksClosedThrough).toBe('2026-02-28');

    const g = await createLedgerFixture(db);
    await db.update(organizations).set({ archivedAt: new Date() }).where(eq(organizations.id, g.orgId));
    const refused = await refusal(post(g, { date: '2026-01-01', rows: [{ accountCode: '1000', debit: '1' }] }));
    expect(refused.code).toBe('COMPANY_ARCHIVED');
  });

  it('uses an existing opening balance equity account, or the next free 30xx code', async () => {
    const f = await createLedgerFixture(db);
    await db
      .insert(accounts)
      .values({ organizationId: f.orgId, code: '3050', name: 'Other', type: 'equity', subtype: 'equity' });
    const made = await post(f, { date: '2026-01-01', rows: [{ accountCode: '1000', credit: '2' }] });
    expect(made.difference).toMatchObject({ cents: 200, side: 'debit', account: { code: '3051' } });

    const g = await createLedgerFixture(db);
    const [obe] = await db
      .insert(accounts)
      .values({
        organizationId: g.orgId,
        code: 'OBE',
        name: 'Opening Balance Equity',
        type: 'equity',
        subtype: 'equity',
      })
      .returning();
    const found = await post(g, { date: '2026-01-01', rows: [{ accountCode: '1000', debit: '2' }] });
    expect(found.difference.account?.id).toBe(obe?.id);
    expect(found.createdAccounts).toEqual([]);
  });
});
