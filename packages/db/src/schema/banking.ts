import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
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
import { contacts } from './contacts';
import { documents } from './documents';
import { journalEntries } from './entries';
import { taxRates } from './items';
import { organizations } from './organizations';

/**
 * unreviewed: in the register, not in the books. categorized: posted to accounts by its own entry.
 * matched: settled against invoices, bills or payments (and possibly accounts). excluded: out of the books.
 * Reconciled is a flag beside the status (`reconciliation_id`), for categorized and matched rows only.
 */
export const bankTransactionStatus = pgEnum('bank_transaction_status', [
  'unreviewed',
  'categorized',
  'matched',
  'excluded',
]);

export const bankTransactionSource = pgEnum('bank_transaction_source', ['aggregator_bank_feed', 'posting', 'manual']);

export const reconciliationStatus = pgEnum('reconciliation_status', ['open', 'finished', 'undone']);

/** A connection to a bank-data aggregator (one Plaid item): its access token, encrypted, and its sync cursor. */
export const bankFeedConnections = pgTable(
  'bank_feed_connections',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    provider: text('provider').notNull(),
    institutionName: text('institution_name').notNull(),
    itemId: text('item_id').notNull(),
    /** AES-256-GCM ciphertext of the aggregator's access token, and the id of the key it is sealed under. */
    accessToken: text('access_token').notNull(),
    accessTokenKeyId: text('access_token_key_id').notNull(),
    /**
     * True: sealed with the connection's organization and id as additional data, so it opens only in this row. False:
     * sealed before tokens were bound; resealed bound the first time it is read.
     */
    accessTokenBound: boolean('access_token_bound').notNull().default(false),
    /** The aggregator's cursor after the last page committed; null before the first sync. */
    cursor: text('cursor'),
    status: text('status').notNull().default('active'),
    lastSyncedAt: timestamp('last_synced_at', { withTimezone: true }),
    lastError: text('last_error'),
    lastErrorAt: timestamp('last_error_at', { withTimezone: true }),
    /** Set by a verified aggregator webhook; a sync worker claims it (FOR UPDATE SKIP LOCKED) and clears it. */
    syncRequestedAt: timestamp('sync_requested_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'bank_feed_connections_pkey', columns: [t.organizationId, t.id] }),
    // An aggregator's item ids are its own, unique across organizations; a webhook finds the item's connections.
    unique('bank_feed_connections_item_key').on(t.organizationId, t.provider, t.itemId),
    index('bank_feed_connections_item_idx').on(t.provider, t.itemId),
    // The sync worker claims a requested connection by id, in any organization.
    index('bank_feed_connections_id_idx').on(t.id),
    index('bank_feed_connections_sync_requested_idx')
      .on(t.syncRequestedAt)
      .where(sql`${t.syncRequestedAt} is not null`),
    check('bank_feed_connections_status', sql`${t.status} in ('active', 'error', 'needs_relink', 'disconnected')`),
  ],
);

/**
 * Aggregator webhooks accepted, by the provider's delivery id (for Plaid, the SHA-256 of the signed JWT's header and
 * payload), kept until a replay of the delivery would be refused as too old anyway: a second copy within the window
 * conflicts on the key, in whichever process it arrives.
 */
export const aggregatorWebhookDeliveries = pgTable(
  'aggregator_webhook_deliveries',
  {
    provider: text('provider').notNull(),
    deliveryId: text('delivery_id').notNull(),
    receivedAt: timestamp('received_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'aggregator_webhook_deliveries_pkey', columns: [t.provider, t.deliveryId] }),
    index('aggregator_webhook_deliveries_expires_idx').on(t.expiresAt),
  ],
);

/** A bank or card register, linked to one ledger account of subtype bank or credit_card. */
export const bankAccounts = pgTable(
  'bank_accounts',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    accountId: uuid('account_id').notNull(),
    name: text('name').notNull(),
    institution: text('institution'),
    mask: text('mask'),
    currency: text('currency').notNull().default('USD'),
    feedConnectionId: uuid('feed_connection_id'),
    /** The aggregator's id of this account within the connection. */
    feedAccountId: text('feed_account_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'bank_accounts_pkey', columns: [t.organizationId, t.id] }),
    unique('bank_accounts_org_account_key').on(t.organizationId, t.accountId),
    uniqueIndex('bank_accounts_feed_account_key')
      .on(t.organizationId, t.feedConnectionId, t.feedAccountId)
      .where(sql`${t.feedConnectionId} is not null`),
    foreignKey({
      name: 'bank_accounts_account_fk',
      columns: [t.organizationId, t.accountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    foreignKey({
      name: 'bank_accounts_feed_connection_fk',
      columns: [t.organizationId, t.feedConnectionId],
      foreignColumns: [bankFeedConnections.organizationId, bankFeedConnections.id],
    }),
    check('bank_accounts_mask', sql`${t.mask} is null or ${t.mask} ~ '^[0-9A-Za-z]{2,8}$'`),
    check('bank_accounts_currency', sql`${t.currency} ~ '^[A-Z]{3}$'`),
    check('bank_accounts_feed_link', sql`(${t.feedConnectionId} is null) = (${t.feedAccountId} is null)`),
  ],
);

/**
 * A reconciliation session: a bank account against one statement. Balances are in the register's sign (money in
 * positive), so a card statement that shows 500.00 owed has an ending balance of -50000.
 */
export const reconciliations = pgTable(
  'reconciliations',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    bankAccountId: uuid('bank_account_id').notNull(),
    status: reconciliationStatus('status').notNull().default('open'),
    statementEndDate: date('statement_end_date', { mode: 'string' }).notNull(),
    statementEndingBalanceCents: bigint('statement_ending_balance_cents', { mode: 'number' }).notNull(),
    /** The ending balance of the last finished session of the account when this one was opened; 0 for the first. */
    openingBalanceCents: bigint('opening_balance_cents', { mode: 'number' }).notNull(),
    adjustmentEntryId: uuid('adjustment_entry_id'),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    undoneAt: timestamp('undone_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'reconciliations_pkey', columns: [t.organizationId, t.id] }),
    uniqueIndex('reconciliations_one_open_key')
      .on(t.organizationId, t.bankAccountId)
      .where(sql`${t.status} = 'open'`),
    index('reconciliations_org_account_idx').on(t.organizationId, t.bankAccountId, t.statementEndDate),
    foreignKey({
      name: 'reconciliations_bank_account_fk',
      columns: [t.organizationId, t.bankAccountId],
      foreignColumns: [bankAccounts.organizationId, bankAccounts.id],
    }),
    foreignKey({
      name: 'reconciliations_adjustment_entry_fk',
      columns: [t.organizationId, t.adjustmentEntryId],
      foreignColumns: [journalEntries.organizationId, journalEntries.id],
    }),
    check('reconciliations_finished', sql`(${t.status} = 'open') = (${t.finishedAt} is null)`),
  ],
);

/** One row of a register. `amount_cents` is signed: money in positive. */
export const bankTransactions = pgTable(
  'bank_transactions',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    bankAccountId: uuid('bank_account_id').notNull(),
    txnDate: date('txn_date', { mode: 'string' }).notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    description: text('description').notNull(),
    counterparty: text('counterparty'),
    sourceType: bankTransactionSource('source_type').notNull(),
    status: bankTransactionStatus('status').notNull().default('unreviewed'),
    /** The aggregator still shows it as pending. */
    pending: boolean('pending').notNull().default(false),
    /** The aggregator's transaction id (feed rows). */
    externalId: text('external_id'),
    /** Why the row needs a second look (the bank changed its amount after it was classified...). */
    reviewReason: text('review_reason'),
    /** The entry a bank action (or the posting route) posted for the row's account lines. */
    journalEntryId: uuid('journal_entry_id'),
    contactId: uuid('contact_id'),
    taxRateId: uuid('tax_rate_id'),
    reconciliationId: uuid('reconciliation_id'),
    reconciledAt: timestamp('reconciled_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'bank_transactions_pkey', columns: [t.organizationId, t.id] }),
    uniqueIndex('bank_transactions_external_key')
      .on(t.organizationId, t.bankAccountId, t.externalId)
      .where(sql`${t.externalId} is not null`),
    index('bank_transactions_org_account_date_idx').on(t.organizationId, t.bankAccountId, t.txnDate, t.id),
    index('bank_transactions_org_date_idx').on(t.organizationId, t.txnDate, t.id),
    index('bank_transactions_reconciliation_idx')
      .on(t.reconciliationId)
      .where(sql`${t.reconciliationId} is not null`),
    foreignKey({
      name: 'bank_transactions_bank_account_fk',
      columns: [t.organizationId, t.bankAccountId],
      foreignColumns: [bankAccounts.organizationId, bankAccounts.id],
    }),
    foreignKey({
      name: 'bank_transactions_journal_entry_fk',
      columns: [t.organizationId, t.journalEntryId],
      foreignColumns: [journalEntries.organizationId, journalEntries.id],
    }),
    foreignKey({
      name: 'bank_transactions_contact_fk',
      columns: [t.organizationId, t.contactId],
      foreignColumns: [contacts.organizationId, contacts.id],
    }),
    foreignKey({
      name: 'bank_transactions_tax_rate_fk',
      columns: [t.organizationId, t.taxRateId],
      foreignColumns: [taxRates.organizationId, taxRates.id],
    }),
    foreignKey({
      name: 'bank_transactions_reconciliation_fk',
      columns: [t.organizationId, t.reconciliationId],
      foreignColumns: [reconciliations.organizationId, reconciliations.id],
    }),
    check('bank_transactions_amount_nonzero', sql`${t.amountCents} <> 0`),
    check('bank_transactions_reconciled', sql`(${t.reconciliationId} is null) = (${t.reconciledAt} is null)`),
    check(
      'bank_transactions_reconciled_in_books',
      sql`${t.reconciliationId} is null or ${t.status} in ('categorized', 'matched')`,
    ),
  ],
);

/**
 * How a bank transaction is classified: one line per account or document. Account lines are posted in the
 * transaction's own entry; a document line names the invoice, bill or payment it settled and, when the action
 * recorded a payment for it, that payment. Amounts run in the direction of the bank transaction and sum to its
 * absolute amount; a negative account line is a difference going the other way (a fee withheld from a deposit).
 */
export const bankTransactionLines = pgTable(
  'bank_transaction_lines',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id').notNull(),
    bankTransactionId: uuid('bank_transaction_id').notNull(),
    lineNo: integer('line_no').notNull(),
    accountId: uuid('account_id'),
    documentId: uuid('document_id'),
    paymentId: uuid('payment_id'),
    description: text('description'),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
    /** The sales tax rate inside an account line's amount; `taxCents` of it went to the rate's liability account. */
    taxRateId: uuid('tax_rate_id'),
    taxCents: bigint('tax_cents', { mode: 'number' }).notNull().default(0),
  },
  (t) => [
    primaryKey({ name: 'bank_transaction_lines_pkey', columns: [t.organizationId, t.id] }),
    unique('bank_transaction_lines_line_key').on(t.organizationId, t.bankTransactionId, t.lineNo),
    index('bank_transaction_lines_document_idx')
      .on(t.organizationId, t.documentId)
      .where(sql`${t.documentId} is not null`),
    foreignKey({
      name: 'bank_transaction_lines_transaction_fk',
      columns: [t.organizationId, t.bankTransactionId],
      foreignColumns: [bankTransactions.organizationId, bankTransactions.id],
    }).onDelete('cascade'),
    foreignKey({
      name: 'bank_transaction_lines_account_fk',
      columns: [t.organizationId, t.accountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    foreignKey({
      name: 'bank_transaction_lines_document_fk',
      columns: [t.organizationId, t.documentId],
      foreignColumns: [documents.organizationId, documents.id],
    }),
    foreignKey({
      name: 'bank_transaction_lines_payment_fk',
      columns: [t.organizationId, t.paymentId],
      foreignColumns: [documents.organizationId, documents.id],
    }),
    foreignKey({
      name: 'bank_transaction_lines_tax_rate_fk',
      columns: [t.organizationId, t.taxRateId],
      foreignColumns: [taxRates.organizationId, taxRates.id],
    }),
    check('bank_transaction_lines_target', sql`(${t.accountId} is null) <> (${t.documentId} is null)`),
    check(
      'bank_transaction_lines_tax',
      sql`(${t.taxRateId} is not null or ${t.taxCents} = 0) and (${t.taxRateId} is null or ${t.accountId} is not null)`,
    ),
    check('bank_transaction_lines_amount_nonzero', sql`${t.amountCents} <> 0`),
  ],
);
