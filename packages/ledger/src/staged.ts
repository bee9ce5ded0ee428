import { type Executor, rowsOf, type Tx } from '@firm/db';
import { type SQL, sql } from 'drizzle-orm';
import type { LedgerContext } from './context';

/**
 * Set-wise posting of entries staged elsewhere (a journal import): the caller names its staged rows as a select,
 * the ledger writes its own tables from it. `staged` is a parenthesized select with the columns entry_no, line,
 * line_no (1 for an entry's first line), entry_id, line_id, organization_id, entry_date, memo, reference,
 * payee_name, account_id, description, amount_cents.
 */

/** The first staged row whose account is archived (its line in the file and the account's code), if any. */
export async function firstStagedArchivedAccount(
  db: Executor,
  staged: SQL,
): Promise<{ line: number; code: string } | undefined> {
  const [archived] = rowsOf<{ line: number; code: string }>(
    await db.execute(sql`select r.line, a.code from ${staged} r
      join accounts a on a.organization_id = r.organization_id and a.id = r.account_id
      where a.archived limit 1`),
  );
  return archived;
}

/**
 * Posts the staged entries of the import `importId` (source `import`), their lines and the daily rollup of their
 * lines, in three statements of the caller's transaction. The database's rules hold as for any posting (balance at
 * commit, closed periods, archived companies, an imported reference unique in the company: the caller turns the
 * `journal_entries_import_reference` violation into its own error). Returns how many entries and lines it wrote and
 * the last entry_no staged.
 */
export async function postStagedEntries(
  tx: Tx,
  ctx: LedgerContext,
  importId: string,
  staged: SQL,
  at: string,
): Promise<{ entries: number; lines: number; through: number | null }> {
  const [entries] = rowsOf<{ n: number; through: number | null }>(
    await tx.execute(sql`
      with written as (
        insert into journal_entries
          (id, organization_id, status, source, entry_date, memo, reference, payee_name, created_at, posted_at,
           created_by_kind, created_by_id, import_id)
        select r.entry_id, r.organization_id, 'posted', 'import', r.entry_date, r.memo, r.reference, r.payee_name,
               ${at}, ${at}, ${ctx.actor.kind}, ${ctx.actor.id}, ${importId}
        from ${staged} r
        where r.line_no = 1
        order by r.entry_no
        returning 1
      )
      select count(*)::int as n, (select max(entry_no) from ${staged} r) as through from written`),
  );
  const [lines] = rowsOf<{ n: number }>(
    await tx.execute(sql`
      with written as (
        insert into journal_lines (id, organization_id, entry_id, line_no, account_id, description, amount_cents)
        select r.line_id, r.organization_id, r.entry_id, r.line_no, r.account_id, r.description, r.amount_cents
        from ${staged} r
        order by r.entry_no, r.line_no
        returning 1
      )
      select count(*)::int as n from written`),
  );
  await tx.execute(sql`
    insert into account_daily_balances (organization_id, account_id, day, amount_cents)
    select r.organization_id, r.account_id, r.entry_date, sum(r.amount_cents)
    from ${staged} r
    group by r.organization_id, r.account_id, r.entry_date
    order by r.account_id, r.entry_date
    on conflict (organization_id, account_id, day)
    do update set amount_cents = account_daily_balances.amount_cents + excluded.amount_cents`);
  return { entries: entries?.n ?? 0, lines: lines?.n ?? 0, through: entries?.through ?? null };
}

/** Column expression: whether the organization has an imported entry with the reference the caller's row names. */
export function importedReferenceExists(organizationId: string, referenceColumn: SQL): SQL {
  return sql`exists (select 1 from journal_entries j
    where j.organization_id = ${organizationId} and j.reference = ${referenceColumn} and j.import_id is not null)`;
}

/** Every account of the organization, archived or not, for reading a file's account names and codes. */
export async function chartAccounts(
  db: Executor,
  organizationId: string,
): Promise<{ id: string; code: string; name: string; archived: boolean }[]> {
  return rowsOf<{ id: string; code: string; name: string; archived: boolean }>(
    await db.execute(sql`select id, code, name, archived from accounts where organization_id = ${organizationId}`),
  );
}

/** The date the firm's company has closed its books through (null when never), or undefined when no such company. */
export async function companyBooksClosedThrough(
  db: Executor,
  firmId: string,
  organizationId: string,
): Promise<{ books_closed_through: string | null } | undefined> {
  const [org] = rowsOf<{ books_closed_through: string | null }>(
    await db.execute(sql`select books_closed_through::text from organizations
      where id = ${organizationId} and firm_id = ${firmId}`),
  );
  return org;
}
