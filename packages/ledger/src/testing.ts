import { accounts, type Db, firms, organizations, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import type { LedgerContext } from './context';
import { STANDARD_CHART } from './chart-template';

/** A firm, one organization with the standard chart, and a context acting for the firm: what ledger tests start from. */
export interface LedgerFixture {
  firmId: string;
  orgId: string;
  /** The id of the account with this chart code ('1000' Business Checking, '4000' Sales...). */
  account(code: string): string;
  ctx: LedgerContext;
}

export async function createLedgerFixture(
  db: Db,
  options: { slug?: string; fiscalYearStartMonth?: number } = {},
): Promise<LedgerFixture> {
  const slug = options.slug ?? `firm-${Math.random().toString(36).slice(2, 10)}`;
  const [firm] = await db
    .insert(firms)
    .values({ slug, name: `Firm ${slug}` })
    .returning();
  const firmId = (firm as { id: string }).id;
  const [org] = await db
    .insert(organizations)
    .values({ firmId, name: `Client of ${slug}`, fiscalYearStartMonth: options.fiscalYearStartMonth ?? 1 })
    .returning();
  const orgId = (org as { id: string }).id;
  const rows = await db
    .insert(accounts)
    .values(STANDARD_CHART.map((a) => ({ ...a, organizationId: orgId })))
    .returning({ id: accounts.id, code: accounts.code });
  const byCode = new Map(rows.map((r) => [r.code, r.id]));
  return {
    firmId,
    orgId,
    account(code) {
      const id = byCode.get(code);
      if (!id) throw new Error(`no account ${code} in the standard chart`);
      return id;
    },
    ctx: { firmId, actor: { kind: 'test', id: 'tester' }, requestId: 'req-test' },
  };
}

/**
 * Days (and months and years, as `month YYYY-MM-01` and `year YYYY-01-01`) where the rollups (daily, monthly,
 * yearly) and the posted lines disagree; empty when each rollup is exactly the signed sum of posted lines per
 * account and period. A zero sum counts as no row on both
 * sides: voids leave zero rows behind, and an entry may debit and credit one account alike.
 */
export async function rollupMismatches(
  db: Db,
  organizationId: string,
): Promise<{ account_id: string; day: string; rollup: number | null; lines: number | null }[]> {
  return rowsOf(
    await db.execute(sql`
      with rollup as (
        select account_id, day, amount_cents as amount from account_daily_balances
        where organization_id = ${organizationId} and amount_cents <> 0
      ), posted as (
        select l.account_id, e.entry_date as day, sum(l.amount_cents) as amount
        from journal_lines l
        join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
        where l.organization_id = ${organizationId} and e.status = 'posted'
        group by l.account_id, e.entry_date
        having sum(l.amount_cents) <> 0
      )
      , monthly as (
        select account_id, month, amount_cents as amount from account_monthly_balances
        where organization_id = ${organizationId} and amount_cents <> 0
      ), posted_monthly as (
        select account_id, date_trunc('month', day)::date as month, sum(amount) as amount
        from posted group by 1, 2 having sum(amount) <> 0
      )
      , yearly as (
        select account_id, year, amount_cents as amount from account_yearly_balances
        where organization_id = ${organizationId} and amount_cents <> 0
      ), posted_yearly as (
        select account_id, date_trunc('year', day)::date as year, sum(amount) as amount
        from posted group by 1, 2 having sum(amount) <> 0
      )
      select coalesce(r.account_id, p.account_id) as account_id, coalesce(r.day, p.day)::text as day,
             r.amount as rollup, p.amount as lines
      from rollup r full join posted p on p.account_id = r.account_id and p.day = r.day
      where r.amount is distinct from p.amount
      union all
      select coalesce(m.account_id, p.account_id), 'month ' || coalesce(m.month, p.month)::text,
             m.amount, p.amount
      from monthly m full join posted_monthly p on p.account_id = m.account_id and p.month = m.month
      where m.amount is distinct from p.amount
      union all
      select coalesce(y.account_id, p.account_id), 'year ' || coalesce(y.year, p.year)::text, y.amount, p.amount
      from yearly y full join posted_yearly p on p.account_id = y.account_id and p.year = y.year
      where y.amount is distinct from p.amount`),
  );
}

/**
 * Many posted entries at once, for tests and benches that need large books: `entries` two-line entries, each debiting
 * one of `debitAccountIds` and crediting `creditAccountId` by 1.00 to 90.99, dated over `days` days from `from`, with
 * the daily rollup the posting path keeps. Written by plain SQL in one transaction, with every rule of the database
 * still checked (each entry's balance at commit, lines only with their entry, closed periods, the monthly and yearly
 * rollups kept by triggers): fast, but no different in the books from postings.
 */
export async function postBulkEntries(
  db: Db,
  organizationId: string,
  options: {
    debitAccountIds: readonly string[];
    creditAccountId: string;
    entries: number;
    from: string;
    days: number;
    memo?: string;
  },
): Promise<void> {
  const debits = sql`array[${sql.join(
    options.debitAccountIds.map((id) => sql`${id}::uuid`),
    sql`, `,
  )}]`;
  const memo = options.memo ?? 'Bulk entry';
  await db.transaction(async (tx) => {
    await tx.execute(sql`
      create temp table bulk_entries on commit drop as
      select gen_random_uuid() as id, g as n, ${options.from}::date + (g % ${options.days}) as day,
             (${debits})[1 + g % ${options.debitAccountIds.length}] as debit, 100 + g * 7919 % 9000 as cents
      from generate_series(1, ${options.entries}) g`);
    await tx.execute(sql`
      insert into journal_entries
        (id, organization_id, status, source, entry_date, memo, posted_at, created_by_kind, created_by_id)
      select id, ${organizationId}::uuid, 'posted'::entry_status, 'journal_entry'::entry_source, day, ${memo} || ' ' || n, now(),
             'test', 'bulk'
      from bulk_entries order by n`);
    await tx.execute(sql`
      insert into journal_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
      select gen_random_uuid(), ${organizationId}::uuid, id, 1, debit, cents from bulk_entries
      union all
      select gen_random_uuid(), ${organizationId}::uuid, id, 2, ${options.creditAccountId}::uuid, -cents from bulk_entries`);
    // In account and day order, as the posting path writes them.
    await tx.execute(sql`
      insert into account_daily_balances (organization_id, account_id, day, amount_cents)
      select ${organizationId}::uuid, account_id, day, sum(amount) from (
        select debit as account_id, day, cents as amount from bulk_entries
        union all
        select ${options.creditAccountId}::uuid, day, -cents from bulk_entries
      ) s
      group by account_id, day
      order by account_id, day
      on conflict (organization_id, account_id, day)
      do update set amount_cents = account_daily_balances.amount_cents + excluded.amount_cents`);
  });
}
