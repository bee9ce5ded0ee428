import { isDomainError } from '@firm/core';
import { accounts, auditEvents, type Db, organizations, outboxEvents } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDraftEntry, type DraftInput, getEntry, listEntries, listJournalLines } from './entries';
import { postEntry, postTransaction, voidEntry } from './posting';
import { trialBalance } from './reports';
import { createLedgerFixture, type LedgerFixture } from './testing';

let database: TestDatabase;
let db: Db;
let f: LedgerFixture;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  f = await createLedgerFixture(db);
});
afterAll(() => database.close());

const draft = (input: Partial<DraftInput> = {}, fixture = f) =>
  db.transaction((tx) =>
    createDraftEntry(tx, fixture.ctx, fixture.orgId, {
      date: '2026-04-01',
      memo: 'Rent',
      lines: [
        { accountId: fixture.account('6400'), debitCents: 200_000 },
        { accountId: fixture.account('1000'), creditCents: 200_000 },
      ],
      ...input,
    }),
  );
const post = (id: string, fixture = f) => db.transaction((tx) => postEntry(tx, fixture.ctx, fixture.orgId, id));
const voidIt = (id: string, reason = 'Duplicate', fixture = f) =>
  db.transaction((tx) => voidEntry(tx, fixture.ctx, fixture.orgId, id, reason));

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isDomainError(err)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return err.code;
}

const cashBalance = async (fixture = f) =>
  (await trialBalance(db, fixture.orgId, { endDate: '2026-12-31' })).rows.find(
    (r) => r.accountId === fixture.account('1000'),
  );

describe('drafts', () => {
  it('are created with their lines and move no balance', async () => {
    const g = await createLedgerFixture(db);
    const entry = await draft({ reference: 'R-1' }, g);
    expect(entry).toMatchObject({
      status: 'draft',
      source: 'manual',
      date: '2026-04-01',
      memo: 'Rent',
      reference: 'R-1',
      totalCents: 200_000,
      postedAt: null,
      voidedAt: null,
    });
    expect(entry.lines.map((l) => [l.lineNo, l.debitCents, l.creditCents])).toEqual([
      [1, 200_000, 0],
      [2, 0, 200_000],
    ]);
    expect(await getEntry(db, g.orgId, entry.id)).toEqual(entry);
    expect(await cashBalance(g)).toBeUndefined();
  });

  it('need not balance yet, but must name active accounts of the organization', async () => {
    const unbalanced = await draft({
      lines: [
        { accountId: f.account('6400'), debitCents: 5 },
        { accountId: f.account('1000'), creditCents: 4 },
      ],
    });
    expect(unbalanced.status).toBe('draft');
    const other = await createLedgerFixture(db);
    expect(
      await codeOf(
        draft({
          lines: [
            { accountId: other.account('6400'), debitCents: 5 },
            { accountId: f.account('1000'), creditCents: 5 },
          ],
        }),
      ),
    ).toBe('INVALID_ACCOUNT');
    expect(await codeOf(draft({ date: '04/01/2026' }))).toBe('VALIDATION_ERROR');
  });

  it('are audited', async () => {
    const entry = await draft();
    const [audit] = await db.select().from(auditEvents).where(eq(auditEvents.resourceId, entry.id));
    expect(audit).toMatchObject({ action: 'entry.created', data: { status: 'draft' } });
  });
});

describe('posting a draft', () => {
  it('moves it to posted and into the balances', async () => {
    const g = await createLedgerFixture(db);
    const entry = await draft({}, g);
    const posted = await post(entry.id, g);
    expect(posted).toMatchObject({ id: entry.id, status: 'posted', source: 'manual' });
    expect(posted.postedAt).toBeInstanceOf(Date);
    expect(await cashBalance(g)).toMatchObject({ creditCents: 200_000 });
    const types = (await db.select().from(outboxEvents).where(eq(outboxEvents.organizationId, g.orgId))).map(
      (o) => o.type,
    );
    expect(types).toEqual(['entry.created', 'entry.posted']);
  });

  it('refuses what is not a draft (INVALID_STATE) and what is not there (ENTRY_NOT_FOUND)', async () => {
    const entry = await draft();
    await post(entry.id);
    expect(await codeOf(post(entry.id))).toBe('INVALID_STATE');
    await voidIt(entry.id);
    expect(await codeOf(post(entry.id))).toBe('INVALID_STATE');
    expect(await codeOf(post('0190a0a0-0000-7000-8000-000000000000'))).toBe('ENTRY_NOT_FOUND');
    expect(await codeOf(post('not-a-uuid'))).toBe('ENTRY_NOT_FOUND');
  });

  it("treats another organization's entry as missing", async () => {
    const other = await createLedgerFixture(db);
    const theirs = await draft({}, other);
    expect(await codeOf(post(theirs.id))).toBe('ENTRY_NOT_FOUND');
    expect(await codeOf(getEntry(db, f.orgId, theirs.id))).toBe('ENTRY_NOT_FOUND');
    expect(await codeOf(voidIt(theirs.id))).toBe('ENTRY_NOT_FOUND');
    expect((await getEntry(db, other.orgId, theirs.id)).status).toBe('draft');
  });

  it('refuses an unbalanced draft (UNBALANCED_ENTRY) and leaves it a draft', async () => {
    const entry = await draft({
      lines: [
        { accountId: f.account('6400'), debitCents: 100 },
        { accountId: f.account('1000'), creditCents: 97 },
      ],
    });
    const err = await post(entry.id).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'UNBALANCED_ENTRY', details: [{ differenceCents: 3 }] });
    expect((await getEntry(db, f.orgId, entry.id)).status).toBe('draft');
  });

  it('refuses a draft whose account was archived since (INVALID_ACCOUNT)', async () => {
    const g = await createLedgerFixture(db);
    const entry = await draft({}, g);
    await db
      .update(accounts)
      .set({ archived: true })
      .where(and(eq(accounts.organizationId, g.orgId), eq(accounts.id, g.account('6400'))));
    expect(await codeOf(post(entry.id, g))).toBe('INVALID_ACCOUNT');
  });

  it('refuses a draft dated in a closed period (PERIOD_CLOSED)', async () => {
    const g = await createLedgerFixture(db);
    const entry = await draft({ date: '2026-01-15' }, g);
    await db.update(organizations).set({ booksClosedThrough: '2026-01-31' }).where(eq(organizations.id, g.orgId));
    expect(await codeOf(post(entry.id, g))).toBe('PERIOD_CLOSED');
  });
});

describe('voiding', () => {
  it('keeps the entry and its lines visible and takes its amounts out of the balances', async () => {
    const g = await createLedgerFixture(db);
    const entry = await draft({}, g);
    await post(entry.id, g);
    const now = new Date('2026-05-01T09:00:00.000Z');
    const voided = await db.transaction((tx) =>
      voidEntry(tx, { ...g.ctx, now }, g.orgId, entry.id, '  Entered twice  '),
    );
    expect(voided).toMatchObject({ status: 'void', voidReason: 'Entered twice', voidedAt: now, totalCents: 200_000 });
    expect(voided.lines).toHaveLength(2);
    expect(await cashBalance(g)).toBeUndefined();
    const [audit] = await db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.resourceId, entry.id), eq(auditEvents.action, 'entry.voided')));
    expect(audit?.data).toMatchObject({ reason: 'Entered twice', totalCents: 200_000 });
  });

  it('refuses a draft or an already void entry (INVALID_STATE) and an empty reason (VALIDATION_ERROR)', async () => {
    const entry = await draft();
    expect(await codeOf(voidIt(entry.id))).toBe('INVALID_STATE');
    await post(entry.id);
    expect(await codeOf(voidIt(entry.id, '   '))).toBe('VALIDATION_ERROR');
    await voidIt(entry.id);
    expect(await codeOf(voidIt(entry.id))).toBe('INVALID_STATE');
  });

  it('refuses an entry dated in a closed period (PERIOD_CLOSED)', async () => {
    const g = await createLedgerFixture(db);
    const entry = await draft({ date: '2026-01-15' }, g);
    await post(entry.id, g);
    await db.update(organizations).set({ booksClosedThrough: '2026-01-31' }).where(eq(organizations.id, g.orgId));
    expect(await codeOf(voidIt(entry.id, 'too late', g))).toBe('PERIOD_CLOSED');
  });
});

describe('listing', () => {
  let g: LedgerFixture;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    g = await createLedgerFixture(db);
    const transfer = (date: string, cents: number) =>
      db.transaction((tx) =>
        postTransaction(tx, g.ctx, g.orgId, {
          kind: 'transfer',
          date,
          fromAccountId: g.account('1000'),
          toAccountId: g.account('1010'),
          amountCents: cents,
        }),
      );
    ids.jan = (await transfer('2026-01-10', 100)).journalEntryId;
    ids.feb = (await transfer('2026-02-10', 200)).journalEntryId;
    ids.mar = (await transfer('2026-03-10', 300)).journalEntryId;
    ids.rent = (await draft({ date: '2026-02-01' }, g)).id;
    await voidIt(ids.feb, 'wrong', g);
  });

  it('lists entries in date order with their lines, filtered by status, dates and account', async () => {
    const all = await listEntries(db, g.orgId, { limit: 100 });
    expect(all.data.map((e) => e.id)).toEqual([ids.jan, ids.rent, ids.feb, ids.mar]);
    expect(all.data[0]?.lines).toHaveLength(2);
    expect(all.nextCursor).toBeNull();

    expect((await listEntries(db, g.orgId, { limit: 100, status: 'posted' })).data.map((e) => e.id)).toEqual([
      ids.jan,
      ids.mar,
    ]);
    expect(
      (await listEntries(db, g.orgId, { limit: 100, startDate: '2026-02-01', endDate: '2026-02-28' })).data.map(
        (e) => e.id,
      ),
    ).toEqual([ids.rent, ids.feb]);
    expect(
      (await listEntries(db, g.orgId, { limit: 100, accountId: g.account('6400') })).data.map((e) => e.id),
    ).toEqual([ids.rent]);
  });

  it('pages with an opaque cursor', async () => {
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await listEntries(db, g.orgId, { limit: 3, cursor });
      seen.push(...page.data.map((e) => e.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toEqual([ids.jan, ids.rent, ids.feb, ids.mar]);
    expect(await codeOf(listEntries(db, g.orgId, { limit: 3, cursor: 'garbage' }))).toBe('VALIDATION_ERROR');
  });

  it('lists the lines of posted entries only, with paging and filters', async () => {
    const lines = await listJournalLines(db, g.orgId, { limit: 100 });
    expect(lines.data.map((l) => [l.entryId, l.lineNo, l.date, l.debitCents, l.creditCents])).toEqual([
      [ids.jan, 1, '2026-01-10', 100, 0],
      [ids.jan, 2, '2026-01-10', 0, 100],
      [ids.mar, 1, '2026-03-10', 300, 0],
      [ids.mar, 2, '2026-03-10', 0, 300],
    ]);
    const first = await listJournalLines(db, g.orgId, { limit: 3, accountId: g.account('1000') });
    expect(first.data).toHaveLength(2);
    expect(first.nextCursor).toBeNull();
    const page1 = await listJournalLines(db, g.orgId, { limit: 3 });
    const page2 = await listJournalLines(db, g.orgId, { limit: 3, cursor: page1.nextCursor ?? undefined });
    expect([...page1.data, ...page2.data]).toEqual(lines.data);
    expect(
      (await listJournalLines(db, g.orgId, { limit: 100, startDate: '2026-03-01' })).data.every(
        (l) => l.entryId === ids.mar,
      ),
    ).toBe(true);
  });

  it("never shows another organization's entries", async () => {
    const page = await listEntries(db, f.orgId, { limit: 1000 });
    expect(page.data.some((e) => Object.values(ids).includes(e.id))).toBe(false);
    const lines = await listJournalLines(db, f.orgId, { limit: 1000 });
    expect(lines.data.some((l) => Object.values(ids).includes(l.entryId))).toBe(false);
  });
});
