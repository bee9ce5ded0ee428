import { createHash } from 'node:crypto';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DomainError, newId } from '@firm/core';
import { type Db, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { detectType, type DetectedType, SNIFF_BYTES } from './detect';
import { type AttachmentStores, type BlobStore, storeOf } from './store';

/** ATTACHMENTS_MAX_BYTES unless configured: 25 MB. */
export const DEFAULT_ATTACHMENT_MAX_BYTES = 25 * 1024 * 1024;

/** A blob still receiving this long after it began was left by an upload that never finished. */
const ABANDONED_AFTER_MS = 60 * 60 * 1000;

export const tooLarge = (maxBytes: number) =>
  new DomainError('PAYLOAD_TOO_LARGE', `an attachment may have at most ${maxBytes} bytes`);

export const refusedType = (detected: DetectedType) =>
  new DomainError(
    'UNSUPPORTED_FILE_TYPE',
    `the file is ${detected.ext === 'unknown' ? 'of no recognised type' : detected.ext} (${detected.mime}); ` +
      'attachments may be PDF, PNG, JPEG, HEIC, TIFF, CSV or XLSX',
    [{ field: 'file', message: 'detected type refused', detectedType: detected.mime, detectedExtension: detected.ext }],
  );

/**
 * Counts and hashes the bytes on the way through, and holds back the first SNIFF_BYTES until their type is known: a
 * refused type fails before anything reaches the store, as does a file past `maxBytes`.
 */
class Inspector extends Transform {
  bytes = 0;
  detected: DetectedType | null = null;
  private readonly hash = createHash('sha256');
  private head: Buffer[] = [];
  private headBytes = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }

  private async release(complete: boolean): Promise<void> {
    const head = Buffer.concat(this.head);
    this.head = [];
    const detected = await detectType(head.subarray(0, SNIFF_BYTES), complete);
    if (!detected.allowed) throw refusedType(detected);
    this.detected = detected;
    this.push(head);
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) return done(tooLarge(this.maxBytes));
    this.hash.update(chunk);
    if (this.detected) return done(null, chunk);
    this.head.push(chunk);
    this.headBytes += chunk.length;
    if (this.headBytes < SNIFF_BYTES) return done();
    this.release(false).then(() => done(), done);
  }

  override _flush(done: TransformCallback): void {
    if (this.detected) return done();
    this.release(true).then(() => done(), done);
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

/** A file whose bytes are in a store, not yet an attachment (its blob is `receiving`). */
export interface ReceivedFile {
  organizationId: string;
  blobId: string;
  store: BlobStore;
  sha256: string;
  sizeBytes: number;
  contentType: string;
}

/**
 * Streams a file into the current store while its type is detected, its bytes counted and hashed. Refused type: 415
 * UNSUPPORTED_FILE_TYPE; past `maxBytes`: 413; the source failing (a cut-off upload): its error. On any failure the
 * bytes written so far and the blob row are removed before the error is thrown: nothing is left behind.
 */
export async function receiveFile(
  db: Db,
  stores: AttachmentStores,
  organizationId: string,
  source: Readable,
  options: { maxBytes: number },
): Promise<ReceivedFile> {
  await purgeAbandonedBlobs(db, stores, organizationId);
  const store = stores.current;
  const blobId = newId();
  await db.execute(sql`insert into attachment_blobs (organization_id, id, store, status)
    values (${organizationId}, ${blobId}, ${store.kind}, 'receiving')`);
  const inspector = new Inspector(options.maxBytes);
  try {
    const fed = pipeline(source, inspector);
    const stored = store.put(organizationId, blobId, inspector);
    const [feeding, storing] = await Promise.allSettled([fed, stored]);
    if (feeding.status === 'rejected') throw feeding.reason;
    if (storing.status === 'rejected') throw storing.reason;
    if (!inspector.detected) throw new DomainError('VALIDATION_ERROR', 'the file is empty');
    return {
      organizationId,
      blobId,
      store,
      sha256: inspector.digest(),
      sizeBytes: inspector.bytes,
      contentType: inspector.detected.mime,
    };
  } catch (err) {
    source.destroy();
    inspector.destroy();
    await discardBlob(db, store, organizationId, blobId);
    throw err;
  }
}

/**
 * Removes a blob that is still receiving (a refused, cut-off, replayed or duplicate upload) with its bytes; a blob that
 * became the company's copy of its bytes is left alone.
 */
export async function discardBlob(db: Db, store: BlobStore, organizationId: string, blobId: string): Promise<void> {
  const gone = rowsOf<{ id: string }>(
    await db.execute(sql`delete from attachment_blobs
      where organization_id = ${organizationId} and id = ${blobId} and status = 'receiving' returning id`),
  );
  // The Postgres store's chunks went with the row; an object store's bytes go now.
  if (gone.length > 0 && store.kind !== 'postgres') await store.remove(organizationId, blobId);
}

/** Blobs of this company an upload began long ago and never finished (the process stopped mid-upload). */
export async function purgeAbandonedBlobs(
  db: Db,
  stores: AttachmentStores,
  organizationId: string,
  now = new Date(),
): Promise<number> {
  const before = new Date(now.getTime() - ABANDONED_AFTER_MS).toISOString();
  const rows = rowsOf<{ id: string; store: 'postgres' | 's3' }>(
    await db.execute(sql`select id, store from attachment_blobs
      where organization_id = ${organizationId} and status = 'receiving' and created_at < ${before}`),
  );
  for (const row of rows) {
    const store = stores.byKind[row.store];
    if (store) await discardBlob(db, storeOf(stores, row.store), organizationId, row.id);
  }
  return rows.length;
}
