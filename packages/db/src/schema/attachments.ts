import { sql } from 'drizzle-orm';
import {
  bigint,
  check,
  customType,
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
import { organizations } from './organizations';

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

export type AttachmentStoreKind = 'postgres' | 's3';
export type AttachmentBlobStatus = 'receiving' | 'stored';
export type AttachmentEntityType =
  'journal_entry' | 'document' | 'payment' | 'contact' | 'bank_transaction' | 'reconciliation';

/**
 * A company's stored file, content-addressed: once received, one row per company and SHA-256 (uploads of the same
 * bytes share it). `receiving` while its bytes arrive; a blob left receiving by a cut-off upload is removed.
 */
export const attachmentBlobs = pgTable(
  'attachment_blobs',
  {
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    id: uuid('id').notNull(),
    store: text('store').$type<AttachmentStoreKind>().notNull(),
    status: text('status').$type<AttachmentBlobStatus>().notNull().default('receiving'),
    sha256: text('sha256'),
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull().default(0),
    contentType: text('content_type'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'attachment_blobs_pkey', columns: [t.organizationId, t.id] }),
    uniqueIndex('attachment_blobs_org_sha256')
      .on(t.organizationId, t.sha256)
      .where(sql`${t.sha256} is not null`),
    index('attachment_blobs_receiving_idx')
      .on(t.createdAt)
      .where(sql`${t.status} = 'receiving'`),
    check('attachment_blobs_store', sql`${t.store} in ('postgres', 's3')`),
    check('attachment_blobs_status', sql`${t.status} in ('receiving', 'stored')`),
  ],
);

/** The Postgres store's bytes of a blob, in order. */
export const attachmentChunks = pgTable(
  'attachment_chunks',
  {
    organizationId: uuid('organization_id').notNull(),
    blobId: uuid('blob_id').notNull(),
    seq: integer('seq').notNull(),
    data: bytea('data').notNull(),
  },
  (t) => [
    primaryKey({ name: 'attachment_chunks_pkey', columns: [t.organizationId, t.blobId, t.seq] }),
    foreignKey({
      name: 'attachment_chunks_blob_fk',
      columns: [t.organizationId, t.blobId],
      foreignColumns: [attachmentBlobs.organizationId, attachmentBlobs.id],
    }).onDelete('cascade'),
  ],
);

/** A file as someone uploaded it: its name (data, never a path), detected type, size and hash. */
export const attachments = pgTable(
  'attachments',
  {
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    id: uuid('id').notNull(),
    /** Null once a deleted attachment's file is gone (nothing posted referred to it). */
    blobId: uuid('blob_id'),
    fileName: text('file_name').notNull(),
    contentType: text('content_type').notNull(),
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull(),
    sha256: text('sha256').notNull(),
    note: text('note'),
    createdByKind: text('created_by_kind').notNull(),
    createdById: text('created_by_id').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    primaryKey({ name: 'attachments_pkey', columns: [t.organizationId, t.id] }),
    foreignKey({
      name: 'attachments_blob_fk',
      columns: [t.organizationId, t.blobId],
      foreignColumns: [attachmentBlobs.organizationId, attachmentBlobs.id],
    }),
    index('attachments_org_created_idx').on(t.organizationId, t.createdAt, t.id),
    index('attachments_blob_idx').on(t.organizationId, t.blobId),
  ],
);

/** What an attachment proves: one row per record it is attached to. */
export const attachmentLinks = pgTable(
  'attachment_links',
  {
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    attachmentId: uuid('attachment_id').notNull(),
    entityType: text('entity_type').$type<AttachmentEntityType>().notNull(),
    entityId: uuid('entity_id').notNull(),
    journalEntryId: uuid('journal_entry_id'),
    documentId: uuid('document_id'),
    contactId: uuid('contact_id'),
    bankTransactionId: uuid('bank_transaction_id'),
    reconciliationId: uuid('reconciliation_id'),
    createdByKind: text('created_by_kind').notNull(),
    createdById: text('created_by_id').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({
      name: 'attachment_links_pkey',
      columns: [t.organizationId, t.attachmentId, t.entityType, t.entityId],
    }),
    foreignKey({
      name: 'attachment_links_attachment_fk',
      columns: [t.organizationId, t.attachmentId],
      foreignColumns: [attachments.organizationId, attachments.id],
    }),
    index('attachment_links_entity_idx').on(t.organizationId, t.entityType, t.entityId),
  ],
);
