import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import {
  type AttachmentStores,
  attachmentStoresFrom,
  createAttachment,
  openAttachment,
  receiveFile,
} from '@firm/attachments';
import { receiptPdf, startS3Server } from '@firm/attachments/testing';
import { rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createDocumentsFixture, type DocumentsFixture } from '@firm/documents/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CLI_SETTINGS, runCli } from './main';

let database: TestDatabase;
let s3: Awaited<ReturnType<typeof startS3Server>>;
let f: DocumentsFixture;
let stores: AttachmentStores;

beforeAll(async () => {
  database = await createTestDatabase();
  s3 = await startS3Server();
  f = await createDocumentsFixture(database.db);
  stores = attachmentStoresFrom(database.db, { ATTACHMENTS_STORE: 'postgres', ...s3.config });
});
afterAll(async () => {
  stores.byKind.s3?.close?.();
  await s3.close();
  await database.close();
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
  const settings = { ...DEFAULT_CLI_SETTINGS, attachments: { ATTACHMENTS_STORE: 'postgres' as const, ...s3.config } };
  const code = await runCli(argv, database, io, undefined, null, undefined, settings);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const storesOf = async () =>
  rowsOf<{ store: string; n: number }>(
    await database.db.execute(sql`select store, count(*)::int as n from attachment_blobs
      where organization_id = ${f.orgId} group by store order by store`),
  );

describe('cli attachments move', () => {
  it("moves a company's files to S3 and back, each readable byte for byte", async () => {
    const files = [await receiptPdf('One', 600_000), await receiptPdf('Two')];
    const ids: string[] = [];
    for (const bytes of files) {
      const file = await receiveFile(database.db, stores, f.orgId, Readable.from([bytes]), { maxBytes: 25 << 20 });
      const a = await database.db.transaction((tx) => createAttachment(tx, f.ctx, file, { fileName: 'r.pdf' }));
      ids.push(a.id);
    }
    const check = async () => {
      for (const [i, id] of ids.entries()) {
        const { body } = await openAttachment(database.db, stores, f.orgId, id);
        const parts: Buffer[] = [];
        for await (const p of body) parts.push(p as Buffer);
        expect(sha(Buffer.concat(parts))).toBe(sha(files[i] as Buffer));
      }
    };
    const toS3 = await cli('attachments', 'move', '--company', f.orgId, '--to', 's3', '--json');
    expect(toS3.code, toS3.err).toBe(0);
    expect(JSON.parse(toS3.out)).toMatchObject({ moved: 2, already: 0, to: 's3' });
    expect(await storesOf()).toEqual([{ store: 's3', n: 2 }]);
    const [chunks] = rowsOf<{ n: number }>(
      await database.db.execute(
        sql`select count(*)::int as n from attachment_chunks where organization_id = ${f.orgId}`,
      ),
    );
    expect(chunks?.n).toBe(0);
    await check();
    const again = await cli('attachments', 'move', '--company', f.orgId, '--to', 's3');
    expect(again.out).toBe('moved 0 files (0 bytes) to s3; 2 already there');
    const back = await cli('attachments', 'move', '--company', f.orgId, '--to', 'postgres');
    expect(back.code, back.err).toBe(0);
    expect(await storesOf()).toEqual([{ store: 'postgres', n: 2 }]);
    await check();
  });

  it('refuses a store it does not know and a company that is not there', async () => {
    expect((await cli('attachments', 'move', '--company', f.orgId, '--to', 'ftp')).code).toBe(2);
    const missing = await cli('attachments', 'move', '--company', '01a21f63-80ea-73ce-8e85-165583b6e28c', '--to', 's3');
    expect(missing.code).toBe(1);
  });
});
