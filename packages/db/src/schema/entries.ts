import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  date,
  foreignKey,
  index,
  integer,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { accounts } from './accounts';
import { imports } from './imports';
import { organizations } from './organizations';

export const entryStatus = pgEnum('entry_status', ['draft', 'posted', 'void']);

/** What created the entry: a draft through /entries, or one of the posting routes. */
export const entrySource = pgEnum('entry_source', [
  'manual',
  'journal_entry',
  'purchase',
  'deposit',
  'transfer',
  'bill_payment',
  // Sales and purchase documents (migrations/0005_documents.sql adds these values).
  'invoice',
  'customer_payment',
  'sales_receipt',
  'credit_memo',
  'refund_receipt',
  'bill',
  'vendor_credit',
  // Bank actions: categorize, split, a match's difference, a reconciliation adjustment (migrations/0007_banking.sql).
  'bank_transaction',
  // History brought in from a file (migrations/0026_imports.sql).
  'import',
  // A company's opening balances (migrations/0027_opening_balances.sql).
  'opening_balance',
]);

export const journalEntries = pgTable(
  'journal_entries',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    status: entryStatus('status').notNull().default('draft'),
    source: entrySource('source').notNull().default('manual'),
    entryDate: date('entry_date', { mode: 'string' }).notNull(),
    memo: text('memo'),
    reference: text('reference'),
    payeeName: text('payee_name'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    postedAt: timestamp('posted_at', { withTimezone: true }),
    voidedAt: timestamp('voided_at', { withTimezone: true }),
    voidReason: text('void_reason'),
    /** Who wrote it: the credential kind and id (API key, token family, user). */
    createdByKind: text('created_by_kind').notNull(),
    createdById: text('created_by_id').notNull(),
    /** The import that brought the entry in from a file; its reference is then unique in the company. */
    importId: uuid('import_id'),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'journal_entries_pkey', columns: [t.organizationId, t.id] }),
    index('journal_entries_org_date_idx').on(t.organizationId, t.entryDate, t.id),
    check('journal_entries_posted_at', sql`(${t.status} = 'draft') = (${t.postedAt} is null)`),
    check('journal_entries_voided', sql`(${t.status} = 'void') = (${t.voidedAt} is not null)`),
    // An imported entry's reference is unique in its company: the same history is never posted twice.
    uniqueIndex('journal_entries_import_reference')
      .on(t.organizationId, t.reference)
      .where(sql`${t.importId} is not null`),
    foreignKey({
      name: 'journal_entries_import_fk',
      columns: [t.organizationId, t.importId],
      foreignColumns: [imports.organizationId, imports.id],
    }),
  ],
);

/**
 * One line a row. `amount_cents` is signed: debits positive, credits negative, so an entry balances
 * when its lines sum to zero and an account's balance is a plain sum.
 */
export const journalLines = pgTable(
  'journal_lines',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id').notNull(),
    entryId: uuid('entry_id').notNull(),
    lineNo: integer('line_no').notNull(),
    accountId: uuid('account_id').notNull(),
    description: text('description'),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'journal_lines_pkey', columns: [t.organizationId, t.id] }),
    // Composite keys: a line belongs to an entry and names an account of the same organization.
    foreignKey({
      name: 'journal_lines_entry_fk',
      columns: [t.organizationId, t.entryId],
      foreignColumns: [journalEntries.organizationId, journalEntries.id],
    }),
    foreignKey({
      name: 'journal_lines_account_fk',
      columns: [t.organizationId, t.accountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    unique('journal_lines_entry_line_key').on(t.organizationId, t.entryId, t.lineNo),
    index('journal_lines_account_idx').on(t.accountId),
    // A zero line carries no debit or credit; refusing it keeps every line meaningful and the side unambiguous.
    check('journal_lines_amount_nonzero', sql`${t.amountCents} <> 0`),
  ],
);
