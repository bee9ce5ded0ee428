import { isDomainError } from '@firm/core';
import { auditEvents, type Db, organizations, outboxEvents } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postTransaction, voidEntry } from './posting';
import { setBooksClosedThrough } from './periods';
import { createLedgerFixture, type LedgerFixture } from './testing';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const close = (f: LedgerFixture, date: string | null, ctx = f.ctx) =>
  db.transaction((tx) => setBooksClosedThrough(tx, ctx, f.orgId, date));

const transfer = (f: LedgerFixture, date: string) =>
  db.transaction((tx) =>
    postTransaction(tx, f.ctx, f.orgId, {
      kind: 'transfer',
      date,
      fromAccountId: f.account('1000'),
      toAccountId: f.account('1010'),
      amountCents: 100,
    }),
  );

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (isDomainError(e) ? e.code : String(e)),
  );

describe('closing the books', () => {
  it('stops posting and voiding on or before the date, and reopening lifts it', async () => {
    const f = await createLedgerFixture(db);
    const january = await transfer(f, '2026-01-20');
    expect(await close(f, '2026-01-31')).toEqual({ booksClosedThrough: '2026-01-31', previous: null });

    expect(await codeOf(transfer(f, '2026-01-31'))).toBe('PERIOD_CLOSED');
    expect(await codeOf(transfer(f, '2026-02-01'))).toBe('ok');
    const voiding = db.transaction((tx) => voidEntry(tx, f.ctx, f.orgId, january.journalEntryId, 'late'));
    expect(await codeOf(voiding)).toBe('PERIOD_CLOSED');

    expect(await close(f, null)).toEqual({ booksClosedThrough: null, previous: '2026-01-31' });
    expect(await codeOf(transfer(f, '2026-01-31'))).toBe('ok');
  });

  it('records books.closed and books.reopened in the audit trail and the outbox', async () => {
    const f = await createLedgerFixture(db);
    await close(f, '2026-01-31');
    await close(f, '2026-03-31'); // later: closes more
    await close(f, '2026-02-28'); // earlier: reopens March
    await close(f, '2026-02-28'); // unchanged: nothing to record
    await close(f, null);
    const outbox = await db
      .select()
      .from(outboxEvents)
      .where(eq(outboxEvents.organizationId, f.orgId))
      .orderBy(asc(outboxEvents.id));
    expect(
      outbox.map((o) => [o.type, (o.payload as { booksClosedThrough: string | null }).booksClosedThrough]),
    ).toEqual([
      ['books.closed', '2026-01-31'],
      ['books.closed', '2026-03-31'],
      ['books.reopened', '2026-02-28'],
      ['books.reopened', null],
    ]);
    const audit = await db
      .select()
      .from(auditEvents)
      .where(eq(auditEvents.organizationId, f.orgId))
      .orderBy(asc(auditEvents.id));
    expect(audit[0]).toMatchObject({
      firmId: f.firmId,
      action: 'books.closed',
      resourceType: 'organization',
      resourceId: f.orgId,
      actorKind: 'test',
      data: { booksClosedThrough: '2026-01-31', previous: null },
    });
    const [org] = await db.select().from(organizations).where(eq(organizations.id, f.orgId));
    expect(org?.booksClosedThrough).toBeNull();
  });

  it("refuses another firm's organization (ORGANIZATION_NOT_FOUND) and a malformed date (VALIDATION_ERROR)", async () => {
    const f = await createLedgerFixture(db);
    const other = await createLedgerFixture(db);
    expect(await codeOf(close(f, '2026-01-31', other.ctx))).toBe('ORGANIZATION_NOT_FOUND');
    expect(await codeOf(close(f, '31/01/2026'))).toBe('VALIDATION_ERROR');
    const [org] = await db.select().from(organizations).where(eq(organizations.id, f.orgId));
    expect(org?.booksClosedThrough).toBeNull();
  });
});
