import { type SQL, sql } from 'drizzle-orm';
import { addDays } from './dates';

/**
 * Balances over a date range from the two rollups: account_monthly_balances for the whole calendar months inside the
 * range, account_daily_balances for the days of the partial months at its edges. An edge month is read the short
 * way: its days inside the range, or the whole month less its days outside the range, whichever are fewer. So a
 * range costs at most one row per account and month plus about half a month of days per account at each edge,
 * whatever the number of lines or the length of the range's middle.
 */

/** One part of a range that one rollup answers, added or taken away. */
export interface RollupPiece {
  grain: 'month' | 'day';
  /** Null: since the beginning of the books. For `month`, both ends are first days of months. */
  from: string | null;
  through: string;
  sign: 1 | -1;
}

const dayOf = (date: string) => Number(date.slice(8, 10));
const monthStart = (date: string) => `${date.slice(0, 8)}01`;
const pad = (n: number, width: number) => String(n).padStart(width, '0');
/** The last day of the month containing `date`. */
function monthEnd(date: string): string {
  const days = new Date(Date.UTC(Number(date.slice(0, 4)), Number(date.slice(5, 7)), 0)).getUTCDate();
  return `${date.slice(0, 8)}${pad(days, 2)}`;
}
/** The first day of the month `delta` months after (or before) the one containing `date`. */
function monthStartAfter(date: string, delta: 1 | -1): string {
  const index = Number(date.slice(0, 4)) * 12 + Number(date.slice(5, 7)) - 1 + delta;
  return `${pad(Math.floor(index / 12), 4)}-${pad((index % 12) + 1, 2)}-01`;
}

/**
 * The days [from, through] of one month (both in it), as the cheaper of: those days, or the whole month less the
 * days before `from` and after `through`.
 */
function withinMonth(from: string, through: string): RollupPiece[] {
  const first = monthStart(from);
  const last = monthEnd(from);
  const inside = dayOf(through) - dayOf(from) + 1;
  const outside = dayOf(last) - inside;
  if (inside <= outside + 1) return [{ grain: 'day', from, through, sign: 1 }];
  const pieces: RollupPiece[] = [{ grain: 'month', from: first, through: first, sign: 1 }];
  if (from !== first) pieces.push({ grain: 'day', from: first, through: addDays(from, -1), sign: -1 });
  if (through !== last) pieces.push({ grain: 'day', from: addDays(through, 1), through: last, sign: -1 });
  return pieces;
}

/** Splits [from, through] (from null: since the beginning) into the pieces the two rollups answer. */
export function rollupPieces(from: string | null, through: string): RollupPiece[] {
  if (from !== null && monthStart(from) === monthStart(through)) return withinMonth(from, through);
  const pieces: RollupPiece[] = [];
  // The whole months: from the first one starting at or after `from` to the last one ending at or before `through`.
  const wholeFrom = from === null ? null : dayOf(from) === 1 ? from : monthStartAfter(from, 1);
  const wholeThrough = through === monthEnd(through) ? monthStart(through) : monthStartAfter(through, -1);
  if (wholeFrom === null || wholeFrom <= wholeThrough) {
    pieces.push({ grain: 'month', from: wholeFrom, through: wholeThrough, sign: 1 });
  }
  if (from !== null && dayOf(from) !== 1) pieces.push(...withinMonth(from, monthEnd(from)));
  if (through !== monthEnd(through)) pieces.push(...withinMonth(monthStart(through), through));
  return pieces;
}

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
    const [table, column] =
      p.grain === 'month'
        ? [sql.raw('account_monthly_balances'), sql.raw('month')]
        : [sql.raw('account_daily_balances'), sql.raw('day')];
    const amount = p.sign === 1 ? sql.raw('amount_cents') : sql.raw('-amount_cents');
    const lower = p.from === null ? sql`` : sql` and ${column} >= ${p.from}::date`;
    const account = accountId === null ? sql`` : sql` and account_id = ${accountId}::uuid`;
    return sql`select account_id, ${amount} as amount_cents from ${table}
      where organization_id = ${organizationId}${account} and ${column} <= ${p.through}::date${lower}`;
  });
  // A range always has a piece; the empty union is there for the type.
  if (parts.length === 0) return sql`(select null::uuid as account_id, 0::bigint as amount_cents where false)`;
  return sql`(${sql.join(parts, sql` union all `)})`;
}
