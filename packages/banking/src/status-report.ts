import { type Executor, rowsOf } from '@firm/db';
import { accountNetThrough } from '@firm/ledger';
import { sql } from 'drizzle-orm';

export interface ReconciliationStatusRow {
  bankAccountId: string;
  name: string;
  accountId: string;
  lastReconciledDate: string | null;
  lastReconciledBalanceCents: number | null;
  openReconciliationId: string | null;
  /** Rows in the books (categorized or matched) not yet reconciled, dated up to the report's end date. */
  unreconciledCount: number;
  unreconciledAmountCents: number;
  unreviewedCount: number;
  /** The ledger balance of the linked account up to the end date, in the register's sign (money in positive). */
  ledgerBalanceCents: number;
  /** The register's rows in the books up to the end date: equal to the ledger balance when every entry on the
   * account came through the register. */
  registerBalanceCents: number;
  feed: { connectionId: string; status: string; lastSyncedAt: string | null; lastError: string | null } | null;
}

/**
 * Per bank account: the last finished reconciliation, what is in the books but not reconciled, what waits for
 * review, the ledger and register balances, and the feed's health. One statement for every account.
 */
export async function reconciliationStatus(
  db: Executor,
  organizationId: string,
  endDate: string,
): Promise<ReconciliationStatusRow[]> {
  const rows = rowsOf<ReconciliationStatusRow>(
    await db.execute(sql`
      select b.id as "bankAccountId", b.name, b.account_id as "accountId",
             last.end_date as "lastReconciledDate", last.cents as "lastReconciledBalanceCents",
             open.id as "openReconciliationId",
             coalesce(t.unreconciled_count, 0)::int as "unreconciledCount",
             coalesce(t.unreconciled_cents, 0)::float8 as "unreconciledAmountCents",
             coalesce(t.unreviewed_count, 0)::int as "unreviewedCount",
             coalesce(t.register_cents, 0)::float8 as "registerBalanceCents",
             coalesce(${accountNetThrough(sql`b.organization_id`, sql`b.account_id`, sql`${endDate}::date`)}, 0)::float8
               as "ledgerBalanceCents",
             case when c.id is null then null else json_build_object(
               'connectionId', c.id, 'status', c.status,
               'lastSyncedAt', to_char(c.last_synced_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
               'lastError', c.last_error) end as feed
      from bank_accounts b
      left join lateral (
        select r.statement_end_date::text as end_date, r.statement_ending_balance_cents::float8 as cents
        from reconciliations r where r.bank_account_id = b.id and r.status = 'finished'
        order by r.statement_end_date desc, r.id desc limit 1
      ) last on true
      left join reconciliations open on open.bank_account_id = b.id and open.status = 'open'
      left join lateral (
        select count(*) filter (where x.status in ('categorized', 'matched') and x.reconciliation_id is null)
                 as unreconciled_count,
               sum(x.amount_cents) filter (where x.status in ('categorized', 'matched') and x.reconciliation_id is null)
                 as unreconciled_cents,
               count(*) filter (where x.status = 'unreviewed') as unreviewed_count,
               sum(x.amount_cents) filter (where x.status in ('categorized', 'matched')) as register_cents
        from bank_transactions x
        where x.organization_id = b.organization_id and x.bank_account_id = b.id and x.txn_date <= ${endDate}::date
      ) t on true
      left join bank_feed_connections c on c.organization_id = b.organization_id and c.id = b.feed_connection_id
      where b.organization_id = ${organizationId}
      order by lower(b.name), b.id`),
  );
  return rows.map((r) => ({
    ...r,
    lastReconciledBalanceCents: r.lastReconciledBalanceCents === null ? null : Number(r.lastReconciledBalanceCents),
    unreconciledAmountCents: Number(r.unreconciledAmountCents),
    ledgerBalanceCents: Number(r.ledgerBalanceCents),
    registerBalanceCents: Number(r.registerBalanceCents),
  }));
}
