import { Readable } from 'node:stream';
import { attachmentStoresFrom, createAttachment, linkAttachment, receiveFile } from '@firm/attachments';
import { receiptPdf } from '@firm/attachments/testing';
import { type BankingFixture, createBankingFixture } from '@firm/banking/testing';
import type { Db } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { computeChecklist } from './checklist';
import { listCloseRules, setCloseRule } from './rules';

let database: TestDatabase;
let db: Db;
let f: BankingFixture;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());
beforeEach(async () => {
  f = await createBankingFixture(db);
});

const MARCH = { periodStart: '2026-03-01', periodEnd: '2026-03-31' };
const missing = async () =>
  (await computeChecklist(db, { firmId: f.firmId, organizationId: f.orgId, ...MARCH })).filter(
    (i) => i.kind === 'receipts_missing',
  );

describe('the receipts_missing rule', () => {
  it('is off until the firm turns it on', async () => {
    await f.row({ amountCents: -12_000 });
    expect(await missing()).toEqual([]);
    const rule = (await listCloseRules(db, f.firmId)).find((r) => r.kind === 'receipts_missing');
    expect(rule).toMatchObject({ enabled: false, thresholds: [{ name: 'minCents', value: 7500 }] });
  });

  it('flags rows over the amount without an attachment, and not once one is attached', async () => {
    await setCloseRule(db, f.firmId, 'receipts_missing', { enabled: true, thresholds: { minCents: 10_000 } });
    const big = await f.row({ amountCents: -12_000 });
    const deposit = await f.row({ amountCents: 25_000 });
    await f.row({ amountCents: -9_999 });
    await f.row({ amountCents: -50_000, date: '2026-04-02' });
    const [item] = await missing();
    expect(item?.evidence.map((e) => e.id).sort()).toEqual([f.checking.id, big, deposit].sort());
    expect(item?.message).toContain('2 rows of at least 100.00');

    const stores = attachmentStoresFrom(db, { ATTACHMENTS_STORE: 'postgres' });
    const file = await receiveFile(db, stores, f.orgId, Readable.from([await receiptPdf('Receipt')]), {
      maxBytes: 1 << 20,
    });
    const a = await db.transaction((tx) => createAttachment(tx, f.ctx, file, { fileName: 'receipt.pdf' }));
    await db.transaction((tx) =>
      linkAttachment(tx, f.ctx, f.orgId, a.id, { entityType: 'bank_transaction', entityId: big }),
    );
    const [after] = await missing();
    expect(after?.evidence.map((e) => e.id).sort()).toEqual([f.checking.id, deposit].sort());
  });
});
