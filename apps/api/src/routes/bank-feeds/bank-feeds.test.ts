import { createHash, randomUUID } from 'node:crypto';
import { openDatabase, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { decodeJwt, generateKeyPair, SignJWT } from 'jose';
import { PlaidAggregator, pruneFeedWebhookDeliveries } from '@firm/banking';
import { startSandboxAggregator, type SandboxAggregatorServer } from '@firm/banking/sandbox/server';
import { createContact, createDocument } from '@firm/documents';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app';
import { testConfig } from '../../config';
import { createTestApp, type TestApp } from '../../testing';

const CLIENT = { clientId: 'feed-client', secret: 'feed-secret' };
let t: TestApp;
let sandbox: SandboxAggregatorServer;

beforeAll(async () => {
  sandbox = await startSandboxAggregator({ ...CLIENT, start: '2026-10-01' });
  t = await createTestApp({ aggregator: new PlaidAggregator({ ...CLIENT, basePath: sandbox.url }) });
});
afterAll(async () => {
  await t.close();
  await sandbox.close();
});

interface Row {
  id: string;
  bankAccountId: string;
  amountCents: number;
  description: string;
  status: string;
  date: string;
}

const get = (url: string) => t.app.inject({ method: 'GET', url, headers: t.orgHeaders });
const post = (url: string, payload: object) =>
  t.app.inject({ method: 'POST', url, headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() }, payload });
async function ok(res: Awaited<ReturnType<typeof post>>) {
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json();
}

async function publicToken(webhook?: string): Promise<string> {
  const res = await fetch(`${sandbox.url}/sandbox/public_token/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: CLIENT.clientId,
      secret: CLIENT.secret,
      institution_id: 'ins_109508',
      ...(webhook ? { options: { webhook } } : {}),
    }),
  });
  return ((await res.json()) as { public_token: string }).public_token;
}

/** The savings account fed by a connection whose webhooks reach this app, listening on a port (once per file). */
let savingsConnection: Promise<{ hook: string; feedId: string; itemId: string; savings: string }> | null = null;
const savingsFeed = () =>
  (savingsConnection ??= (async () => {
    const base = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const hook = `${base}/api/aggregator/webhook`;
    const connected = await t.app.inject({
      method: 'POST',
      url: '/api/v1/bank-feeds',
      headers: t.orgHeaders,
      payload: {
        publicToken: await publicToken(hook),
        institutionName: 'Savings Bank',
        accounts: [{ mask: '0000', accountId: t.account('1010') }],
      },
    });
    expect(connected.statusCode, connected.body).toBe(201);
    const feedId: string = connected.json().data.id;
    const [{ item_id: itemId } = { item_id: '' }] = rowsOf<{ item_id: string }>(
      await t.database.db.execute(sql`select item_id from bank_feed_connections where id = ${feedId}`),
    );
    return { hook, feedId, itemId, savings: connected.json().data.accounts[0].bankAccountId as string };
  })());

/** What the webhook answers to these bytes under this Plaid-Verification token (at `hook`: this app's by default). */
async function deliver(token: string, body: string, at?: string) {
  const hook = at ?? (await savingsFeed()).hook;
  const res = await fetch(hook, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'plaid-verification': token },
    body,
  });
  return { status: res.status, ...((await res.json()) as object) };
}

describe('a month of bank activity, from the feed to a finished reconciliation', () => {
  it('syncs, categorizes, matches, splits, excludes and reconciles; report, trial balance and register agree', async () => {
    const ctx = { firmId: t.demo.firmId, actor: { kind: 'test', id: 'bookkeeper' } };
    const db = t.database.db;
    const { invoice, bill } = await db.transaction(async (tx) => {
      const acme = await createContact(tx, ctx, t.orgId, { kind: 'customer', name: 'Acme Corp' });
      const paper = await createContact(tx, ctx, t.orgId, { kind: 'vendor', name: 'Paper Supply Co' });
      const date = '2026-09-20';
      return {
        invoice: await createDocument(tx, ctx, t.orgId, 'invoice', {
          contactId: acme.id,
          date,
          number: 'INV-1001',
          lines: [{ accountId: t.account('4100'), unitPriceCents: 120_000 }],
        }),
        bill: await createDocument(tx, ctx, t.orgId, 'bill', {
          contactId: paper.id,
          date,
          lines: [{ accountId: t.account('6300'), unitPriceCents: 50_000 }],
        }),
      };
    });

    const connected = await ok(
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/bank-feeds',
        headers: t.orgHeaders,
        payload: {
          publicToken: await publicToken(),
          institutionName: 'First Platypus Bank',
          accounts: [
            { mask: '0000', accountId: t.account('1000') },
            { mask: '3333', accountId: t.account('2100') },
          ],
        },
      }),
    );
    expect(connected.data).toMatchObject({ status: 'active', lastError: null });
    const health = (await get('/api/v1/bank-feeds/health')).json().data[0];
    expect(health.pendingReviewCount).toBeGreaterThan(20);
    const checking = connected.data.accounts.find((a: { mask: string }) => a.mask === '0000').bankAccountId;
    const card = connected.data.accounts.find((a: { mask: string }) => a.mask === '3333').bankAccountId;

    const rows: Row[] = (await get('/api/v1/bank-transactions?status=unreviewed&limit=1000')).json().data;
    const find = (text: string, account = checking) =>
      rows.filter((r) => r.description.startsWith(text) && r.bankAccountId === account);
    const categorize = async (row: Row, code: string) =>
      ok(
        await post(`/api/v1/bank-transactions/${row.id}/reclassify`, { accountId: t.account(code), reason: 'review' }),
      );

    // Checking: every row into the books.
    const plan: [string, string][] = [
      ['OWNER CAPITAL', '3000'],
      ['WEWORK', '6400'],
      ['STRIPE', '4000'],
      ['GUSTO', '6900'],
      ['COMCAST', '6700'],
      ['CARD PAYMENT', '2100'],
      ['MONTHLY SERVICE FEE', '6100'],
    ];
    for (const [text, code] of plan) for (const row of find(text)) await categorize(row, code);
    const [deposit] = find('ACH DEPOSIT ACME');
    const matched = await ok(
      await post(`/api/v1/bank-transactions/${deposit?.id}/match`, { documents: [{ documentId: invoice.id }] }),
    );
    expect(matched.data.status).toBe('matched');
    const [payment] = find('ACH PAYMENT PAPER');
    await ok(await post(`/api/v1/bank-transactions/${payment?.id}/match`, { documents: [{ documentId: bill.id }] }));

    // Card: split one, exclude one, categorize a few.
    const [aws] = find('AMAZON WEB SERVICES', card);
    const split = await ok(
      await post(`/api/v1/bank-transactions/${aws?.id}/split`, {
        parts: [
          { accountId: t.account('6500'), amountCents: 30_000 },
          { accountId: t.account('6300'), amountCents: 1_240 },
        ],
      }),
    );
    expect(split.data.lines).toHaveLength(2);
    const [coffee] = find('STARBUCKS', card);
    expect((await ok(await post(`/api/v1/bank-transactions/${coffee?.id}/exclude`, {}))).data.status).toBe('excluded');

    // Reconcile checking against the statement: the sum of the month's checking activity.
    const register: Row[] = (await get(`/api/v1/bank-accounts/${checking}/transactions?limit=1000`)).json().data;
    expect(register.every((r) => r.status === 'categorized' || r.status === 'matched')).toBe(true);
    const statementCents = register.reduce((s, r) => s + r.amountCents, 0);
    const session = (
      await ok(
        await post('/api/v1/reconciliations', {
          bankAccountId: checking,
          statementEndDate: '2026-10-31',
          statementEndingBalanceCents: statementCents,
        }),
      )
    ).data;
    for (const row of register) await ok(await post(`/api/v1/bank-transactions/${row.id}/reconcile`, {}));
    const finished = await ok(await post(`/api/v1/reconciliations/${session.id}/finish`, {}));
    expect(finished.data).toMatchObject({ status: 'finished', differenceCents: 0, reconciledCount: register.length });

    const report = (await get('/api/v1/reports/bank-reconciliation-status?endDate=2026-10-31')).json();
    const status = report.rows.find((r: { bankAccountId: string }) => r.bankAccountId === checking);
    const tb = (await get('/api/v1/reports/trial-balance?endDate=2026-10-31')).json();
    const cash = tb.data.rows.find((r: { accountId: string }) => r.accountId === t.account('1000'));
    expect(status).toMatchObject({
      lastReconciledDate: '2026-10-31',
      lastReconciledBalanceCents: statementCents,
      unreconciledCount: 0,
      ledgerBalanceCents: statementCents,
      registerBalanceCents: statementCents,
      feed: { status: 'active', lastError: null },
    });
    expect(cash.debitCents - cash.creditCents).toBe(statementCents);
    const paid = (await get(`/api/v1/invoices/${invoice.id}`)).json().data;
    expect(paid.status).toBe('paid');
  });
});

describe('the aggregator webhook', () => {
  it('refuses a public token the aggregator does not know, or one exchanged already, with 422 and connects nothing', async () => {
    const feeds = async () => (await get('/api/v1/bank-feeds')).json().data.length as number;
    const before = await feeds();
    const connect = (token: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/v1/bank-feeds',
        headers: t.orgHeaders,
        payload: {
          publicToken: token,
          institutionName: 'Savings Bank',
          accounts: [{ mask: '0000', accountId: t.account('1010') }],
        },
      });
    const unknown = await connect('public-sandbox-not-issued');
    expect(unknown.statusCode).toBe(422);
    expect(unknown.json().error).toMatchObject({
      code: 'PUBLIC_TOKEN_REFUSED',
      retryable: false,
      details: [{ field: 'publicToken' }],
    });
    // A token exchanged already (single use), as when the first connect's answer was lost.
    const token = await publicToken();
    const exchanged = await fetch(`${sandbox.url}/item/public_token/exchange`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ client_id: CLIENT.clientId, secret: CLIENT.secret, public_token: token }),
    });
    expect(exchanged.status).toBe(200);
    const replayed = await connect(token);
    expect(replayed.statusCode).toBe(422);
    expect(replayed.json().error.code).toBe('PUBLIC_TOKEN_REFUSED');
    expect(await feeds()).toBe(before);
  });

  it('syncs when a signed webhook says so, and refuses a missing or forged signature, syncing nothing', async () => {
    const { hook, feedId, itemId, savings } = await savingsFeed();
    const count = async () =>
      (await get(`/api/v1/bank-accounts/${savings}/transactions?limit=1000`)).json().data.length as number;
    const before = await count();
    sandbox.append(itemId, {
      kind: 'added',
      transaction: {
        transaction_id: `${itemId}-late-1`,
        account_id: `${itemId}-checking`,
        amount: -77.7,
        iso_currency_code: 'USD',
        date: '2026-10-31',
        authorized_date: '2026-10-31',
        name: 'INTEREST PAID',
        merchant_name: null,
        pending: false,
        pending_transaction_id: null,
        payment_channel: 'other',
        transaction_type: 'special',
      },
    });

    const body = JSON.stringify({
      webhook_type: 'TRANSACTIONS',
      webhook_code: 'SYNC_UPDATES_AVAILABLE',
      item_id: itemId,
    });
    const missing = await fetch(hook, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
    expect(missing.status).toBe(401);
    const forger = await generateKeyPair('ES256');
    const forged = await new SignJWT({ request_body_sha256: 'x'.repeat(64) })
      .setProtectedHeader({ alg: 'ES256', kid: randomUUID() })
      .setIssuedAt()
      .sign(forger.privateKey);
    const refused = await fetch(hook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'plaid-verification': forged },
      body,
    });
    expect(refused.status).toBe(401);
    const [requested] = rowsOf<{ at: string | null }>(
      await t.database.db.execute(sql`select sync_requested_at as at from bank_feed_connections where id = ${feedId}`),
    );
    expect(requested?.at).toBeNull();
    expect(await count()).toBe(before);

    expect(await sandbox.fireWebhook(itemId)).toBe(200);
    for (let i = 0; i < 50 && (await count()) === before; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await count()).toBe(before + 1);
    const openapi = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    expect(Object.keys(openapi.paths)).not.toContain('/api/aggregator/webhook');
  });

  it('refuses a webhook signed with a key the aggregator reports expired', async () => {
    const { itemId } = await savingsFeed();
    const body = JSON.stringify({ webhook_type: 'TRANSACTIONS', webhook_code: 'DEFAULT_UPDATE', item_id: itemId });
    // A key this process never fetched, expired by a rotation before it signs anything here.
    await sandbox.rotateWebhookKey();
    const expired = await sandbox.rotateWebhookKey();
    const refused = await deliver(await sandbox.signWebhook(body, { keyId: expired }), body);
    expect(refused).toMatchObject({ status: 401, error: { code: 'UNAUTHENTICATED' } });
    expect(await deliver(await sandbox.signWebhook(body), body)).toMatchObject({ status: 200, received: true });
  });

  it('answers 400 to a signed body that is not a JSON object, and marks nothing', async () => {
    const { feedId, itemId } = await savingsFeed();
    const requested = async () =>
      rowsOf<{ at: string | null }>(
        await t.database.db.execute(
          sql`select sync_requested_at as at from bank_feed_connections where id = ${feedId}`,
        ),
      )[0]?.at;
    // A sync an earlier delivery asked for clears the mark when it starts.
    for (let i = 0; i < 50 && (await requested()) !== null; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await requested()).toBeNull();
    for (const [body, code] of [
      [`webhook_type=TRANSACTIONS&webhook_code=SYNC_UPDATES_AVAILABLE&item_id=${itemId}`, 'MALFORMED_JSON'],
      [JSON.stringify([{ item_id: itemId }]), 'VALIDATION_ERROR'],
    ] as const) {
      const answer = await deliver(await sandbox.signWebhook(body), body);
      expect(answer, body).toMatchObject({ status: 400, error: { code } });
    }
    expect(await requested()).toBeNull();
  });

  it('accepts a signed delivery once: the same token and body again within five minutes, in any process, does nothing', async () => {
    const { feedId, itemId } = await savingsFeed();
    const requested = async () =>
      rowsOf<{ at: string | null }>(
        await t.database.db.execute(
          sql`select sync_requested_at as at from bank_feed_connections where id = ${feedId}`,
        ),
      )[0]?.at;
    const settled = async () => {
      for (let i = 0; i < 50 && (await requested()) !== null; i++) await new Promise((r) => setTimeout(r, 100));
      expect(await requested()).toBeNull();
    };
    await settled();
    const body = JSON.stringify({
      webhook_type: 'TRANSACTIONS',
      webhook_code: 'SYNC_UPDATES_AVAILABLE',
      item_id: itemId,
    });
    const token = await sandbox.signWebhook(body);
    expect(await deliver(token, body)).toEqual({ status: 200, received: true, syncRequested: true, duplicate: false });
    await settled();
    // A sync clears its request mark as it starts and calls the aggregator after: wait until its calls stop too.
    let syncCalls = sandbox.requestCount('/transactions/sync');
    for (let still = 0, i = 0; still < 5 && i < 100; i++) {
      await new Promise((r) => setTimeout(r, 100));
      const now = sandbox.requestCount('/transactions/sync');
      still = now === syncCalls ? still + 1 : 0;
      syncCalls = now;
    }

    // Another API process: its own connection pool, its own key cache, the same database.
    const otherDatabase = t.database.url
      ? openDatabase({ url: t.database.url, poolMax: 2, poolMode: t.database.poolMode })
      : t.database;
    const other = await buildApp({
      config: testConfig(),
      database: otherDatabase,
      aggregator: new PlaidAggregator({ ...CLIENT, basePath: sandbox.url }),
    });
    try {
      const otherHook = `${await other.listen({ port: 0, host: '127.0.0.1' })}/api/aggregator/webhook`;
      // The same delivery under its twin ECDSA signature (r, n - s), which verifies too, is the same delivery.
      const [signingInput, signature] = [
        token.slice(0, token.lastIndexOf('.')),
        token.slice(token.lastIndexOf('.') + 1),
      ];
      const raw = Buffer.from(signature, 'base64url');
      const n = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551');
      const s = BigInt(`0x${raw.subarray(32).toString('hex')}`);
      const twinS = Buffer.from((n - s).toString(16).padStart(64, '0'), 'hex');
      const twin = `${signingInput}.${Buffer.concat([raw.subarray(0, 32), twinS]).toString('base64url')}`;
      for (const [copy, hook] of [
        [token, undefined],
        [token, otherHook],
        [twin, otherHook],
      ] as const) {
        expect(await deliver(copy, body, hook)).toEqual({
          status: 200,
          received: true,
          syncRequested: false,
          duplicate: true,
        });
        expect(await requested()).toBeNull();
      }
    } finally {
      await other.close();
      if (otherDatabase !== t.database) await otherDatabase.close();
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(sandbox.requestCount('/transactions/sync')).toBe(syncCalls);

    // Remembered until the signature would be refused as too old anyway (plus a minute for hosts' clocks), then pruned.
    const { iat } = decodeJwt(token);
    const deliveryId = createHash('sha256')
      .update(token.slice(0, token.lastIndexOf('.')))
      .digest('hex');
    const kept = rowsOf<{ expires: number }>(
      await t.database.db.execute(sql`select extract(epoch from expires_at)::float8 as expires
        from aggregator_webhook_deliveries where provider = 'plaid' and delivery_id = ${deliveryId}`),
    );
    expect(kept.map((r) => Number(r.expires))).toEqual([(iat as number) + 300 + 60]);
    await t.database.db.execute(sql`insert into aggregator_webhook_deliveries (provider, delivery_id, expires_at)
      values ('plaid', 'expired-delivery', now() - interval '1 second'), ('plaid', 'live-delivery', now() + interval '5 minutes')`);
    expect(await pruneFeedWebhookDeliveries(t.database.db)).toBeGreaterThanOrEqual(1);
    const left = rowsOf<{ delivery_id: string }>(
      await t.database.db.execute(sql`select delivery_id from aggregator_webhook_deliveries
        where delivery_id in ('expired-delivery', 'live-delivery')`),
    );
    expect(left.map((r) => r.delivery_id)).toEqual(['live-delivery']);
  });
});

describe('bank feeds turned off (BANK_FEEDS=off)', () => {
  it('lists feeds, refuses to connect one with 503, serves no aggregator webhook, and builds no aggregator', async () => {
    const off = await buildApp({ config: testConfig({ BANK_FEEDS: 'off' }), database: t.database });
    try {
      expect(off.aggregator).toBeNull();
      expect(off.bankTokenKeys).toBeNull();
      const listed = await off.inject({ method: 'GET', url: '/api/v1/bank-feeds', headers: t.orgHeaders });
      expect(listed.statusCode).toBe(200);
      const connect = await off.inject({
        method: 'POST',
        url: '/api/v1/bank-feeds',
        headers: t.orgHeaders,
        payload: {
          publicToken: 'public-sandbox-unused',
          institutionName: 'Savings Bank',
          accounts: [{ mask: '0000', accountId: t.account('1010') }],
        },
      });
      expect(connect.statusCode).toBe(503);
      expect(connect.json().error).toMatchObject({
        code: 'SERVICE_UNAVAILABLE',
        message: expect.stringContaining('BANK_FEEDS=off'),
      });
      const hook = await off.inject({
        method: 'POST',
        url: '/api/aggregator/webhook',
        headers: { 'content-type': 'application/json', 'plaid-verification': 'x.y.z' },
        payload: '{}',
      });
      expect(hook.statusCode).toBe(404);
    } finally {
      await off.close();
    }
  });
});
