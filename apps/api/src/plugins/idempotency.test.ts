import { createHash, randomUUID } from 'node:crypto';
import { createBankAccount, insertBankTransaction } from '@firm/banking';
import { contacts, documents, journalEntries, rowsOf } from '@firm/db';
import { count, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { operationsOf } from '../openapi-operations';
import { createTestApp, type TestApp } from '../testing';

let t: TestApp;
let base: string;
let bankAccountId: string;
beforeAll(async () => {
  t = await createTestApp();
  base = `/agent/v1/acct/clients/${t.orgId}`;
  bankAccountId = (
    await t.database.db.transaction((tx) =>
      createBankAccount(tx, { firmId: t.demo.firmId, actor: { kind: 'test', id: 'tester' } }, t.orgId, {
        accountId: t.account('1000'),
      }),
    )
  ).id;
});
afterAll(() => t.close());

const send = (
  method: 'POST' | 'PATCH' | 'DELETE',
  url: string,
  key: string,
  payload?: object,
  headers: Record<string, string> = t.auth,
) => t.app.inject({ method, url, headers: { ...headers, 'idempotency-key': key }, ...(payload ? { payload } : {}) });

/** Everything these writes could change in the demo organization. */
async function books() {
  const db = t.database.db;
  const n = async (table: typeof contacts | typeof documents | typeof journalEntries) =>
    (await db.select({ n: count() }).from(table).where(eq(table.organizationId, t.orgId)))[0]?.n;
  const [bank] = rowsOf<{ n: number; excluded: number }>(
    await db.execute(sql`select count(*)::int as n, count(*) filter (where status = 'excluded')::int as excluded
      from bank_transactions where organization_id = ${t.orgId}`),
  );
  return { contacts: await n(contacts), documents: await n(documents), entries: await n(journalEntries), bank };
}

const reused = (res: { statusCode: number; headers: Record<string, unknown>; body: string }) => {
  expect({ status: res.statusCode, replayed: res.headers['idempotent-replayed'] }, res.body).toEqual({
    status: 422,
    replayed: undefined,
  });
  expect(JSON.parse(res.body).error).toMatchObject({ code: 'IDEMPOTENCY_KEY_REUSED', retryable: false });
};

const purchase = (amount: number) => ({
  entityType: 'purchase',
  payload: {
    TxnDate: '2026-06-01',
    AccountRef: { value: t.account('1000') },
    Line: [
      {
        Amount: amount,
        DetailType: 'AccountBasedExpenseLineDetail',
        AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6300') } },
      },
    ],
  },
});

const journalEntry = (amount: number) => ({
  txnDate: '2026-06-02',
  memo: 'one key',
  lines: [
    { accountId: t.account('6300'), postingType: 'debit', amount },
    { accountId: t.account('1000'), postingType: 'credit', amount },
  ],
});

const row = (description: string) =>
  t.database.db.transaction((tx) =>
    insertBankTransaction(tx, { firmId: t.demo.firmId, actor: { kind: 'test', id: 'tester' } }, t.orgId, {
      bankAccountId,
      date: '2026-06-04',
      amountCents: -500,
      description,
      counterparty: null,
      sourceType: 'aggregator_bank_feed',
      externalId: randomUUID(),
    }),
  );

describe('an Idempotency-Key names one request: its method, its path and its body', () => {
  it('refuses the key of a Customer on the Vendor path instead of answering with the Customer', async () => {
    const key = randomUUID();
    const body = { DisplayName: 'Same Name Ltd' };
    const customer = await send('POST', `${base}/entities/Customer`, key, body);
    expect(customer.statusCode).toBe(201);
    const before = await books();
    const vendor = await send('POST', `${base}/entities/Vendor`, key, body);
    reused(vendor);
    expect(vendor.json().error.message).toContain(`POST ${base}/entities/Customer`);
    expect(await books()).toEqual(before);
    // Under a key of its own the vendor is created (contact names are unique in an organization, hence another).
    const created = await send('POST', `${base}/entities/Vendor`, randomUUID(), { DisplayName: 'Same Name Supplies' });
    expect(created.statusCode, created.body).toBe(201);
    expect(created.json().data.Id).not.toBe(customer.json().data.Id);
    // The same request again is still a replay, and another body on the first path still a refusal.
    const replay = await send('POST', `${base}/entities/Customer`, key, body);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(customer.json());
    reused(await send('POST', `${base}/entities/Customer`, key, { DisplayName: 'Another Name Ltd' }));
  });

  it('refuses one key on the update, then the delete, of another record', async () => {
    const created = async (name: string) =>
      (await send('POST', `${base}/entities/Customer`, randomUUID(), { DisplayName: name })).json().data.Id as string;
    const [a, b] = [await created('Update A'), await created('Update B')];
    const key = randomUUID();
    const change = { SyncToken: '0', PrimaryPhone: { FreeFormNumber: '555-0199' } };
    const first = await send('PATCH', `${base}/entities/Customer/${a}`, key, change);
    expect(first.statusCode).toBe(200);
    expect(first.json().data).toMatchObject({ Id: a, SyncToken: '1' });
    reused(await send('PATCH', `${base}/entities/Customer/${b}`, key, change));
    const other = await t.app.inject({ method: 'GET', url: `${base}/entities/Customer/${b}`, headers: t.auth });
    expect(other.json().data).toMatchObject({ Id: b, SyncToken: '0' });

    const posted = async (amount: number) =>
      (await send('POST', `${base}/transactions`, randomUUID(), purchase(amount))).json().data.transactionId as string;
    const [c, d] = [await posted(11), await posted(12)];
    const voidKey = randomUUID();
    const deletion = { entityType: 'purchase', syncToken: '0' };
    const voided = await send('DELETE', `${base}/transactions/${c}`, voidKey, deletion);
    expect(voided.statusCode, voided.body).toBe(200);
    expect(voided.json().data).toMatchObject({ transactionId: c, operation: 'delete' });
    const before = await books();
    reused(await send('DELETE', `${base}/transactions/${d}`, voidKey, deletion));
    expect(await books()).toEqual(before);
    const kept = await t.app.inject({
      method: 'GET',
      url: `${base}/transactions/${d}?entityType=purchase`,
      headers: t.auth,
    });
    expect(kept.statusCode).toBe(200);
    // The same delete again replays.
    const again = await send('DELETE', `${base}/transactions/${c}`, voidKey, deletion);
    expect(again.headers['idempotent-replayed']).toBe('true');
  });

  it('counts a write-changing query parameter as part of the request, and the dry-run switch not', async () => {
    const invoice = await send('POST', `${base}/transactions`, randomUUID(), {
      entityType: 'invoice',
      payload: {
        CustomerRef: {
          value: (await send('POST', `${base}/entities/Customer`, randomUUID(), { DisplayName: 'Q' })).json().data.Id,
        },
        TxnDate: '2026-06-03',
        Line: [
          {
            Amount: 10,
            DetailType: 'SalesItemLineDetail',
            SalesItemLineDetail: { ItemAccountRef: { value: t.account('4000') }, Qty: 1 },
          },
        ],
      },
    });
    const id = invoice.json().data.transactionId as string;
    const key = randomUUID();
    reused(
      await (async () => {
        const first = await send('DELETE', `${base}/entities/Invoice/${id}?SyncToken=0&dryRun=false`, key);
        expect(first.statusCode, first.body).toBe(200);
        const replay = await send('DELETE', `${base}/entities/Invoice/${id}?SyncToken=0`, key);
        expect(replay.headers['idempotent-replayed']).toBe('true');
        return send('DELETE', `${base}/entities/Invoice/${id}?SyncToken=1`, key);
      })(),
    );
  });

  it('refuses one key across the partner posting routes', async () => {
    const key = randomUUID();
    const header = await send('POST', '/api/v1/journal-entries', key, journalEntry(31), t.orgHeaders);
    expect(header.statusCode).toBe(201);
    const before = await books();
    reused(
      await send(
        'POST',
        '/api/v1/transfers',
        key,
        { txnDate: '2026-06-02', fromAccountId: t.account('1000'), toAccountId: t.account('1010'), amount: 31 },
        t.orgHeaders,
      ),
    );
    reused(
      await send(
        'POST',
        `/api/v1/companies/${t.orgId}/journal-entries`,
        key,
        {
          date: '2026-06-02',
          memo: 'one key',
          lines: [
            { accountId: t.account('6300'), debitCents: 31 },
            { accountId: t.account('1000'), creditCents: 31 },
          ],
        },
        t.auth,
      ),
    );
    expect(await books()).toEqual(before);
  });

  it('refuses one key on the same action of another bank transaction', async () => {
    const [a, b] = [await row('FEE A'), await row('FEE B')];
    const bankKey = randomUUID();
    const excluded = await send('POST', `/api/v1/bank-transactions/${a}/exclude`, bankKey, {}, t.orgHeaders);
    expect(excluded.statusCode, excluded.body).toBe(200);
    expect(excluded.json().data).toMatchObject({ id: a, status: 'excluded' });
    const unchanged = await books();
    reused(await send('POST', `/api/v1/bank-transactions/${b}/exclude`, bankKey, {}, t.orgHeaders));
    expect(await books()).toEqual(unchanged);
    const replay = await send('POST', `/api/v1/bank-transactions/${a}/exclude`, bankKey, {}, t.orgHeaders);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(excluded.json());
  });

  it('writes once when one key reaches two paths at once', async () => {
    const [a, b] = [await row('RACE A'), await row('RACE B')];
    const key = randomUUID();
    const before = await books();
    const results = await Promise.all(
      [a, b, a, b, a, b].map((id) => send('POST', `/api/v1/bank-transactions/${id}/exclude`, key, {}, t.orgHeaders)),
    );
    for (const r of results) expect([200, 409, 422], r.body).toContain(r.statusCode);
    const done = results.filter((r) => r.statusCode === 200);
    expect(done.length).toBeGreaterThan(0);
    expect(new Set(done.map((r) => r.json().data.id)).size).toBe(1);
    expect((await books()).bank?.excluded).toBe((before.bank?.excluded ?? 0) + 1);

    const entryKey = randomUUID();
    const entriesBefore = (await books()).entries;
    const posted = await Promise.all(
      [31, 32, 31, 32].map((amount, i) =>
        send(
          'POST',
          i % 2 === 0 ? '/api/v1/journal-entries' : '/api/v1/transfers',
          entryKey,
          i % 2 === 0
            ? journalEntry(amount)
            : { txnDate: '2026-06-02', fromAccountId: t.account('1000'), toAccountId: t.account('1010'), amount },
          t.orgHeaders,
        ),
      ),
    );
    for (const r of posted) expect([201, 409, 422], r.body).toContain(r.statusCode);
    expect(new Set(posted.filter((r) => r.statusCode === 201).map((r) => r.json().journalEntryId)).size).toBe(1);
    expect((await books()).entries).toBe((entriesBefore ?? 0) + 1);
  });

  it('keeps a key of one organization apart from the same key in another', async () => {
    const second = t.demo.organizations[1]?.id as string;
    const key = randomUUID();
    const body = { DisplayName: 'Two Offices Ltd' };
    expect((await send('POST', `${base}/entities/Customer`, key, body)).statusCode).toBe(201);
    const there = await send('POST', `/agent/v1/acct/clients/${second}/entities/Customer`, key, body);
    expect(there.statusCode, there.body).toBe(201);
    expect(there.headers['idempotent-replayed']).toBeUndefined();
  });

  it('still replays a record stored under its route pattern before keys named their path', async () => {
    // The response of a real exclude, stored as a record of an earlier release: the route pattern, no path.
    const stored = (
      await send('POST', `/api/v1/bank-transactions/${await row('FEE C')}/exclude`, randomUUID(), {}, t.orgHeaders)
    ).json();
    const key = randomUUID();
    await t.database.db.execute(sql`
      insert into idempotency_keys
        (firm_id, organization_id, route, key, request_hash, response_status, response_body, expires_at)
      values (${t.demo.firmId}, ${t.orgId}, 'POST /api/v1/bank-transactions/:id/exclude', ${key},
              ${createHash('sha256').update('{}').digest('hex')}, 200, ${JSON.stringify(stored)}::jsonb,
              now() + interval '1 hour')`);
    // A row that does not exist would be 404: this is the stored answer.
    const replay = await send('POST', `/api/v1/bank-transactions/${randomUUID()}/exclude`, key, {}, t.orgHeaders);
    expect(replay.statusCode, replay.body).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(stored);
    reused(await send('POST', `/api/v1/bank-transactions/${randomUUID()}/exclude`, key, { reason: 'x' }, t.orgHeaders));
  });
});

describe('the Idempotency-Key format', () => {
  const BAD_KEYS = ['has space', 'caf\u00e9', 'tab\there', 'a'.repeat(256), ''];

  it('is stated in the document: printable ASCII, at most 255 characters', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const wanted = [
      ['POST', '/api/v1/companies/{companyId}/journal-entries'],
      ['POST', '/api/v1/scheduled-journal-entries'],
      ['POST', '/agent/v1/acct/clients/{clientId}/entities/{entity}'],
      ['PATCH', '/agent/v1/acct/clients/{clientId}/entities/{entity}/{id}'],
    ];
    const operations = operationsOf(doc);
    for (const [method, path] of wanted) {
      const op = operations.find((o) => o.method === method && o.path === path);
      const header = op?.params.find((p) => p.in === 'header' && p.name === 'idempotency-key');
      expect(header, `${method} ${path}`).toBeDefined();
      const schema = header?.schema as { pattern?: string; minLength?: number; maxLength?: number };
      expect(schema).toMatchObject({ minLength: 1, maxLength: 255 });
      const pattern = new RegExp(schema.pattern as string, 'u');
      expect(pattern.test(randomUUID())).toBe(true);
      expect(pattern.test('!~')).toBe(true);
      for (const key of BAD_KEYS.slice(0, 3)) expect(pattern.test(key), key).toBe(false);
    }
  });

  it('is refused with one 400 VALIDATION_ERROR that says the rule, whichever part of it is broken', async () => {
    const before = await books();
    const requests = [
      [
        'POST',
        `/api/v1/companies/${t.orgId}/journal-entries`,
        {
          date: '2026-06-02',
          lines: [
            { accountId: t.account('6300'), debitCents: 7 },
            { accountId: t.account('1000'), creditCents: 7 },
          ],
        },
      ],
      ['POST', '/api/v1/journal-entries', journalEntry(7)],
      ['POST', `${base}/entities/Customer`, { DisplayName: 'Bad Key Ltd' }],
      ['POST', `${base}/transactions`, purchase(7)],
      // Where the key is optional, a key given is held to the same rule.
      ['PATCH', `${base}/entities/Customer/1`, { SyncToken: '0', Notes: 'bad key' }],
    ] as const;
    for (const [method, url, payload] of requests) {
      for (const key of BAD_KEYS) {
        const headers = { ...t.auth, 'x-organization-id': t.orgId };
        const res = await send(method, url, key, payload, headers);
        expect(res.statusCode, `${url} ${JSON.stringify(key)}: ${res.body}`).toBe(400);
        expect(res.json()).toEqual({
          error: {
            code: 'VALIDATION_ERROR',
            message: 'the Idempotency-Key header is not valid',
            retryable: false,
            requestId: res.headers['x-request-id'],
            details: [{ field: 'headers.idempotency-key', message: 'must be 1-255 printable ASCII characters' }],
          },
        });
      }
    }
    expect(await books()).toEqual(before);
  });
});
