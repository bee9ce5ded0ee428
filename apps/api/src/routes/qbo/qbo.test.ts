import { rowsOf } from '@firm/db';
import { FakeQbo } from '@firm/qbo/testing/fake-qbo';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { addUser, type CookieJar, signIn } from '../oauth/fixtures';

let t: TestApp;
let fake: FakeQbo;
let owner: CookieJar;
let member: CookieJar;

beforeAll(async () => {
  fake = new FakeQbo();
  await fake.start();
  t = await createTestApp({ config: fake.env() });
  await addUser(t.database.db, t.demo.firmId, 'member', 'member@demo-firm.test');
  owner = await signIn(t.app, 'owner@demo-firm.test');
  member = await signIn(t.app, 'member@demo-firm.test');
});
afterAll(async () => {
  await t.close();
  await fake.stop();
});

const csrfOf = async (jar: CookieJar) =>
  (await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() })).json().csrfToken as string;
const asUser = async (jar: CookieJar) => ({
  ...jar.header(),
  'x-csrf-token': await csrfOf(jar),
  'x-organization-id': t.orgId,
});
const start = async (headers: Record<string, string>) =>
  t.app.inject({ method: 'POST', url: '/api/v1/qbo/connection', headers });
const stateOf = (authorizationUrl: string) => new URL(authorizationUrl).searchParams.get('state') as string;
const callback = (query: Record<string, string>, jar?: CookieJar) =>
  t.app.inject({
    method: 'GET',
    url: `/api/qbo/callback?${new URLSearchParams(query)}`,
    headers: jar ? jar.header() : {},
  });
const client = () => `/agent/v1/acct/clients/${t.orgId}`;
const connectionRows = async () =>
  rowsOf(await t.database.db.execute(sql`select * from qbo_connections where organization_id = ${t.orgId}`));

describe('connecting a client to QuickBooks Online', () => {
  it("refuses members, and a callback with a forged, replayed or another user's state, writing nothing", async () => {
    const refused = await start(await asUser(member));
    expect(refused.statusCode).toBe(403);

    const forged = await callback({ state: 'forged', code: fake.issueCode(), realmId: fake.realmId }, owner);
    expect(forged.statusCode).toBe(400);
    expect(forged.headers['content-type']).toMatch(/text\/html/);

    const res = await start(await asUser(owner));
    expect(res.statusCode).toBe(201);
    const state = stateOf(res.json().data.authorizationUrl);
    const stolen = await callback({ state, code: fake.issueCode(), realmId: fake.realmId }, member);
    expect(stolen.statusCode).toBe(400);
    const anonymous = await callback({ state, code: fake.issueCode(), realmId: fake.realmId });
    expect(anonymous.statusCode).toBe(400);
    const declined = await callback({ error: 'access_denied', state });
    expect(declined.statusCode).toBe(400);
    expect(await connectionRows()).toHaveLength(0);
    expect(fake.requests.filter((r) => r.path === '/oauth2/v1/tokens/bearer')).toHaveLength(0);
  });

  it("connects through Intuit's consent and callback; agents then reach the QBO company through the gateway", async () => {
    const res = await start(await asUser(owner));
    const url = new URL(res.json().data.authorizationUrl);
    expect(url.searchParams.get('redirect_uri')).toBe(fake.env().QBO_REDIRECT_URI);
    const state = stateOf(url.toString());
    const done = await callback({ state, code: fake.issueCode(), realmId: fake.realmId }, owner);
    expect(done.statusCode).toBe(200);
    expect(done.body).toContain('QuickBooks connected');
    const replay = await callback({ state, code: fake.issueCode(), realmId: fake.realmId }, owner);
    expect(replay.statusCode).toBe(400);

    const status = await t.app.inject({ method: 'GET', url: '/api/v1/qbo/connection', headers: t.orgHeaders });
    expect(status.json().data).toMatchObject({ organizationId: t.orgId, realmId: fake.realmId, status: 'connected' });
    const listed = await t.app.inject({ method: 'GET', url: '/api/v1/qbo/connections', headers: t.auth });
    expect(listed.json().data.map((c: { realmId: string }) => c.realmId)).toEqual([fake.realmId]);

    const clients = await t.app.inject({ method: 'GET', url: `${client()}`, headers: t.auth });
    expect(clients.json().data).toMatchObject({ acctCompanyId: fake.realmId, status: 'connected' });
    const customer = await t.app.inject({ method: 'GET', url: `${client()}/entities/Customer/8`, headers: t.auth });
    expect(customer.statusCode).toBe(200);
    expect(customer.json().data).toMatchObject({ Id: '8', SyncToken: expect.any(String) });

    // The pass-through reads QBO's v3 paths the same way, confined to this company.
    const relayed = await t.app.inject({
      method: 'POST',
      url: `${client()}/request`,
      headers: t.auth,
      payload: { method: 'GET', path: `/v3/company/${fake.realmId}/customer/8` },
    });
    expect(relayed.statusCode).toBe(200);
    expect(JSON.stringify(relayed.json())).toContain('"Id":"8"');
    const elsewhere = await t.app.inject({
      method: 'POST',
      url: `${client()}/request`,
      headers: t.auth,
      payload: { method: 'GET', path: '/v3/company/123/customer/8' },
    });
    expect(elsewhere.statusCode).toBe(404);
    expect(fake.requests.some((r) => r.path.startsWith('/v3/company/123'))).toBe(false);

    // The health scan reads the QBO client through QBO's API: the recorded company's invoice 130 is long overdue.
    const scan = await t.app.inject({ method: 'GET', url: '/agent/v1/skills/client-health-scan', headers: t.auth });
    const ours = scan.json().data.findings.filter((f: { clientId: string }) => f.clientId === t.orgId);
    expect(ours).toContainEqual(
      expect.objectContaining({
        code: 'AR_OVER_90_DAYS',
        evidence: {
          over90: 362.07,
          customers: [{ customerId: '24', name: 'Sonnenschein Family Store', over90: 362.07 }],
        },
      }),
    );
  });

  it("writes once per Idempotency-Key even when QBO's answer is lost, and a dry run sends nothing", async () => {
    const before = fake.count('Customer');
    fake.requests.length = 0;
    const dry = await t.app.inject({
      method: 'POST',
      url: `${client()}/entities/Customer?dryRun=true`,
      headers: { ...t.auth, 'idempotency-key': 'qbo-dry-1' },
      payload: { DisplayName: 'Dry Run Ltd' },
    });
    expect(dry.statusCode).toBe(200);
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);

    fake.inject({ kind: 'drop-after' }, (r) => r.method === 'POST' && r.path.endsWith('/customer'));
    const send = () =>
      t.app.inject({
        method: 'POST',
        url: `${client()}/entities/Customer`,
        headers: { ...t.auth, 'idempotency-key': 'qbo-create-1' },
        payload: { DisplayName: 'Once Only Ltd' },
      });
    const first = await send();
    expect(first.statusCode).toBe(201);
    const again = await send();
    expect(again.json()).toEqual(first.json());
    expect(fake.count('Customer')).toBe(before + 1);
    const ids = new Set(fake.requests.filter((r) => r.method === 'POST').map((r) => r.query.requestid));
    expect(ids.size).toBe(1);
  });

  it('maps a stale SyncToken to 409 with the current record, and throttling to 429 with Retry-After', async () => {
    const stale = await t.app.inject({
      method: 'PATCH',
      url: `${client()}/entities/Customer/8`,
      headers: { ...t.auth, 'idempotency-key': 'qbo-stale-1' },
      payload: { SyncToken: '999', CompanyName: 'Late' },
    });
    expect([stale.statusCode, stale.json().error.code]).toEqual([409, 'STALE_SYNC_TOKEN']);
    expect(stale.json().error.details[0].current).toMatchObject({ Id: '8' });

    fake.inject(
      { kind: 'status', status: 429, headers: { 'retry-after': '90' } },
      (r) => r.path.includes('/customer/'),
      10,
    );
    const throttled = await t.app.inject({ method: 'GET', url: `${client()}/entities/Customer/8`, headers: t.auth });
    expect(throttled.statusCode).toBe(429);
    expect(throttled.headers['retry-after']).toBe('90');
    expect(throttled.json().error).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
    fake.clearInjections();
  });

  it('a revoked authorization leaves the client needs_reauth with a clear error; disconnecting revokes it', async () => {
    fake.revokeRefreshTokens(fake.realmId);
    await t.database.db.execute(sql`update qbo_connections set access_expires_at = now() - interval '1 minute'
      where organization_id = ${t.orgId}`);
    const res = await t.app.inject({ method: 'GET', url: `${client()}/entities/Customer/8`, headers: t.auth });
    expect([res.statusCode, res.json().error.code]).toEqual([409, 'CLIENT_NEEDS_REAUTH']);
    const listed = await t.app.inject({ method: 'GET', url: `${client()}`, headers: t.auth });
    expect(listed.json().data.status).toBe('needs_reauth');
    const scan = await t.app.inject({ method: 'GET', url: '/agent/v1/skills/client-health-scan', headers: t.auth });
    expect(scan.json().data.findings).toContainEqual(
      expect.objectContaining({
        clientId: t.orgId,
        code: 'CLIENT_UNREACHABLE',
        evidence: expect.objectContaining({ error: 'CLIENT_NEEDS_REAUTH' }),
      }),
    );

    const refused = await t.app.inject({
      method: 'DELETE',
      url: '/api/v1/qbo/connection',
      headers: await asUser(member),
    });
    expect(refused.statusCode).toBe(403);
    const gone = await t.app.inject({ method: 'DELETE', url: '/api/v1/qbo/connection', headers: t.orgHeaders });
    expect(gone.statusCode).toBe(200);
    expect(gone.json().data.connection.status).toBe('disconnected');
    expect(fake.requests.at(-1)?.path).toBe('/v2/oauth2/tokens/revoke');
  });
});

describe('without QuickBooks configured', () => {
  it('answers 503 to a connection and to the callback', async () => {
    const plain = await createTestApp();
    try {
      const res = await plain.app.inject({ method: 'POST', url: '/api/v1/qbo/connection', headers: plain.orgHeaders });
      expect([res.statusCode, res.json().error.code]).toEqual([503, 'SERVICE_UNAVAILABLE']);
      const page = await plain.app.inject({ method: 'GET', url: '/api/qbo/callback?state=x&code=y&realmId=1' });
      expect(page.statusCode).toBe(503);
    } finally {
      await plain.close();
    }
  });
});
