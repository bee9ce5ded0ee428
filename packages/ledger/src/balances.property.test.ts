import type { Db } from '@firm/db';
import { rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inNormalDirection } from './account-ledger';
import { rollupPieces } from './balances';
import { addDays } from './dates';
import { postTransaction, voidEntry } from './posting';
import { generalLedger } from './general-ledger';
import { balanceSheet, profitAndLoss, trialBalance } from './reports';
import { createLedgerFixture, rollupMismatches } from './testing';

/** Every day from `from` to `through`, inclusive. */
function daysOf(from: string, through: string): string[] {
  const days: string[] = [];
  for (let d = from; d <= through; d = addDays(d, 1)) days.push(d);
  return days;
}

/** How many months from the month of `from` to the month of `through`. */
const monthsOf = (from: string, through: string) =>
  (Number(through.slice(0, 4)) - Number(from.slice(0, 4))) * 12 +
  Number(through.slice(5, 7)) -
  Number(from.slice(5, 7)) +
  1;

const FIRST_DAY = '2023-11-01';
const SPAN = 800; // a leap February, two year ends and every month length
const day = fc.integer({ min: 0, max: SPAN }).map((d) => addDays(FIRST_DAY, d));

describe('rollupPieces', () => {
  it('covers each day of a range exactly once and nothing outside it, reading little at the edges', () => {
    fc.assert(
      fc.property(fc.option(day, { nil: null }), fc.integer({ min: 0, max: 1200 }), (from, length) => {
        const through = addDays(from ?? FIRST_DAY, length);
        const pieces = rollupPieces(from, through);
        // How many times the pieces count each day from two years before to a year after, signed.
        const window = daysOf(addDays(FIRST_DAY, -730), addDays(through, 370));
        const counted = new Map<string, number>();
        for (const p of pieces) {
          for (const d of window) {
            const key = p.grain === 'year' ? `${d.slice(0, 5)}01-01` : p.grain === 'month' ? `${d.slice(0, 8)}01` : d;
            if ((p.from === null || key >= p.from) && key <= p.through) counted.set(d, (counted.get(d) ?? 0) + p.sign);
          }
        }
        // One assertion per range, naming every day counted wrongly (one per day made the run slow, not stricter).
        const miscounted = window.flatMap((d) => {
          const want = (from === null || d >= from) && d <= through ? 1 : 0;
          const got = counted.get(d) ?? 0;
          return got === want ? [] : [`${d}: counted ${got}, want ${want}`];
        });
        expect(miscounted, `${from}..${through}`).toEqual([]);
        // Rows read per account at the edges: about half a month of days and half a year of months each.
        const read = (grain: string) =>
          pieces
            .filter((p) => p.grain === grain)
            .reduce((n, p) => n + (grain === 'day' ? daysOf(p.from as string, p.through).length : 1), 0);
        expect(read('day')).toBeLessThanOrEqual(32);
        const months = pieces
          .filter((p) => p.grain === 'month')
          .reduce((n, p) => n + monthsOf(p.from as string, p.through), 0);
        expect(months).toBeLessThanOrEqual(14);
      }),
      { numRuns: 300 },
    );
  });

  it('reads whole years and months as such', () => {
    expect(rollupPieces('2025-01-01', '2025-12-31')).toEqual([
      { grain: 'year', from: '2025-01-01', through: '2025-01-01', sign: 1 },
    ]);
    expect(rollupPieces('2024-02-01', '2024-02-29')).toEqual([
      { grain: 'month', from: '2024-02-01', through: '2024-02-01', sign: 1 },
    ]);
    // The 2nd to the 30th of a 31-day month: the month less its first and last day.
    expect(rollupPieces('2025-03-02', '2025-03-30')).toEqual([
      { grain: 'month', from: '2025-03-01', through: '2025-03-01', sign: 1 },
      { grain: 'day', from: '2025-03-01', through: '2025-03-01', sign: -1 },
      { grain: 'day', from: '2025-03-31', through: '2025-03-31', sign: -1 },
    ]);
    // Everything through 30 November: the years before, and this year less December.
    expect(rollupPieces(null, '2026-11-30')).toEqual([
      { grain: 'year', from: null, through: '2025-01-01', sign: 1 },
      { grain: 'year', from: '2026-01-01', through: '2026-01-01', sign: 1 },
      { grain: 'month', from: '2026-12-01', through: '2026-12-01', sign: -1 },
    ]);
    expect(rollupPieces(null, '1900-01-03')).toEqual([
      { grain: 'year', from: null, through: '1899-01-01', sign: 1 },
      { grain: 'day', from: '1900-01-01', through: '1900-01-03', sign: 1 },
    ]);
  });
});

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const CODES = ['1000', '1200', '2000', '3000', '4000', '4900', '5000', '6000', '7000'];

/** Per account, the signed net of posted lines dated in [from, through]: the plain sum the reports must equal. */
async function plainNets(orgId: string, from: string | null, through: string): Promise<Map<string, number>> {
  const rows = rowsOf<{ account_id: string; net: string }>(
    await db.execute(sql`
      select l.account_id, sum(l.amount_cents)::text as net
      from journal_lines l join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
      where l.organization_id = ${orgId} and e.status = 'posted' and e.entry_date <= ${through}::date
        and (${from}::date is null or e.entry_date >= ${from}::date)
      group by l.account_id having sum(l.amount_cents) <> 0`),
  );
  return new Map(rows.map((r) => [r.account_id, Number(r.net)]));
}

describe('reports read from the monthly and daily rollups', () => {
  it('equal a plain sum over the lines for any books and any range', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            date: day,
            debit: fc.constantFrom(...CODES),
            credit: fc.constantFrom(...CODES),
            cents: fc.integer({ min: 1, max: 10_000_000 }),
            voided: fc.boolean(),
          }),
          { minLength: 1, maxLength: 25 },
        ),
        fc.array(fc.tuple(fc.option(day, { nil: null }), fc.integer({ min: 0, max: 400 })), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.integer({ min: 1, max: 12 }),
        async (entries, ranges, fiscalYearStartMonth) => {
          const f = await createLedgerFixture(db, { fiscalYearStartMonth });
          for (const e of entries) {
            if (e.debit === e.credit) continue;
            const receipt = await db.transaction((tx) =>
              postTransaction(tx, f.ctx, f.orgId, {
                kind: 'journal_entry',
                date: e.date,
                lines: [
                  { accountId: f.account(e.debit), debitCents: e.cents },
                  { accountId: f.account(e.credit), creditCents: e.cents },
                ],
              }),
            );
            if (e.voided) await db.transaction((tx) => voidEntry(tx, f.ctx, f.orgId, receipt.journalEntryId, 'test'));
          }
          expect(await rollupMismatches(db, f.orgId)).toEqual([]);

          for (const [from, length] of ranges) {
            const through = addDays(from ?? FIRST_DAY, length);
            const plain = await plainNets(f.orgId, from, through);

            const tb = await trialBalance(db, f.orgId, { ...(from ? { startDate: from } : {}), endDate: through });
            expect(new Map(tb.rows.map((r) => [r.accountId, r.debitCents - r.creditCents]))).toEqual(plain);

            const bs = await balanceSheet(db, f.orgId, { asOf: through });
            const sinceStart = await plainNets(f.orgId, null, through);
            const listed = [...bs.assets.accounts, ...bs.liabilities.accounts, ...bs.equity.accounts];
            const balanceSheetAccounts = new Map(
              listed.map((a) => [a.accountId, inNormalDirection(a.type, a.balanceCents)]),
            );
            const incomeOrExpense = new Set([
              f.account('4000'),
              f.account('4900'),
              f.account('5000'),
              f.account('6000'),
              f.account('7000'),
            ]);
            expect(balanceSheetAccounts).toEqual(new Map([...sinceStart].filter(([id]) => !incomeOrExpense.has(id))));
            const earnings = (nets: Map<string, number>) =>
              0 - [...nets].filter(([id]) => incomeOrExpense.has(id)).reduce((s, [, c]) => s + c, 0);
            expect(bs.equity.retainedEarningsCents).toBe(
              earnings(await plainNets(f.orgId, null, addDays(bs.fiscalYearStart, -1))),
            );
            expect(bs.equity.currentYearEarningsCents).toBe(
              earnings(await plainNets(f.orgId, bs.fiscalYearStart, through)),
            );

            const start = from ?? FIRST_DAY;
            const pnl = await profitAndLoss(db, f.orgId, { startDate: start, endDate: through });
            expect(pnl.netIncomeCents).toBe(earnings(await plainNets(f.orgId, start, through)));

            const gl = await generalLedger(db, f.orgId, { startDate: start, endDate: through });
            const before = await plainNets(f.orgId, null, addDays(start, -1));
            for (const a of gl.accounts) {
              expect(inNormalDirection(a.type, a.openingBalanceCents)).toBe(before.get(a.accountId) ?? 0);
            }
          }
        },
      ),
      { numRuns: 30 },
    );
  });
});

describe('the monthly and yearly rollups', () => {
  it('follow whatever writes the daily rollup: an insert, a change, a move to another year, a delete', async () => {
    const f = await createLedgerFixture(db);
    const [cash, sales] = [f.account('1000'), f.account('4000')];
    const write = (statement: ReturnType<typeof sql>) => db.execute(statement);
    await write(sql`insert into account_daily_balances (organization_id, account_id, day, amount_cents)
      values (${f.orgId}, ${cash}, '2025-12-31', 700), (${f.orgId}, ${cash}, '2025-12-05', 50)`);
    await write(sql`update account_daily_balances set amount_cents = 900
      where organization_id = ${f.orgId} and account_id = ${cash} and day = '2025-12-31'`);
    await write(sql`update account_daily_balances set day = '2026-01-01', account_id = ${sales}
      where organization_id = ${f.orgId} and account_id = ${cash} and day = '2025-12-05'`);
    const periods = async () =>
      rowsOf<{ grain: string; account_id: string; period: string; cents: string }>(
        await db.execute(sql`
          select 'month' as grain, account_id, month::text as period, amount_cents::text as cents
          from account_monthly_balances where organization_id = ${f.orgId} and amount_cents <> 0
          union all
          select 'year', account_id, year::text, amount_cents::text
          from account_yearly_balances where organization_id = ${f.orgId} and amount_cents <> 0
          order by 1, 3, 2`),
      );
    expect(await periods()).toEqual([
      { grain: 'month', account_id: cash, period: '2025-12-01', cents: '900' },
      { grain: 'month', account_id: sales, period: '2026-01-01', cents: '50' },
      { grain: 'year', account_id: cash, period: '2025-01-01', cents: '900' },
      { grain: 'year', account_id: sales, period: '2026-01-01', cents: '50' },
    ]);
    await write(sql`delete from account_daily_balances where organization_id = ${f.orgId}`);
    expect(await periods()).toEqual([]);
  });
});
