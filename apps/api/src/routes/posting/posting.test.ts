import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  accounts,
  idempotencyKeys,
  journalEntries,
  journalLines,
  outboxEvents,
  purgeExpiredIdempotencyKeys,
} from '@firm/db';
import { and, count, desc, eq, sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const acct = (c: string) => t.account(c);

const post = (url: string, payload: unknown, key: string | null = randomUUID(), headers = t.orgHeaders) =>
  t.app.inject({
    method: 'POST',
    url,
    headers: { ...headers, ...(key === null ? {} : { 'idempotency-key': key }) },
    payload: payload as object,
  });

/** Everything a posting writes, counted: entries, lines and idempotency records of the organization. */
async function written() {
  const db = t.database.db;
  const [entries] = await db
    .select({ n: count() })
    .from(journalEntries)
    .where(eq(journalEntries.organizationId, t.orgId));
  const [lines] = await db.select({ n: count() }).from(journalLines).where(eq(journalLines.organizationId, t.orgId));
  const [keys] = await db
    .select({ n: count() })
    .from(idempotencyKeys)
    .where(eq(idempotencyKeys.organizationId, t.orgId));
  return { entries: entries?.n, lines: lines?.n, keys: keys?.n };
}

const journalEntry = (
  lines: { accountId: string; postingType: string; amount: unknown }[],
  txnDate = '2026-05-04',
) => ({
  txnDate,
  memo: 'test',
  lines,
});
const balanced = (amount = 1250) =>
  journalEntry([
    { accountId: acct('6300'), postingType: 'debit', amount },
    { accountId: acct('1000'), postingType: 'credit', amount },
  ]);

async function entryOf(id: string) {
  const res = await t.app.inject({ method: 'GET', url: `/api/v1/entries/${id}`, headers: t.orgHeaders });
  expect(res.statusCode).toBe(200);
  return res.json().data;
}

/** A new expense account of the organization; its id. */
async function newAccount(code: string, name: string): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/accounts',
    headers: t.orgHeaders,
    payload: { code, name, type: 'expense' },
  });
  expect(res.statusCode).toBe(201);
  return res.json().data.id;
}

async function archiveAccount(id: string): Promise<void> {
  const res = await t.app.inject({
    method: 'PATCH',
    url: `/api/v1/accounts/${id}`,
    headers: t.orgHeaders,
    payload: { archived: true },
  });
  expect(res.statusCode).toBe(200);
}

describe('posting routes, organization-header form', () => {
  it('posts a purchase: source credited with the total, each line debited; receipt with postedAt', async () => {
    const res = await post('/api/v1/purchases', {
      txnDate: '2026-05-01',
      payeeName: 'Staples',
      sourceAccountId: acct('1000'),
      memo: 'Paper and toner',
      lines: [
        { accountId: acct('6300'), description: 'Paper', amount: 1250 },
        { accountId: acct('6500'), description: 'Toner', amount: 4000 },
      ],
    });
    expect(res.statusCode).toBe(201);
    const receipt = res.json();
    expect(receipt).toEqual({ journalEntryId: expect.any(String), status: 'posted', postedAt: expect.any(String) });
    const entry = await entryOf(receipt.journalEntryId);
    expect(entry).toMatchObject({ status: 'posted', source: 'purchase', payeeName: 'Staples', totalCents: 5250 });
    expect(
      entry.lines.map((l: { accountId: string; debitCents: number; creditCents: number }) => [
        l.accountId,
        l.debitCents,
        l.creditCents,
      ]),
    ).toEqual([
      [acct('6300'), 1250, 0],
      [acct('6500'), 4000, 0],
      [acct('1000'), 0, 5250],
    ]);
  });

  it('posts a deposit, a transfer and a journal entry', async () => {
    const deposit = await post('/api/v1/deposits', {
      txnDate: '2026-05-02',
      payerName: 'Acme',
      destinationAccountId: acct('1000'),
      lines: [{ accountId: acct('4000'), amount: 90000 }],
    });
    expect(deposit.statusCode).toBe(201);
    const depositEntry = await entryOf(deposit.json().journalEntryId);
    expect(depositEntry.lines[0]).toMatchObject({ accountId: acct('1000'), debitCents: 90000 });
    expect(depositEntry.lines[1]).toMatchObject({ accountId: acct('4000'), creditCents: 90000 });

    const transfer = await post('/api/v1/transfers', {
      txnDate: '2026-05-03',
      fromAccountId: acct('1000'),
      toAccountId: acct('1010'),
      amount: 20000,
    });
    expect(transfer.statusCode).toBe(201);
    expect((await entryOf(transfer.json().journalEntryId)).source).toBe('transfer');

    const je = await post('/api/v1/journal-entries', balanced(777));
    expect(je.statusCode).toBe(201);
    expect((await entryOf(je.json().journalEntryId)).totalCents).toBe(777);
  });
});

describe('posting lines', () => {
  it('keeps many lines in their order, with their descriptions exactly as sent', async () => {
    const descriptions = [undefined, '', 'NULL', 'a,b {c} "d" \\e', 'Ünïcödé — 日本'];
    const lines = descriptions.map((description, i) => ({
      accountId: acct(i % 2 === 0 ? '6300' : '6500'),
      postingType: 'debit',
      amount: 100 * (i + 1),
      ...(description === undefined ? {} : { description }),
    }));
    const res = await post(
      '/api/v1/journal-entries',
      journalEntry([...lines, { accountId: acct('1000'), postingType: 'credit', amount: 1500 }]),
    );
    expect(res.statusCode, res.body).toBe(201);
    const entry = await entryOf(res.json().journalEntryId);
    expect(
      entry.lines.map((l: { lineNo: number; description: string | null; debitCents: number; creditCents: number }) => [
        l.lineNo,
        l.description,
        l.debitCents,
        l.creditCents,
      ]),
    ).toEqual([
      [1, null, 100, 0],
      [2, '', 200, 0],
      [3, 'NULL', 300, 0],
      [4, 'a,b {c} "d" \\e', 400, 0],
      [5, 'Ünïcödé — 日本', 500, 0],
      [6, null, 0, 1500],
    ]);
  });

  it('takes account ids in either case, and stores and publishes them in lower case', async () => {
    const res = await post(
      '/api/v1/journal-entries',
      journalEntry([
        { accountId: acct('6300').toUpperCase(), postingType: 'debit', amount: 77 },
        { accountId: acct('1000'), postingType: 'credit', amount: 77 },
      ]),
    );
    expect(res.statusCode, res.body).toBe(201);
    const id = res.json().journalEntryId;
    const entry = await entryOf(id);
    expect(entry.lines.map((l: { accountId: string }) => l.accountId)).toEqual([acct('6300'), acct('1000')]);
    const [event] = await t.database.db
      .select({ payload: outboxEvents.payload })
      .from(outboxEvents)
      .where(and(eq(outboxEvents.type, 'entry.posted'), eq(outboxEvents.organizationId, t.orgId)))
      .orderBy(desc(outboxEvents.createdAt))
      .limit(1);
    expect(event?.payload).toMatchObject({ id, lines: [{ accountId: acct('6300') }, { accountId: acct('1000') }] });
  });
});

describe('posting routes, company-path form', () => {
  const base = () => `/api/v1/companies/${t.orgId}`;
  const auth = () => t.auth;

  it('posts each kind and answers with createdAt', async () => {
    const cases: [string, object][] = [
      [
        'purchases',
        {
          date: '2026-05-05',
          sourceAccountId: acct('2100'),
          amountCents: 3000,
          categoryAccountId: acct('6200'),
          description: 'Lunch',
          reference: 'R-1',
        },
      ],
      [
        'deposits',
        { date: '2026-05-05', destinationAccountId: acct('1000'), amountCents: 5000, categoryAccountId: acct('4100') },
      ],
      ['transfers', { date: '2026-05-05', fromAccountId: acct('1000'), toAccountId: acct('2100'), amountCents: 3000 }],
      [
        'journal-entries',
        {
          date: '2026-05-05',
          memo: 'accrual',
          lines: [
            { accountId: acct('6400'), debitCents: 100000 },
            { accountId: acct('2000'), creditCents: 100000 },
          ],
        },
      ],
    ];
    for (const [route, body] of cases) {
      const res = await post(`${base()}/${route}`, body, randomUUID(), auth() as never);
      expect(res.statusCode, route).toBe(201);
      expect(res.json()).toEqual({
        journalEntryId: expect.any(String),
        status: 'posted',
        createdAt: expect.any(String),
      });
    }
  });

  it('refuses a company of another firm with 404 and writes nothing', async () => {
    const other = await createOtherFirm(t.database.db, 'posting-other');
    const before = await written();
    const res = await post(
      `/api/v1/companies/${other.orgId}/deposits`,
      { date: '2026-05-05', destinationAccountId: acct('1000'), amountCents: 5000, categoryAccountId: acct('4100') },
      randomUUID(),
      t.auth as never,
    );
    expect(res.statusCode).toBe(404);
    expect(await written()).toEqual(before);
  });
});

describe('bad input: each refused with its code, and nothing written', () => {
  const refused = async (
    url: string,
    body: unknown,
    status: number,
    errorCode: string,
    key: string | null = randomUUID(),
  ) => {
    const before = await written();
    const res = await post(url, body, key);
    expect(res.statusCode, JSON.stringify(res.json())).toBe(status);
    expect(res.json().error.code).toBe(errorCode);
    expect(await written()).toEqual(before);
    return res.json().error;
  };

  it('unbalanced lines: 422 UNBALANCED_ENTRY naming the difference', async () => {
    const error = await refused(
      '/api/v1/journal-entries',
      journalEntry([
        { accountId: acct('6300'), postingType: 'debit', amount: 1000 },
        { accountId: acct('1000'), postingType: 'credit', amount: 900 },
      ]),
      422,
      'UNBALANCED_ENTRY',
    );
    expect(JSON.stringify(error)).toContain('100');
  });

  it('one line, a zero, negative, fractional, string or too large amount: 400', async () => {
    await refused(
      '/api/v1/journal-entries',
      journalEntry([{ accountId: acct('6300'), postingType: 'debit', amount: 10 }]),
      400,
      'VALIDATION_ERROR',
    );
    for (const amount of [0, -5, 12.5, '100', 2 ** 53]) {
      await refused(
        '/api/v1/journal-entries',
        journalEntry([
          { accountId: acct('6300'), postingType: 'debit', amount },
          { accountId: acct('1000'), postingType: 'credit', amount },
        ]),
        400,
        'VALIDATION_ERROR',
      );
    }
    await refused(
      '/api/v1/purchases',
      { txnDate: '2026-05-01', sourceAccountId: acct('1000'), lines: [] },
      400,
      'VALIDATION_ERROR',
    );
  });

  it('amounts whose total cannot be represented exactly: 400, nothing written', async () => {
    const max = Number.MAX_SAFE_INTEGER;
    await refused(
      '/api/v1/purchases',
      {
        txnDate: '2026-05-01',
        sourceAccountId: acct('1000'),
        lines: [
          { accountId: acct('6300'), amount: max },
          { accountId: acct('6400'), amount: max - 2 },
        ],
      },
      400,
      'VALIDATION_ERROR',
    );
  });

  it('an account of another organization or firm, or archived: 422 INVALID_ACCOUNT with one message', async () => {
    const other = await createOtherFirm(t.database.db, 'posting-accounts');
    const otherOrgOfSameFirm = t.demo.organizations[1]?.id as string;
    const [sibling] = await t.database.db
      .select()
      .from(accounts)
      .where(and(eq(accounts.organizationId, otherOrgOfSameFirm), eq(accounts.code, '6300')));
    const archivedId = await newAccount('6999', 'Old');
    await archiveAccount(archivedId);
    const messages = new Set<string>();
    for (const accountId of [other.accounts[0]?.id, sibling?.id, archivedId, randomUUID()]) {
      const error = await refused(
        '/api/v1/journal-entries',
        journalEntry([
          { accountId: accountId as string, postingType: 'debit', amount: 100 },
          { accountId: acct('1000'), postingType: 'credit', amount: 100 },
        ]),
        422,
        'INVALID_ACCOUNT',
      );
      // The same words whether the account is missing, archived or another tenant's.
      messages.add(error.message.replace(accountId as string, '<id>'));
    }
    expect(messages.size).toBe(1);
  });

  it('an impossible date: 400', async () => {
    await refused('/api/v1/journal-entries', { ...balanced(), txnDate: '2026-02-30' }, 400, 'VALIDATION_ERROR');
    await refused(`/api/v1/journal-entries`, { ...balanced(), txnDate: '05/04/2026' }, 400, 'VALIDATION_ERROR');
    // The books take dates from 1900-01-01 to 9999-12-31.
    await refused('/api/v1/journal-entries', { ...balanced(), txnDate: '1899-12-31' }, 400, 'VALIDATION_ERROR');
    await refused('/api/v1/journal-entries', { ...balanced(), txnDate: '0099-12-31' }, 400, 'VALIDATION_ERROR');
    expect((await post('/api/v1/journal-entries', { ...balanced(), txnDate: '1900-01-01' })).statusCode).toBe(201);
  });

  it('a day whose total would pass what bigint holds: 422 AMOUNT_OUT_OF_RANGE', async () => {
    const accountId = await newAccount('6997', 'Enormous');
    // A day already holding nearly 2^63 cents: no posting path reaches this in a test's time (it takes over a
    // thousand postings of 2^53-1 cents), so the rollup row is written directly and removed after.
    await t.database.db.execute(sql`
      insert into account_daily_balances (organization_id, account_id, day, amount_cents)
      values (${t.orgId}, ${accountId}, '2031-01-01', 9223372036854775000)`);
    try {
      await refused(
        '/api/v1/journal-entries',
        journalEntry(
          [
            { accountId, postingType: 'debit', amount: Number.MAX_SAFE_INTEGER },
            { accountId: acct('1000'), postingType: 'credit', amount: Number.MAX_SAFE_INTEGER },
          ],
          '2031-01-01',
        ),
        422,
        'AMOUNT_OUT_OF_RANGE',
      );
    } finally {
      await t.database.db.execute(sql`delete from account_daily_balances where account_id = ${accountId}`);
    }
  });

  it('a transfer to the same account or to an income or expense account: 422 INVALID_TRANSFER', async () => {
    const transfer = (to: string) => ({
      txnDate: '2026-05-03',
      fromAccountId: acct('1000'),
      toAccountId: to,
      amount: 10,
    });
    await refused('/api/v1/transfers', transfer(acct('1000')), 422, 'INVALID_TRANSFER');
    await refused('/api/v1/transfers', transfer(acct('1000').toUpperCase()), 422, 'INVALID_TRANSFER');
    await refused('/api/v1/transfers', transfer(acct('4000').toUpperCase()), 422, 'INVALID_TRANSFER');
    await refused('/api/v1/transfers', transfer(acct('4000')), 422, 'INVALID_TRANSFER');
    await refused('/api/v1/transfers', transfer(acct('6300')), 422, 'INVALID_TRANSFER');
  });

  it('a missing or over-long Idempotency-Key: 400', async () => {
    await refused('/api/v1/journal-entries', balanced(), 400, 'IDEMPOTENCY_KEY_REQUIRED', null);
    await refused('/api/v1/journal-entries', balanced(), 400, 'VALIDATION_ERROR', 'k'.repeat(256));
    await refused('/api/v1/journal-entries', balanced(), 400, 'VALIDATION_ERROR', 'has spaces in it');
  });

  it('unknown fields, a missing body and a non-JSON body: 400 or 415', async () => {
    await refused('/api/v1/journal-entries', { ...balanced(), extra: 1 }, 400, 'VALIDATION_ERROR');
    const before = await written();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/journal-entries',
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID(), 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(res.statusCode).toBe(415);
    expect(await written()).toEqual(before);
  });

  it('without the entries:write scope: 403 INSUFFICIENT_SCOPE', async () => {
    const { createApiKey } = await import('@firm/identity');
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['entries:read'] });
    const before = await written();
    const res = await post('/api/v1/journal-entries', balanced(), randomUUID(), {
      authorization: `Bearer ${key}`,
      'x-organization-id': t.orgId,
    });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toMatchObject({ code: 'INSUFFICIENT_SCOPE' });
    expect(await written()).toEqual(before);
  });
});

describe('idempotency', () => {
  it('replays the stored receipt for the same key and body, with Idempotent-Replayed', async () => {
    const key = randomUUID();
    const first = await post('/api/v1/journal-entries', balanced(4242), key);
    expect(first.statusCode).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const before = await written();
    // The same body with its keys in another order is the same request.
    const body = balanced(4242);
    const second = await post(
      '/api/v1/journal-entries',
      { lines: body.lines, memo: body.memo, txnDate: body.txnDate },
      key,
    );
    expect(second.statusCode).toBe(201);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.json()).toEqual(first.json());
    expect(await written()).toEqual(before);
  });

  it('refuses the same key with another body: 422 IDEMPOTENCY_KEY_REUSED', async () => {
    const key = randomUUID();
    expect((await post('/api/v1/journal-entries', balanced(1), key)).statusCode).toBe(201);
    const before = await written();
    const res = await post('/api/v1/journal-entries', balanced(2), key);
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', retryable: false });
    expect(await written()).toEqual(before);
  });

  it('refuses the same key with a body that is itself wrong as IDEMPOTENCY_KEY_REUSED', async () => {
    const key = randomUUID();
    expect((await post('/api/v1/journal-entries', balanced(3), key)).statusCode).toBe(201);
    const before = await written();
    const unbalanced = journalEntry([
      { accountId: acct('6300'), postingType: 'debit', amount: 3 },
      { accountId: acct('1000'), postingType: 'credit', amount: 2 },
    ]);
    // Unbalanced is found before the key is read; the key still wins.
    const res = await post('/api/v1/journal-entries', unbalanced, key);
    expect(res.statusCode).toBe(422);
    expect(res.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await written()).toEqual(before);
  });

  it('replays a receipt after an account it names is archived', async () => {
    const accountId = await newAccount('6998', 'Short-lived');
    const body = journalEntry([
      { accountId, postingType: 'debit', amount: 64 },
      { accountId: acct('1000'), postingType: 'credit', amount: 64 },
    ]);
    const key = randomUUID();
    const first = await post('/api/v1/journal-entries', body, key);
    expect(first.statusCode).toBe(201);
    await archiveAccount(accountId);
    const before = await written();
    const again = await post('/api/v1/journal-entries', body, key);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());
    expect(await written()).toEqual(before);
    // A new key with the same body is a new posting, refused now.
    expect((await post('/api/v1/journal-entries', body)).json().error.code).toBe('INVALID_ACCOUNT');
  });

  it('refuses a key on another route: a key is one request, whatever its path', async () => {
    const key = randomUUID();
    expect((await post('/api/v1/journal-entries', balanced(5), key)).statusCode).toBe(201);
    const before = await written();
    const other = await post(
      '/api/v1/transfers',
      { txnDate: '2026-05-03', fromAccountId: acct('1000'), toAccountId: acct('1010'), amount: 5 },
      key,
    );
    expect(other.statusCode).toBe(422);
    expect(other.json().error).toMatchObject({
      code: 'IDEMPOTENCY_KEY_REUSED',
      message: expect.stringContaining('POST /api/v1/journal-entries'),
    });
    expect(await written()).toEqual(before);
  });

  it('does not store a refused request: the same key works once the body is fixed', async () => {
    const key = randomUUID();
    const bad = await post('/api/v1/journal-entries', { ...balanced(), txnDate: '2026-02-30' }, key);
    expect(bad.statusCode).toBe(400);
    const good = await post('/api/v1/journal-entries', balanced(), key);
    expect(good.statusCode).toBe(201);
  });

  it('twenty concurrent requests with one key post exactly one entry', async () => {
    const key = randomUUID();
    const before = await written();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => post('/api/v1/journal-entries', balanced(2020), key)),
    );
    const statuses = responses.map((r) => r.statusCode);
    expect(statuses.every((s) => s === 201 || s === 409)).toBe(true);
    for (const r of responses.filter((r) => r.statusCode === 409)) {
      expect(r.json().error).toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', retryable: true });
    }
    const ids = new Set(responses.filter((r) => r.statusCode === 201).map((r) => r.json().journalEntryId));
    expect(ids.size).toBe(1);
    expect(responses.filter((r) => r.statusCode === 201 && !r.headers['idempotent-replayed'])).toHaveLength(1);
    const after = await written();
    expect(after.entries).toBe((before.entries ?? 0) + 1);
    expect(after.keys).toBe((before.keys ?? 0) + 1);
  });

  it('answers 409 IDEMPOTENCY_IN_PROGRESS while another request holds the key', async () => {
    if (!t.database.url) return; // needs a second connection to the same database
    const key = randomUUID();
    const lockName = `${t.demo.firmId}|${t.orgId}|api|${key}`;
    const client = new pg.Client({ connectionString: t.database.url });
    await client.connect();
    try {
      await client.query('begin');
      await client.query('select pg_advisory_xact_lock(hashtextextended($1, 0))', [lockName]);
      const res = await post('/api/v1/journal-entries', balanced(3), key);
      expect(res.statusCode).toBe(409);
      expect(res.json().error).toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', retryable: true });
      await client.query('rollback');
      const retry = await post('/api/v1/journal-entries', balanced(3), key);
      expect(retry.statusCode).toBe(201);
    } finally {
      await client.end();
    }
  });

  it('treats an expired record that is not purged yet as absent, and replaces it', async () => {
    const key = randomUUID();
    const first = await post('/api/v1/journal-entries', balanced(8), key);
    await t.database.db
      .update(idempotencyKeys)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(idempotencyKeys.key, key));
    const again = await post('/api/v1/journal-entries', balanced(8), key);
    expect(again.statusCode).toBe(201);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    expect(again.json().journalEntryId).not.toBe(first.json().journalEntryId);
    const replay = await post('/api/v1/journal-entries', balanced(8), key);
    expect(replay.json().journalEntryId).toBe(again.json().journalEntryId);
    expect(replay.headers['idempotent-replayed']).toBe('true');
  });

  it('forgets records after the retention window: expired ones are purged and no longer replayed', async () => {
    const key = randomUUID();
    const first = await post('/api/v1/journal-entries', balanced(9), key);
    expect(first.statusCode).toBe(201);
    await t.database.db
      .update(idempotencyKeys)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(idempotencyKeys.key, key));
    expect(await purgeExpiredIdempotencyKeys(t.database.db)).toBeGreaterThanOrEqual(1);
    const rows = await t.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, key));
    expect(rows).toHaveLength(0);
    const again = await post('/api/v1/journal-entries', balanced(9), key);
    expect(again.statusCode).toBe(201);
    expect(again.json().journalEntryId).not.toBe(first.json().journalEntryId);
  });
});

describe('failures mid-request leave the whole posting or nothing', () => {
  it('a client that disconnects mid-request: the posting and its record commit together, and a retry replays', async () => {
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = t.app.server.address() as AddressInfo;
    const key = randomUUID();
    const body = JSON.stringify(balanced(6161));
    const before = await written();
    await new Promise<void>((resolve) => {
      const req = httpRequest({
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/api/v1/journal-entries',
        headers: {
          ...t.orgHeaders,
          'idempotency-key': key,
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
      });
      req.on('error', () => resolve());
      req.write(body, () => {
        req.destroy();
        resolve();
      });
    });
    // Whatever the server did with the abandoned request, it finishes it or not at all.
    await new Promise((r) => setTimeout(r, 300));
    const mid = await written();
    const posted = (mid.entries ?? 0) - (before.entries ?? 0);
    expect([0, 1]).toContain(posted);
    expect((mid.keys ?? 0) - (before.keys ?? 0)).toBe(posted);
    expect((mid.lines ?? 0) - (before.lines ?? 0)).toBe(posted * 2);
    const retry = await post('/api/v1/journal-entries', balanced(6161), key);
    expect(retry.statusCode).toBe(201);
    const after = await written();
    expect(after.entries).toBe((before.entries ?? 0) + 1);
  });

  it('a database connection killed mid-transaction: nothing is written, and the retry posts once', async () => {
    if (!t.database.url) return; // pg_terminate_backend needs a real server
    const date = '2026-07-07';
    const day = (amount: number) =>
      journalEntry(
        [
          { accountId: acct('6300'), postingType: 'debit', amount },
          { accountId: acct('1000'), postingType: 'credit', amount },
        ],
        date,
      );
    // A first posting creates the day's rollup rows; a second connection then holds one of them.
    expect((await post('/api/v1/journal-entries', day(1))).statusCode).toBe(201);
    const blocker = new pg.Client({ connectionString: t.database.url });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query(
        `select 1 from account_daily_balances where organization_id = $1 and account_id = $2 and day = $3 for update`,
        [t.orgId, acct('1000'), date],
      );
      const before = await written();
      const key = randomUUID();
      const pending = post('/api/v1/journal-entries', day(5555), key);
      // Wait for the posting to block on the rollup row, after it wrote the entry and its lines.
      let pid: number | undefined;
      for (let i = 0; i < 100 && pid === undefined; i++) {
        const { rows } = await blocker.query(
          `select pid from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
        );
        pid = rows[0]?.pid;
        if (pid === undefined) await new Promise((r) => setTimeout(r, 50));
      }
      expect(pid).toBeDefined();
      await blocker.query('select pg_terminate_backend($1)', [pid]);
      const res = await pending;
      expect(res.statusCode).toBe(503);
      expect(res.json().error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      await blocker.query('rollback');
      expect(await written()).toEqual(before);
      const retry = await post('/api/v1/journal-entries', day(5555), key);
      expect(retry.statusCode).toBe(201);
      expect((await written()).entries).toBe((before.entries ?? 0) + 1);
    } finally {
      await blocker.end();
    }
  });
});
