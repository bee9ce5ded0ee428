import { isDomainError } from '@firm/core';
import type { Db } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addDays } from './dates';
import { postTransaction, voidEntry } from './posting';
import { balanceSheet, profitAndLoss, trialBalance } from './reports';
import { createLedgerFixture, rollupMismatches } from './testing';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

// A spread of every account type and the P&L subtypes.
const CODES = ['1000', '1010', '1200', '2000', '2100', '3000', '3900', '4000', '4900', '5000', '6000', '6400', '7000'];
const FIRST_DAY = '2024-01-01';
const DAYS = 3 * 365;

const day = fc.integer({ min: 0, max: DAYS }).map((d) => addDays(FIRST_DAY, d));

type Op =
  | { op: 'post'; date: string; debits: { code: string; cents: number }[]; creditCodes: string[] }
  | { op: 'void'; pick: number }
  | { op: 'unbalanced'; date: string; cents: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({
      op: fc.constant('post' as const),
      date: day,
      debits: fc.array(
        fc.record({ code: fc.constantFrom(...CODES), cents: fc.integer({ min: 1, max: 1_000_000_000 }) }),
        { minLength: 1, maxLength: 3 },
      ),
      creditCodes: fc.array(fc.constantFrom(...CODES), { minLength: 1, maxLength: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('void' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('unbalanced' as const),
      date: day,
      cents: fc.integer({ min: 1, max: 1000 }),
    }),
  },
);

/** Splits a total into `parts` positive amounts (fewer when the total is too small). */
function split(total: number, parts: number): number[] {
  const n = Math.min(parts, total);
  const base = Math.floor(total / n);
  return Array.from({ length: n }, (_, i) => (i === n - 1 ? total - base * (n - 1) : base));
}

describe('any sequence of postings and voids', () => {
  it('keeps the trial balance at zero, the balance sheet balanced, and the rollup equal to the lines', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(opArb, { minLength: 1, maxLength: 8 }),
        fc.integer({ min: 1, max: 12 }),
        fc.array(day, { minLength: 1, maxLength: 3 }),
        async (ops, fiscalYearStartMonth, asOfDates) => {
          const f = await createLedgerFixture(db, { fiscalYearStartMonth });
          /** What each account's signed balance must be: the test's own model of the ledger. */
          const expected = new Map<string, number>();
          const add = (accountId: string, cents: number) =>
            expected.set(accountId, (expected.get(accountId) ?? 0) + cents);
          const posted: { id: string; lines: [string, number][] }[] = [];

          for (const op of ops) {
            if (op.op === 'post') {
              const total = op.debits.reduce((s, d) => s + d.cents, 0);
              const lines = [
                ...op.debits.map((d) => ({ accountId: f.account(d.code), debitCents: d.cents })),
                ...split(total, op.creditCodes.length).map((cents, i) => ({
                  accountId: f.account(op.creditCodes[i] as string),
                  creditCents: cents,
                })),
              ];
              const receipt = await db.transaction((tx) =>
                postTransaction(tx, f.ctx, f.orgId, { kind: 'journal_entry', date: op.date, lines }),
              );
              const signed: [string, number][] = lines.map((l) => [
                l.accountId,
                'debitCents' in l ? l.debitCents : -l.creditCents,
              ]);
              for (const [accountId, cents] of signed) add(accountId, cents);
              posted.push({ id: receipt.journalEntryId, lines: signed });
            } else if (op.op === 'void') {
              if (posted.length === 0) continue;
              const [entry] = posted.splice(op.pick % posted.length, 1);
              if (!entry) continue;
              await db.transaction((tx) => voidEntry(tx, f.ctx, f.orgId, entry.id, 'property test'));
              for (const [accountId, cents] of entry.lines) add(accountId, -cents);
            } else {
              const err = await db
                .transaction((tx) =>
                  postTransaction(tx, f.ctx, f.orgId, {
                    kind: 'journal_entry',
                    date: op.date,
                    lines: [
                      { accountId: f.account('6000'), debitCents: op.cents + 1 },
                      { accountId: f.account('1000'), creditCents: op.cents },
                    ],
                  }),
                )
                .catch((e: unknown) => e);
              expect(isDomainError(err) && err.code).toBe('UNBALANCED_ENTRY');
            }
          }

          const end = addDays(FIRST_DAY, DAYS);
          const tb = await trialBalance(db, f.orgId, { endDate: end });
          expect(tb.totalDebitCents).toBe(tb.totalCreditCents);
          const actual = new Map(tb.rows.map((r) => [r.accountId, r.debitCents - r.creditCents]));
          const nonZero = new Map([...expected].filter(([, cents]) => cents !== 0));
          expect(actual).toEqual(nonZero);

          for (const asOf of [...asOfDates, end]) {
            const bs = await balanceSheet(db, f.orgId, { asOf });
            expect(bs.totalLiabilitiesAndEquityCents).toBe(bs.assets.totalCents);
            const ytd = await profitAndLoss(db, f.orgId, { startDate: bs.fiscalYearStart, endDate: asOf });
            expect(ytd.netIncomeCents).toBe(bs.equity.currentYearEarningsCents);
            const window = await trialBalance(db, f.orgId, { startDate: bs.fiscalYearStart, endDate: asOf });
            expect(window.totalDebitCents).toBe(window.totalCreditCents);
          }
          expect(await rollupMismatches(db, f.orgId)).toEqual([]);
        },
      ),
      { numRuns: 25 },
    );
  });
});
