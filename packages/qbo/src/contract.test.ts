import { Readable } from 'node:stream';
import {
  attachmentFile,
  type AttachmentStores,
  createAttachment,
  PostgresBlobStore,
  receiveFile,
} from '@firm/attachments';
import { receiptPdf } from '@firm/attachments/testing';
import { refusal } from '@firm/core/testing';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createLedgerFixture, type LedgerFixture } from '@firm/ledger/testing';
import { createEmbeddedPlatform, type PlatformAdapter } from '@firm/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createQboPlatform } from './adapter';
import { type QboConfig, qboConfigFrom } from './config';
import { QboHttp } from './http';
import { inProcessLimiter } from './limiter';
import { completeAuthorization, startAuthorization } from './oauth';
import { FakeQbo } from './testing/fake-qbo';
import { addFirmOwner } from './testing/people';

/**
 * One contract, both adapters: the gateway's routes do not know which platform they reach, so the embedded books and
 * a QuickBooks Online company (here the local QBO-compatible server) must answer the same calls the same way.
 */

let database: TestDatabase;
let fake: FakeQbo;
let stores: AttachmentStores;
const adapters = new Map<string, { platform: PlatformAdapter; companyId: string; fixture: LedgerFixture }>();

beforeAll(async () => {
  database = await createTestDatabase();
  const store = new PostgresBlobStore(database.db);
  stores = { current: store, byKind: { postgres: store } };
  const embedded = await createLedgerFixture(database.db);
  adapters.set('embedded', {
    companyId: embedded.orgId,
    fixture: embedded,
    platform: createEmbeddedPlatform(database.db, {
      firmId: embedded.firmId,
      organizationId: embedded.orgId,
      acctCompanyId: embedded.orgId,
      actor: { kind: 'test', id: 'contract' },
    }),
  });

  fake = new FakeQbo();
  await fake.start();
  const config = qboConfigFrom(fake.env()) as QboConfig;
  const f = await createLedgerFixture(database.db);
  const userId = await addFirmOwner(database.db, f.firmId);
  const { url } = await startAuthorization(database.db, config, {
    firmId: f.firmId,
    organizationId: f.orgId,
    userId,
  });
  await completeAuthorization(database.db, config, inProcessLimiter(), {
    state: new URL(url).searchParams.get('state') as string,
    code: fake.issueCode(),
    realmId: fake.realmId,
    userId,
  });
  const http = new QboHttp({
    config,
    db: database.db,
    limiter: inProcessLimiter(),
    organizationId: f.orgId,
    baseDelayMs: 5,
  });
  // An Attachable's file is one received for the client, from its own attachments store.
  const files = { open: (id: string) => attachmentFile(database.db, stores, f.orgId, id) };
  adapters.set('qbo', {
    companyId: fake.realmId,
    fixture: f,
    platform: createQboPlatform(http, { realmId: fake.realmId, files }),
  });
});
afterAll(async () => {
  await fake.stop();
  await database.close();
});

describe.each(['embedded', 'qbo'])('the %s adapter', (name) => {
  const use = () => adapters.get(name) as { platform: PlatformAdapter; companyId: string; fixture: LedgerFixture };

  it('presents its company with the realm id, a SyncToken and MetaData', async () => {
    const { platform, companyId } = use();
    const info = await platform.companyInfo();
    expect(info).toMatchObject({ Id: companyId, SyncToken: expect.any(String), MetaData: expect.any(Object) });
    await expect(platform.get('CompanyInfo', companyId)).resolves.toMatchObject({ Id: companyId });
  });

  it('creates with SyncToken 0, updates sparsely with the current token, and refuses a stale one with the record', async () => {
    const { platform } = use();
    const { record } = await platform.create('Customer', { DisplayName: `Contract ${name} Co` });
    expect(record).toMatchObject({ Id: expect.any(String), SyncToken: '0', DisplayName: `Contract ${name} Co` });
    expect(record.MetaData.CreateTime).toEqual(expect.any(String));
    const updated = await platform.update('Customer', record.Id, {
      SyncToken: '0',
      PrimaryPhone: { FreeFormNumber: '555-0100' },
    });
    expect(updated.record).toMatchObject({
      SyncToken: '1',
      PrimaryPhone: { FreeFormNumber: '555-0100' },
      DisplayName: `Contract ${name} Co`,
    });
    expect(updated.syncTokenBefore).toBe('0');
    const stale = await refusal(
      platform.update('Customer', record.Id, { SyncToken: '0', PrimaryPhone: { FreeFormNumber: '555-0199' } }),
    );
    expect(stale.code).toBe('STALE_SYNC_TOKEN');
    expect(stale.details?.[0]).toMatchObject({ current: { Id: record.Id, SyncToken: '1' } });
    await expect(platform.get('Customer', record.Id)).resolves.toMatchObject({ SyncToken: '1' });
  });

  it('posts a balanced JournalEntry and reads it back with its lines', async () => {
    const { platform } = use();
    const [debit, credit] = (await platform.list('Account', { startPosition: 1, maxResults: 2 })).records;
    const line = (account: typeof debit, postingType: 'Debit' | 'Credit') => ({
      Amount: 125.5,
      DetailType: 'JournalEntryLineDetail',
      JournalEntryLineDetail: { PostingType: postingType, AccountRef: { value: account?.Id } },
    });
    const { record } = await platform.create('JournalEntry', {
      TxnDate: '2023-03-15',
      Line: [line(debit, 'Debit'), line(credit, 'Credit')],
    });
    expect(record).toMatchObject({ Id: expect.any(String), SyncToken: '0', TxnDate: '2023-03-15' });
    const read = await platform.get('JournalEntry', record.Id);
    const lines = read.Line as { Amount: number; JournalEntryLineDetail: { PostingType: string } }[];
    expect(lines.map((l) => [l.Amount, l.JournalEntryLineDetail.PostingType])).toEqual([
      [125.5, 'Debit'],
      [125.5, 'Credit'],
    ]);
  });

  it('pages from a 1-based start with a total, the same records on every page size', async () => {
    const { platform } = use();
    for (const n of [1, 2, 3]) await platform.create('Customer', { DisplayName: `Pager ${name} ${n}` });
    const three = await platform.list('Customer', { startPosition: 1, maxResults: 3 });
    expect(three.records).toHaveLength(3);
    expect(three.totalCount).toBeGreaterThanOrEqual(3);
    const second = await platform.list('Customer', { startPosition: 2, maxResults: 1 });
    expect(second.records[0]?.Id).toBe(three.records[1]?.Id);
  });

  it('queries with filters, paging and counts', async () => {
    const { platform } = use();
    for (const n of [1, 2, 3]) await platform.create('Customer', { DisplayName: `Query ${name} ${n}` });
    const where = [{ field: 'DisplayName', op: 'LIKE' as const, value: `Query ${name}%` }];
    const page = await platform.query({
      entity: 'Customer',
      select: '*',
      where,
      orderBy: [],
      startPosition: 2,
      maxResults: 1,
    });
    expect(page.QueryResponse).toMatchObject({ startPosition: 2, totalCount: 3 });
    expect((page.QueryResponse.Customer as { DisplayName: string }[]).map((c) => c.DisplayName)).toHaveLength(1);
    const count = await platform.query({
      entity: 'Customer',
      select: 'count',
      where,
      orderBy: [],
      startPosition: 1,
      maxResults: 1,
    });
    expect(count.QueryResponse).toEqual({ totalCount: 3 });
  });

  it('refuses an unknown record and an entity it does not cover', async () => {
    const { platform } = use();
    expect((await refusal(platform.get('Customer', '987654321'))).code).toBe('RECORD_NOT_FOUND');
    expect((await refusal(platform.get('Spaceship', '1'))).code).toBe('ENTITY_NOT_COVERED');
    expect((await refusal(platform.delete('Customer', '1', '0'))).code).toBe('OPERATION_NOT_SUPPORTED');
  });

  it('creates an Attachable from a file received for the client, its AttachableRef kept, and reads it back', async () => {
    const { platform, fixture } = use();
    const bytes = await receiptPdf(`Receipt for the ${name} contract`, 3_000);
    const received = await receiveFile(database.db, stores, fixture.orgId, Readable.from([bytes]), {
      maxBytes: 1 << 20,
    });
    const file = await database.db.transaction((tx) =>
      createAttachment(tx, fixture.ctx, received, { fileName: 'contract-receipt.pdf' }),
    );
    const customer = await platform.create('Customer', { DisplayName: `Attached ${name} Co` });
    const ref = { EntityRef: { type: 'Customer', value: customer.record.Id } };
    const { record } = await platform.create('Attachable', { Id: file.id, AttachableRef: [ref] });
    expect(record).toMatchObject({
      Id: expect.any(String),
      SyncToken: expect.any(String),
      FileName: 'contract-receipt.pdf',
      ContentType: 'application/pdf',
      Size: bytes.length,
      AttachableRef: [{ ...ref, IncludeOnSend: false }],
      MetaData: { CreateTime: expect.any(String), LastUpdatedTime: expect.any(String) },
    });
    await expect(platform.get('Attachable', record.Id)).resolves.toEqual(record);

    const missing = await refusal(platform.create('Attachable', { AttachableRef: [ref] }));
    expect([missing.code, missing.details?.[0]?.field]).toEqual(['VALIDATION_ERROR', 'payload.Id']);
    const other = await createLedgerFixture(database.db);
    const theirs = await receiveFile(database.db, stores, other.orgId, Readable.from([bytes]), { maxBytes: 1 << 20 });
    const foreign = await database.db.transaction((tx) =>
      createAttachment(tx, other.ctx, theirs, { fileName: 'theirs.pdf' }),
    );
    expect((await refusal(platform.create('Attachable', { Id: foreign.id, AttachableRef: [ref] }))).code).toBe(
      'RECORD_NOT_FOUND',
    );

    if (name === 'qbo') {
      // QBO received the file's own bytes and its metadata as the upload's two parts.
      const [metadata, content] = fake.uploaded(record.Id) ?? [];
      expect(metadata).toMatchObject({ name: 'file_metadata_01', contentType: 'application/json' });
      expect(JSON.parse(metadata?.bytes.toString() ?? '')).toEqual({
        AttachableRef: [ref],
        FileName: 'contract-receipt.pdf',
        ContentType: 'application/pdf',
      });
      expect(content).toMatchObject({
        name: 'file_content_01',
        fileName: 'contract-receipt.pdf',
        contentType: 'application/pdf',
      });
      expect(content?.bytes.equals(bytes)).toBe(true);
      // The answer has the fields of QBO's own, as recorded from the sandbox.
      const recorded = ['FileName', 'FileAccessUri', 'TempDownloadUri', 'Size', 'ContentType', 'domain', 'sparse']
        .concat(['Id', 'SyncToken', 'MetaData', 'AttachableRef'])
        .sort();
      expect(Object.keys(record).sort()).toEqual(recorded);
    }
  });

  it('answers reports in the platform report shape', async () => {
    const { platform } = use();
    const report = await platform.report('profit-loss', { startDate: '2023-01-01', endDate: '2023-12-31' });
    expect(report).toMatchObject({
      Header: expect.objectContaining({ ReportName: 'ProfitAndLoss' }),
      Rows: expect.any(Object),
    });
  });
});
