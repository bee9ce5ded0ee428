import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';

/** Questions asked of many organizations' books at once (the gateway's health scan), answered from the ledger's tables. */

const idList = (ids: string[]) =>
  sql`(${sql.join(
    ids.map((id) => sql`${id}::uuid`),
    sql`, `,
  )})`;

export interface AccountNetAsOf {
  organization_id: string;
  id: string;
  code: string;
  name: string;
  type: string;
  subtype: string;
  /** The sum of the account's daily rollup through the date, in cents, as text. */
  net: string;
  /** The last day with activity through the date, or null. */
  last_day: string | null;
}

/** Every active account of the organizations (at least one) with its net through `asOf` and its last day of activity. */
export async function accountNetsAsOf(
  db: Executor,
  organizationIds: string[],
  asOf: string,
): Promise<AccountNetAsOf[]> {
  return rowsOf<AccountNetAsOf>(
    await db.execute(sql`
      select a.organization_id, a.id, a.code, a.name, a.type::text as type, a.subtype::text as subtype,
             coalesce(sum(b.amount_cents), 0)::text as net, max(b.day)::text as last_day
      from accounts a
      left join account_daily_balances b
        on b.organization_id = a.organization_id and b.account_id = a.id and b.day <= ${asOf}::date
      where a.organization_id in ${idList(organizationIds)} and not a.archived
      group by a.organization_id, a.id, a.code, a.name, a.type, a.subtype`),
  );
}

/** For each of the organizations (at least one) with draft entries: how many, and the oldest one's date. */
export async function draftEntryCounts(
  db: Executor,
  organizationIds: string[],
): Promise<{ organization_id: string; n: number; oldest: string }[]> {
  return rowsOf<{ organization_id: string; n: number; oldest: string }>(
    await db.execute(sql`
      select organization_id, count(*)::int as n, min(entry_date)::text as oldest from journal_entries
      where organization_id in ${idList(organizationIds)} and status = 'draft' group by organization_id`),
  );
}

/** The date each of the organizations (at least one) has closed its books through, or null. */
export async function booksClosedThrough(
  db: Executor,
  organizationIds: string[],
): Promise<{ id: string; closed: string | null }[]> {
  return rowsOf<{ id: string; closed: string | null }>(
    await db.execute(
      sql`select id, books_closed_through::text as closed from organizations where id in ${idList(organizationIds)}`,
    ),
  );
}
