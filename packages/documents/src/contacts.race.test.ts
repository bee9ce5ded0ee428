import { isDomainError } from '@firm/core';
import type { Db } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { updateContact } from './contacts';
import { createDocument } from './documents';
import { createDocumentsFixture } from './testing';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const outcome = (work: Promise<unknown>) =>
  work.then(
    () => 'done',
    (err: unknown) => (isDomainError(err) ? err.code : Promise.reject(err)),
  );

/**
 * A bill being written for a vendor while someone makes the vendor a customer-only contact: whichever commits
 * second sees the other, so no bill is left with a customer-only contact. Needs two connections (Postgres).
 */
describe.skipIf(!process.env.DATABASE_URL)('contact kind against a document being written', () => {
  it('refuses to drop the vendor side while a bill for the vendor is still being written', async () => {
    const f = await createDocumentsFixture(db);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let written = () => {};
    const billWritten = new Promise<void>((resolve) => {
      written = resolve;
    });
    const bill = db.transaction(async (tx) => {
      await createDocument(tx, f.ctx, f.orgId, 'bill', {
        contactId: f.vendor.id,
        date: '2026-05-01',
        lines: [{ accountId: f.account('6300'), unitPriceCents: 100 }],
      });
      written();
      await held;
    });
    await billWritten;
    const change = outcome(
      db.transaction((tx) => updateContact(tx, f.ctx, f.orgId, f.vendor.id, { kind: 'customer' })),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await bill;
    expect(await change).toBe('INVALID_STATE');
  });

  it('refuses a bill for a contact that is being made customer-only', async () => {
    const f = await createDocumentsFixture(db);
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    let changed = () => {};
    const kindChanged = new Promise<void>((resolve) => {
      changed = resolve;
    });
    const change = db.transaction(async (tx) => {
      await updateContact(tx, f.ctx, f.orgId, f.vendor.id, { kind: 'customer' });
      changed();
      await held;
    });
    await kindChanged;
    const bill = outcome(
      db.transaction((tx) =>
        createDocument(tx, f.ctx, f.orgId, 'bill', {
          contactId: f.vendor.id,
          date: '2026-05-01',
          lines: [{ accountId: f.account('6300'), unitPriceCents: 100 }],
        }),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await change;
    expect(await bill).toBe('WRONG_CONTACT_KIND');
  });
});
