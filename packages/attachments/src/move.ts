import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { AttachmentStoreKind, Db } from '@firm/db';
import { rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { type AttachmentStores, storeOf } from './store';

export interface MoveResult {
  moved: number;
  bytes: number;
  /** Files already in the target store. */
  already: number;
}

/**
 * Moves a company's stored files to the `to` store, one at a time: each is copied, checked against its SHA-256,
 * switched to the new store in the database, then removed from the old one. A failure leaves the file where it was
 * (its partial copy removed) and stops the move; running it again carries on.
 */
export async function moveCompanyFiles(
  db: Db,
  stores: AttachmentStores,
  organizationId: string,
  to: AttachmentStoreKind,
  onFile?: (done: number, total: number) => void,
): Promise<MoveResult> {
  const target = storeOf(stores, to);
  const blobs = rowsOf<{ id: string; store: AttachmentStoreKind; sha256: string; size_bytes: string | number }>(
    await db.execute(sql`select id, store, sha256, size_bytes from attachment_blobs
      where organization_id = ${organizationId} and status = 'stored' order by created_at, id`),
  );
  const result: MoveResult = { moved: 0, bytes: 0, already: 0 };
  const pending = blobs.filter((b) => b.store !== to);
  result.already = blobs.length - pending.length;
  for (const blob of pending) {
    const source = storeOf(stores, blob.store);
    const hash = createHash('sha256');
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      const body = await source.open(organizationId, blob.id);
      await Promise.all([pipeline(body, tap), target.put(organizationId, blob.id, tap)]);
      const sha256 = hash.digest('hex');
      if (sha256 !== blob.sha256) {
        throw new Error(`file ${blob.id}: read ${sha256} from the ${blob.store} store, expected ${blob.sha256}`);
      }
    } catch (err) {
      await target.remove(organizationId, blob.id).catch(() => undefined);
      throw err;
    }
    await db.execute(sql`update attachment_blobs set store = ${to}
      where organization_id = ${organizationId} and id = ${blob.id} and store = ${blob.store}`);
    await source.remove(organizationId, blob.id);
    result.moved++;
    result.bytes += Number(blob.size_bytes);
    onFile?.(result.moved, pending.length);
  }
  return result;
}
