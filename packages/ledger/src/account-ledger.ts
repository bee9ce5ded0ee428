import { type AccountType, decodeCursor, encodeCursor } from '@firm/core';
import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { addDays, checkDateRange, todayUtc } from './dates';

/** +1 when the account's normal balance is a debit, -1 when it is a credit. */
export const normalSign = (type: AccountType): 1 | -1 => (type === 'asset' || type === 'expense' ? 1 : -1);

/** A signed (debit-positive) amount seen in the account's normal direction; never -0, which would not compare equal to 0. */
export const inNormalDirection = (type: AccountType, signedCents: number): number =>
  signedCents === 0 ? 0 : normalSign(type) * signedCents;

export interface LedgerLine {
  entryId: string;
  lineId: string;
  date: string;
  memo: string | null;
  description: string | null;
  debitCents: number;
  creditCents: number;
  runningBalanceCents: number;
}

export interface AccountLedger {
  startDate: string | null;
  endDate: string | null;
  openingBalanceCents: number;
  closingBalanceCents: number;
  lines: LedgerLine[];
  nextCursor: string | null;
}

export interface LedgerQuery {
  startDate?: string | undefined;
  endDate?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** Signed (debit-positive) sum of the account's posted lines in a date range; either bound may be open. */
async function postedSum(
  db: Executor,
  organizationId: string,
  accountId: string,
  from: string | null,
  through: string | null,
): Promise<number> {
  const rows = rowsOf<{ total: number | string | null }>(
    await db.execute(sql`
      select coalesce(sum(l.amount_cents), 0)::bigint as total
      from journal_lines l
      join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
      where l.organization_id = ${organizationId} and l.account_id = ${accountId} and e.status = 'posted'
        and (${from}::date is null or e.entry_date >= ${from}::date)
        and (${through}::date is null or e.entry_date <= ${through}::date)`),
  );
  return Number(rows[0]?.total ?? 0);
}

/**
 * An account's posted lines in date order with running balances, between an opening and a closing
 * balance. Every figure comes from the same posted lines, so it reconciles with the reports.
 */
export async function accountLedger(
  db: Executor,
  organizationId: string,
  account: { id: string; type: AccountType },
  query: LedgerQuery,
): Promise<AccountLedger> {
  const balance = (signed: number) => inNormalDirection(account.type, signed);
  const start = query.startDate ?? null;
  // As the reports: the balance through today unless the caller names another end.
  const end = query.endDate ?? todayUtc();
  checkDateRange(start, end);
  const opening = start ? await postedSum(db, organizationId, account.id, null, addDays(start, -1)) : 0;
  const inRange = await postedSum(db, organizationId, account.id, start, end);

  let after: [string, string, number] | null = null;
  if (query.cursor) {
    const [d, e, n] = decodeCursor(query.cursor, ['date', 'uuid', 'int']);
    after = [String(d), String(e), Number(n)];
  }
  const rows = rowsOf<{
    entry_id: string;
    line_id: string;
    line_no: number;
    date: string;
    memo: string | null;
    description: string | null;
    amount: number | string;
    running: number | string;
  }>(
    await db.execute(sql`
      with ranged as (
        select l.entry_id, l.id as line_id, l.line_no, e.entry_date::text as date, e.memo, l.description,
               l.amount_cents as amount,
               sum(l.amount_cents) over (order by e.entry_date, l.entry_id, l.line_no) as running
        from journal_lines l
        join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
        where l.organization_id = ${organizationId} and l.account_id = ${account.id} and e.status = 'posted'
          and (${start}::date is null or e.entry_date >= ${start}::date)
          and (${end}::date is null or e.entry_date <= ${end}::date)
      )
      select * from ranged
      where ${after === null}
         or (date, entry_id, line_no) > (${after?.[0] ?? null}::date::text, ${after?.[1] ?? null}::uuid, ${after?.[2] ?? null}::int)
      order by date, entry_id, line_no
      limit ${query.limit + 1}`),
  );
  const page = rows.slice(0, query.limit);
  const last = page[page.length - 1];
  return {
    startDate: start,
    endDate: end,
    openingBalanceCents: balance(opening),
    closingBalanceCents: balance(opening + inRange),
    lines: page.map((r) => {
      const amount = Number(r.amount);
      return {
        entryId: r.entry_id,
        lineId: r.line_id,
        date: r.date,
        memo: r.memo,
        description: r.description,
        debitCents: Math.max(amount, 0),
        creditCents: amount < 0 ? -amount : 0,
        runningBalanceCents: balance(opening + Number(r.running)),
      };
    }),
    nextCursor: rows.length > query.limit && last ? encodeCursor([last.date, last.entry_id, last.line_no]) : null,
  };
}
