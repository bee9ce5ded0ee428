import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  date,
  foreignKey,
  index,
  integer,
  numeric,
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
import { contacts } from './contacts';
import { journalEntries } from './entries';
import { items, taxRates } from './items';
import { organizations } from './organizations';

export const documentType = pgEnum('document_type', [
  'invoice',
  'customer_payment',
  'sales_receipt',
  'credit_memo',
  'refund_receipt',
  'estimate',
  'bill',
  'vendor_credit',
  'bill_payment',
]);

/**
 * Invoices and bills: open -> partially_paid -> paid. Credits and payments (their unapplied amount):
 * open -> partially_applied -> applied. Receipts are paid when written. Estimates: open -> converted.
 * Any of them may end void.
 */
export const documentStatus = pgEnum('document_status', [
  'open',
  'partially_paid',
  'paid',
  'partially_applied',
  'applied',
  'converted',
  'void',
]);

/**
 * Every sales and purchase document in one table, so that allocations, open balances and aging read one
 * shape. `open_cents` is what is still to be paid (invoice, bill), applied (credit memo, vendor credit) or
 * allocated (the unapplied part of a payment); the database keeps it within [0, total].
 */
export const documents = pgTable(
  'documents',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    type: documentType('type').notNull(),
    status: documentStatus('status').notNull(),
    number: text('number'),
    contactId: uuid('contact_id').notNull(),
    date: date('date', { mode: 'string' }).notNull(),
    dueDate: date('due_date', { mode: 'string' }),
    memo: text('memo'),
    reference: text('reference'),
    subtotalCents: bigint('subtotal_cents', { mode: 'number' }).notNull(),
    taxCents: bigint('tax_cents', { mode: 'number' }).notNull().default(0),
    totalCents: bigint('total_cents', { mode: 'number' }).notNull(),
    openCents: bigint('open_cents', { mode: 'number' }).notNull(),
    /** The accounts-receivable or accounts-payable account the document posts to. */
    controlAccountId: uuid('control_account_id'),
    /** The bank (or card, or undeposited-funds) account money moves through: payments and receipts. */
    bankAccountId: uuid('bank_account_id'),
    /** The entry the document posted; null for estimates. Replaced when an edit re-posts. */
    journalEntryId: uuid('journal_entry_id'),
    /** An invoice made from an estimate names it; an estimate converted names its invoice. */
    estimateId: uuid('estimate_id'),
    invoiceId: uuid('invoice_id'),
    voidReason: text('void_reason'),
    voidedAt: timestamp('voided_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'documents_pkey', columns: [t.organizationId, t.id] }),
    uniqueIndex('documents_org_type_number_key')
      .on(t.organizationId, t.type, t.number)
      .where(sql`${t.number} is not null`),
    index('documents_org_type_date_idx').on(t.organizationId, t.type, t.date, t.id),
    index('documents_org_contact_idx').on(t.organizationId, t.contactId),
    foreignKey({
      name: 'documents_contact_fk',
      columns: [t.organizationId, t.contactId],
      foreignColumns: [contacts.organizationId, contacts.id],
    }),
    foreignKey({
      name: 'documents_control_account_fk',
      columns: [t.organizationId, t.controlAccountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    foreignKey({
      name: 'documents_bank_account_fk',
      columns: [t.organizationId, t.bankAccountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    foreignKey({
      name: 'documents_journal_entry_fk',
      columns: [t.organizationId, t.journalEntryId],
      foreignColumns: [journalEntries.organizationId, journalEntries.id],
    }),
    check('documents_open_within_total', sql`${t.openCents} >= 0 and ${t.openCents} <= ${t.totalCents}`),
    check(
      'documents_total',
      sql`${t.subtotalCents} >= 0 and ${t.taxCents} >= 0 and ${t.totalCents} = ${t.subtotalCents} + ${t.taxCents}`,
    ),
    check('documents_voided', sql`(${t.status} = 'void') = (${t.voidedAt} is not null)`),
    check('documents_entry', sql`(${t.type} = 'estimate') = (${t.journalEntryId} is null)`),
    check(
      'documents_status_follows_balance',
      sql`${t.status} in ('void', 'converted')
        or (${t.type} in ('invoice', 'bill') and ${t.status} = (case when ${t.openCents} = ${t.totalCents} then 'open' when ${t.openCents} = 0 then 'paid' else 'partially_paid' end)::document_status)
        or (${t.type} in ('credit_memo', 'vendor_credit', 'customer_payment', 'bill_payment') and ${t.status} = (case when ${t.openCents} = ${t.totalCents} then 'open' when ${t.openCents} = 0 then 'applied' else 'partially_applied' end)::document_status)
        or (${t.type} in ('sales_receipt', 'refund_receipt') and ${t.status} = 'paid')
        or (${t.type} = 'estimate' and ${t.status} = 'open')`,
    ),
  ],
);

/** A line of a document. `account_id` is where it posts: the line's own account or its item's. */
export const documentLines = pgTable(
  'document_lines',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id').notNull(),
    documentId: uuid('document_id').notNull(),
    lineNo: integer('line_no').notNull(),
    itemId: uuid('item_id'),
    accountId: uuid('account_id').notNull(),
    description: text('description'),
    quantity: numeric('quantity', { precision: 18, scale: 4 }).notNull(),
    unitPriceCents: bigint('unit_price_cents', { mode: 'number' }).notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    taxRateId: uuid('tax_rate_id'),
    taxCents: bigint('tax_cents', { mode: 'number' }).notNull().default(0),
  },
  (t) => [
    primaryKey({ name: 'document_lines_pkey', columns: [t.organizationId, t.id] }),
    unique('document_lines_document_line_key').on(t.organizationId, t.documentId, t.lineNo),
    foreignKey({
      name: 'document_lines_document_fk',
      columns: [t.organizationId, t.documentId],
      foreignColumns: [documents.organizationId, documents.id],
    }),
    foreignKey({
      name: 'document_lines_item_fk',
      columns: [t.organizationId, t.itemId],
      foreignColumns: [items.organizationId, items.id],
    }),
    foreignKey({
      name: 'document_lines_account_fk',
      columns: [t.organizationId, t.accountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    foreignKey({
      name: 'document_lines_tax_rate_fk',
      columns: [t.organizationId, t.taxRateId],
      foreignColumns: [taxRates.organizationId, taxRates.id],
    }),
    check('document_lines_quantity', sql`${t.quantity} > 0`),
    check('document_lines_amounts', sql`${t.unitPriceCents} >= 0 and ${t.amountCents} >= 0 and ${t.taxCents} >= 0`),
  ],
);

/**
 * How much of a payment went to which document: a customer payment to invoices (and the credit memos
 * applied with it), a bill payment to bills (and vendor credits). Voiding the payment voids its allocations.
 */
export const documentAllocations = pgTable(
  'document_allocations',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id').notNull(),
    paymentId: uuid('payment_id').notNull(),
    targetId: uuid('target_id').notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    voidedAt: timestamp('voided_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ name: 'document_allocations_pkey', columns: [t.organizationId, t.id] }),
    unique('document_allocations_payment_target_key').on(t.organizationId, t.paymentId, t.targetId),
    index('document_allocations_target_idx').on(t.organizationId, t.targetId),
    foreignKey({
      name: 'document_allocations_payment_fk',
      columns: [t.organizationId, t.paymentId],
      foreignColumns: [documents.organizationId, documents.id],
    }),
    foreignKey({
      name: 'document_allocations_target_fk',
      columns: [t.organizationId, t.targetId],
      foreignColumns: [documents.organizationId, documents.id],
    }),
    check('document_allocations_positive', sql`${t.amountCents} > 0`),
  ],
);
