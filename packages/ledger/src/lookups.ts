import { type AccountSubtype, type AccountType } from '@firm/core';
import { type Executor, rowsOf } from '@firm/db';
import { type SQL, sql } from 'drizzle-orm';
import { rollupRows } from './balances';

/**
 * The questions other packages ask of accounts and companies. They name the ledger's tables through these functions
 * (or, inside a statement of their own, through these column expressions), never in SQL of their own.
 */

const idList = (ids: readonly string[]): SQL =>
  sql.join(
    ids.map((id) => sql`${id}::uuid`),
    sql`, `,
  );

export interface ActiveAccount {
  id: string;
  code: string;
  name: string;
  type: AccountType;
  subtype: AccountSubtype;
}

/** The active (not archived) accounts of the organization among `ids` (well-formed, distinct). */
export async function activeAccountRows(
  db: Executor,
  organizationId: string,
  ids: readonly string[],
): Promise<ActiveAccount[]> {
  if (ids.length === 0) return [];
  return rowsOf<ActiveAccount>(
    await db.execute(sql`
      select id, code, name, type, subtype from accounts
      where organization_id = ${organizationId} and not archived and id in (${idList(ids)})`),
  );
}

/** The id of the organization's active account of `subtype` with the lowest code, if any. */
export async function firstActiveAccountOfSubtype(
  db: Executor,
  organizationId: string,
  subtype: AccountSubtype,
): Promise<string | undefined> {
  const [row] = rowsOf<{ id: string }>(
    await db.execute(sql`
      select id from accounts
      where organization_id = ${organizationId} and subtype = ${subtype}::account_subtype and not archived
      order by code limit 1`),
  );
  return row?.id;
}

/** The net of every account of `subtype` through `asOf`, in cents (debits positive). */
export async function subtypeNetAsOf(
  db: Executor,
  organizationId: string,
  subtype: AccountSubtype,
  asOf: string,
): Promise<number> {
  const [control] = rowsOf<{ net: number | string }>(
    await db.execute(sql`
      select coalesce(sum(b.amount_cents), 0) as net
      from ${rollupRows(organizationId, null, asOf)} b
      join accounts a on a.organization_id = ${organizationId} and a.id = b.account_id
      where a.subtype = ${subtype}::account_subtype`),
  );
  return Number(control?.net ?? 0);
}

/** An account of the organization (archived or not) with the organization's currency, or undefined. */
export async function accountWithCurrency(
  db: Executor,
  organizationId: string,
  id: string | null,
): Promise<{ name: string; subtype: string; archived: boolean; currency: string } | undefined> {
  const [account] = rowsOf<{ name: string; subtype: string; archived: boolean; currency: string }>(
    await db.execute(sql`
      select a.name, a.subtype, a.archived, o.currency from accounts a
      join organizations o on o.id = a.organization_id
      where a.organization_id = ${organizationId} and a.id = ${id}`),
  );
  return account;
}

/** The subtype of an active account of the organization, or undefined. */
export async function activeAccountSubtype(
  db: Executor,
  organizationId: string,
  id: string,
): Promise<string | undefined> {
  const [account] = rowsOf<{ subtype: string }>(
    await db.execute(sql`
      select a.subtype::text as subtype from accounts a
      where a.organization_id = ${organizationId} and a.id = ${id} and not a.archived`),
  );
  return account?.subtype;
}

/** When the company was archived, or null; `forShare` holds its row against an archive until the transaction ends. */
export async function companyArchivedAt(
  db: Executor,
  organizationId: string,
  forShare = false,
): Promise<string | null | undefined> {
  const [company] = rowsOf<{ archived_at: string | null }>(
    await db.execute(
      sql`select archived_at from organizations where id = ${organizationId}${forShare ? sql` for share` : sql``}`,
    ),
  );
  return company === undefined ? undefined : company.archived_at;
}

/** Column expression: an account's subtype, for the caller's row naming the organization and the account. */
export function accountSubtypeOf(organizationIdColumn: SQL, accountIdColumn: SQL): SQL {
  return sql`(select a.subtype from accounts a where a.organization_id = ${organizationIdColumn} and a.id = ${accountIdColumn})`;
}

/** Column expression: an account's balance through `through` (sum of its daily rollup, debits positive), or null. */
export function accountNetThrough(organizationIdColumn: SQL, accountIdColumn: SQL, through: SQL): SQL {
  return sql`(select sum(d.amount_cents) from account_daily_balances d
    where d.organization_id = ${organizationIdColumn} and d.account_id = ${accountIdColumn} and d.day <= ${through})`;
}

/** The firm a company belongs to, or undefined when there is no such company. */
export async function firmOfCompany(db: Executor, organizationId: string): Promise<string | undefined> {
  const [company] = rowsOf<{ firm_id: string }>(
    await db.execute(sql`select firm_id from organizations where id = ${organizationId}`),
  );
  return company?.firm_id;
}

/** Column expression: the firm of the organization the caller's row names. */
export function firmOfOrganization(organizationIdColumn: SQL): SQL {
  return sql`(select o.firm_id from organizations o where o.id = ${organizationIdColumn})`;
}

/** A select of the ids of archived companies, to embed in the caller's statement. */
export const archivedOrganizationIds = sql`(select id from organizations where archived_at is not null)`;

/**
 * The balance of each of the organization's accounts among `ids` through `through` (sum of the daily rollup, debits
 * positive, in cents as text) with the organization's currency; accounts not of the organization are left out.
 */
export async function accountBalancesWithCurrency(
  db: Executor,
  organizationId: string,
  ids: readonly string[],
  through: string,
): Promise<{ account_id: string; cents: string; currency: string }[]> {
  if (ids.length === 0) return [];
  return rowsOf<{ account_id: string; cents: string; currency: string }>(
    await db.execute(sql`
      select a.id as account_id, coalesce(sum(b.amount_cents), 0)::text as cents, o.currency
      from accounts a
      join organizations o on o.id = a.organization_id
      left join account_daily_balances b
        on b.organization_id = a.organization_id and b.account_id = a.id and b.day <= ${through}
      where a.organization_id = ${organizationId} and a.id in (${sql.join(
        ids.map((id) => sql`${id}`),
        sql`, `,
      )})
      group by a.id, o.currency`),
  );
}

/** Column expression: the sum of an entry's debits in cents, for the caller's row naming the organization and entry. */
export function entryDebitsCentsOf(organizationIdColumn: SQL, entryIdColumn: SQL): SQL {
  return sql`(select coalesce(sum(greatest(l.amount_cents, 0)), 0) from journal_lines l
            where l.organization_id = ${organizationIdColumn} and l.entry_id = ${entryIdColumn})`;
}
