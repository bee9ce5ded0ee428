import { DomainError, decodeCursor, isUuid, newId, type Page, toPage } from '@firm/core';
import { type Executor, rowsOf, type Tx } from '@firm/db';
import { isIsoDate, type LedgerContext, nowOf, recordEvent } from '@firm/ledger';
import { type SQL, sql } from 'drizzle-orm';
import { getBankAccount } from './accounts';
import { applyClassification, excludeBankTransaction } from './actions';
import { getBankTransaction, insertBankTransaction } from './transactions';

export type ReconciliationStatus = 'open' | 'finished' | 'undone';

/**
 * A reconciliation session. Balances are in the register's sign (money in positive): a card statement showing
 * 500.00 owed has an ending balance of -50000. The cleared balance is the opening balance (the ending balance of
 * the account's last finished session, 0 for the first) plus every transaction reconciled into this one.
 */
export interface Reconciliation {
  id: string;
  organizationId: string;
  bankAccountId: string;
  status: ReconciliationStatus;
  statementEndDate: string;
  statementEndingBalanceCents: number;
  openingBalanceCents: number;
  clearedBalanceCents: number;
  differenceCents: number;
  reconciledCount: number;
  adjustmentEntryId: string | null;
  finishedAt: string | null;
  undoneAt: string | null;
  createdAt: string;
  updatedAt: string;
}

export const reconciliationNotFound = () => new DomainError('RECONCILIATION_NOT_FOUND', 'reconciliation not found');

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

const SELECT = sql`
  select r.id, r.organization_id as "organizationId", r.bank_account_id as "bankAccountId", r.status,
         r.statement_end_date::text as "statementEndDate",
         r.statement_ending_balance_cents::float8 as "statementEndingBalanceCents",
         r.opening_balance_cents::float8 as "openingBalanceCents",
         (r.opening_balance_cents + coalesce(c.cents, 0))::float8 as "clearedBalanceCents",
         (r.statement_ending_balance_cents - r.opening_balance_cents - coalesce(c.cents, 0))::float8 as "differenceCents",
         coalesce(c.n, 0)::int as "reconciledCount", r.adjustment_entry_id as "adjustmentEntryId",
         ${iso('r.finished_at')} as "finishedAt", ${iso('r.undone_at')} as "undoneAt",
         ${iso('r.created_at')} as "createdAt", ${iso('r.updated_at')} as "updatedAt"
  from reconciliations r
  left join lateral (
    select sum(t.amount_cents) as cents, count(*) as n from bank_transactions t
    where t.organization_id = r.organization_id and t.reconciliation_id = r.id
  ) c on true`;

const toNumbers = (r: Reconciliation): Reconciliation => ({
  ...r,
  statementEndingBalanceCents: Number(r.statementEndingBalanceCents),
  openingBalanceCents: Number(r.openingBalanceCents),
  clearedBalanceCents: Number(r.clearedBalanceCents),
  differenceCents: Number(r.differenceCents),
});

export async function getReconciliation(
  db: Executor,
  organizationId: string,
  id: string,
  lock = false,
): Promise<Reconciliation> {
  if (!isUuid(id)) throw reconciliationNotFound();
  if (lock) {
    const rows = rowsOf(
      await db.execute(sql`select 1 from reconciliations where organization_id = ${organizationId} and id = ${id}
        for update`),
    );
    if (rows.length === 0) throw reconciliationNotFound();
  }
  const [row] = rowsOf<Reconciliation>(
    await db.execute(sql`${SELECT} where r.organization_id = ${organizationId} and r.id = ${id}`),
  );
  if (!row) throw reconciliationNotFound();
  return toNumbers(row);
}

export interface ReconciliationFilter {
  limit: number;
  cursor?: string | undefined;
  bankAccountId?: string | undefined;
  status?: ReconciliationStatus | undefined;
}

/** Sessions newest statement first. */
export async function listReconciliations(
  db: Executor,
  organizationId: string,
  filter: ReconciliationFilter,
): Promise<Page<Reconciliation>> {
  const before = filter.cursor ? (decodeCursor(filter.cursor, ['date', 'uuid']) as [string, string]) : null;
  const where: SQL[] = [sql`r.organization_id = ${organizationId}`];
  if (filter.bankAccountId) where.push(sql`r.bank_account_id = ${filter.bankAccountId}`);
  if (filter.status) where.push(sql`r.status = ${filter.status}`);
  if (before) where.push(sql`(r.statement_end_date, r.id) < (${before[0]}::date, ${before[1]}::uuid)`);
  const rows = rowsOf<Reconciliation>(
    await db.execute(sql`${SELECT} where ${sql.join(where, sql` and `)}
      order by r.statement_end_date desc, r.id desc limit ${filter.limit + 1}`),
  );
  const page = toPage(rows, filter.limit, (r) => [r.statementEndDate, r.id]);
  return { data: page.data.map(toNumbers), nextCursor: page.nextCursor };
}

async function reconciliationEvent(
  tx: Tx,
  ctx: LedgerContext,
  action: 'reconciliation.opened' | 'reconciliation.finished' | 'reconciliation.undone',
  r: Reconciliation,
): Promise<void> {
  await recordEvent(tx, ctx, {
    organizationId: r.organizationId,
    action,
    resourceType: 'reconciliation',
    resourceId: r.id,
    data: {
      bankAccountId: r.bankAccountId,
      statementEndDate: r.statementEndDate,
      statementEndingBalanceCents: r.statementEndingBalanceCents,
      clearedBalanceCents: r.clearedBalanceCents,
    },
    payload: { ...r },
  });
}

export interface OpenReconciliationInput {
  bankAccountId: string;
  statementEndDate: string;
  statementEndingBalanceCents: number;
}

/**
 * Opens a session for a bank account and a statement. One open session per account (RECONCILIATION_OPEN); the
 * statement must end after the last finished one, whose ending balance is this one's opening balance.
 */
export async function openReconciliation(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: OpenReconciliationInput,
): Promise<Reconciliation> {
  if (!isIsoDate(input.statementEndDate)) {
    throw new DomainError('VALIDATION_ERROR', 'statementEndDate is not a date', [
      { field: 'statementEndDate', message: 'is not a YYYY-MM-DD date' },
    ]);
  }
  const bank = await getBankAccount(tx, organizationId, input.bankAccountId, true);
  const [open] = rowsOf<{ id: string }>(
    await tx.execute(sql`select id from reconciliations
      where organization_id = ${organizationId} and bank_account_id = ${bank.id} and status = 'open'`),
  );
  if (open) {
    throw new DomainError('RECONCILIATION_OPEN', `reconciliation ${open.id} of this bank account is still open`, [
      { field: 'bankAccountId', message: 'has an open reconciliation', reconciliationId: open.id },
    ]);
  }
  const [last] = rowsOf<{ end_date: string; cents: number }>(
    await tx.execute(sql`select statement_end_date::text as end_date, statement_ending_balance_cents::float8 as cents
      from reconciliations
      where organization_id = ${organizationId} and bank_account_id = ${bank.id} and status = 'finished'
      order by statement_end_date desc, id desc limit 1`),
  );
  if (last && input.statementEndDate <= last.end_date) {
    throw new DomainError(
      'VALIDATION_ERROR',
      `the statement must end after the last reconciled one (${last.end_date})`,
      [{ field: 'statementEndDate', message: `must be after ${last.end_date}` }],
    );
  }
  const id = newId();
  const now = nowOf(ctx).toISOString();
  await tx.execute(sql`
    insert into reconciliations
      (id, organization_id, bank_account_id, status, statement_end_date, statement_ending_balance_cents,
       opening_balance_cents, created_at, updated_at)
    values (${id}, ${organizationId}, ${bank.id}, 'open', ${input.statementEndDate},
            ${input.statementEndingBalanceCents}, ${last ? Number(last.cents) : 0}, ${now}, ${now})`);
  const r = await getReconciliation(tx, organizationId, id);
  await reconciliationEvent(tx, ctx, 'reconciliation.opened', r);
  return r;
}

/**
 * Finishes an open session when its cleared balance equals the statement's ending balance. With
 * `adjustmentAccountId`, a difference is booked first: a manual register row for it, categorized to that account
 * and reconciled into the session. Without it, a difference is RECONCILIATION_UNBALANCED and nothing changes.
 */
export async function finishReconciliation(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  input: { adjustmentAccountId?: string | undefined } = {},
): Promise<Reconciliation> {
  const r = await getReconciliation(tx, organizationId, id, true);
  if (r.status !== 'open') throw new DomainError('INVALID_STATE', `the reconciliation is ${r.status}, not open`);
  let adjustmentEntryId: string | null = null;
  if (r.differenceCents !== 0) {
    if (!input.adjustmentAccountId) {
      throw new DomainError(
        'RECONCILIATION_UNBALANCED',
        `the cleared balance ${r.clearedBalanceCents} differs from the statement ending balance ${r.statementEndingBalanceCents} by ${r.differenceCents} cents`,
        [
          {
            field: 'adjustmentAccountId',
            message: 'reconcile more transactions, or name an account for an adjustment',
            clearedBalanceCents: r.clearedBalanceCents,
            statementEndingBalanceCents: r.statementEndingBalanceCents,
            differenceCents: r.differenceCents,
          },
        ],
      );
    }
    const txnId = await insertBankTransaction(tx, ctx, organizationId, {
      bankAccountId: r.bankAccountId,
      date: r.statementEndDate,
      amountCents: r.differenceCents,
      description: 'Reconciliation adjustment',
      sourceType: 'manual',
    });
    const t = await getBankTransaction(tx, organizationId, txnId);
    await applyClassification(
      tx,
      ctx,
      t,
      [
        {
          accountId: input.adjustmentAccountId,
          amountCents: Math.abs(r.differenceCents),
          field: 'adjustmentAccountId',
        },
      ],
      {},
    );
    const adjusted = await getBankTransaction(tx, organizationId, txnId);
    adjustmentEntryId = adjusted.journalEntryId;
    await tx.execute(sql`update bank_transactions set reconciliation_id = ${id}, reconciled_at = ${nowOf(ctx).toISOString()}
      where organization_id = ${organizationId} and id = ${txnId}`);
  }
  const now = nowOf(ctx).toISOString();
  await tx.execute(sql`update reconciliations set status = 'finished', finished_at = ${now}, updated_at = ${now},
      adjustment_entry_id = ${adjustmentEntryId}
    where organization_id = ${organizationId} and id = ${id}`);
  const finished = await getReconciliation(tx, organizationId, id);
  await reconciliationEvent(tx, ctx, 'reconciliation.finished', finished);
  return finished;
}

/**
 * Undoes the last finished session of a bank account: its transactions are no longer reconciled, and an
 * adjustment it booked is excluded (its entry voided). Refused for an earlier session or while the account has an
 * open one, whose opening balance rests on this one.
 */
export async function undoReconciliation(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
): Promise<Reconciliation> {
  const r = await getReconciliation(tx, organizationId, id, true);
  if (r.status !== 'finished')
    throw new DomainError('INVALID_STATE', `the reconciliation is ${r.status}, not finished`);
  await getBankAccount(tx, organizationId, r.bankAccountId, true);
  const [later] = rowsOf<{ id: string; status: string }>(
    await tx.execute(sql`select id, status from reconciliations
      where organization_id = ${organizationId} and bank_account_id = ${r.bankAccountId} and id <> ${id}
        and (status = 'open' or (status = 'finished' and statement_end_date > ${r.statementEndDate}))
      limit 1`),
  );
  if (later) {
    throw new DomainError(
      'INVALID_STATE',
      later.status === 'open'
        ? `reconciliation ${later.id} of this bank account is open; finish it before undoing an earlier one`
        : `only the last finished reconciliation can be undone; ${later.id} is later`,
    );
  }
  const now = nowOf(ctx).toISOString();
  await tx.execute(sql`update reconciliations set status = 'undone', undone_at = ${now}, updated_at = ${now}
    where organization_id = ${organizationId} and id = ${id}`);
  const adjustments = rowsOf<{ id: string }>(
    await tx.execute(sql`select id from bank_transactions
      where organization_id = ${organizationId} and reconciliation_id = ${id}
        and ${r.adjustmentEntryId ? sql`journal_entry_id = ${r.adjustmentEntryId}` : sql`false`}`),
  );
  await tx.execute(sql`update bank_transactions set reconciliation_id = null, reconciled_at = null, updated_at = ${now}
    where organization_id = ${organizationId} and reconciliation_id = ${id}`);
  for (const a of adjustments) {
    await excludeBankTransaction(tx, ctx, organizationId, a.id, 'reconciliation undone');
  }
  const undone = await getReconciliation(tx, organizationId, id);
  await reconciliationEvent(tx, ctx, 'reconciliation.undone', undone);
  return undone;
}
