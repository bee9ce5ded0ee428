import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';

/** What the month-end checklist asks of the ledger: set-wise, one statement a question, from the daily rollup. */

export interface AccountPeriodFigures {
  id: string;
  code: string;
  name: string;
  type: string;
  subtype: string;
  /** Debit-positive net of every posted entry dated through the period end. */
  balanceCents: number;
  /** Debit-positive net of the entries dated in the period. */
  periodCents: number;
  /** Debit-positive net of the entries dated from `trailingStart` to the day before the period starts. */
  trailingCents: number;
}

/**
 * Every active account with its balance at the period end, its period's net and the net of the months before it,
 * read from the daily rollup (one row per account and day), never from the lines.
 */
export async function accountPeriodFigures(
  db: Executor,
  organizationId: string,
  period: { periodStart: string; periodEnd: string; trailingStart: string },
): Promise<AccountPeriodFigures[]> {
  const rows = rowsOf<{
    id: string;
    code: string;
    name: string;
    type: string;
    subtype: string;
    balance: string;
    period: string;
    trailing: string;
  }>(
    await db.execute(sql`
      select a.id, a.code, a.name, a.type::text as type, a.subtype::text as subtype,
             coalesce(b.balance, 0)::text as balance, coalesce(b.period, 0)::text as period,
             coalesce(b.trailing, 0)::text as trailing
      from accounts a
      left join (
        select account_id, sum(amount_cents) as balance,
               sum(amount_cents) filter (where day >= ${period.periodStart}::date) as period,
               sum(amount_cents) filter (where day >= ${period.trailingStart}::date and day < ${period.periodStart}::date)
                 as trailing
        from account_daily_balances
        where organization_id = ${organizationId} and day <= ${period.periodEnd}::date
        group by account_id
      ) b on b.account_id = a.id
      where a.organization_id = ${organizationId} and not a.archived
      order by a.code, a.id`),
  );
  return rows.map((r) => ({
    id: r.id,
    code: r.code,
    name: r.name,
    type: r.type,
    subtype: r.subtype,
    balanceCents: Number(r.balance),
    periodCents: Number(r.period),
    trailingCents: Number(r.trailing),
  }));
}

/** The draft entries dated in the range, oldest first. */
export async function draftEntriesDated(
  db: Executor,
  organizationId: string,
  from: string,
  to: string,
): Promise<{ id: string; entryDate: string; memo: string | null }[]> {
  return rowsOf<{ id: string; entryDate: string; memo: string | null }>(
    await db.execute(sql`
      select id, entry_date::text as "entryDate", memo from journal_entries
      where organization_id = ${organizationId} and status = 'draft'
        and entry_date between ${from}::date and ${to}::date
      order by entry_date, id`),
  );
}

export interface ScheduledEntryBehind {
  scheduleId: string;
  name: string;
  /** The occurrence that failed, or the next one still waiting to run although it falls on or before `to`. */
  occurrence: string;
  state: 'failed' | 'not_run';
  errorCode: string | null;
}

/**
 * Scheduled entries behind for a range: an occurrence in the range whose run failed (and was not posted since), and
 * an active schedule whose next occurrence is due on or before the range's end but has not run.
 */
export async function scheduledEntriesBehind(
  db: Executor,
  organizationId: string,
  from: string,
  to: string,
): Promise<ScheduledEntryBehind[]> {
  return rowsOf<ScheduledEntryBehind>(
    await db.execute(sql`
      select r.schedule_id as "scheduleId", s.name, r.occurrence::text as occurrence, 'failed' as state,
             r.error_code as "errorCode"
      from scheduled_entry_runs r
      join scheduled_journal_entries s on s.organization_id = r.organization_id and s.id = r.schedule_id
      where r.organization_id = ${organizationId} and r.status = 'failed' and s.status <> 'deleted'
        and r.occurrence between ${from}::date and ${to}::date
      union all
      select s.id, s.name, s.next_occurrence::text, 'not_run', s.last_error->>'code'
      from scheduled_journal_entries s
      where s.organization_id = ${organizationId} and s.status = 'active' and s.next_occurrence <= ${to}::date
        and not exists (
          select 1 from scheduled_entry_runs r
          where r.organization_id = s.organization_id and r.schedule_id = s.id and r.occurrence = s.next_occurrence
            and r.status = 'failed' and r.occurrence between ${from}::date and ${to}::date)
      order by 3, 1`),
  );
}
