import { DomainError, decodeCursor, type EventType, isUuid, newId, type Page, toPage } from '@firm/core';
import { type Executor, rowsOf, type Tx } from '@firm/db';
import { type LedgerContext, nowOf, POSTING_SOURCE_TYPE, recordEvent } from '@firm/ledger';
import { documentEntryOf, documentTypeOf } from '@firm/documents';
import { type SQL, sql } from 'drizzle-orm';

/**
 * The states of a bank transaction, the one catalogue the schema, the API and the docs read.
 * Reconciled is a flag beside the state, for rows in the books (categorized or matched) only.
 */
export const BANK_TRANSACTION_STATES = {
  unreviewed: 'In the register, not in the books: waiting to be categorized, matched, split or excluded.',
  categorized: 'Posted to accounts by its own entry (reclassify, or a split across accounts only).',
  matched: 'Settled against invoices, bills or payments, possibly with account lines beside them.',
  excluded: 'Out of the books: what it posted is void. Include brings it back as unreviewed.',
} as const;

export type BankTransactionStatus = keyof typeof BANK_TRANSACTION_STATES;
export const BANK_TRANSACTION_STATUS_LIST = Object.keys(BANK_TRANSACTION_STATES) as BankTransactionStatus[];

/**
 * Where a row may go from each state (staying where it is is always allowed: a reclassified row stays categorized).
 * The database holds rows to the same moves (the trigger `bank_transactions_transition` of
 * `migrations/0028_bank_transaction_transitions.sql`); a test checks the two agree.
 */
export const BANK_TRANSACTION_TRANSITIONS: Record<BankTransactionStatus, readonly BankTransactionStatus[]> = {
  unreviewed: ['categorized', 'matched', 'excluded'],
  categorized: ['unreviewed', 'matched', 'excluded'],
  matched: ['unreviewed', 'categorized', 'excluded'],
  excluded: ['unreviewed'],
};

/** What a move changes beside the state; a field left out keeps its value. */
export interface BankTransactionMove {
  journalEntryId?: string | null;
  contactId?: string | null;
  taxRateId?: string | null;
  reviewReason?: string | null;
}

/**
 * Moves a bank transaction to a state (the one way a row's state changes once it is in the register), with what
 * changes beside it; `from` is the state the caller read under its row lock. A move the catalogue does not allow is
 * refused here with 409 INVALID_STATE, before the database would refuse it.
 */
export async function moveBankTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  row: { id: string; status: BankTransactionStatus },
  to: BankTransactionStatus,
  changes: BankTransactionMove = {},
): Promise<void> {
  if (row.status !== to && !BANK_TRANSACTION_TRANSITIONS[row.status].includes(to)) {
    throw new DomainError('INVALID_STATE', `a ${row.status} bank transaction cannot become ${to}`);
  }
  const set: SQL[] = [sql`status = ${to}`, sql`updated_at = ${nowOf(ctx).toISOString()}`];
  if (changes.journalEntryId !== undefined) set.push(sql`journal_entry_id = ${changes.journalEntryId}`);
  if (changes.contactId !== undefined) set.push(sql`contact_id = ${changes.contactId}`);
  if (changes.taxRateId !== undefined) set.push(sql`tax_rate_id = ${changes.taxRateId}`);
  if (changes.reviewReason !== undefined) set.push(sql`review_reason = ${changes.reviewReason}`);
  await tx.execute(sql`update bank_transactions set ${sql.join(set, sql`, `)}
    where organization_id = ${organizationId} and id = ${row.id}`);
}

/**
 * Where a register row came from. `posting` rows are written by the ledger's posting statement
 * (`postingRegisterRowsSql` of `@firm/ledger`, the one statement of another package writing our table) and by
 * `registerPaymentRow` here.
 */
export const SOURCE_TYPES = ['aggregator_bank_feed', POSTING_SOURCE_TYPE, 'manual'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

export interface BankTransactionLine {
  accountId: string | null;
  documentId: string | null;
  documentType: string | null;
  paymentId: string | null;
  description: string | null;
  amountCents: number;
  /** An account line's sales tax rate, and how much of its amount was tax (posted to the rate's account). */
  taxRateId: string | null;
  taxCents: number;
}

export interface BankTransaction {
  id: string;
  organizationId: string;
  bankAccountId: string;
  date: string;
  amountCents: number;
  description: string;
  counterparty: string | null;
  sourceType: SourceType;
  status: BankTransactionStatus;
  pending: boolean;
  externalId: string | null;
  reviewReason: string | null;
  reconciled: boolean;
  reconciliationId: string | null;
  reconciledAt: string | null;
  /** The entry the row's own account lines posted (or the posting route's entry); null when it has none. */
  journalEntryId: string | null;
  /** Every entry the row is in the books through: its own, and those of the payments it settled. */
  journalEntryIds: string[];
  /** Invoices, bills and payments it settled, and payments a match recorded. */
  documentIds: string[];
  contactId: string | null;
  taxRateId: string | null;
  lines: BankTransactionLine[];
  createdAt: string;
  updatedAt: string;
}

export const bankTransactionNotFound = () =>
  new DomainError('BANK_TRANSACTION_NOT_FOUND', 'bank transaction not found');

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

interface Row extends Omit<BankTransaction, 'reconciled' | 'journalEntryIds' | 'documentIds' | 'lines'> {
  lines: (BankTransactionLine & { documentEntryId: string | null; paymentEntryId: string | null })[];
}

const SELECT = sql`
  select t.id, t.organization_id as "organizationId", t.bank_account_id as "bankAccountId",
         t.txn_date::text as date, t.amount_cents::float8 as "amountCents", t.description, t.counterparty,
         t.source_type as "sourceType", t.status, t.pending, t.external_id as "externalId",
         t.review_reason as "reviewReason", t.reconciliation_id as "reconciliationId",
         ${iso('t.reconciled_at')} as "reconciledAt", t.journal_entry_id as "journalEntryId",
         t.contact_id as "contactId", t.tax_rate_id as "taxRateId",
         coalesce((
           select json_agg(json_build_object(
             'accountId', l.account_id, 'documentId', l.document_id,
             'documentType', ${documentTypeOf(sql`l.organization_id`, sql`l.document_id`)},
             'paymentId', l.payment_id, 'description', l.description, 'amountCents', l.amount_cents,
             'taxRateId', l.tax_rate_id, 'taxCents', l.tax_cents,
             'documentEntryId', ${documentEntryOf(sql`l.organization_id`, sql`l.document_id`, true)},
             'paymentEntryId', ${documentEntryOf(sql`l.organization_id`, sql`l.payment_id`)}) order by l.line_no)
           from bank_transaction_lines l
           where l.organization_id = t.organization_id and l.bank_transaction_id = t.id), '[]'::json) as lines,
         ${iso('t.created_at')} as "createdAt", ${iso('t.updated_at')} as "updatedAt"
  from bank_transactions t`;

function present(row: Row): BankTransaction {
  const entries = new Set<string>();
  if (row.journalEntryId) entries.add(row.journalEntryId);
  const documents = new Set<string>();
  for (const l of row.lines) {
    if (l.documentEntryId) entries.add(l.documentEntryId);
    if (l.paymentEntryId) entries.add(l.paymentEntryId);
    if (l.documentId) documents.add(l.documentId);
    if (l.paymentId) documents.add(l.paymentId);
  }
  return {
    ...row,
    amountCents: Number(row.amountCents),
    reconciled: row.reconciliationId !== null,
    journalEntryIds: [...entries],
    documentIds: [...documents],
    lines: row.lines.map((l) => ({
      accountId: l.accountId,
      documentId: l.documentId,
      documentType: l.documentType,
      paymentId: l.paymentId,
      description: l.description,
      amountCents: Number(l.amountCents),
      taxRateId: l.taxRateId,
      taxCents: Number(l.taxCents),
    })),
  };
}

/** A bank transaction of the organization; `lock` holds its row until commit, so actions on it take turns. */
export async function getBankTransaction(
  db: Executor,
  organizationId: string,
  id: string,
  lock = false,
): Promise<BankTransaction> {
  if (!isUuid(id)) throw bankTransactionNotFound();
  if (lock) {
    const locked = rowsOf(
      await db.execute(sql`select 1 from bank_transactions where organization_id = ${organizationId} and id = ${id}
        for update`),
    );
    if (locked.length === 0) throw bankTransactionNotFound();
  }
  const [row] = rowsOf<Row>(
    await db.execute(sql`${SELECT} where t.organization_id = ${organizationId} and t.id = ${id}`),
  );
  if (!row) throw bankTransactionNotFound();
  return present(row);
}

export interface BankTransactionFilter {
  limit: number;
  cursor?: string | undefined;
  bankAccountId?: string | undefined;
  status?: BankTransactionStatus | undefined;
  reconciled?: boolean | undefined;
  sourceType?: SourceType | undefined;
  startDate?: string | undefined;
  endDate?: string | undefined;
  minAmountCents?: number | undefined;
  maxAmountCents?: number | undefined;
  /** Words found in the description or the counterparty, case-insensitively. */
  q?: string | undefined;
}

const likePattern = (text: string) => `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Bank transactions newest first (date, then id), filtered. */
export async function listBankTransactions(
  db: Executor,
  organizationId: string,
  filter: BankTransactionFilter,
): Promise<Page<BankTransaction>> {
  const before = filter.cursor ? (decodeCursor(filter.cursor, ['date', 'uuid']) as [string, string]) : null;
  const where: SQL[] = [sql`t.organization_id = ${organizationId}`];
  if (filter.bankAccountId) where.push(sql`t.bank_account_id = ${filter.bankAccountId}`);
  if (filter.status) where.push(sql`t.status = ${filter.status}`);
  if (filter.reconciled !== undefined)
    where.push(filter.reconciled ? sql`t.reconciliation_id is not null` : sql`t.reconciliation_id is null`);
  if (filter.sourceType) where.push(sql`t.source_type = ${filter.sourceType}`);
  if (filter.startDate) where.push(sql`t.txn_date >= ${filter.startDate}`);
  if (filter.endDate) where.push(sql`t.txn_date <= ${filter.endDate}`);
  if (filter.minAmountCents !== undefined) where.push(sql`t.amount_cents >= ${filter.minAmountCents}`);
  if (filter.maxAmountCents !== undefined) where.push(sql`t.amount_cents <= ${filter.maxAmountCents}`);
  if (filter.q) {
    const pattern = likePattern(filter.q);
    where.push(sql`(t.description ilike ${pattern} or t.counterparty ilike ${pattern})`);
  }
  if (before) where.push(sql`(t.txn_date, t.id) < (${before[0]}::date, ${before[1]}::uuid)`);
  const rows = rowsOf<Row>(
    await db.execute(sql`${SELECT} where ${sql.join(where, sql` and `)}
      order by t.txn_date desc, t.id desc limit ${filter.limit + 1}`),
  );
  const page = toPage(rows, filter.limit, (r) => [r.date, r.id]);
  return { data: page.data.map(present), nextCursor: page.nextCursor };
}

/** The audit and outbox rows of a change to a bank transaction, carrying the row as the API returns it. */
export async function bankTransactionEvent(
  tx: Tx,
  ctx: LedgerContext,
  action: EventType,
  transaction: BankTransaction,
  data: Record<string, unknown> = {},
): Promise<void> {
  await recordEvent(tx, ctx, {
    organizationId: transaction.organizationId,
    action,
    resourceType: 'bank_transaction',
    resourceId: transaction.id,
    data: { status: transaction.status, amountCents: transaction.amountCents, ...data },
    payload: { ...transaction },
  });
}

export interface NewBankTransaction {
  bankAccountId: string;
  date: string;
  amountCents: number;
  description: string;
  counterparty?: string | null | undefined;
  sourceType: SourceType;
  externalId?: string | null | undefined;
  pending?: boolean | undefined;
}

/** Writes a register row as unreviewed and returns its id. */
export async function insertBankTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: NewBankTransaction,
): Promise<string> {
  const id = newId();
  const now = nowOf(ctx).toISOString();
  await tx.execute(sql`
    insert into bank_transactions
      (id, organization_id, bank_account_id, txn_date, amount_cents, description, counterparty, source_type,
       external_id, pending, created_at, updated_at)
    values (${id}, ${organizationId}, ${input.bankAccountId}, ${input.date}, ${input.amountCents}, ${input.description},
            ${input.counterparty ?? null}, ${input.sourceType}, ${input.externalId ?? null}, ${input.pending ?? false},
            ${now}, ${now})`);
  return id;
}

/**
 * The register row of a payment a posting route wrote through a bank-linked account, in the posting's transaction:
 * `sourceType: posting`, matched to the payment. Null when the account holds no register. A feed row matched to the
 * same payment later takes this row's place, so the money is in the register once.
 */
export async function registerPaymentRow(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: {
    ledgerAccountId: string;
    date: string;
    amountCents: number;
    description: string;
    counterparty: string | null;
    paymentId: string;
  },
): Promise<string | null> {
  const [bank] = rowsOf<{ id: string }>(
    await tx.execute(sql`select id from bank_accounts
      where organization_id = ${organizationId} and account_id = ${input.ledgerAccountId}`),
  );
  if (!bank) return null;
  const id = await insertBankTransaction(tx, ctx, organizationId, {
    bankAccountId: bank.id,
    date: input.date,
    amountCents: input.amountCents,
    description: input.description,
    counterparty: input.counterparty,
    sourceType: POSTING_SOURCE_TYPE,
  });
  await tx.execute(sql`
    insert into bank_transaction_lines (id, organization_id, bank_transaction_id, line_no, document_id, amount_cents)
    values (${newId()}, ${organizationId}, ${id}, 1, ${input.paymentId}, ${Math.abs(input.amountCents)})`);
  await moveBankTransaction(tx, ctx, organizationId, { id, status: 'unreviewed' }, 'matched');
  return id;
}
