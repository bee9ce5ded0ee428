import { type SQL, sql } from 'drizzle-orm';
import { addDays } from './dates';

/**
 * Balances over a date range from the rollups: account_yearly_balances for the whole calendar years inside the range,
 * account_monthly_balances for the whole months of the partial years at its edges, account_daily_balances for the
 * days of the partial months at its edges. Each edge is read the short way: the periods inside the range, or the
 * enclosing period less the periods outside the range, whichever reads fewer rows. So a range costs per account one
 * row per whole year, at most about six months and half a month of days at each edge, whatever the number of lines.
 */

export type RollupGrain = 'year' | 'month' | 'day';

/** One part of a range that one rollup answers, added or taken away. */
export interface RollupPiece {
  grain: RollupGrain;
  /** Null: since the beginning of the books. For `year` and `month`, both ends are first days of periods. */
  from: string | null;
  through: string;
  sign: 1 | -1;
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');
const yearOf = (date: string) => Number(date.slice(0, 4));
const monthIndex = (date: string) => yearOf(date) * 12 + Number(date.slice(5, 7)) - 1;
const fromMonthIndex = (index: number) => `${pad(Math.floor(index / 12), 4)}-${pad((index % 12) + 1, 2)}-01`;

/** The first day of the year or month containing `date`. */
const periodStart = (grain: 'year' | 'month', date: string) =>
  grain === 'year' ? `${date.slice(0, 4)}-01-01` : `${date.slice(0, 8)}01`;

/** The last day of the year or month containing `date`. */
function periodEnd(grain: 'year' | 'month', date: string): string {
  if (grain === 'year') return `${date.slice(0, 4)}-12-31`;
  const days = new Date(Date.UTC(yearOf(date), Number(date.slice(5, 7)), 0)).getUTCDate();
  return `${date.slice(0, 8)}${pad(days, 2)}`;
}

/** The first day of the period `delta` periods after (or before) the one containing `date`. */
const periodStartAfter = (grain: 'year' | 'month', date: string, delta: 1 | -1) =>
  grain === 'year' ? `${pad(yearOf(date) + delta, 4)}-01-01` : fromMonthIndex(monthIndex(date) + delta);

/** How many rollup rows per account a piece reads (a piece since the beginning counts as one). */
function rowsRead(p: RollupPiece): number {
  if (p.from === null) return 1;
  if (p.grain === 'year') return yearOf(p.through) - yearOf(p.from) + 1;
  if (p.grain === 'month') return monthIndex(p.through) - monthIndex(p.from) + 1;
  return (Date.parse(p.through) - Date.parse(p.from)) / 86_400_000 + 1;
}
const cost = (pieces: RollupPiece[]) => pieces.reduce((n, p) => n + rowsRead(p), 0);
const negated = (pieces: RollupPiece[]) => pieces.map((p) => ({ ...p, sign: p.sign === 1 ? -1 : 1 }) as RollupPiece);

/** [from, through] in pieces of `grain` and finer. */
function split(from: string | null, through: string, grain: 'year' | 'month'): RollupPiece[] {
  const finer = (f: string, t: string): RollupPiece[] =>
    grain === 'year' ? split(f, t, 'month') : [{ grain: 'day', from: f, through: t, sign: 1 }];
  if (from !== null && periodStart(grain, from) === periodStart(grain, through)) {
    // Within one period: its parts inside the range, or the whole period less its parts outside.
    const first = periodStart(grain, from);
    const last = periodEnd(grain, from);
    const inside = finer(from, through);
    const outside: RollupPiece[] = [{ grain, from: first, through: first, sign: 1 }];
    if (from !== first) outside.push(...negated(finer(first, addDays(from, -1))));
    if (through !== last) outside.push(...negated(finer(addDays(through, 1), last)));
    return cost(outside) < cost(inside) ? outside : inside;
  }
  const pieces: RollupPiece[] = [];
  // The whole periods: from the first one starting at or after `from` to the last one ending at or before `through`.
  const wholeFrom = from === null || from === periodStart(grain, from) ? from : periodStartAfter(grain, from, 1);
  const wholeThrough =
    through === periodEnd(grain, through) ? periodStart(grain, through) : periodStartAfter(grain, through, -1);
  if (wholeFrom === null || wholeFrom <= wholeThrough) {
    pieces.push({ grain, from: wholeFrom, through: wholeThrough, sign: 1 });
  }
  if (from !== null && from !== periodStart(grain, from)) pieces.push(...split(from, periodEnd(grain, from), grain));
  if (through !== periodEnd(grain, through)) pieces.push(...split(periodStart(grain, through), through, grain));
  return pieces;
}

/** Splits [from, through] (from null: since the beginning) into the pieces the rollups answer. */
export const rollupPieces = (from: string | null, through: string): RollupPiece[] => split(from, through, 'year');

const ROLLUPS: Record<RollupGrain, [table: string, column: string]> = {
  year: ['account_yearly_balances', 'year'],
  month: ['account_monthly_balances', 'month'],
  day: ['account_daily_balances', 'day'],
};

/**
 * A subquery of (account_id, amount_cents) rows whose sum per account is the signed (debit-positive) net of the
 * posted lines dated in [from, through]; `accountId` narrows it to one account. Group it by account_id.
 */
export function rollupRows(
  organizationId: string,
  from: string | null,
  through: string,
  accountId: string | null = null,
): SQL {
  const parts = rollupPieces(from, through).map((p) => {
    const [table, column] = ROLLUPS[p.grain].map((name) => sql.raw(name)) as [SQL, SQL];
    const amount = p.sign === 1 ? sql.raw('amount_cents') : sql.raw('-amount_cents');
    const lower = p.from === null ? sql`` : sql` and ${column} >= ${p.from}::date`;
    const account = accountId === null ? sql`` : sql` and account_id = ${accountId}::uuid`;
    return sql`select account_id, ${amount} as amount_cents from ${table}
      where organization_id = ${organizationId}${account} and ${column} <= ${p.through}::date${lower}`;
  });
  return sql`(${sql.join(parts, sql` union all `)})`;
}
