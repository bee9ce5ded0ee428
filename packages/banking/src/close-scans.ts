import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';

/** What the month-end checklist asks of the bank registers: one statement a question. */

export interface RegisterReconciledThrough {
  bankAccountId: string;
  /** The ledger account (bank or credit card) the register belongs to. */
  accountId: string;
  name: string;
  /** The statement end date of the last finished reconciliation, or null when none was ever finished. */
  reconciledThrough: string | null;
  /** When that reconciliation was finished. */
  reconciledAt: string | null;
}

/** Every bank and card register with its last finished reconciliation. */
export async function registersReconciledThrough(
  db: Executor,
  organizationId: string,
): Promise<RegisterReconciledThrough[]> {
  return rowsOf<RegisterReconciledThrough>(
    await db.execute(sql`
      select b.id as "bankAccountId", b.account_id as "accountId", b.name,
             last.end_date as "reconciledThrough", last.finished_at as "reconciledAt"
      from bank_accounts b
      left join lateral (
        select r.statement_end_date::text as end_date,
               to_char(r.finished_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as finished_at
        from reconciliations r
        where r.organization_id = b.organization_id and r.bank_account_id = b.id and r.status = 'finished'
        order by r.statement_end_date desc, r.id desc limit 1
      ) last on true
      where b.organization_id = ${organizationId}
      order by lower(b.name), b.id`),
  );
}

/** The bank rows dated in the range that wait for review (unreviewed) or are still pending at the bank. */
export async function rowsAwaitingReview(
  db: Executor,
  organizationId: string,
  from: string,
  to: string,
): Promise<{ id: string; bankAccountId: string; date: string; pending: boolean }[]> {
  return rowsOf<{ id: string; bankAccountId: string; date: string; pending: boolean }>(
    await db.execute(sql`
      select id, bank_account_id as "bankAccountId", txn_date::text as date, pending
      from bank_transactions
      where organization_id = ${organizationId} and txn_date between ${from}::date and ${to}::date
        and (status = 'unreviewed' or (pending and status <> 'excluded'))
      order by bank_account_id, txn_date, id`),
  );
}

/**
 * Bank and card rows dated in the period that move at least `minCents` either way and are in the books or waiting for
 * review (not excluded): the rows a receipt should stand behind.
 */
export async function largeRowsInPeriod(
  db: Executor,
  organizationId: string,
  from: string,
  to: string,
  minCents: number,
): Promise<{ id: string; bankAccountId: string; date: string; amountCents: number; journalEntryId: string | null }[]> {
  return rowsOf<{
    id: string;
    bankAccountId: string;
    date: string;
    amountCents: number;
    journalEntryId: string | null;
  }>(
    await db.execute(sql`
      select id, bank_account_id as "bankAccountId", txn_date::text as date, amount_cents::float8 as "amountCents",
             journal_entry_id as "journalEntryId"
      from bank_transactions
      where organization_id = ${organizationId} and txn_date between ${from}::date and ${to}::date
        and status <> 'excluded' and abs(amount_cents) >= ${minCents}
      order by txn_date, id`),
  );
}
