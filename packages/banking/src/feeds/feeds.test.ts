import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { type Db, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { getEntry, setCompanyArchived } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reclassifyBankTransaction } from '../actions';
import { InProcessSandboxAggregator } from '../sandbox/in-process';
import { startSandboxAggregator, type SandboxAggregatorServer } from '../sandbox/server';
import { createBankingFixture, type BankingFixture } from '../testing';
import { getBankTransaction } from '../transactions';
import { connectBankFeed, listBankFeeds } from './connections';
import { PlaidAggregator } from './plaid';
import { requestFeedSync, runRequestedSyncs } from './requests';
import { openToken, parseTokenKeys, sealToken, tokenContext } from './secrets';
import { syncFeed } from './sync';

const CLIENT = { clientId: 'test-client', secret: 'test-secret' };
const keys = parseTokenKeys(`k1:${randomBytes(32).toString('base64')}`);
let database: TestDatabase;
let db: Db;
let sandbox: SandboxAggregatorServer;
/** Counts down sync calls; the sandbox answers the one reaching zero with a 500. */
let failIn: number | null = null;
let plaid: PlaidAggregator;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  sandbox = await startSandboxAggregator({
    ...CLIENT,
    start: '2026-10-01',
    failSyncCall: () => {
      if (failIn === null) return false;
      failIn -= 1;
      if (failIn > 0) return false;
      failIn = null;
      return true;
    },
  });
  plaid = new PlaidAggregator({ ...CLIENT, basePath: sandbox.url });
});
afterAll(async () => {
  await sandbox.close();
  await database.close();
});

async function publicToken(): Promise<string> {
  const res = await fetch(`${sandbox.url}/sandbox/public_token/create`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: CLIENT.clientId, secret: CLIENT.secret, institution_id: 'ins_109508' }),
  });
  return ((await res.json()) as { public_token: string }).public_token;
}

async function connect(f: BankingFixture) {
  return connectBankFeed(db, f.ctx, plaid, keys, f.orgId, {
    publicToken: await publicToken(),
    institutionName: 'First Platypus Bank',
    accounts: [
      { mask: '0000', accountId: f.account('1000') },
      { mask: '3333', accountId: f.account('2100') },
    ],
  });
}

/** The register as the feed left it, without our ids: what two syncs of the same activity must agree on. */
const register = async (orgId: string) =>
  rowsOf<{
    external_id: string;
    txn_date: string;
    amount: number;
    description: string;
    counterparty: string | null;
    pending: boolean;
    status: string;
  }>(
    await db.execute(sql`select external_id, txn_date::text, amount_cents::float8 as amount, description, counterparty,
        pending, status
      from bank_transactions where organization_id = ${orgId} order by external_id`),
  ).map((r) => ({ ...r, external_id: r.external_id.replace(/^item-[0-9a-f]+/, 'item') }));

describe('feed sync through the Plaid client against the sandbox aggregator', () => {
  it('connects, syncs a month page by page, posts a pending row over itself and drops a removed one', async () => {
    const f = await createBankingFixture(db);
    const feed = await connect(f);
    expect(feed.accounts.map((a) => [a.bankAccountId, a.mask])).toEqual(
      expect.arrayContaining([
        [f.checking.id, '0000'],
        [f.card.id, '3333'],
      ]),
    );
    const stored = rowsOf<{ access_token: string }>(
      await db.execute(sql`select access_token from bank_feed_connections where id = ${feed.id}`),
    );
    expect(stored[0]?.access_token).not.toContain('access-sandbox');

    const result = await syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 7 });
    expect(result.pages).toBeGreaterThan(3);
    const rows = await register(f.orgId);
    expect(rows.filter((r) => r.description === 'SHELL OIL 5541')).toEqual([
      expect.objectContaining({ amount: -4_217, pending: false }),
    ]);
    expect(rows.filter((r) => r.description === 'STAPLES 0042')).toHaveLength(1);
    expect(rows.find((r) => r.description === 'SQ *BLUE BOTTLE')?.counterparty).toBe('Blue Bottle Coffee');
    expect(rows.find((r) => r.description.startsWith('ACH DEPOSIT ACME'))?.amount).toBe(120_000);
    expect(rows.every((r) => r.status === 'unreviewed')).toBe(true);
    const [health] = await listBankFeeds(db, f.orgId);
    expect(health).toMatchObject({ status: 'active', lastError: null, pendingReviewCount: rows.length });

    // A page that arrives again (the whole log replayed from the start) leaves the register as it was.
    await db.execute(sql`update bank_feed_connections set cursor = null where id = ${feed.id}`);
    await syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 5 });
    expect(await register(f.orgId), 'replayed').toEqual(rows);

    // Two syncs of one connection at once: one applies each page, the other drops it.
    await db.execute(sql`update bank_feed_connections set cursor = null where id = ${feed.id}`);
    await Promise.all([
      syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 3 }),
      syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 3 }),
    ]);
    expect(await register(f.orgId)).toEqual(rows);
  });

  it('resumes a sync cut short by an aggregator failure, ending with the same rows, none twice', async () => {
    const clean = await createBankingFixture(db);
    await syncFeed(db, clean.ctx, plaid, keys, clean.orgId, (await connect(clean)).id, { count: 4 });

    const f = await createBankingFixture(db);
    const feed = await connect(f);
    // The third sync call from now fails upstream: two pages commit, then the sync stops with the error recorded.
    failIn = 3;
    await expect(syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 4 })).rejects.toMatchObject({
      code: 'AGGREGATOR_ERROR',
    });
    const [broken] = await listBankFeeds(db, f.orgId);
    expect(broken).toMatchObject({ status: 'error', lastError: expect.stringContaining('INTERNAL_SERVER_ERROR') });
    expect((await register(f.orgId)).length).toBe(8);

    await syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 4 });
    expect(await register(f.orgId)).toEqual(await register(clean.orgId));
    const [healthy] = await listBankFeeds(db, f.orgId);
    expect(healthy).toMatchObject({ status: 'active', lastError: null });
  });

  it('sends a categorized row whose amount the bank changed back to review, voiding its entry', async () => {
    const f = await createBankingFixture(db);
    const feed = await connect(f);
    await syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 50 });
    const [uber] = rowsOf<{ id: string; external_id: string }>(
      await db.execute(sql`select id, external_id from bank_transactions
        where organization_id = ${f.orgId} and description = 'UBER *TRIP' order by txn_date limit 1`),
    );
    const categorized = await db.transaction((tx) =>
      reclassifyBankTransaction(tx, f.ctx, f.orgId, uber?.id as string, {
        accountId: f.account('6600'),
        reason: 'travel',
      }),
    );
    const itemId = (uber?.external_id as string).replace(/-tx-\d+$/, '');
    sandbox.append(itemId, {
      kind: 'modified',
      transaction: {
        transaction_id: uber?.external_id as string,
        account_id: `${itemId}-card`,
        amount: 25.18,
        iso_currency_code: 'USD',
        date: '2026-10-07',
        authorized_date: '2026-10-06',
        name: 'UBER *TRIP',
        merchant_name: 'Uber',
        pending: false,
        pending_transaction_id: null,
        payment_channel: 'online',
        transaction_type: 'place',
      },
    });
    await syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id);
    const after = await getBankTransaction(db, f.orgId, uber?.id as string);
    expect(after).toMatchObject({
      status: 'unreviewed',
      reviewReason: 'amount_changed',
      amountCents: -2_518,
      journalEntryId: null,
    });
    expect((await getEntry(db, f.orgId, categorized.journalEntryId as string)).status).toBe('void');
  });

  it('judges the ledger accounts before spending the public token: a refused connect leaves it usable', async () => {
    const f = await createBankingFixture(db);
    const other = await createBankingFixture(db);
    const token = await publicToken();
    for (const accountId of [f.account('6100'), other.account('1000'), 'not-a-uuid']) {
      const err = await connectBankFeed(db, f.ctx, plaid, keys, f.orgId, {
        publicToken: token,
        institutionName: 'First Platypus Bank',
        accounts: [{ mask: '0000', accountId }],
      }).catch((e: unknown) => e);
      expect(err).toMatchObject({ code: 'INVALID_ACCOUNT', details: [{ field: 'accounts[0].accountId' }] });
    }
    expect(await listBankFeeds(db, f.orgId)).toEqual([]);
    const feed = await connectBankFeed(db, f.ctx, plaid, keys, f.orgId, {
      publicToken: token,
      institutionName: 'First Platypus Bank',
      accounts: [{ mask: '0000', accountId: f.account('1000') }],
    });
    expect(feed.accounts).toHaveLength(1);
  });

  it('refuses wrong aggregator credentials with AGGREGATOR_ERROR and stores nothing', async () => {
    const f = await createBankingFixture(db);
    const wrong = new PlaidAggregator({ clientId: 'nope', secret: 'nope', basePath: sandbox.url });
    const err = await connectBankFeed(db, f.ctx, wrong, keys, f.orgId, {
      publicToken: await publicToken(),
      institutionName: 'X',
      accounts: [],
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'AGGREGATOR_ERROR' });
    expect(await listBankFeeds(db, f.orgId)).toEqual([]);
  });

  it('keeps syncing a feed the demo seed connected in process, through the sandbox server, without duplicates', async () => {
    const f = await createBankingFixture(db);
    const seedSide = new InProcessSandboxAggregator('2026-10-01');
    const feed = await connectBankFeed(db, f.ctx, seedSide, keys, f.orgId, {
      publicToken: 'public-sandbox-demo',
      institutionName: 'First Platypus Bank (sandbox)',
      accounts: [
        { mask: '0000', accountId: f.account('1000') },
        { mask: '3333', accountId: f.account('2100') },
      ],
    });
    await syncFeed(db, f.ctx, seedSide, keys, f.orgId, feed.id);
    const rows = async () =>
      rowsOf<{ external_id: string; amount_cents: number }>(
        await db.execute(sql`select external_id, amount_cents::float8 as amount_cents from bank_transactions
          where organization_id = ${f.orgId} order by external_id`),
      );
    const seeded = await rows();
    expect(seeded.length).toBeGreaterThan(10);

    // The server never saw this item; the access token names it. A later change reaches the books through it.
    await syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id);
    expect(await rows()).toEqual(seeded);
    const [itemId] = rowsOf<{ item_id: string }>(
      await db.execute(sql`select item_id from bank_feed_connections where id = ${feed.id}`),
    ).map((r) => r.item_id);
    sandbox.append(itemId as string, {
      kind: 'added',
      transaction: {
        transaction_id: `${itemId}-late-1`,
        account_id: `${itemId}-checking`,
        amount: 12.34,
        iso_currency_code: 'USD',
        date: '2026-10-30',
        authorized_date: '2026-10-30',
        name: 'LATE COFFEE',
        merchant_name: 'Late Coffee',
        pending: false,
        pending_transaction_id: null,
        payment_channel: 'in store',
        transaction_type: 'place',
      },
    });
    await syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id);
    const after = await rows();
    expect(after).toHaveLength(seeded.length + 1);
    expect(after).toContainEqual({ external_id: `${itemId}-late-1`, amount_cents: -1_234 });
  });
});

describe('access tokens at rest', () => {
  interface Sealed {
    access_token: string;
    access_token_key_id: string;
    access_token_bound: boolean;
  }
  const sealed = async (id: string) =>
    rowsOf<Sealed>(
      await db.execute(sql`select access_token, access_token_key_id, access_token_bound from bank_feed_connections
        where id = ${id}`),
    )[0] as Sealed;
  const syncCalls = () => sandbox.requestCount('/transactions/sync');

  it('are bound to their connection: a token copied into another row does not open there, which then needs a relink', async () => {
    const a = await createBankingFixture(db);
    const b = await createBankingFixture(db);
    const feedA = await connect(a);
    const feedB = await connect(b);
    const ownB = await sealed(feedB.id);
    expect(ownB.access_token_bound).toBe(true);

    // Someone who can write to the table gives B the token of A's bank; as bound, then passed off as sealed unbound.
    for (const bound of [true, false]) {
      await db.execute(sql`update bank_feed_connections set access_token = a.access_token,
          access_token_key_id = a.access_token_key_id, access_token_bound = ${bound}
        from (select access_token, access_token_key_id from bank_feed_connections where id = ${feedA.id}) a
        where bank_feed_connections.id = ${feedB.id}`);
      const calls = syncCalls();
      await expect(syncFeed(db, b.ctx, plaid, keys, b.orgId, feedB.id)).rejects.toMatchObject({
        code: 'BANK_FEED_NEEDS_RELINK',
        message: expect.stringContaining('connect the bank again'),
      });
      expect(syncCalls(), 'the aggregator is not called with it').toBe(calls);
      const [health] = await listBankFeeds(db, b.orgId);
      expect(health).toMatchObject({
        status: 'needs_relink',
        lastError: expect.stringContaining('sealed for another connection'),
      });
      expect(await register(b.orgId)).toEqual([]);
      expect(await sealed(feedB.id), 'left as it was').toMatchObject({ access_token_bound: bound });
    }
    // A's own connection is untouched and syncs.
    expect((await syncFeed(db, a.ctx, plaid, keys, a.orgId, feedA.id)).pages).toBeGreaterThan(0);

    // A key dropped from BANK_TOKEN_KEYS is said as such; restoring B's own token makes it work again.
    const other = parseTokenKeys(`k2:${randomBytes(32).toString('base64')}`);
    await db.execute(sql`update bank_feed_connections set access_token = ${ownB.access_token},
        access_token_key_id = ${ownB.access_token_key_id}, access_token_bound = true where id = ${feedB.id}`);
    await expect(syncFeed(db, b.ctx, plaid, other, b.orgId, feedB.id)).rejects.toMatchObject({
      code: 'BANK_FEED_NEEDS_RELINK',
      message: expect.stringContaining('its key k1 is not in BANK_TOKEN_KEYS'),
    });
    expect((await syncFeed(db, b.ctx, plaid, keys, b.orgId, feedB.id)).pages).toBeGreaterThan(0);
    expect((await listBankFeeds(db, b.orgId))[0]).toMatchObject({ status: 'active', lastError: null });
  });

  it('sealed before binding still work: each is resealed bound on its first read, and then opens only there', async () => {
    const f = await createBankingFixture(db);
    const feed = await connect(f);
    const bound = await sealed(feed.id);
    const token = openToken(keys, bound.access_token, bound.access_token_key_id, tokenContext(f.orgId, feed.id));
    // The row as a release before binding left it: sealed without additional data, marked unbound by migration 0022.
    const legacy = sealToken(keys, token);
    await db.execute(sql`update bank_feed_connections set access_token = ${legacy.value},
        access_token_key_id = ${legacy.keyId}, access_token_bound = false where id = ${feed.id}`);

    // Two syncs read it at once: both work, and it is resealed under the row's lock.
    const results = await Promise.all([
      syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 20 }),
      syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id, { count: 20 }),
    ]);
    expect(results.reduce((n, r) => n + r.pages, 0)).toBeGreaterThan(0);
    expect((await register(f.orgId)).length).toBeGreaterThan(10);
    const resealed = await sealed(feed.id);
    expect(resealed.access_token_bound).toBe(true);
    expect(resealed.access_token).not.toBe(legacy.value);
    expect(openToken(keys, resealed.access_token, resealed.access_token_key_id, tokenContext(f.orgId, feed.id))).toBe(
      token,
    );
    expect(() => openToken(keys, resealed.access_token, resealed.access_token_key_id)).toThrow();
    const [health] = await listBankFeeds(db, f.orgId);
    expect(health).toMatchObject({ status: 'active', lastError: null });
    // Later reads find it bound and leave it as it is.
    await syncFeed(db, f.ctx, plaid, keys, f.orgId, feed.id);
    expect((await sealed(feed.id)).access_token).toBe(resealed.access_token);

    // A new key put first: the next read reseals under it, after which the old key can be dropped.
    const spec = (id: string) => `${id}:${keys.keys.get(id)?.toString('base64')}`;
    const fresh = `k3:${randomBytes(32).toString('base64')}`;
    await syncFeed(db, f.ctx, plaid, parseTokenKeys(`${fresh},${spec('k1')}`), f.orgId, feed.id);
    expect(await sealed(feed.id)).toMatchObject({ access_token_key_id: 'k3', access_token_bound: true });
    await syncFeed(db, f.ctx, plaid, parseTokenKeys(fresh), f.orgId, feed.id);
    expect((await listBankFeeds(db, f.orgId))[0]).toMatchObject({ status: 'active', lastError: null });
  });
});

describe('an archived company', () => {
  it('takes no feed rows: a sync is refused, a requested one waits until the company is unarchived', async () => {
    const f = await createBankingFixture(db);
    const aggregator = new InProcessSandboxAggregator('2026-10-01');
    const connectFeed = () =>
      connectBankFeed(db, f.ctx, aggregator, keys, f.orgId, {
        publicToken: 'public-sandbox-demo',
        institutionName: 'First Platypus Bank (sandbox)',
        accounts: [{ mask: '0000', accountId: f.account('1000') }],
      });
    const feed = await connectFeed();
    const archive = (archived: boolean) => db.transaction((tx) => setCompanyArchived(tx, f.ctx, f.orgId, archived));
    const rowCount = async () =>
      rowsOf<{ n: number }>(
        await db.execute(sql`select count(*)::int as n from bank_transactions where organization_id = ${f.orgId}`),
      )[0]?.n;
    const code = (p: Promise<unknown>) =>
      p.then(
        () => 'ok',
        (e: unknown) => (e as { code?: string }).code,
      );
    await archive(true);
    expect(await code(syncFeed(db, f.ctx, aggregator, keys, f.orgId, feed.id))).toBe('COMPANY_ARCHIVED');
    expect(await code(connectFeed())).toBe('COMPANY_ARCHIVED');
    const [itemId] = rowsOf<{ item_id: string }>(
      await db.execute(sql`select item_id from bank_feed_connections where id = ${feed.id}`),
    ).map((r) => r.item_id);
    expect(await requestFeedSync(db, aggregator.provider, itemId as string)).toBe(true);
    expect(await runRequestedSyncs(db, aggregator, keys)).toBe(0);
    expect(await rowCount()).toBe(0);

    await archive(false);
    expect(await runRequestedSyncs(db, aggregator, keys)).toBe(1);
    expect(await rowCount()).toBeGreaterThan(0);
  });
});

describe('aggregator webhooks', () => {
  const webhookBody = (itemId = 'item-none') =>
    JSON.stringify({ webhook_type: 'TRANSACTIONS', webhook_code: 'SYNC_UPDATES_AVAILABLE', item_id: itemId });
  const headers = (token: string) => ({ 'plaid-verification': token });
  const keyFetches = () => sandbox.requestCount('/webhook_verification_key/get');

  it('refuses a key the aggregator reports expired, and asks again about a cached key once its lifetime is over', async () => {
    let clock = Date.now();
    const verifier = new PlaidAggregator({ ...CLIENT, basePath: sandbox.url, now: () => clock });
    const body = webhookBody();
    const fetchedBefore = keyFetches();
    const kid = sandbox.webhookKeyId();
    for (let i = 0; i < 5; i++) {
      await expect(
        verifier.verifyWebhook(headers(await sandbox.signWebhook(body)), Buffer.from(body)),
      ).resolves.toMatchObject({
        itemId: 'item-none',
      });
    }
    expect(keyFetches() - fetchedBefore).toBe(1);

    // Rotated: the key's expired_at is now. This process learns it when the cached key's lifetime ends.
    expect(await sandbox.rotateWebhookKey()).toBe(kid);
    clock += 5 * 60_000 + 1000;
    const late = await sandbox.signWebhook(body, { keyId: kid, issuedAt: Math.floor(clock / 1000) });
    await expect(verifier.verifyWebhook(headers(late), Buffer.from(body))).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
      message: expect.stringContaining('expired'),
    });
    expect(keyFetches() - fetchedBefore).toBe(2);
    // A key this process never saw, expired already when first fetched, is refused as well.
    const never = await sandbox.rotateWebhookKey();
    const signed = await sandbox.signWebhook(body, { keyId: never, issuedAt: Math.floor(clock / 1000) });
    await expect(verifier.verifyWebhook(headers(signed), Buffer.from(body))).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
  });

  it('fetches a bounded number of keys for a hundred unknown key ids, and one for an unknown id sent again and again', async () => {
    const forger = await generateKeyPair('ES256');
    const body = webhookBody();
    const forged = (kid: string) =>
      new SignJWT({ request_body_sha256: createHash('sha256').update(body).digest('hex') })
        .setProtectedHeader({ alg: 'ES256', kid, typ: 'JWT' })
        .setIssuedAt()
        .sign(forger.privateKey);

    const verifier = new PlaidAggregator({ ...CLIENT, basePath: sandbox.url });
    const before = keyFetches();
    for (let i = 0; i < 100; i++) {
      await expect(
        verifier.verifyWebhook(headers(await forged(randomUUID())), Buffer.from(body)),
      ).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
    }
    const spent = keyFetches() - before;
    console.log(`100 unknown key ids: ${spent} key fetches`);
    expect(spent).toBeLessThanOrEqual(10);

    const another = new PlaidAggregator({ ...CLIENT, basePath: sandbox.url });
    const kid = randomUUID();
    const again = keyFetches();
    await Promise.all(
      Array.from({ length: 20 }, async () =>
        expect(another.verifyWebhook(headers(await forged(kid)), Buffer.from(body))).rejects.toMatchObject({
          code: 'UNAUTHENTICATED',
        }),
      ),
    );
    expect(keyFetches() - again).toBe(1);
    // The real key is still fetched and trusted beside the refusals.
    const genuine = await sandbox.signWebhook(body);
    await expect(another.verifyWebhook(headers(genuine), Buffer.from(body))).resolves.toMatchObject({
      type: 'TRANSACTIONS',
    });
  });
});

describe('the sandbox aggregator server', () => {
  it('refuses a port already taken with an error its caller can handle, rather than crashing the process', async () => {
    const port = Number(new URL(sandbox.url).port);
    const err = await startSandboxAggregator({ clientId: 'x', secret: 'y' }, port).then(
      () => null,
      (e: NodeJS.ErrnoException) => e.code,
    );
    expect(err).toBe('EADDRINUSE');
  });
});
