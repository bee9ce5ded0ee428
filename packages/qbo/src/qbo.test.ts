import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseSealingKeys } from '@firm/core';
import { refusal } from '@firm/core/testing';
import { redisReachable } from '@firm/core/redis-probe';
import { openDatabase, organizations, pgErrorOf, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createLedgerFixture, type LedgerFixture } from '@firm/ledger/testing';
import { sql } from 'drizzle-orm';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createQboPlatform, type QboFiles, queryText } from './adapter';
import { DEVELOPMENT_QBO_KEYS, type QboConfig, qboConfigFrom } from './config';
import { QboHttp } from './http';
import { inProcessLimiter, redisLimiter } from './limiter';
import { completeAuthorization, startAuthorization } from './oauth';
import { FakeQbo } from './testing/fake-qbo';
import { addFirmOwner } from './testing/people';
import { accessToken, disconnect, getConnection, resealTokens } from './tokens';

const hasRedis = await redisReachable();

let database: TestDatabase;
let fake: FakeQbo;
let config: QboConfig;
let f: LedgerFixture;

/** Begins a connection as a new owner of the firm: the URL, its state and the person it is bound to. */
async function begin(organizationId: string, firmId: string) {
  const userId = await addFirmOwner(database.db, firmId);
  const { url } = await startAuthorization(database.db, config, { firmId, organizationId, userId });
  return { url, state: new URL(url).searchParams.get('state') as string, userId };
}

/** Connects `organizationId` to a fake company through the authorization flow, as the callback would. */
async function connect(organizationId: string, firmId: string, realmId = fake.realmId) {
  const { state, userId } = await begin(organizationId, firmId);
  return completeAuthorization(database.db, config, inProcessLimiter(), {
    state,
    code: fake.issueCode(realmId),
    realmId,
    userId,
  });
}

/** Another organization connected to a company of its own. */
async function another() {
  const other = await createLedgerFixture(database.db);
  const realmId = fake.newRealm();
  await connect(other.orgId, other.firmId, realmId);
  return { ...other, realmId };
}

const http = (options: { baseDelayMs?: number } = {}) =>
  new QboHttp({
    config,
    db: database.db,
    limiter: inProcessLimiter(),
    organizationId: f.orgId,
    baseDelayMs: 5,
    ...options,
  });
const platform = (dryRun = false) => createQboPlatform(http(), { realmId: fake.realmId, dryRun });

beforeAll(async () => {
  database = await createTestDatabase();
  fake = new FakeQbo();
  await fake.start();
  config = { ...(qboConfigFrom(fake.env()) as QboConfig), timeoutMs: 2000 };
  f = await createLedgerFixture(database.db);
  await connect(f.orgId, f.firmId);
});
afterAll(async () => {
  await fake.stop();
  await database.close();
});
beforeEach(() => {
  fake.requests.length = 0;
  fake.clearInjections();
});

const stored = async (organizationId: string) =>
  rowsOf<{ access_token: string; refresh_token: string; status: string; version: number }>(
    await database.db.execute(sql`select * from qbo_connections where organization_id = ${organizationId}`),
  )[0];
const clientRow = async (organizationId: string) =>
  rowsOf<{ platform: string; acct_company_id: string; status: string; last_sync_at: Date | null }>(
    await database.db.execute(sql`select * from acct_clients where organization_id = ${organizationId}`),
  )[0];
/** Makes the stored access token due for a refresh, as if an hour had passed. */
const ageAccessToken = (organizationId: string) =>
  database.db.execute(sql`update qbo_connections set access_expires_at = now() - interval '1 minute'
    where organization_id = ${organizationId}`);

describe('connecting a company', () => {
  it('stores the tokens sealed and makes the organization a QBO client whose company id is the realm', async () => {
    const row = await stored(f.orgId);
    expect(row?.access_token).toMatch(/^sealed:v1:dev:/);
    expect(row?.refresh_token).toMatch(/^sealed:v1:dev:/);
    expect(JSON.stringify(row)).not.toContain('at-');
    expect(await clientRow(f.orgId)).toMatchObject({
      platform: 'qbo',
      acct_company_id: fake.realmId,
      status: 'connected',
    });
  });

  it('asks Intuit for the accounting scope with a one-time state', async () => {
    const { url } = await begin(f.orgId, f.firmId);
    const u = new URL(url);
    expect(u.origin + u.pathname).toBe(`${fake.base}/connect/oauth2`);
    expect(Object.fromEntries(u.searchParams)).toMatchObject({
      client_id: fake.clientId,
      response_type: 'code',
      scope: 'com.intuit.quickbooks.accounting',
      redirect_uri: config.redirectUri,
    });
    expect(u.searchParams.get('state')).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it("refuses a wrong, replayed or another user's state before asking for tokens, and writes nothing", async () => {
    const other = await createLedgerFixture(database.db);
    const tokenCalls = () => fake.requests.filter((r) => r.path === '/oauth2/v1/tokens/bearer').length;
    const wrong = await refusal(
      completeAuthorization(database.db, config, inProcessLimiter(), {
        state: 'forged',
        code: fake.issueCode(),
        realmId: '1',
        userId: await addFirmOwner(database.db, other.firmId),
      }),
    );
    expect(wrong.code).toBe('VALIDATION_ERROR');

    const { state } = await begin(other.orgId, other.firmId);
    const notYours = await refusal(
      completeAuthorization(database.db, config, inProcessLimiter(), {
        state,
        code: fake.issueCode(),
        realmId: '1',
        userId: await addFirmOwner(database.db, other.firmId),
      }),
    );
    expect(notYours.code).toBe('VALIDATION_ERROR');
    expect(tokenCalls()).toBe(0);
    expect(await getConnection(database.db, other.orgId)).toBeNull();

    const { state: once, userId } = await begin(other.orgId, other.firmId);
    const realmId = fake.newRealm();
    const code = fake.issueCode(realmId);
    await expect(
      completeAuthorization(database.db, config, inProcessLimiter(), { state: once, code, realmId, userId }),
    ).resolves.toMatchObject({ organizationId: other.orgId, realmId });
    const replay = await refusal(
      completeAuthorization(database.db, config, inProcessLimiter(), {
        state: once,
        code: fake.issueCode(realmId),
        realmId,
        userId,
      }),
    );
    expect(replay.code).toBe('VALIDATION_ERROR');

    // A company connected to one organization cannot be taken by another.
    const third = await begin((await createLedgerFixture(database.db)).orgId, f.firmId);
    const taken = await refusal(
      completeAuthorization(database.db, config, inProcessLimiter(), {
        state: third.state,
        code: fake.issueCode(realmId),
        realmId,
        userId: third.userId,
      }),
    );
    expect(taken.code).toBe('QBO_COMPANY_TAKEN');
  });

  it('keeps no state without its person, even written by hand', async () => {
    const write = database.db
      .execute(sql`insert into qbo_oauth_states (state_hash, firm_id, organization_id, expires_at)
      values ('by-hand', ${f.firmId}, ${f.orgId}, now() + interval '15 minutes')`);
    expect(
      pgErrorOf(
        await write.then(
          () => null,
          (err: unknown) => err,
        ),
      )?.code,
    ).toBe('23502');
  });

  it('confirms the company with the new token before storing it; one it does not reach is refused and revoked', async () => {
    const mine = fake.newRealm();
    const theirs = await another();
    const fresh = await createLedgerFixture(database.db);
    const { state, userId } = await begin(fresh.orgId, fresh.firmId);
    const revocations = fake.revocations.length;
    const refused = await refusal(
      completeAuthorization(database.db, config, inProcessLimiter(), {
        state,
        code: fake.issueCode(mine),
        realmId: theirs.realmId,
        userId,
      }),
    );
    expect(refused).toMatchObject({
      code: 'VALIDATION_ERROR',
      details: [expect.objectContaining({ field: 'realmId' })],
    });
    const check = fake.requests.filter((r) => r.path === `/v3/company/${theirs.realmId}/companyinfo/${theirs.realmId}`);
    expect(check.at(-1)?.query.minorversion).toBe('75');
    const revoked = fake.revocations.slice(revocations);
    expect(revoked).toHaveLength(1);
    expect(fake.isLive(revoked[0] as string)).toBe(false);
    expect(await stored(fresh.orgId)).toBeUndefined();
    expect(await stored(theirs.orgId)).toMatchObject({ status: 'connected' });
    // The state was spent: the same state cannot be tried again with another company id.
    const replay = await refusal(
      completeAuthorization(database.db, config, inProcessLimiter(), {
        state,
        code: fake.issueCode(mine),
        realmId: mine,
        userId,
      }),
    );
    expect(replay.details?.[0]?.field).toBe('state');
  });

  it('fails closed on a tampered token row: the client needs reauth, nothing is sent', async () => {
    const other = await another();
    const sealed = (await stored(other.orgId))?.access_token as string;
    const bytes = Buffer.from(sealed.split(':')[3] as string, 'base64');
    bytes[bytes.length - 1] = (bytes[bytes.length - 1] as number) ^ 1;
    await database.db
      .execute(sql`update qbo_connections set access_token = ${`sealed:v1:dev:${bytes.toString('base64')}`}
      where organization_id = ${other.orgId}`);
    fake.requests.length = 0;
    const err = await refusal(accessToken(database.db, config, other.orgId));
    expect(err.code).toBe('CLIENT_NEEDS_REAUTH');
    expect(fake.requests).toHaveLength(0);
  });
});

describe('rotating the encryption key', () => {
  it('reseals every token under the new key; the old key can then be dropped', async () => {
    const other = await another();
    const fresh = `k2:${Buffer.alloc(32, 3).toString('base64')}`;
    const rotated = {
      ...config,
      keys: parseSealingKeys(`${fresh},${DEVELOPMENT_QBO_KEYS}`, 'QBO_TOKEN_ENCRYPTION_KEY'),
    };
    try {
      const { resealed, unreadable } = await resealTokens(database.db, rotated);
      expect(resealed).toBeGreaterThanOrEqual(2);
      // The row tampered with above stays as it is, counted.
      expect(unreadable).toBe(1);
      expect((await stored(other.orgId))?.access_token).toMatch(/^sealed:v1:k2:/);
      expect((await stored(other.orgId))?.refresh_token).toMatch(/^sealed:v1:k2:/);
      const newOnly = { ...config, keys: parseSealingKeys(fresh, 'QBO_TOKEN_ENCRYPTION_KEY') };
      await expect(accessToken(database.db, newOnly, other.orgId)).resolves.toMatchObject({ realmId: other.realmId });
    } finally {
      // The development key first again, for the tests that follow.
      await resealTokens(database.db, { ...config, keys: parseSealingKeys(`${DEVELOPMENT_QBO_KEYS},${fresh}`, 'x') });
    }
    expect((await stored(other.orgId))?.access_token).toMatch(/^sealed:v1:dev:/);
  });
});

describe('tokens', () => {
  it('refreshes once on a 401 and retries the call', async () => {
    fake.expireAccessTokens();
    const before = fake.refreshCount;
    const customer = await platform().get('Customer', '8');
    expect(customer).toMatchObject({ Id: '8', DisplayName: expect.any(String) });
    expect(fake.refreshCount).toBe(before + 1);
    expect(fake.requests.filter((r) => r.path.endsWith('/customer/8')).map((r) => r.authorization)).toHaveLength(2);
  });

  it.skipIf(!process.env.DATABASE_URL)(
    'two processes refreshing at once spend the refresh token once and both end with a working token',
    async () => {
      const second = openDatabase({ url: database.url as string, poolMax: 4, poolMode: database.poolMode });
      try {
        await ageAccessToken(f.orgId);
        const before = fake.refreshCount;
        const versionBefore = (await stored(f.orgId))?.version as number;
        const [a, b] = await Promise.all([
          accessToken(database.db, config, f.orgId),
          accessToken(second.db, config, f.orgId),
        ]);
        expect(a.token).toBe(b.token);
        expect(fake.refreshCount).toBe(before + 1);
        expect((await stored(f.orgId))?.version).toBe(versionBefore + 1);
        // The newest refresh token was kept: the next refresh works.
        await ageAccessToken(f.orgId);
        const next = await accessToken(second.db, config, f.orgId);
        expect(next.token).not.toBe(a.token);
        expect(fake.refreshCount).toBe(before + 2);
      } finally {
        await second.close();
      }
    },
  );

  it('a revoked refresh token leaves the client needs_reauth, with a clear error and no retry loop', async () => {
    const other = await another();
    fake.revokeRefreshTokens(other.realmId);
    await ageAccessToken(other.orgId);
    fake.requests.length = 0;
    const client = new QboHttp({ config, db: database.db, limiter: inProcessLimiter(), organizationId: other.orgId });
    const err = await refusal(client.request({ method: 'GET', path: 'customer/8' }));
    expect(err.code).toBe('CLIENT_NEEDS_REAUTH');
    expect((await clientRow(other.orgId))?.status).toBe('needs_reauth');
    expect((await stored(other.orgId))?.status).toBe('needs_reauth');
    const again = await refusal(client.request({ method: 'GET', path: 'customer/8' }));
    expect(again.code).toBe('CLIENT_NEEDS_REAUTH');
    expect(fake.requests.filter((r) => r.path === '/oauth2/v1/tokens/bearer')).toHaveLength(1);
    expect(fake.requests.filter((r) => r.path.startsWith('/v3/'))).toHaveLength(0);
    // Connecting again brings it back.
    await connect(other.orgId, other.firmId, other.realmId);
    expect((await clientRow(other.orgId))?.status).toBe('connected');
    await expect(client.request({ method: 'GET', path: 'customer/8' })).resolves.toMatchObject({
      Customer: { Id: '8' },
    });
  });

  it('disconnecting revokes the grant at Intuit and closes the client', async () => {
    const other = await another();
    fake.requests.length = 0;
    expect(await disconnect(database.db, config, other.orgId)).toEqual({ revoked: true });
    expect(fake.requests.map((r) => r.path)).toEqual(['/v2/oauth2/tokens/revoke']);
    expect((await clientRow(other.orgId))?.status).toBe('disconnected');
    expect((await refusal(accessToken(database.db, config, other.orgId))).code).toBe('CLIENT_NOT_FOUND');
    // Another firm cannot take the company over, even with an authorization that reaches it; it is revoked.
    const stranger = await createLedgerFixture(database.db);
    const revocations = fake.revocations.length;
    expect((await refusal(connect(stranger.orgId, stranger.firmId, other.realmId))).code).toBe('QBO_COMPANY_TAKEN');
    expect(fake.revocations).toHaveLength(revocations + 1);
    expect(await stored(stranger.orgId)).toBeUndefined();
    expect(await stored(other.orgId)).toMatchObject({ realm_id: other.realmId, status: 'disconnected' });
    // Another organization of the same firm can, and the first is back on its own books.
    const [next] = await database.db
      .insert(organizations)
      .values({ firmId: other.firmId, name: 'Next client' })
      .returning({ id: organizations.id });
    const nextId = (next as { id: string }).id;
    await connect(nextId, other.firmId, other.realmId);
    expect(await clientRow(other.orgId)).toMatchObject({ platform: 'embedded', acct_company_id: other.orgId });
    expect(await clientRow(nextId)).toMatchObject({ platform: 'qbo', acct_company_id: other.realmId });
  });
});

describe('the HTTP client', () => {
  it('pins the minor version on every request and sends one requestid per write', async () => {
    await platform().get('Customer', '8');
    await platform().create('Customer', { DisplayName: 'Pinned Co' });
    expect(fake.requests.every((r) => r.query.minorversion === '75')).toBe(true);
    const writes = fake.requests.filter((r) => r.method === 'POST');
    expect(writes).toHaveLength(1);
    expect(writes[0]?.query.requestid).toMatch(/^[0-9a-f-]{36}$/);
    expect(fake.requests.filter((r) => r.method === 'GET').every((r) => r.query.requestid === undefined)).toBe(true);
  });

  it('a write whose answer was lost is retried with the same requestid and creates one record', async () => {
    const before = fake.count('Customer');
    fake.inject({ kind: 'drop-after' }, (r) => r.method === 'POST' && r.path.endsWith('/customer'));
    const { record } = await platform().create('Customer', { DisplayName: 'Lost Answer Ltd' });
    expect(record).toMatchObject({ DisplayName: 'Lost Answer Ltd', SyncToken: '0' });
    expect(fake.count('Customer')).toBe(before + 1);
    const sent = fake.requests.filter((r) => r.method === 'POST');
    expect(sent).toHaveLength(2);
    expect(sent[0]?.query.requestid).toBe(sent[1]?.query.requestid);
  });

  it('retries 5xx and dropped connections, then succeeds', async () => {
    fake.inject({ kind: 'status', status: 503 }, (r) => r.path.endsWith('/customer/8'));
    fake.inject({ kind: 'drop-before' }, (r) => r.path.endsWith('/customer/8'));
    await expect(platform().get('Customer', '8')).resolves.toMatchObject({ Id: '8' });
    expect(fake.requests.filter((r) => r.path.endsWith('/customer/8'))).toHaveLength(3);
  });

  it('waits out a 429 with Retry-After, backs off from one without, and gives up with RATE_LIMITED', async () => {
    const match = (r: { path: string }) => r.path.endsWith('/customer/8');
    fake.inject({ kind: 'status', status: 429, headers: { 'retry-after': '1' } }, match);
    const started = Date.now();
    await expect(platform().get('Customer', '8')).resolves.toMatchObject({ Id: '8' });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);

    fake.inject({ kind: 'status', status: 429 }, match);
    await expect(platform().get('Customer', '8')).resolves.toMatchObject({ Id: '8' });

    fake.inject({ kind: 'status', status: 429, headers: { 'retry-after': '120' } }, match, 10);
    const err = await refusal(platform().get('Customer', '8'));
    expect(err.code).toBe('RATE_LIMITED');
    expect(err.details?.[0]).toMatchObject({ retryAfterSeconds: 120 });
  });

  it("maps each Fault kind to the gateway's errors, with QBO's code and detail", async () => {
    const kinds: [string, string][] = [
      ['exquickbooks.610_object_not_found.body.json', 'RECORD_NOT_FOUND'],
      ['exquickbooks.5010_stale_object_item_update.body.json', 'STALE_SYNC_TOKEN'],
      ['exquickbooks.2020_required_param_missing_name.body.json', 'VALIDATION_ERROR'],
      ['exquickbooks.4000_query_parser_error.body.json', 'QUERY_INVALID'],
    ];
    for (const [file, code] of kinds) {
      fake.inject({ kind: 'fault', file }, (r) => r.path.endsWith('/customer/8'));
      const err = await refusal(http().request({ method: 'GET', path: 'customer/8' }));
      expect(err.code, file).toBe(code);
      expect(err.details?.[0]).toMatchObject({ platform: 'qbo', platformCode: expect.stringMatching(/^\d+$/) });
    }
    fake.inject(
      {
        kind: 'status',
        status: 400,
        body: { Fault: { Error: [{ Message: 'Duplicate Name Exists Error', code: '6240' }], type: 'ValidationFault' } },
      },
      (r) => r.method === 'POST',
    );
    expect((await refusal(platform().create('Customer', { DisplayName: 'Twice' }))).code).toBe('CONFLICT');
    const inline = async (status: number, type: string, code: string) => {
      const body = { Fault: { Error: [{ Message: `fault ${code}`, Detail: 'detail', code }], type } };
      fake.inject({ kind: 'status', status, body }, (r) => r.path.endsWith('/customer/8'));
      return refusal(http().request({ method: 'GET', path: 'customer/8' }));
    };
    expect((await inline(400, 'ValidationFault', '500')).code).toBe('OPERATION_NOT_SUPPORTED');
    expect((await inline(400, 'ValidationFault', '2030')).code).toBe('VALIDATION_ERROR');
    const forbidden = await inline(403, 'AuthorizationFault', '003100');
    expect(forbidden.code).toBe('FORBIDDEN');
    expect(forbidden.details?.[0]).toMatchObject({ platformCode: '003100', message: 'detail' });
    fake.inject(
      {
        kind: 'status',
        status: 500,
        body: { Fault: { Error: [{ Message: 'boom', code: '10000' }], type: 'SystemFault' } },
      },
      () => true,
      10,
    );
    expect((await refusal(http().request({ method: 'GET', path: 'customer/8' }))).code).toBe('SERVICE_UNAVAILABLE');
  });
});

describe('the adapter', () => {
  it('refuses a stale SyncToken with the current record, and a dry run sends no write', async () => {
    const { record } = await platform().create('Customer', { DisplayName: 'Sync Co' });
    const updated = await platform().update('Customer', record.Id, { SyncToken: '0', CompanyName: 'Sync Co Ltd' });
    expect(updated.record).toMatchObject({ SyncToken: '1', CompanyName: 'Sync Co Ltd', DisplayName: 'Sync Co' });
    const stale = await refusal(platform().update('Customer', record.Id, { SyncToken: '0', CompanyName: 'Late' }));
    expect(stale.code).toBe('STALE_SYNC_TOKEN');
    expect(stale.details?.[0]).toMatchObject({ current: { Id: record.Id, SyncToken: '1' } });

    fake.requests.length = 0;
    const dry = await platform(true).update('Customer', record.Id, { SyncToken: '1', CompanyName: 'Dry' });
    expect(dry.record).toMatchObject({ CompanyName: 'Dry' });
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
    expect(fake.record('Customer', record.Id)).toMatchObject({ CompanyName: 'Sync Co Ltd', SyncToken: '1' });
  });

  it('keeps every filter on every page of a query', async () => {
    for (const name of ['Page A', 'Page B', 'Page C']) await platform().create('Vendor', { DisplayName: name });
    const q = {
      entity: 'Vendor',
      select: '*' as const,
      where: [{ field: 'DisplayName', op: 'LIKE' as const, value: 'Page%' }],
      orderBy: [],
      startPosition: 2,
      maxResults: 1,
    };
    const page = await platform().query(q);
    expect(page.QueryResponse).toMatchObject({ startPosition: 2, maxResults: 1, totalCount: 3 });
    expect((page.QueryResponse.Vendor as { DisplayName: string }[])[0]?.DisplayName).toBe('Page B');
    const texts = fake.requests.filter((r) => r.path.endsWith('/query')).map((r) => r.query.query);
    expect(texts).toEqual([
      "SELECT * FROM Vendor WHERE DisplayName LIKE 'Page%' STARTPOSITION 2 MAXRESULTS 1",
      "SELECT COUNT(*) FROM Vendor WHERE DisplayName LIKE 'Page%'",
    ]);
    expect(queryText({ ...q, where: [{ field: 'DisplayName', op: '=', value: "O'Brien \\ Sons" }] })).toContain(
      "DisplayName = 'O\\'Brien \\\\ Sons'",
    );
  });

  it('passes reports through whole', async () => {
    const report = await platform().report('profit-loss', { startDate: '2023-01-01', endDate: '2023-12-31' });
    expect(report).toMatchObject({ Header: { ReportName: 'ProfitAndLoss' } });
    const sent = fake.requests.find((r) => r.path.endsWith('/reports/ProfitAndLoss'));
    expect(sent?.query).toMatchObject({ start_date: '2023-01-01', end_date: '2023-12-31', minorversion: '75' });
  });

  it('returns every row of a long report, none cut off', async () => {
    fake.generalLedgerRows = 1500;
    const report = (await platform().report('general-ledger', { startDate: '2023-01-01', endDate: '2023-12-31' })) as {
      Rows: { Row: unknown[] };
    };
    expect(report.Rows.Row).toHaveLength(1500);
    fake.generalLedgerRows = 0;
  });

  it('records lastSyncAt on the client after a successful call', async () => {
    await database.db.execute(sql`update acct_clients set last_sync_at = null where organization_id = ${f.orgId}`);
    await platform().get('Customer', '8');
    expect((await clientRow(f.orgId))?.last_sync_at).not.toBeNull();
  });
});

describe('the per-company limits', () => {
  it('lets ten requests run at once per company and makes the eleventh wait', async () => {
    const limiter = inProcessLimiter();
    const releases = await Promise.all(Array.from({ length: 10 }, () => limiter.acquire('r1')));
    let eleventh = false;
    const waiting = limiter.acquire('r1').then((release) => {
      eleventh = true;
      return release;
    });
    await new Promise((r) => setTimeout(r, 30));
    expect(eleventh).toBe(false);
    (await limiter.acquire('r2'))(); // another company is not held up
    releases[0]?.();
    (await waiting)();
    expect(eleventh).toBe(true);
    for (const release of releases) release();
  });

  it.skipIf(!hasRedis)('shares the counts between processes through Redis', async () => {
    const a = new Redis('redis://127.0.0.1:6379');
    const b = new Redis('redis://127.0.0.1:6379');
    const realm = `test-${Date.now()}`;
    try {
      const one = redisLimiter(a, { perMinute: 500, concurrent: 2 });
      const two = redisLimiter(b, { perMinute: 500, concurrent: 2 });
      const held = [await one.acquire(realm), await two.acquire(realm)];
      let third = false;
      const waiting = two.acquire(realm).then((release) => {
        third = true;
        return release;
      });
      await new Promise((r) => setTimeout(r, 150));
      expect(third).toBe(false);
      held[0]?.();
      (await waiting)();
      expect(third).toBe(true);
      held[1]?.();
      const perMinute = redisLimiter(a, { perMinute: 3, concurrent: 10 });
      for (let i = 0; i < 3; i++) (await perMinute.acquire(`${realm}-m`))();
      let fourth = false;
      void perMinute.acquire(`${realm}-m`).then(() => {
        fourth = true;
      });
      await new Promise((r) => setTimeout(r, 150));
      expect(fourth).toBe(false);
    } finally {
      a.disconnect();
      b.disconnect();
    }
  });
});

describe('configuration', () => {
  it("defaults to the endpoints of Intuit's discovery document", () => {
    const discovery = JSON.parse(
      readFileSync(join(import.meta.dirname, 'testdata/oauth/dotnet_sdk.discovery_document.json'), 'utf8'),
    ) as Record<string, string>;
    const c = qboConfigFrom({ QBO_CLIENT_ID: 'x', QBO_CLIENT_SECRET: 'y', QBO_REDIRECT_URI: 'https://a/cb' });
    expect(c).toMatchObject({
      authorizeUrl: discovery.authorization_endpoint,
      tokenUrl: discovery.token_endpoint,
      revokeUrl: discovery.revocation_endpoint,
    });
  });

  it("is off without QBO_CLIENT_ID, refuses half a configuration, and defaults to Intuit's sandbox", () => {
    expect(qboConfigFrom({})).toBeNull();
    expect(() => qboConfigFrom({ QBO_CLIENT_ID: 'x' })).toThrow(/QBO_CLIENT_SECRET, QBO_REDIRECT_URI/);
    expect(() =>
      qboConfigFrom(
        { QBO_CLIENT_ID: 'x', QBO_CLIENT_SECRET: 'y', QBO_REDIRECT_URI: 'https://a/cb' },
        { production: true },
      ),
    ).toThrow(/QBO_TOKEN_ENCRYPTION_KEY/);
    const c = qboConfigFrom({ QBO_CLIENT_ID: 'x', QBO_CLIENT_SECRET: 'y', QBO_REDIRECT_URI: 'https://a/cb' });
    expect(c).toMatchObject({
      environment: 'sandbox',
      apiBaseUrl: 'https://sandbox-quickbooks.api.intuit.com',
      tokenUrl: 'https://oauth.platform.intuit.com/oauth2/v1/tokens/bearer',
    });
    expect(
      qboConfigFrom({
        QBO_CLIENT_ID: 'x',
        QBO_CLIENT_SECRET: 'y',
        QBO_REDIRECT_URI: 'https://a/cb',
        QBO_ENVIRONMENT: 'production',
      })?.apiBaseUrl,
    ).toBe('https://quickbooks.api.intuit.com');
    expect(() =>
      qboConfigFrom({
        QBO_CLIENT_ID: 'x',
        QBO_CLIENT_SECRET: 'y',
        QBO_REDIRECT_URI: 'https://a/cb',
        QBO_ENVIRONMENT: 'dev',
      }),
    ).toThrow();
  });
});

describe('Attachables on a QBO company', () => {
  /** Files received for the client: an id and its bytes, as the attachments store would hand them over. */
  const received = new Map<string, { fileName: string; contentType: string; bytes: Buffer }>();
  const files: QboFiles = {
    open: async (id) => {
      const file = received.get(id);
      return file ? { ...file, sizeBytes: file.bytes.length, bytes: async () => file.bytes } : null;
    },
  };
  const receive = (fileName: string, text: string) => {
    const id = randomUUID();
    received.set(id, { fileName, contentType: 'text/plain', bytes: Buffer.from(text) });
    return id;
  };
  const uploader = (options: { dryRun?: boolean; requestKey?: string } = {}) =>
    createQboPlatform(http(), { realmId: fake.realmId, files, ...options });
  const onInvoice = [{ EntityRef: { type: 'Invoice', value: '130' } }];
  const uploads = () => fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/upload'));

  it('uploads the received file with its AttachableRef, and reads the Attachable back', async () => {
    const id = receive('receipt.txt', 'Receipt: paper, $12.00');
    const { record } = await uploader().create('Attachable', { Id: id, AttachableRef: onInvoice, Note: 'paper' });
    expect(record).toMatchObject({
      SyncToken: '0',
      FileName: 'receipt.txt',
      ContentType: 'text/plain',
      Size: 22,
      Note: 'paper',
      AttachableRef: [{ EntityRef: { type: 'Invoice', value: '130' } }],
    });
    expect(fake.uploaded(record.Id)?.[1]?.bytes.toString()).toBe('Receipt: paper, $12.00');
    expect(uploads()[0]?.query.requestid).toMatch(/^[0-9a-f-]{36}$/);
    await expect(uploader().get('Attachable', record.Id)).resolves.toEqual(record);
  });

  it('a repeated request id answers with the Attachable QBO kept: one upload, one Attachable', async () => {
    const id = receive('twice.txt', 'sent twice');
    const before = fake.count('Attachable');
    const first = await uploader({ requestKey: 'key-twice' }).create('Attachable', {
      Id: id,
      AttachableRef: onInvoice,
    });
    const again = await uploader({ requestKey: 'key-twice' }).create('Attachable', {
      Id: id,
      AttachableRef: onInvoice,
    });
    expect(again.record).toEqual(first.record);
    expect(fake.count('Attachable')).toBe(before + 1);
    const [a, b] = uploads();
    expect(a?.query.requestid).toBe(b?.query.requestid);
    const other = await uploader({ requestKey: 'key-other' }).create('Attachable', {
      Id: id,
      AttachableRef: onInvoice,
    });
    expect(other.record.Id).not.toBe(first.record.Id);
  });

  it('retries an upload after a 503 and after a lost answer, creating exactly one Attachable', async () => {
    const id = receive('retried.txt', 'retried bytes');
    const before = fake.count('Attachable');
    fake.inject({ kind: 'status', status: 503 }, (r) => r.path.endsWith('/upload'));
    fake.inject({ kind: 'drop-after' }, (r) => r.path.endsWith('/upload'));
    const { record } = await uploader().create('Attachable', { Id: id, AttachableRef: onInvoice });
    expect(fake.count('Attachable')).toBe(before + 1);
    expect(uploads()).toHaveLength(3);
    expect(new Set(uploads().map((r) => r.query.requestid)).size).toBe(1);
    // Each attempt sent the whole file again.
    expect(uploads().every((r) => JSON.stringify(r.body).includes('"size":13'))).toBe(true);
    expect(fake.uploaded(record.Id)?.[1]?.bytes.toString()).toBe('retried bytes');
  });

  it("maps QBO's Fault in the upload's answer, and a 400 Fault, to the gateway's errors", async () => {
    const id = receive('orphan.txt', 'no such estimate');
    const before = fake.count('Attachable');
    // QBO's recorded answer for a record that does not exist: HTTP 200 with a ValidationFault 6000 in the item.
    const missing = await refusal(
      uploader().create('Attachable', { Id: id, AttachableRef: [{ EntityRef: { type: 'Estimate', value: '75' } }] }),
    );
    expect(missing.code).toBe('VALIDATION_ERROR');
    expect(missing.details?.[0]).toMatchObject({
      platform: 'qbo',
      platformCode: '6000',
      message: expect.stringContaining('Estimate 75'),
    });
    fake.inject(
      {
        kind: 'status',
        status: 400,
        body: { Fault: { Error: [{ Message: 'Duplicate', code: '6240' }], type: 'ValidationFault' } },
      },
      (r) => r.path.endsWith('/upload'),
    );
    expect((await refusal(uploader().create('Attachable', { Id: id, AttachableRef: onInvoice }))).code).toBe(
      'CONFLICT',
    );
    expect(fake.count('Attachable')).toBe(before);
  });

  it('refuses a missing or unknown file and a bad AttachableRef before sending anything', async () => {
    const id = receive('checked.txt', 'checked');
    const noId = await refusal(uploader().create('Attachable', { AttachableRef: onInvoice }));
    expect([noId.code, noId.details?.[0]?.field]).toEqual(['VALIDATION_ERROR', 'payload.Id']);
    const noRef = await refusal(uploader().create('Attachable', { Id: id }));
    expect([noRef.code, noRef.details?.[0]?.field]).toEqual(['VALIDATION_ERROR', 'payload.AttachableRef']);
    const badRef = await refusal(uploader().create('Attachable', { Id: id, AttachableRef: [{ EntityRef: {} }] }));
    expect(badRef.details?.[0]?.field).toBe('payload.AttachableRef[0].EntityRef');
    const unknown = await refusal(uploader().create('Attachable', { Id: randomUUID(), AttachableRef: onInvoice }));
    expect(unknown.code).toBe('RECORD_NOT_FOUND');
    expect(fake.requests).toHaveLength(0);
  });

  it('a dry run checks the file and sends nothing', async () => {
    const id = receive('dry.txt', 'dry run');
    const before = fake.count('Attachable');
    const { record } = await uploader({ dryRun: true }).create('Attachable', { Id: id, AttachableRef: onInvoice });
    expect(record).toMatchObject({ Id: '', FileName: 'dry.txt', Size: 7, AttachableRef: onInvoice });
    expect(fake.requests).toHaveLength(0);
    expect(fake.count('Attachable')).toBe(before);
    const unknown = await refusal(
      uploader({ dryRun: true }).create('Attachable', { Id: randomUUID(), AttachableRef: onInvoice }),
    );
    expect(unknown.code).toBe('RECORD_NOT_FOUND');
  });

  it('without the client’s files, refuses to create one and sends nothing', async () => {
    const refused = await refusal(
      platform().create('Attachable', { Id: '1', AttachableRef: [{ EntityRef: { type: 'Invoice', value: '1' } }] }),
    );
    expect(refused.code).toBe('OPERATION_NOT_SUPPORTED');
    expect(fake.requests).toHaveLength(0);
  });
});
