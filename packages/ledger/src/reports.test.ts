import { isDomainError } from '@firm/core';
import { type Db, organizations } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountLedger, inNormalDirection } from './account-ledger';
import { addDays } from './dates';
import { createDraftEntry } from './entries';
import { postTransaction, voidEntry } from './posting';
import type { PostingInput } from './posting-inputs';
import { generalLedger } from './general-ledger';
import { balanceSheet, profitAndLoss, trialBalance } from './reports';
import { createLedgerFixture, type LedgerFixture, rollupMismatches } from './testing';

let database: TestDatabase;
let db: Db;
/** A company whose fiscal year starts in April, with a year and a half of activity. */
let f: LedgerFixture;
let voided: string;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  f = await createLedgerFixture(db, { fiscalYearStartMonth: 4 });
  const a = f.account;
  const post = (input: PostingInput) => db.transaction((tx) => postTransaction(tx, f.ctx, f.orgId, input));
  // Fiscal year 2024 (2024-04-01 .. 2025-03-31)
  await post({
    kind: 'journal_entry',
    date: '2025-01-15',
    memo: 'Owner investment',
    lines: [
      { accountId: a('1000'), debitCents: 1_000_000 },
      { accountId: a('3000'), creditCents: 1_000_000 },
    ],
  });
  await post({
    kind: 'deposit',
    date: '2025-02-10',
    destinationAccountId: a('1000'),
    lines: [{ accountId: a('4000'), amountCents: 300_000 }],
  });
  await post({
    kind: 'purchase',
    date: '2025-03-20',
    sourceAccountId: a('1000'),
    lines: [{ accountId: a('6400'), amountCents: 100_000 }],
  });
  // Fiscal year 2025, from 2025-04-01
  await post({
    kind: 'deposit',
    date: '2025-04-05',
    destinationAccountId: a('1000'),
    lines: [
      { accountId: a('4000'), amountCents: 200_000 },
      { accountId: a('4900'), amountCents: 1_000 },
    ],
  });
  await post({
    kind: 'journal_entry',
    date: '2025-05-01',
    lines: [
      { accountId: a('5000'), debitCents: 50_000 },
      { accountId: a('2000'), creditCents: 50_000 },
    ],
  });
  await post({
    kind: 'purchase',
    date: '2025-06-01',
    sourceAccountId: a('2100'),
    lines: [
      { accountId: a('7000'), amountCents: 2_000 },
      { accountId: a('6000'), amountCents: 30_000 },
    ],
  });
  voided = (
    await post({
      kind: 'purchase',
      date: '2025-06-15',
      sourceAccountId: a('2100'),
      lines: [{ accountId: a('6000'), amountCents: 99_999 }],
    })
  ).journalEntryId;
  await db.transaction((tx) => voidEntry(tx, f.ctx, f.orgId, voided, 'Card charge reversed'));
  await post({
    kind: 'transfer',
    date: '2025-07-01',
    fromAccountId: a('1000'),
    toAccountId: a('1010'),
    amountCents: 50_000,
  });
  // A draft moves nothing.
  await db.transaction((tx) =>
    createDraftEntry(tx, f.ctx, f.orgId, {
      date: '2025-06-20',
      lines: [
        { accountId: a('6600'), debitCents: 777_777 },
        { accountId: a('1000'), creditCents: 777_777 },
      ],
    }),
  );
});
afterAll(() => database.close());

const byCode = <T extends { code: string }>(rows: T[]) => Object.fromEntries(rows.map((r) => [r.code, r]));

describe('trial balance', () => {
  it('lists each account in a debit or credit column, and the columns total the same', async () => {
    const tb = await trialBalance(db, f.orgId, { endDate: '2025-06-30' });
    const rows = byCode(tb.rows);
    expect(rows['1000']).toMatchObject({ debitCents: 1_401_000, creditCents: 0 });
    expect(rows['2100']).toMatchObject({ debitCents: 0, creditCents: 32_000 });
    expect(rows['6000']).toMatchObject({ debitCents: 30_000 });
    expect(rows['6600']).toBeUndefined(); // the draft
    expect(rows['1010']).toBeUndefined(); // after endDate
    expect(tb.totalDebitCents).toBe(tb.totalCreditCents);
    expect(tb.totalDebitCents).toBe(1_401_000 + 100_000 + 50_000 + 2_000 + 30_000);
  });

  it('with a start date, shows only the movement of the period', async () => {
    const tb = await trialBalance(db, f.orgId, { startDate: '2025-04-01', endDate: '2025-06-30' });
    const rows = byCode(tb.rows);
    expect(rows['1000']).toMatchObject({ debitCents: 201_000 });
    expect(rows['3000']).toBeUndefined();
    expect(tb.totalDebitCents).toBe(tb.totalCreditCents);
  });
});

describe('balance sheet', () => {
  it('balances, with earnings split at the fiscal year start', async () => {
    const bs = await balanceSheet(db, f.orgId, { asOf: '2025-06-30' });
    expect(bs.fiscalYearStart).toBe('2025-04-01');
    expect(bs.assets.totalCents).toBe(1_401_000);
    expect(bs.liabilities.totalCents).toBe(50_000 + 32_000);
    expect(bs.equity.retainedEarningsCents).toBe(300_000 - 100_000);
    expect(bs.equity.currentYearEarningsCents).toBe(201_000 - 50_000 - 32_000);
    expect(bs.equity.totalCents).toBe(1_000_000 + 200_000 + 119_000);
    expect(bs.totalLiabilitiesAndEquityCents).toBe(bs.assets.totalCents);
    expect(bs.assets.accounts.map((a) => a.code)).toEqual(['1000']);
  });

  it('rolls the whole earlier year into current earnings before the fiscal year turns', async () => {
    const bs = await balanceSheet(db, f.orgId, { asOf: '2025-03-31' });
    expect(bs.fiscalYearStart).toBe('2024-04-01');
    expect(bs.equity.retainedEarningsCents).toBe(0);
    expect(bs.equity.currentYearEarningsCents).toBe(200_000);
    expect(bs.totalLiabilitiesAndEquityCents).toBe(bs.assets.totalCents);
  });

  it('uses the calendar year when the fiscal year starts in January', async () => {
    await db.update(organizations).set({ fiscalYearStartMonth: 1 }).where(eq(organizations.id, f.orgId));
    try {
      const bs = await balanceSheet(db, f.orgId, { asOf: '2025-06-30' });
      expect(bs.fiscalYearStart).toBe('2025-01-01');
      expect(bs.equity.retainedEarningsCents).toBe(0);
      expect(bs.equity.currentYearEarningsCents).toBe(319_000);
      expect(bs.totalLiabilitiesAndEquityCents).toBe(bs.assets.totalCents);
    } finally {
      await db.update(organizations).set({ fiscalYearStartMonth: 4 }).where(eq(organizations.id, f.orgId));
    }
  });
});

describe('profit and loss', () => {
  it('splits income, cost of sales, expenses and other items', async () => {
    const pl = await profitAndLoss(db, f.orgId, { startDate: '2025-04-01', endDate: '2025-06-30' });
    expect(pl.income.totalCents).toBe(200_000);
    expect(pl.otherIncome.totalCents).toBe(1_000);
    expect(pl.costOfSales.totalCents).toBe(50_000);
    expect(pl.grossProfitCents).toBe(150_000);
    expect(pl.expenses).toMatchObject({ totalCents: 30_000, accounts: [{ code: '6000', amountCents: 30_000 }] });
    expect(pl.otherExpenses.totalCents).toBe(2_000);
    expect(pl.netIncomeCents).toBe(119_000);
  });

  it('reconciles with the balance sheet: the fiscal year to date is current earnings, earlier years retained', async () => {
    const bs = await balanceSheet(db, f.orgId, { asOf: '2025-06-30' });
    const ytd = await profitAndLoss(db, f.orgId, { startDate: bs.fiscalYearStart, endDate: bs.asOf });
    const before = await profitAndLoss(db, f.orgId, {
      startDate: '1900-01-01',
      endDate: addDays(bs.fiscalYearStart, -1),
    });
    expect(ytd.netIncomeCents).toBe(bs.equity.currentYearEarningsCents);
    expect(before.netIncomeCents).toBe(bs.equity.retainedEarningsCents);
  });
});

describe('general ledger', () => {
  it('gives opening balance, lines with running balances and closing balance per account', async () => {
    const gl = await generalLedger(db, f.orgId, { startDate: '2025-04-01', endDate: '2025-06-30' });
    const cash = byCode(gl.accounts)['1000'];
    expect(cash).toMatchObject({ openingBalanceCents: 1_200_000, closingBalanceCents: 1_401_000 });
    expect(cash?.lines.map((l) => [l.date, l.debitCents, l.runningBalanceCents])).toEqual([
      ['2025-04-05', 201_000, 1_401_000],
    ]);
    const card = byCode(gl.accounts)['2100'];
    // Credit-normal: the card balance grows with credits; the voided charge is not there.
    expect(card?.lines.map((l) => l.runningBalanceCents)).toEqual([32_000]);
    expect(byCode(gl.accounts)['3000']).toMatchObject({ openingBalanceCents: 1_000_000, lines: [] });
  });

  it('reconciles with the trial balance and with accountLedger, account by account', async () => {
    const range = { startDate: '2025-02-01', endDate: '2025-06-30' };
    const gl = await generalLedger(db, f.orgId, range);
    const closing = byCode((await trialBalance(db, f.orgId, { endDate: range.endDate })).rows);
    const opening = byCode((await trialBalance(db, f.orgId, { endDate: addDays(range.startDate, -1) })).rows);
    for (const account of gl.accounts) {
      const net = (row?: { debitCents: number; creditCents: number }) =>
        inNormalDirection(account.type, row ? row.debitCents - row.creditCents : 0);
      expect(account.closingBalanceCents, account.code).toBe(net(closing[account.code]));
      expect(account.openingBalanceCents, account.code).toBe(net(opening[account.code]));

      const ledger = await accountLedger(
        db,
        f.orgId,
        { id: account.accountId, type: account.type },
        { ...range, limit: 1000 },
      );
      expect(ledger.openingBalanceCents, account.code).toBe(account.openingBalanceCents);
      expect(ledger.closingBalanceCents, account.code).toBe(account.closingBalanceCents);
      expect(ledger.lines.map((l) => [l.lineId, l.debitCents, l.creditCents, l.runningBalanceCents])).toEqual(
        account.lines.map((l) => [l.lineId, l.debitCents, l.creditCents, l.runningBalanceCents]),
      );
    }
  });

  it('shows one account, even a quiet one, and refuses accounts of other organizations', async () => {
    const quiet = await generalLedger(db, f.orgId, {
      startDate: '2025-01-01',
      endDate: '2025-12-31',
      accountId: f.account('6900'),
    });
    expect(quiet.accounts).toMatchObject([{ code: '6900', openingBalanceCents: 0, lines: [], closingBalanceCents: 0 }]);
    const other = await createLedgerFixture(db);
    const err = await generalLedger(db, f.orgId, {
      startDate: '2025-01-01',
      endDate: '2025-12-31',
      accountId: other.account('1000'),
    }).catch((e: unknown) => e);
    expect(isDomainError(err) && err.code).toBe('ACCOUNT_NOT_FOUND');
  });
});

describe('report inputs', () => {
  it('refuses a start after the end and malformed dates (VALIDATION_ERROR)', async () => {
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: unknown) => (isDomainError(e) ? e.code : 'other'),
      );
    expect(await code(trialBalance(db, f.orgId, { startDate: '2025-02-01', endDate: '2025-01-01' }))).toBe(
      'VALIDATION_ERROR',
    );
    expect(await code(profitAndLoss(db, f.orgId, { startDate: '2025-01-01', endDate: '2025-13-01' }))).toBe(
      'VALIDATION_ERROR',
    );
    expect(await code(balanceSheet(db, f.orgId, { asOf: 'yesterday' }))).toBe('VALIDATION_ERROR');
  });
});

describe('the daily rollup', () => {
  it('equals the posted lines per account and day, after postings and a void', async () => {
    expect(await rollupMismatches(db, f.orgId)).toEqual([]);
  });
});
