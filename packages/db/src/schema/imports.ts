import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  date,
  foreignKey,
  index,
  integer,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { firms } from './firms';
import { organizations } from './organizations';

/**
 * A file of history (journal lines) or of a chart of accounts brought into a company: a job with progress. A file is
 * imported once per company and kind (`imports_file_once`, on its SHA-256) unless its import failed. A large file's
 * rows wait in `import_rows` and a worker posts them in batches, claiming the import with a lease
 * (`locked_by`/`locked_until`) and resuming after `posted_through_entry`.
 */
export const imports = pgTable(
  'imports',
  {
    id: uuid('id').notNull(),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    kind: text('kind').$type<'journal' | 'accounts'>().notNull(),
    format: text('format').$type<'csv' | 'hledger'>().notNull(),
    atomicity: text('atomicity').$type<'file' | 'entry'>().notNull(),
    fileSha256: text('file_sha256'),
    fileBytes: bigint('file_bytes', { mode: 'number' }).notNull().default(0),
    status: text('status').$type<ImportStatus>().notNull().default('receiving'),
    totalRows: integer('total_rows').notNull().default(0),
    totalEntries: integer('total_entries').notNull().default(0),
    doneRows: integer('done_rows').notNull().default(0),
    failedRows: integer('failed_rows').notNull().default(0),
    entriesPosted: integer('entries_posted').notNull().default(0),
    accountsCreated: integer('accounts_created').notNull().default(0),
    /** The staged entries up to this entry_no are posted. */
    postedThroughEntry: integer('posted_through_entry').notNull().default(0),
    errorCount: integer('error_count').notNull().default(0),
    errorSummary: text('error_summary'),
    createdByKind: text('created_by_kind').notNull(),
    createdById: text('created_by_id').notNull(),
    requestId: text('request_id'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    startedAt: timestamp('started_at', { withTimezone: true }),
    finishedAt: timestamp('finished_at', { withTimezone: true }),
    lockedBy: text('locked_by'),
    lockedUntil: timestamp('locked_until', { withTimezone: true }),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'imports_pkey', columns: [t.organizationId, t.id] }),
    // The worker claims a pending import by id, in any organization.
    index('imports_id_idx').on(t.id),
    index('imports_org_created_idx').on(t.organizationId, t.createdAt.desc(), t.id.desc()),
    index('imports_pending_idx')
      .on(t.createdAt)
      .where(sql`${t.status} in ('queued', 'running')`),
    // A file is imported once per company and kind, unless its import failed (one still arriving is not counted).
    uniqueIndex('imports_file_once')
      .on(t.organizationId, t.kind, t.fileSha256)
      .where(sql`${t.status} in ('queued', 'running', 'completed')`),
    check('imports_kind', sql`${t.kind} in ('journal', 'accounts')`),
    check('imports_format', sql`${t.format} in ('csv', 'hledger') and (${t.kind} = 'journal' or ${t.format} = 'csv')`),
    check('imports_atomicity', sql`${t.atomicity} in ('file', 'entry')`),
    check('imports_status', sql`${t.status} in ('receiving', 'queued', 'running', 'completed', 'failed')`),
    check('imports_file_known', sql`${t.status} = 'receiving' or ${t.fileSha256} is not null`),
    check(
      'imports_counts',
      sql`${t.doneRows} >= 0 and ${t.failedRows} >= 0 and ${t.doneRows} + ${t.failedRows} <= ${t.totalRows}`,
    ),
  ],
);

export type ImportStatus = 'receiving' | 'queued' | 'running' | 'completed' | 'failed';

/** A journal import's rows as parsed and checked, waiting to be posted. */
export const importRows = pgTable(
  'import_rows',
  {
    importId: uuid('import_id').notNull(),
    organizationId: uuid('organization_id').notNull(),
    entryNo: integer('entry_no').notNull(),
    lineNo: integer('line_no').notNull(),
    line: integer('line').notNull(),
    entryId: uuid('entry_id').notNull(),
    lineId: uuid('line_id').notNull(),
    entryDate: date('entry_date', { mode: 'string' }).notNull(),
    reference: text('reference').notNull(),
    memo: text('memo'),
    payeeName: text('payee_name'),
    accountId: uuid('account_id').notNull(),
    description: text('description'),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'import_rows_pkey', columns: [t.organizationId, t.importId, t.entryNo, t.lineNo] }),
    foreignKey({
      name: 'import_rows_import_fk',
      columns: [t.organizationId, t.importId],
      foreignColumns: [imports.organizationId, imports.id],
    }).onDelete('cascade'),
    index('import_rows_reference_idx').on(t.importId, t.reference),
  ],
);

/** Why a row of a file was refused (the first thousand of an import). */
export const importRowErrors = pgTable(
  'import_row_errors',
  {
    importId: uuid('import_id').notNull(),
    organizationId: uuid('organization_id').notNull(),
    seq: integer('seq').notNull(),
    line: integer('line').notNull(),
    column: text('column'),
    message: text('message').notNull(),
  },
  (t) => [
    primaryKey({ name: 'import_row_errors_pkey', columns: [t.organizationId, t.importId, t.seq] }),
    foreignKey({
      name: 'import_row_errors_import_fk',
      columns: [t.organizationId, t.importId],
      foreignColumns: [imports.organizationId, imports.id],
    }).onDelete('cascade'),
  ],
);
