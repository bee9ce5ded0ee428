import { randomUUID } from 'node:crypto';
import { auditEvents, journalEntries, journalLines, outboxEvents } from '@firm/db';
import { count } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const acct = (c: string) => t.account(c);
const inject = (
  method: 'GET' | 'POST',
  url: string,
  payload?: object,
  headers: Record<string, string> = t.orgHeaders,
) => t.app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

const draft = (debit = 5000, credit = 5000, date = '2026-04-10') => ({
  date,
  memo: 'Rent for April',
  reference: 'APR-RENT',
  lines: [
    { accountId: acct('6400'), description: 'Rent', debitCents: debit },
    { accountId: acct('1000'), creditCents: credit },
  ],
});

async function counts() {
  const db = t.database.db;
  const one = async (table: typeof journalEntries | typeof journalLines | typeof auditEvents | typeof outboxEvents) =>
    (await db.select({ n: count() }).from(table))[0]?.n;
  return {
    entries: await one(journalEntries),
    lines: await one(journalLines),
    audit: await one(auditEvents),
    outbox: await one(outboxEvents),
  };
}

async function balanceOf(accountCode: string): Promise<number> {
  const res = await inject('GET', `/api/v1/accounts/${acct(accountCode)}`);
  return res.json().data.balanceCents;
}

describe('entries: draft -> posted -> void', () => {
  it('creates a draft that moves no balance, posts it, voids it with a reason', async () => {
    const rentBefore = await balanceOf('6400');
    const created = await inject('POST', '/api/v1/entries', draft());
    expect(created.statusCode).toBe(201);
    const entry = created.json().data;
    expect(entry).toMatchObject({
      status: 'draft',
      source: 'manual',
      date: '2026-04-10',
      memo: 'Rent for April',
      reference: 'APR-RENT',
      totalCents: 5000,
      postedAt: null,
      voidedAt: null,
    });
    expect(entry.lines).toHaveLength(2);
    expect(await balanceOf('6400')).toBe(rentBefore);

    const posted = await inject('POST', `/api/v1/entries/${entry.id}/post`);
    expect(posted.statusCode).toBe(200);
    expect(posted.json().data).toMatchObject({ status: 'posted', postedAt: expect.any(String) });
    expect(await balanceOf('6400')).toBe(rentBefore + 5000);

    const voided = await inject('POST', `/api/v1/entries/${entry.id}/void`, { reason: 'Duplicate of the bank feed' });
    expect(voided.statusCode).toBe(200);
    expect(voided.json().data).toMatchObject({
      status: 'void',
      voidedAt: expect.any(String),
      voidReason: 'Duplicate of the bank feed',
    });
    expect(await balanceOf('6400')).toBe(rentBefore);

    const read = await inject('GET', `/api/v1/entries/${entry.id}`);
    expect(read.json().data).toMatchObject({ status: 'void', voidReason: 'Duplicate of the bank feed' });
    expect(read.json().data.lines).toHaveLength(2);

    // Each step left an audit event naming the credential and the request.
    const audit = await inject('GET', `/api/v1/audit-events?organizationId=${t.orgId}`, undefined, t.auth);
    const mine = audit.json().data.filter((e: { resourceId: string }) => e.resourceId === entry.id);
    expect(mine.map((e: { action: string }) => e.action)).toEqual(['entry.voided', 'entry.posted', 'entry.created']);
    expect(mine[0]).toMatchObject({ actor: { kind: 'api_key', id: t.demo.apiKeyId }, requestId: expect.any(String) });
  });

  it('refuses to post an unbalanced draft: 422 UNBALANCED_ENTRY, and the draft stays a draft', async () => {
    const entry = (await inject('POST', '/api/v1/entries', draft(5000, 4000))).json().data;
    const before = await counts();
    const res = await inject('POST', `/api/v1/entries/${entry.id}/post`);
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('UNBALANCED_ENTRY');
    expect(JSON.stringify(res.json().error)).toContain('1000');
    expect(await counts()).toEqual(before);
    expect((await inject('GET', `/api/v1/entries/${entry.id}`)).json().data.status).toBe('draft');
  });

  it('posting a non-draft or voiding a non-posted entry: 409 INVALID_STATE, nothing written', async () => {
    const entry = (await inject('POST', '/api/v1/entries', draft())).json().data;
    let before = await counts();
    const voidDraft = await inject('POST', `/api/v1/entries/${entry.id}/void`, { reason: 'x' });
    expect(voidDraft.statusCode).toBe(409);
    expect(voidDraft.json().error.code).toBe('INVALID_STATE');
    expect(await counts()).toEqual(before);

    expect((await inject('POST', `/api/v1/entries/${entry.id}/post`)).statusCode).toBe(200);
    before = await counts();
    const postAgain = await inject('POST', `/api/v1/entries/${entry.id}/post`);
    expect(postAgain.statusCode).toBe(409);
    expect(postAgain.json().error.code).toBe('INVALID_STATE');

    expect((await inject('POST', `/api/v1/entries/${entry.id}/void`, { reason: 'wrong' })).statusCode).toBe(200);
    before = await counts();
    const voidAgain = await inject('POST', `/api/v1/entries/${entry.id}/void`, { reason: 'again' });
    expect(voidAgain.statusCode).toBe(409);
    const postVoid = await inject('POST', `/api/v1/entries/${entry.id}/post`);
    expect(postVoid.statusCode).toBe(409);
    expect(await counts()).toEqual(before);
  });

  it('bad drafts: one line, both sides on a line, an impossible date, a foreign account', async () => {
    const other = await createOtherFirm(t.database.db, 'entries-other');
    const before = await counts();
    const bad: [object, number, string][] = [
      [{ ...draft(), lines: [{ accountId: acct('6400'), debitCents: 1 }] }, 400, 'VALIDATION_ERROR'],
      [
        {
          ...draft(),
          lines: [
            { accountId: acct('6400'), debitCents: 1, creditCents: 1 },
            { accountId: acct('1000'), creditCents: 1 },
          ],
        },
        400,
        'VALIDATION_ERROR',
      ],
      [
        { ...draft(), lines: [{ accountId: acct('6400') }, { accountId: acct('1000'), creditCents: 1 }] },
        400,
        'VALIDATION_ERROR',
      ],
      [{ ...draft(), date: '2026-02-30' }, 400, 'VALIDATION_ERROR'],
      [
        {
          ...draft(),
          lines: [
            { accountId: other.accounts[0]?.id, debitCents: 5 },
            { accountId: acct('1000'), creditCents: 5 },
          ],
        },
        422,
        'INVALID_ACCOUNT',
      ],
    ];
    for (const [body, status, errorCode] of bad) {
      const res = await inject('POST', '/api/v1/entries', body);
      expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
      expect(res.json().error.code).toBe(errorCode);
    }
    const noReason = await inject('POST', `/api/v1/entries/${randomUUID()}/void`, {});
    expect(noReason.statusCode).toBe(400);
    expect(await counts()).toEqual(before);
  });

  it('another organization’s entry is 404, as is an unknown id', async () => {
    const other = await createOtherFirm(t.database.db, 'entries-404');
    const theirs = await t.app.inject({
      method: 'POST',
      url: '/api/v1/entries',
      headers: { authorization: other.authorization, 'x-organization-id': other.orgId },
      payload: {
        date: '2026-04-01',
        lines: [
          { accountId: other.accounts[0]?.id, debitCents: 10 },
          { accountId: other.accounts[1]?.id, creditCents: 10 },
        ],
      },
    });
    expect(theirs.statusCode).toBe(201);
    const id = theirs.json().data.id;
    for (const url of [`/api/v1/entries/${id}`, `/api/v1/entries/${randomUUID()}`, '/api/v1/entries/not-a-uuid']) {
      const res = await inject('GET', url);
      expect([400, 404]).toContain(res.statusCode);
    }
    expect((await inject('GET', `/api/v1/entries/${id}`)).json().error.code).toBe('ENTRY_NOT_FOUND');
    expect((await inject('POST', `/api/v1/entries/${id}/post`)).statusCode).toBe(404);
  });
});

describe('lists', () => {
  it('filters entries by status, date range and account, with cursor pagination', async () => {
    const ids: string[] = [];
    for (const day of ['2025-01-05', '2025-01-06', '2025-01-07']) {
      const res = await inject('POST', '/api/v1/entries', draft(100, 100, day));
      ids.push(res.json().data.id);
    }
    await inject('POST', `/api/v1/entries/${ids[1]}/post`);
    const range = 'startDate=2025-01-01&endDate=2025-01-31';
    const drafts = await inject('GET', `/api/v1/entries?${range}&status=draft`);
    expect(drafts.json().data.map((e: { id: string }) => e.id)).toEqual([ids[0], ids[2]]);

    const byAccount = await inject('GET', `/api/v1/entries?${range}&accountId=${acct('6400')}`);
    expect(byAccount.json().data).toHaveLength(3);
    const otherAccount = await inject('GET', `/api/v1/entries?${range}&accountId=${acct('6600')}`);
    expect(otherAccount.json().data).toHaveLength(0);

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { data: { id: string }[]; nextCursor: string | null } = (
        await inject('GET', `/api/v1/entries?${range}&limit=2${cursor ? `&cursor=${cursor}` : ''}`)
      ).json();
      seen.push(...page.data.map((e) => e.id));
      cursor = page.nextCursor;
    } while (cursor);
    expect(seen).toEqual(ids);

    const company = await inject('GET', `/api/v1/companies/${t.orgId}/journal-entries?${range}`, undefined, t.auth);
    expect(company.statusCode).toBe(200);
    expect(company.json().data.map((e: { id: string }) => e.id)).toEqual(ids);

    const bad = await inject('GET', '/api/v1/entries?cursor=garbage');
    expect(bad.statusCode).toBe(400);
    expect((await inject('GET', '/api/v1/entries?status=pending')).statusCode).toBe(400);
  });

  it('lists journal lines of posted entries only, filtered by account and dates', async () => {
    const entry = (await inject('POST', '/api/v1/entries', draft(321, 321, '2024-03-03'))).json().data;
    const url = `/api/v1/companies/${t.orgId}/journal-lines?startDate=2024-03-01&endDate=2024-03-31`;
    expect((await inject('GET', url, undefined, t.auth)).json().data).toHaveLength(0);
    await inject('POST', `/api/v1/entries/${entry.id}/post`);
    const lines = (await inject('GET', url, undefined, t.auth)).json().data;
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ entryId: entry.id, date: '2024-03-03', debitCents: 321, creditCents: 0 });
    const one = await inject('GET', `${url}&accountId=${acct('1000')}`, undefined, t.auth);
    expect(one.json().data).toEqual([expect.objectContaining({ accountId: acct('1000'), creditCents: 321 })]);
  });
});
