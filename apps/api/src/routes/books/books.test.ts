import { randomUUID } from 'node:crypto';
import { journalEntries } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
const acct = (c: string) => t.account(c);

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const patchBooks = (payload: object, headers: Record<string, string> = t.orgHeaders) =>
  t.app.inject({ method: 'PATCH', url: '/api/v1/books', headers, payload });
const entry = (txnDate: string) => ({
  txnDate,
  lines: [
    { accountId: acct('6300'), postingType: 'debit', amount: 100 },
    { accountId: acct('1000'), postingType: 'credit', amount: 100 },
  ],
});
const postEntry = (txnDate: string) =>
  t.app.inject({
    method: 'POST',
    url: '/api/v1/journal-entries',
    headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() },
    payload: entry(txnDate),
  });
const entryCount = async () =>
  (await t.database.db.select({ n: count() }).from(journalEntries).where(eq(journalEntries.organizationId, t.orgId)))[0]
    ?.n;

describe('closing the books', () => {
  it('refuses posting, voiding and backdating on or before the closed date; reopening lifts it', async () => {
    const early = (await postEntry('2026-01-15')).json().journalEntryId;
    const draft = await t.app.inject({
      method: 'POST',
      url: '/api/v1/entries',
      headers: t.orgHeaders,
      payload: {
        date: '2026-01-20',
        lines: [
          { accountId: acct('6300'), debitCents: 5 },
          { accountId: acct('1000'), creditCents: 5 },
        ],
      },
    });
    const draftId = draft.json().data.id;

    const closed = await patchBooks({ booksClosedThrough: '2026-01-31' });
    expect(closed.statusCode).toBe(200);
    expect(closed.json().data).toEqual({ booksClosedThrough: '2026-01-31', fiscalYearStartMonth: 1 });
    const read = await t.app.inject({ method: 'GET', url: `/api/v1/companies/${t.orgId}/books`, headers: t.auth });
    expect(read.json().data.booksClosedThrough).toBe('2026-01-31');

    const before = await entryCount();
    for (const date of ['2026-01-31', '2025-12-01']) {
      const res = await postEntry(date);
      expect(res.statusCode).toBe(422);
      expect(res.json().error.code).toBe('PERIOD_CLOSED');
    }
    const postDraft = await t.app.inject({
      method: 'POST',
      url: `/api/v1/entries/${draftId}/post`,
      headers: t.orgHeaders,
    });
    expect(postDraft.statusCode).toBe(422);
    expect(postDraft.json().error.code).toBe('PERIOD_CLOSED');
    const voidEarly = await t.app.inject({
      method: 'POST',
      url: `/api/v1/entries/${early}/void`,
      headers: t.orgHeaders,
      payload: { reason: 'late fix' },
    });
    expect(voidEarly.statusCode).toBe(422);
    expect(voidEarly.json().error.code).toBe('PERIOD_CLOSED');
    expect(await entryCount()).toBe(before);
    expect((await postEntry('2026-02-01')).statusCode).toBe(201);

    const reopened = await patchBooks({ booksClosedThrough: null });
    expect(reopened.json().data.booksClosedThrough).toBeNull();
    expect((await postEntry('2026-01-31')).statusCode).toBe(201);

    const audit = await t.app.inject({
      method: 'GET',
      url: '/api/v1/audit-events?action=books.closed',
      headers: t.auth,
    });
    expect(audit.json().data[0]).toMatchObject({ action: 'books.closed', data: { booksClosedThrough: '2026-01-31' } });
  });

  it('needs the books:close scope, refuses bad bodies, and hides other firms’ companies', async () => {
    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['entries:read', 'entries:write'],
    });
    const noScope = await patchBooks(
      { booksClosedThrough: '2026-01-31' },
      { authorization: `Bearer ${key}`, 'x-organization-id': t.orgId },
    );
    expect(noScope.statusCode).toBe(403);
    expect(noScope.json().error).toMatchObject({ code: 'INSUFFICIENT_SCOPE' });

    for (const body of [{}, { booksClosedThrough: '2026-02-30' }, { fiscalYearStartMonth: 13 }, { other: 1 }]) {
      const res = await patchBooks(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
    }
    const other = await createOtherFirm(t.database.db, 'books-other');
    const foreign = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/companies/${other.orgId}/books`,
      headers: t.auth,
      payload: { booksClosedThrough: '2026-01-31' },
    });
    expect(foreign.statusCode).toBe(404);
    const theirs = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${other.orgId}/books`,
      headers: { authorization: other.authorization },
    });
    expect(theirs.json().data.booksClosedThrough).toBeNull();
  });
});
