import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { type BankingFixture, createBankingFixture } from '@firm/banking/testing';
import { isDomainError } from '@firm/core';
import { type Db, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { postTransaction } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  createAttachment,
  deleteAttachment,
  linkAttachment,
  listAttachments,
  openAttachment,
  removeOrphan,
  unlinkAttachment,
} from './attachments';
import { detectType, looksLikeCsv } from './detect';
import { receiveFile } from './receive';
import { type AttachmentStores, PostgresBlobStore, type S3BlobStore } from './store';
import { executableBytes, receiptPdf, startS3Server } from './testing';

let database: TestDatabase;
let db: Db;
let s3: Awaited<ReturnType<typeof startS3Server>>;
let s3Store: S3BlobStore;
let f: BankingFixture;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  s3 = await startS3Server();
  s3Store = s3.store();
});
afterAll(async () => {
  s3Store.close();
  await s3.close();
  await database.close();
});
beforeEach(async () => {
  f = await createBankingFixture(db);
});

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const postgres = (): AttachmentStores => {
  const store = new PostgresBlobStore(db);
  return { current: store, byKind: { postgres: store, s3: s3Store } };
};
const onS3 = (): AttachmentStores => ({
  current: s3Store,
  byKind: { postgres: new PostgresBlobStore(db), s3: s3Store },
});
/** A source that yields its bytes in pieces, as a network upload does. */
const pieces = (bytes: Buffer, size = 100_000) =>
  Readable.from(
    (function* () {
      for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
    })(),
  );
const readAll = async (r: Readable) => {
  const parts: Buffer[] = [];
  for await (const p of r) parts.push(p as Buffer);
  return Buffer.concat(parts);
};
const counts = async () => {
  const [row] = rowsOf<{ blobs: number; chunks: number; attachments: number }>(
    await db.execute(sql`select
      (select count(*)::int from attachment_blobs where organization_id = ${f.orgId}) as blobs,
      (select count(*)::int from attachment_chunks where organization_id = ${f.orgId}) as chunks,
      (select count(*)::int from attachments where organization_id = ${f.orgId}) as attachments`),
  );
  return row;
};
const upload = async (stores: AttachmentStores, bytes: Buffer, fileName = 'receipt.pdf', maxBytes = 25 << 20) => {
  const file = await receiveFile(db, stores, f.orgId, pieces(bytes), { maxBytes });
  return db.transaction((tx) => createAttachment(tx, f.ctx, file, { fileName })).then((a) => ({ a, file }));
};
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => null,
    (e: unknown) => (isDomainError(e) ? { code: e.code, message: e.message } : Promise.reject(e)),
  );

describe('type detection by magic bytes', () => {
  it('knows PDF and refuses an executable whatever it is called', async () => {
    expect(await detectType(await receiptPdf(), true)).toMatchObject({ mime: 'application/pdf', allowed: true });
    expect(await detectType(executableBytes(), true)).toMatchObject({
      mime: 'application/x-msdownload',
      allowed: false,
    });
  });
  it('knows PNG, JPEG, TIFF and HEIC headers', async () => {
    const png = Buffer.from('89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489', 'hex');
    expect((await detectType(png, true)).mime).toBe('image/png');
    const jpeg = Buffer.from('ffd8ffe000104a46494600010100000100010000', 'hex');
    expect((await detectType(jpeg, true)).mime).toBe('image/jpeg');
    const tiff = Buffer.concat([Buffer.from('49492a0008000000', 'hex'), Buffer.alloc(64)]);
    expect((await detectType(tiff, true)).mime).toBe('image/tiff');
    const heic = Buffer.concat([
      Buffer.from('00000018', 'hex'),
      Buffer.from('ftypheic\0\0\0\0mif1heic'),
      Buffer.alloc(32),
    ]);
    expect(await detectType(heic, true)).toMatchObject({ mime: 'image/heic', allowed: true });
  });
  it('knows CSV text and refuses other text and binary noise', async () => {
    expect(looksLikeCsv(Buffer.from('date,amount\n2026-01-02,12.50\n2026-01-03,9.00\n'), true)).toBe(true);
    expect(looksLikeCsv(Buffer.from('a;b;c\r\n1;2;3\r\n'), true)).toBe(true);
    expect(looksLikeCsv(Buffer.from('#!/bin/sh\nrm -rf /\n'), true)).toBe(false);
    expect(looksLikeCsv(Buffer.from([0, 1, 2, 3, 44, 10]), true)).toBe(false);
    expect(looksLikeCsv(Buffer.from([0xc3, 0x28, 44, 10]), true)).toBe(false);
    expect((await detectType(Buffer.from('<html><body>hi</body></html>'), true)).allowed).toBe(false);
  });
  it('knows an XLSX workbook (a zip with xl/ parts) and refuses another zip', async () => {
    const ExcelJS = (await import('exceljs')).default;
    const wb = new ExcelJS.Workbook();
    wb.addWorksheet('Statement').addRow(['date', 'amount']);
    const xlsx = Buffer.from(await wb.xlsx.writeBuffer());
    expect(await detectType(xlsx.subarray(0, 64 * 1024), xlsx.length <= 64 * 1024)).toMatchObject({
      ext: 'xlsx',
      allowed: true,
    });
    // A zip of anything else.
    const zip = Buffer.concat([
      Buffer.from('504b0304', 'hex'),
      Buffer.alloc(26),
      Buffer.from('notes.txt'),
      Buffer.alloc(64),
    ]);
    expect((await detectType(zip, true)).allowed).toBe(false);
  });
});

describe.each([
  ['postgres', postgres],
  ['s3', onS3],
])('the %s store', (_name, storesOf) => {
  it('stores a file as it streams in and gives back the same bytes, hashed and sized', async () => {
    const pdf = await receiptPdf('Receipt', 700_000);
    const { a } = await upload(storesOf(), pdf);
    expect(a).toMatchObject({ contentType: 'application/pdf', sizeBytes: pdf.length, sha256: sha(pdf) });
    const got = await openAttachment(db, storesOf(), f.orgId, a.id);
    expect(sha(await readAll(got.body))).toBe(sha(pdf));
  });

  it('keeps one copy of the same bytes per company', async () => {
    const pdf = await receiptPdf('Same receipt');
    const first = await upload(storesOf(), pdf, 'a.pdf');
    const second = await upload(storesOf(), pdf, 'b.pdf');
    expect(second.a.id).not.toBe(first.a.id);
    // The second upload's blob was not used: it is still receiving, for the caller to discard.
    const [blobs] = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from attachment_blobs
        where organization_id = ${f.orgId} and status = 'stored'`),
    );
    expect(blobs?.n).toBe(1);
    const b = await openAttachment(db, storesOf(), f.orgId, second.a.id);
    expect(sha(await readAll(b.body))).toBe(sha(pdf));
  });

  it('refuses an executable named .pdf (415 naming its type) and a file over the limit, leaving nothing', async () => {
    const before = await counts();
    const exe = await refusal(upload(storesOf(), executableBytes(200_000), 'invoice.pdf'));
    expect(exe).toMatchObject({ code: 'UNSUPPORTED_FILE_TYPE' });
    expect(exe?.message).toContain('application/x-msdownload');
    const big = await refusal(upload(storesOf(), await receiptPdf('Big', 300_000), 'big.pdf', 200_000));
    expect(big).toMatchObject({ code: 'PAYLOAD_TOO_LARGE' });
    expect(await counts()).toEqual(before);
  });

  it('leaves nothing behind when the upload is cut off halfway', async () => {
    const before = await counts();
    const pdf = await receiptPdf('Cut off', 6_000_000);
    const source = new Readable({ read() {} });
    source.push(pdf.subarray(0, 3_000_000));
    setTimeout(() => source.destroy(new Error('aborted')), 50);
    const res = await refusal(receiveFile(db, storesOf(), f.orgId, source, { maxBytes: 25 << 20 })).catch(
      (e: Error) => e.message,
    );
    expect(res).toBe('aborted');
    expect(await counts()).toEqual(before);
  });
});

describe('links and deletion', () => {
  it('attaches a file to several records and lists it by record', async () => {
    const { a } = await upload(postgres(), await receiptPdf('Statement'));
    const row1 = await f.row({ amountCents: -4250 });
    const row2 = await f.row({ amountCents: -1200 });
    await db.transaction((tx) =>
      linkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'bank_transaction', entityId: row1 }),
    );
    const linked = await db.transaction((tx) =>
      linkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'bank_transaction', entityId: row2 }),
    );
    expect(linked.links.map((l) => l.entityId).sort()).toEqual([row1, row2].sort());
    const page = await listAttachments(db, f.orgId, { entityType: 'bank_transaction', entityId: row2, limit: 10 });
    expect(page.data.map((x) => x.id)).toEqual([a.id]);
    const none = await listAttachments(db, f.orgId, { entityType: 'contact', entityId: f.vendor.id, limit: 10 });
    expect(none.data).toEqual([]);
    // A record of another kind, or not of this company, is refused.
    expect(
      await refusal(
        db.transaction((tx) =>
          linkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'journal_entry', entityId: row1 }),
        ),
      ),
    ).toMatchObject({ code: 'ENTRY_NOT_FOUND' });
    const other = await createBankingFixture(db);
    expect(
      await refusal(
        db.transaction((tx) =>
          linkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'contact', entityId: other.vendor.id }),
        ),
      ),
    ).toMatchObject({ code: 'CONTACT_NOT_FOUND' });
    const unlinked = await db.transaction((tx) =>
      unlinkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'bank_transaction', entityId: row1 }),
    );
    expect(unlinked.links.map((l) => l.entityId)).toEqual([row2]);
  });

  it('deletes an attachment and its file when nothing posted refers to it', async () => {
    const stores = onS3();
    const { a, file } = await upload(stores, await receiptPdf('Draft only'));
    await db.transaction((tx) =>
      linkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'contact', entityId: f.vendor.id }),
    );
    const deleted = await db.transaction((tx) => deleteAttachment(tx, f.ctx, f.orgId, a.id));
    expect(deleted).toMatchObject({ retained: false, orphan: { blobId: file.blobId, store: 's3' } });
    await removeOrphan(stores, f.orgId, deleted.orphan);
    await expect(s3Store.open(f.orgId, file.blobId)).rejects.toThrow();
    expect(await refusal(openAttachment(db, stores, f.orgId, a.id))).toMatchObject({ code: 'ATTACHMENT_NOT_FOUND' });
  });

  it('keeps the file of a deleted attachment that a posted entry refers to', async () => {
    const { a, file } = await upload(postgres(), await receiptPdf('Posted'));
    const entry = await db.transaction((tx) =>
      postTransaction(tx, f.ctx, f.orgId, {
        kind: 'journal_entry',
        date: '2026-03-03',
        lines: [
          { accountId: f.account('6300'), debitCents: 4250 },
          { accountId: f.account('1000'), creditCents: 4250 },
        ],
      }),
    );
    const entryId = entry.journalEntryId;
    await db.transaction((tx) =>
      linkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'journal_entry', entityId: entryId }),
    );
    expect(
      await refusal(
        db.transaction((tx) =>
          unlinkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'journal_entry', entityId: entryId }),
        ),
      ),
    ).toMatchObject({ code: 'INVALID_STATE' });
    const deleted = await db.transaction((tx) => deleteAttachment(tx, f.ctx, f.orgId, a.id));
    expect(deleted).toMatchObject({ retained: true, orphan: null });
    const [kept] = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from attachment_chunks
        where organization_id = ${f.orgId} and blob_id = ${file.blobId}`),
    );
    expect(kept?.n).toBeGreaterThan(0);
    const [events] = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from outbox_events
        where organization_id = ${f.orgId} and type in ('attachment.created', 'attachment.deleted')`),
    );
    expect(events?.n).toBe(2);
  });
});
