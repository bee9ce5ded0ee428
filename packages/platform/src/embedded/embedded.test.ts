import { refusal } from '@firm/core/testing';
import { contacts, type documents, journalEntries } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createLedgerFixture, type LedgerFixture } from '@firm/ledger/testing';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PlatformAdapter, PlatformQuery } from '../types';
import { createEmbeddedPlatform } from './index';

let database: TestDatabase;
let f: LedgerFixture;
let platform: PlatformAdapter;

beforeAll(async () => {
  database = await createTestDatabase();
  f = await createLedgerFixture(database.db);
  platform = createEmbeddedPlatform(database.db, {
    firmId: f.firmId,
    organizationId: f.orgId,
    acctCompanyId: f.orgId,
    actor: { kind: 'test', id: 'tester' },
  });
});
afterAll(() => database.close());

const rowCount = async (table: typeof contacts | typeof documents | typeof journalEntries) =>
  (await database.db.select({ n: count() }).from(table).where(eq(table.organizationId, f.orgId)))[0]?.n;

describe('embedded platform', () => {
  it('presents the chart of accounts with the platform types, paged from a 1-based start', async () => {
    const page = await platform.list('Account', { startPosition: 1, maxResults: 3 });
    expect(page.records).toHaveLength(3);
    expect(page.totalCount).toBeGreaterThan(3);
    const checking = await platform.get('Account', f.account('1000'));
    expect(checking).toMatchObject({ AcctNum: '1000', AccountType: 'Bank', Classification: 'Asset', SyncToken: '0' });
    const next = await platform.list('Account', { startPosition: 3, maxResults: 1 });
    expect(next.records[0]?.Id).toBe(page.records[2]?.Id);
  });

  it('counts every change in the SyncToken and refuses a stale one with the current record', async () => {
    const { record } = await platform.create('Customer', {
      DisplayName: 'Amy Bird Sanctuary',
      PrimaryEmailAddr: { Address: 'amy@bird.test' },
    });
    expect(record).toMatchObject({ SyncToken: '0', DisplayName: 'Amy Bird Sanctuary' });
    const first = await platform.update('Customer', record.Id, {
      SyncToken: '0',
      PrimaryPhone: { FreeFormNumber: '555' },
    });
    expect(first.record).toMatchObject({ SyncToken: '1', PrimaryPhone: { FreeFormNumber: '555' } });
    expect(first.record.PrimaryEmailAddr).toEqual({ Address: 'amy@bird.test' });
    expect(first.syncTokenBefore).toBe('0');
    const stale = await refusal(platform.update('Customer', record.Id, { SyncToken: '0', DisplayName: 'Amy B' }));
    expect(stale.code).toBe('STALE_SYNC_TOKEN');
    expect(stale.details?.[0]?.current).toMatchObject({ SyncToken: '1', DisplayName: 'Amy Bird Sanctuary' });
    // A change made outside the gateway (the partner API, a worker, psql) moves the SyncToken too.
    await database.db.update(contacts).set({ phone: '556' }).where(eq(contacts.id, record.Id));
    expect((await platform.get('Customer', record.Id)).SyncToken).toBe('2');
  });

  it('writes invoices through the documents rules and deletes by voiding', async () => {
    const { record: customer } = await platform.create('Customer', { DisplayName: 'Sushi by Katsuyuki' });
    const created = await platform.create('Invoice', {
      CustomerRef: { value: customer.Id },
      TxnDate: '2026-03-01',
      DocNumber: 'INV-1',
      Line: [
        {
          Amount: 150.5,
          DetailType: 'SalesItemLineDetail',
          SalesItemLineDetail: { ItemAccountRef: { value: f.account('4000') }, Qty: 1 },
        },
      ],
    });
    expect(created.record).toMatchObject({ TotalAmt: 150.5, Balance: 150.5, CustomerRef: { value: customer.Id } });
    expect(created.journal.reduce((s, l) => s + l.debit - l.credit, 0)).toBe(0);
    const updated = await platform.update('Invoice', created.record.Id, { SyncToken: '0', DocNumber: 'INV-1A' });
    expect(updated.record).toMatchObject({ DocNumber: 'INV-1A', SyncToken: '1', TotalAmt: 150.5 });
    const deleted = await platform.delete('Invoice', created.record.Id, '1');
    expect(deleted.record).toMatchObject({ Id: created.record.Id, status: 'Deleted' });
    expect((await refusal(platform.get('Invoice', created.record.Id))).code).toBe('RECORD_NOT_FOUND');
  });

  it('refuses an unbalanced journal entry the way the ledger does, writing nothing', async () => {
    const before = await rowCount(journalEntries);
    const err = await refusal(
      platform.create('JournalEntry', {
        TxnDate: '2026-03-02',
        Line: [
          {
            Amount: 100,
            DetailType: 'JournalEntryLineDetail',
            JournalEntryLineDetail: { PostingType: 'Debit', AccountRef: { value: f.account('6300') } },
          },
          {
            Amount: 90,
            DetailType: 'JournalEntryLineDetail',
            JournalEntryLineDetail: { PostingType: 'Credit', AccountRef: { value: f.account('1000') } },
          },
        ],
      }),
    );
    expect(err.code).toBe('UNBALANCED_ENTRY');
    expect(await rowCount(journalEntries)).toBe(before);
  });

  it('posts a journal entry, refuses its update and voids it on delete', async () => {
    const line = (postingType: string, code: string) => ({
      Amount: 42,
      DetailType: 'JournalEntryLineDetail',
      JournalEntryLineDetail: { PostingType: postingType, AccountRef: { value: f.account(code) } },
    });
    const { record } = await platform.create('JournalEntry', {
      TxnDate: '2026-03-03',
      Line: [line('Debit', '6300'), line('Credit', '1000')],
    });
    expect(record).toMatchObject({ TotalAmt: 42, SyncToken: '0' });
    expect((await refusal(platform.update('JournalEntry', record.Id, { SyncToken: '0' }))).code).toBe(
      'OPERATION_NOT_SUPPORTED',
    );
    expect((await refusal(platform.delete('JournalEntry', record.Id, '7'))).code).toBe('STALE_SYNC_TOKEN');
    await platform.delete('JournalEntry', record.Id, '0');
    const [entry] = await database.db.select().from(journalEntries).where(eq(journalEntries.id, record.Id));
    expect(entry?.status).toBe('void');
  });

  it('answers CompanyInfo by the company id', async () => {
    const info = await platform.companyInfo();
    expect(info).toMatchObject({ Id: f.orgId, CompanyName: expect.stringContaining('Client of'), SyncToken: '0' });
    expect((await platform.get('CompanyInfo', f.orgId)).Id).toBe(f.orgId);
  });
});

describe('embedded platform: queries', () => {
  const query = (where: PlatformQuery['where'], entity = 'Account') =>
    platform.query({ entity, select: 'count', where, orderBy: [], startPosition: 1, maxResults: 100 });

  it('binds an IN list as one array parameter, so no list outgrows the protocol (70,000 values)', async () => {
    const checking = f.account('1000');
    const values = [...Array.from({ length: 69_999 }, (_, i) => `not-${i}`), checking];
    expect((await query([{ field: 'Id', op: 'IN', values }])).QueryResponse.totalCount).toBe(1);
    const accounts = await query([{ field: 'AcctNum', op: 'IN', values: ['1000', 1200, '9999'] }]);
    expect(accounts.QueryResponse.totalCount).toBe(2);
    const dated = await query([{ field: 'TxnDate', op: 'IN', values: ['2024-02-29', '2026-01-31'] }], 'Invoice');
    expect(dated.QueryResponse.totalCount).toBe(0);
  });

  it('refuses a date or time that is not on the calendar before the database sees it', async () => {
    for (const where of [
      [{ field: 'TxnDate', op: '>', value: '2026-02-30' }],
      [{ field: 'TxnDate', op: 'IN', values: ['2024-02-29', '2023-02-29'] }],
      [{ field: 'MetaData.CreateTime', op: '>', value: '2026-02-30T00:00:00Z' }],
    ] as PlatformQuery['where'][]) {
      expect((await refusal(query(where, 'Invoice'))).code, JSON.stringify(where)).toBe('QUERY_INVALID');
    }
    expect((await query([{ field: 'TxnDate', op: '>', value: '2024-02-29' }], 'Invoice')).QueryResponse).toEqual({
      totalCount: expect.any(Number),
    });
  });
});
