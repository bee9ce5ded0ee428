import type { Readable } from 'node:stream';
import {
  decodeCursor,
  DomainError,
  type ErrorCode,
  type EventType,
  isUuid,
  newId,
  type Page,
  toPage,
} from '@firm/core';
import { type AttachmentEntityType, type Db, type Executor, rowsOf, type Tx } from '@firm/db';
import { type LedgerContext, nowOf, recordAuditRow, recordEvent } from '@firm/ledger';
import { type SQL, sql } from 'drizzle-orm';
import type { ReceivedFile } from './receive';
import { type AttachmentStores, type BlobStore, storeOf } from './store';

/** The records an attachment can prove, and what each is called in links. */
export const ENTITY_TYPES = [
  'journal_entry',
  'document',
  'payment',
  'contact',
  'bank_transaction',
  'reconciliation',
] as const satisfies readonly AttachmentEntityType[];

export type EntityType = (typeof ENTITY_TYPES)[number];

export interface EntityRef {
  entityType: EntityType;
  entityId: string;
}

export interface AttachmentLink extends EntityRef {
  linkedAt: string;
}

export interface Attachment {
  id: string;
  organizationId: string;
  fileName: string;
  contentType: string;
  sizeBytes: number;
  sha256: string;
  note: string | null;
  createdBy: { kind: string; id: string };
  createdAt: string;
  links: AttachmentLink[];
}

/** The column of attachment_links holding each kind's id, its table, and its error when missing. */
const TARGETS: Record<EntityType, { column: string; table: string; missing: ErrorCode; where?: string }> = {
  journal_entry: { column: 'journal_entry_id', table: 'journal_entries', missing: 'ENTRY_NOT_FOUND' },
  document: {
    column: 'document_id',
    table: 'documents',
    missing: 'DOCUMENT_NOT_FOUND',
    where: "type not in ('customer_payment', 'bill_payment')",
  },
  payment: {
    column: 'document_id',
    table: 'documents',
    missing: 'DOCUMENT_NOT_FOUND',
    where: "type in ('customer_payment', 'bill_payment')",
  },
  contact: { column: 'contact_id', table: 'contacts', missing: 'CONTACT_NOT_FOUND' },
  bank_transaction: {
    column: 'bank_transaction_id',
    table: 'bank_transactions',
    missing: 'BANK_TRANSACTION_NOT_FOUND',
  },
  reconciliation: { column: 'reconciliation_id', table: 'reconciliations', missing: 'RECONCILIATION_NOT_FOUND' },
};

const notFound = () => new DomainError('ATTACHMENT_NOT_FOUND', 'no such attachment in this company');

interface AttachmentRow {
  id: string;
  organization_id: string;
  blob_id: string | null;
  file_name: string;
  content_type: string;
  size_bytes: string | number;
  sha256: string;
  note: string | null;
  created_by_kind: string;
  created_by_id: string;
  created_at: string | Date;
  links: { entityType: EntityType; entityId: string; linkedAt: string }[] | null;
}

const iso = (v: string | Date) => new Date(v).toISOString();

function present(row: AttachmentRow): Attachment {
  return {
    id: row.id,
    organizationId: row.organization_id,
    fileName: row.file_name,
    contentType: row.content_type,
    sizeBytes: Number(row.size_bytes),
    sha256: row.sha256,
    note: row.note,
    createdBy: { kind: row.created_by_kind, id: row.created_by_id },
    createdAt: iso(row.created_at),
    links: (row.links ?? []).map((l) => ({ ...l, linkedAt: iso(l.linkedAt) })),
  };
}

const selectAttachments = (where: SQL, tail: SQL = sql``) => sql`
  select a.id, a.organization_id, a.blob_id, a.file_name, a.content_type, a.size_bytes, a.sha256, a.note,
         a.created_by_kind, a.created_by_id, a.created_at,
         (select coalesce(json_agg(json_build_object('entityType', l.entity_type, 'entityId', l.entity_id,
                   'linkedAt', l.created_at) order by l.created_at, l.entity_type, l.entity_id), '[]'::json)
            from attachment_links l
           where l.organization_id = a.organization_id and l.attachment_id = a.id) as links
    from attachments a
   where a.deleted_at is null and ${where}
   ${tail}`;

/** One attachment of the company that is not deleted, or ATTACHMENT_NOT_FOUND. */
export async function getAttachment(db: Executor, organizationId: string, id: string): Promise<Attachment> {
  if (!isUuid(id)) throw notFound();
  const [row] = rowsOf<AttachmentRow>(
    await db.execute(selectAttachments(sql`a.organization_id = ${organizationId} and a.id = ${id}`)),
  );
  if (!row) throw notFound();
  return present(row);
}

export interface AttachmentFilter {
  entityType?: EntityType | undefined;
  entityId?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** A company's attachments, newest first, or those of one record. */
export async function listAttachments(
  db: Executor,
  organizationId: string,
  filter: AttachmentFilter,
): Promise<Page<Attachment>> {
  if (filter.entityId !== undefined && !isUuid(filter.entityId)) return { data: [], nextCursor: null };
  const conditions: SQL[] = [sql`a.organization_id = ${organizationId}`];
  if (filter.entityType || filter.entityId) {
    conditions.push(sql`exists (select 1 from attachment_links l
      where l.organization_id = a.organization_id and l.attachment_id = a.id
        ${filter.entityType ? sql`and l.entity_type = ${filter.entityType}` : sql``}
        ${filter.entityId ? sql`and l.entity_id = ${filter.entityId}` : sql``})`);
  }
  if (filter.cursor) {
    const [at, id] = decodeCursor(filter.cursor, ['timestamp', 'uuid']) as [string, string];
    conditions.push(sql`(a.created_at, a.id) < (${at}::timestamptz, ${id}::uuid)`);
  }
  const rows = rowsOf<AttachmentRow>(
    await db.execute(
      selectAttachments(
        sql.join(conditions, sql` and `),
        sql`order by a.created_at desc, a.id desc limit ${filter.limit + 1}`,
      ),
    ),
  );
  const page = toPage(rows, filter.limit, (r) => [iso(r.created_at), r.id]);
  return { data: page.data.map(present), nextCursor: page.nextCursor };
}

/** Checks that the record exists in the company (its own NOT_FOUND code otherwise). */
async function checkEntity(tx: Executor, organizationId: string, ref: EntityRef): Promise<void> {
  const target = TARGETS[ref.entityType];
  const [row] = !isUuid(ref.entityId)
    ? []
    : rowsOf<{ ok: number }>(
        await tx.execute(sql`select 1 as ok from ${sql.identifier(target.table)}
          where organization_id = ${organizationId} and id = ${ref.entityId}
          ${target.where ? sql.raw(`and ${target.where}`) : sql``}`),
      );
  if (!row) {
    throw new DomainError(target.missing, `no such ${ref.entityType.replace('_', ' ')} in this company`, [
      { field: 'entityId', message: 'not found' },
    ]);
  }
}

async function insertLink(tx: Tx, ctx: LedgerContext, organizationId: string, attachmentId: string, ref: EntityRef) {
  await checkEntity(tx, organizationId, ref);
  const column = TARGETS[ref.entityType].column;
  const rows = rowsOf<{ ok: number }>(
    await tx.execute(sql`insert into attachment_links
      (organization_id, attachment_id, entity_type, entity_id, ${sql.identifier(column)}, created_by_kind, created_by_id,
       created_at)
      values (${organizationId}, ${attachmentId}, ${ref.entityType}, ${ref.entityId}, ${ref.entityId}, ${ctx.actor.kind},
              ${ctx.actor.id}, ${nowOf(ctx).toISOString()})
      on conflict do nothing returning 1 as ok`),
  );
  return rows.length > 0;
}

const attachmentEvent = (tx: Tx, ctx: LedgerContext, action: EventType, a: Attachment, data = {}) =>
  recordEvent(tx, ctx, {
    organizationId: a.organizationId,
    action,
    resourceType: 'attachment',
    resourceId: a.id,
    data: { fileName: a.fileName, contentType: a.contentType, sizeBytes: a.sizeBytes, sha256: a.sha256, ...data },
    payload: a as unknown as Record<string, unknown>,
  });

/** Serialises the writes that keep one blob per company and hash (its first upload and its deletion). */
const lockHash = (tx: Executor, organizationId: string, sha256: string) =>
  tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`attachment:${organizationId}:${sha256}`}, 0))`);

export interface NewAttachment {
  fileName: string;
  note?: string | null | undefined;
  links?: EntityRef[] | undefined;
}

/**
 * Makes a received file an attachment, attached to `links`: the blob becomes the company's copy of those bytes, unless
 * the company already has them (the new blob stays `receiving`, for the caller to discard). Writes the audit row and
 * the `attachment.created` event in the same transaction.
 */
export async function createAttachment(
  tx: Tx,
  ctx: LedgerContext,
  file: ReceivedFile,
  input: NewAttachment,
): Promise<Attachment> {
  const org = file.organizationId;
  await lockHash(tx, org, file.sha256);
  const [existing] = rowsOf<{ id: string }>(
    await tx.execute(sql`select id from attachment_blobs
      where organization_id = ${org} and sha256 = ${file.sha256} and status = 'stored'`),
  );
  let blobId = existing?.id;
  if (!blobId) {
    await tx.execute(sql`update attachment_blobs
      set status = 'stored', sha256 = ${file.sha256}, size_bytes = ${file.sizeBytes}, content_type = ${file.contentType}
      where organization_id = ${org} and id = ${file.blobId} and status = 'receiving'`);
    blobId = file.blobId;
  }
  const id = newId();
  await tx.execute(sql`insert into attachments
    (organization_id, id, blob_id, file_name, content_type, size_bytes, sha256, note, created_by_kind, created_by_id,
     created_at)
    values (${org}, ${id}, ${blobId}, ${input.fileName}, ${file.contentType}, ${file.sizeBytes}, ${file.sha256},
            ${input.note ?? null}, ${ctx.actor.kind}, ${ctx.actor.id}, ${nowOf(ctx).toISOString()})`);
  for (const ref of input.links ?? []) await insertLink(tx, ctx, org, id, ref);
  const attachment = await getAttachment(tx, org, id);
  await attachmentEvent(tx, ctx, 'attachment.created', attachment);
  return attachment;
}

async function lockAttachment(tx: Tx, organizationId: string, id: string) {
  if (!isUuid(id)) throw notFound();
  const [row] = rowsOf<{ id: string; blob_id: string | null; sha256: string }>(
    await tx.execute(sql`select id, blob_id, sha256 from attachments
      where organization_id = ${organizationId} and id = ${id} and deleted_at is null for update`),
  );
  if (!row) throw notFound();
  return row;
}

/** Attaches the attachment to one more record (nothing changes when it already is). */
export async function linkAttachment(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  ref: EntityRef,
): Promise<Attachment> {
  await lockAttachment(tx, organizationId, id);
  const added = await insertLink(tx, ctx, organizationId, id, ref);
  const attachment = await getAttachment(tx, organizationId, id);
  if (added) await attachmentEvent(tx, ctx, 'attachment.linked', attachment, { linked: ref });
  return attachment;
}

/** Whether a link's record is posted history (a posted entry, a document in the books, a classified or reconciled row). */
const postedLinks = (organizationId: string, id: string) => sql`
  select l.entity_type, l.entity_id from attachment_links l
    left join journal_entries e on e.organization_id = l.organization_id and e.id = l.journal_entry_id
    left join documents d on d.organization_id = l.organization_id and d.id = l.document_id
    left join bank_transactions b on b.organization_id = l.organization_id and b.id = l.bank_transaction_id
    left join reconciliations r on r.organization_id = l.organization_id and r.id = l.reconciliation_id
   where l.organization_id = ${organizationId} and l.attachment_id = ${id}
     and (e.status <> 'draft' or d.journal_entry_id is not null or b.status in ('categorized', 'matched')
          or b.reconciliation_id is not null or r.status = 'finished')`;

/**
 * Takes the attachment off a record. A link to posted history stays (the evidence of what was posted):
 * 409 INVALID_STATE.
 */
export async function unlinkAttachment(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  ref: EntityRef,
): Promise<Attachment> {
  await lockAttachment(tx, organizationId, id);
  const posted = rowsOf<{ entity_type: string; entity_id: string }>(await tx.execute(postedLinks(organizationId, id)));
  if (posted.some((p) => p.entity_type === ref.entityType && p.entity_id === ref.entityId)) {
    throw new DomainError('INVALID_STATE', 'the record is posted; the attachment it was posted with stays on it');
  }
  const removed = rowsOf<{ ok: number }>(
    await tx.execute(sql`delete from attachment_links
      where organization_id = ${organizationId} and attachment_id = ${id}
        and entity_type = ${ref.entityType} and entity_id = ${ref.entityId} returning 1 as ok`),
  );
  if (removed.length === 0) throw new DomainError('NOT_FOUND', 'the attachment is not attached to that record');
  const attachment = await getAttachment(tx, organizationId, id);
  await attachmentEvent(tx, ctx, 'attachment.unlinked', attachment, { unlinked: ref });
  return attachment;
}

export interface DeletedAttachment {
  attachment: Attachment;
  /** The file is kept: posted records still refer to the attachment. */
  retained: boolean;
  /** A blob no attachment refers to any more, whose bytes the caller removes after the commit. */
  orphan: { blobId: string; store: 'postgres' | 's3' } | null;
}

/**
 * Soft-deletes an attachment: it leaves lists and reads (404 after). Attached to posted history, it keeps its links
 * and its file (`retained`); otherwise its links go, and its file too when no other attachment shares the bytes.
 */
export async function deleteAttachment(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
): Promise<DeletedAttachment> {
  const row = await lockAttachment(tx, organizationId, id);
  await lockHash(tx, organizationId, row.sha256);
  const attachment = await getAttachment(tx, organizationId, id);
  const retained = rowsOf(await tx.execute(postedLinks(organizationId, id))).length > 0;
  const at = nowOf(ctx).toISOString();
  let orphan: DeletedAttachment['orphan'] = null;
  if (retained) {
    await tx.execute(
      sql`update attachments set deleted_at = ${at} where organization_id = ${organizationId} and id = ${id}`,
    );
  } else {
    await tx.execute(
      sql`delete from attachment_links where organization_id = ${organizationId} and attachment_id = ${id}`,
    );
    await tx.execute(sql`update attachments set deleted_at = ${at}, blob_id = null
      where organization_id = ${organizationId} and id = ${id}`);
    if (row.blob_id) {
      const [shared] = rowsOf(
        await tx.execute(sql`select 1 from attachments
          where organization_id = ${organizationId} and blob_id = ${row.blob_id} limit 1`),
      );
      if (!shared) {
        const [blob] = rowsOf<{ store: 'postgres' | 's3' }>(
          await tx.execute(sql`delete from attachment_blobs where organization_id = ${organizationId} and id = ${row.blob_id}
            returning store`),
        );
        if (blob) orphan = { blobId: row.blob_id, store: blob.store };
      }
    }
  }
  await attachmentEvent(tx, ctx, 'attachment.deleted', attachment, { retained });
  return { attachment, retained, orphan };
}

/** Removes the bytes of a blob `deleteAttachment` let go (its row is gone; the Postgres store's chunks went with it). */
export async function removeOrphan(
  stores: AttachmentStores,
  organizationId: string,
  orphan: DeletedAttachment['orphan'],
) {
  if (!orphan || orphan.store === 'postgres') return;
  await storeOf(stores, orphan.store).remove(organizationId, orphan.blobId);
}

export interface AttachmentContent {
  attachment: Attachment;
  body: Readable;
}

/** The attachment's bytes, from the store that holds them. */
export async function openAttachment(
  db: Db,
  stores: AttachmentStores,
  organizationId: string,
  id: string,
): Promise<AttachmentContent> {
  const attachment = await getAttachment(db, organizationId, id);
  const [blob] = rowsOf<{ id: string; store: 'postgres' | 's3' }>(
    await db.execute(sql`select b.id, b.store from attachments a
      join attachment_blobs b on b.organization_id = a.organization_id and b.id = a.blob_id
      where a.organization_id = ${organizationId} and a.id = ${id}`),
  );
  if (!blob) throw notFound();
  const store: BlobStore = storeOf(stores, blob.store);
  return { attachment, body: await store.open(organizationId, blob.id) };
}

/** An attachment as a file to send elsewhere: its name, type and size, and its bytes when they are read. */
export interface AttachmentFile {
  fileName: string;
  contentType: string;
  sizeBytes: number;
  /** The whole file in memory, read from its store on each call. */
  bytes: () => Promise<Buffer>;
}

/** The company's attachment `id` as a file to send elsewhere, or null when the company has no such attachment. */
export async function attachmentFile(
  db: Db,
  stores: AttachmentStores,
  organizationId: string,
  id: string,
): Promise<AttachmentFile | null> {
  const attachment = await getAttachment(db, organizationId, id).catch((err: unknown) => {
    if (err instanceof DomainError && err.code === 'ATTACHMENT_NOT_FOUND') return null;
    throw err;
  });
  if (!attachment) return null;
  return {
    fileName: attachment.fileName,
    contentType: attachment.contentType,
    sizeBytes: attachment.sizeBytes,
    bytes: async () => {
      const { body } = await openAttachment(db, stores, organizationId, id);
      return Buffer.concat((await body.toArray()) as Buffer[]);
    },
  };
}

/** The audit row of a download (who read which file, and how: `via` a download link); no event goes out for it. */
export async function recordDownload(
  db: Executor,
  ctx: LedgerContext,
  attachment: Attachment,
  how: Record<string, unknown> = {},
): Promise<void> {
  await recordAuditRow(db, ctx, {
    organizationId: attachment.organizationId,
    action: 'attachment.downloaded',
    resourceType: 'attachment',
    resourceId: attachment.id,
    data: { fileName: attachment.fileName, sha256: attachment.sha256, ...how },
  });
}

/** Of these records, those with an attachment (not deleted) on them, as `entityType:entityId`. */
export async function recordsWithAttachments(
  db: Executor,
  organizationId: string,
  refs: EntityRef[],
): Promise<Set<string>> {
  const keys = [...new Set(refs.filter((r) => isUuid(r.entityId)).map((r) => `${r.entityType}:${r.entityId}`))];
  if (keys.length === 0) return new Set();
  const rows = rowsOf<{ key: string }>(
    await db.execute(sql`select distinct l.entity_type || ':' || l.entity_id::text as key
      from attachment_links l
      join attachments a on a.organization_id = l.organization_id and a.id = l.attachment_id and a.deleted_at is null
      where l.organization_id = ${organizationId}
        and l.entity_type || ':' || l.entity_id::text = any(${sql.param(keys)}::text[])`),
  );
  return new Set(rows.map((r) => r.key));
}

/** The attachments (not deleted) on any of these records, oldest first, with their hashes and links. */
export async function attachmentsOf(db: Executor, organizationId: string, refs: EntityRef[]): Promise<Attachment[]> {
  const keys = [...new Set(refs.filter((r) => isUuid(r.entityId)).map((r) => `${r.entityType}:${r.entityId}`))];
  if (keys.length === 0) return [];
  const rows = rowsOf<AttachmentRow>(
    await db.execute(
      selectAttachments(
        sql`a.organization_id = ${organizationId} and exists (select 1 from attachment_links l
          where l.organization_id = a.organization_id and l.attachment_id = a.id
            and l.entity_type || ':' || l.entity_id::text = any(${sql.param(keys)}::text[]))`,
        sql`order by a.created_at, a.id`,
      ),
    ),
  );
  return rows.map(present);
}

/** A page of the company's attachments by offset, oldest first, and how many it has (the platform's paging). */
export async function attachmentsAtOffset(
  db: Executor,
  organizationId: string,
  offset: number,
  limit: number,
): Promise<{ rows: Attachment[]; total: number }> {
  const rows = rowsOf<AttachmentRow & { total: number | string }>(
    await db.execute(sql`select p.*, (select count(*) from attachments c
        where c.organization_id = ${organizationId} and c.deleted_at is null) as total
      from (${selectAttachments(
        sql`a.organization_id = ${organizationId}`,
        sql`order by a.created_at, a.id offset ${offset} limit ${limit}`,
      )}) p`),
  );
  const [count] = rows.length
    ? [{ total: rows[0]?.total }]
    : rowsOf<{ total: number | string }>(
        await db.execute(sql`select count(*) as total from attachments
          where organization_id = ${organizationId} and deleted_at is null`),
      );
  return { rows: rows.map(present), total: Number(count?.total ?? 0) };
}

/**
 * What each linked record is, by id: a document's type, a journal entry's source, a contact's kind (`customer`,
 * `vendor`, `both`); for presenting links in another platform's names.
 */
export async function linkedRecordKinds(
  db: Executor,
  organizationId: string,
  ids: readonly string[],
): Promise<Map<string, { table: 'document' | 'entry' | 'contact'; kind: string }>> {
  const out = new Map<string, { table: 'document' | 'entry' | 'contact'; kind: string }>();
  const wanted = ids.filter(isUuid);
  if (wanted.length === 0) return out;
  const list = sql`(${sql.join(
    wanted.map((id) => sql`${id}::uuid`),
    sql`, `,
  )})`;
  const rows = rowsOf<{ id: string; t: 'document' | 'entry' | 'contact'; kind: string }>(
    await db.execute(sql`select id, 'document' as t, type::text as kind from documents
        where organization_id = ${organizationId} and id in ${list}
      union all select id, 'entry', source::text from journal_entries where organization_id = ${organizationId} and id in ${list}
      union all select id, 'contact', kind::text from contacts where organization_id = ${organizationId} and id in ${list}`),
  );
  for (const r of rows) out.set(r.id, { table: r.t, kind: r.kind });
  return out;
}
