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
