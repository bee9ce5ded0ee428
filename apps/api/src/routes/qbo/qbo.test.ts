import { receiptPdf } from '@firm/attachments/testing';
import { rowsOf } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { createLedgerFixture } from '@firm/ledger/testing';
import { FakeQbo } from '@firm/qbo/testing/fake-qbo';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
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
const asUser = async (jar: CookieJar, organizationId = t.orgId) => ({
  ...jar.header(),
  'x-csrf-token': await csrfOf(jar),
  'x-organization-id': organizationId,
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
const realmRows = async (realmId: string) =>
  rowsOf<Record<string, unknown>>(
    await t.database.db.execute(sql`select organization_id, firm_id, realm_id, status, version, access_token
      from qbo_connections where realm_id = ${realmId}`),
  );
/** Starts a connection as `jar` for `organizationId` and comes back from Intuit with `code` and `realmId`. */
async function connectAs(jar: CookieJar, organizationId: string, code: string, realmId: string) {
  const started = await start(await asUser(jar, organizationId));
  expect(started.statusCode).toBe(201);
  return callback({ state: stateOf(started.json().data.authorizationUrl), code, realmId }, jar);
}
/** The tokens revoked at Intuit while `run` ran. */
async function revokedDuring(run: () => Promise<unknown>): Promise<string[]> {
  const before = fake.revocations.length;
  await run();
  return fake.revocations.slice(before);
}

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
    expect(anonymous.statusCode).toBe(401);
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
    // The company was confirmed with the new token before anything was stored.
    expect(fake.requests).toContainEqual(
      expect.objectContaining({
        method: 'GET',
        path: `/v3/company/${fake.realmId}/companyinfo/${fake.realmId}`,
        query: expect.objectContaining({ minorversion: expect.any(String) }),
      }),
    );
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

  it("uploads a received file to QBO as an Attachable, once per Idempotency-Key; another firm's file is 404", async () => {
    /** A file received into a company's own store, as an agent or a person sends one. */
    const receive = async (headers: Record<string, string>, fileName: string, text: string) => {
      const bytes = await receiptPdf(text, 4_000);
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/v1/attachments/inline',
        headers: { ...headers, 'idempotency-key': `receive-${fileName}` },
        payload: { fileName, contentBase64: bytes.toString('base64') },
      });
      expect(res.statusCode, res.body).toBe(201);
      return { id: res.json().data.id as string, bytes };
    };
    const attach = (payload: object, key: string, query = '') =>
      t.app.inject({
        method: 'POST',
        url: `${client()}/entities/Attachable${query}`,
        headers: { ...t.auth, 'idempotency-key': key },
        payload,
      });
    const file = await receive(t.orgHeaders, 'qbo-receipt.pdf', 'Receipt: QuickBooks paper, $30.00');
    const ref = { EntityRef: { type: 'Invoice', value: '130' } };
    const before = fake.count('Attachable');
    fake.requests.length = 0;

    const dry = await attach({ Id: file.id, AttachableRef: [ref] }, 'qbo-attach-dry', '?dryRun=true');
    expect(dry.statusCode, dry.body).toBe(200);
    expect(dry.json().data).toMatchObject({ FileName: 'qbo-receipt.pdf', Size: file.bytes.length });
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);

    fake.inject({ kind: 'drop-after' }, (r) => r.method === 'POST' && r.path.endsWith('/upload'));
    const first = await attach({ Id: file.id, AttachableRef: [ref] }, 'qbo-attach-1');
    expect(first.statusCode, first.body).toBe(201);
    const created = first.json().data;
    expect(created).toMatchObject({
      FileName: 'qbo-receipt.pdf',
      ContentType: 'application/pdf',
      Size: file.bytes.length,
      AttachableRef: [{ ...ref, IncludeOnSend: false }],
    });
    const again = await attach({ Id: file.id, AttachableRef: [ref] }, 'qbo-attach-1');
    expect(again.json()).toEqual(first.json());
    expect(fake.count('Attachable')).toBe(before + 1);
    expect(
      fake
        .uploaded(created.Id)
        ?.find((p) => p.name === 'file_content_01')
        ?.bytes.equals(file.bytes),
    ).toBe(true);
    const read = await t.app.inject({
      method: 'GET',
      url: `${client()}/entities/Attachable/${created.Id}`,
      headers: t.auth,
    });
    expect(read.json().data).toEqual(created);

    fake.requests.length = 0;
    const noFile = await attach({ AttachableRef: [ref] }, 'qbo-attach-no-file');
    expect([noFile.statusCode, noFile.json().error.details[0].field]).toEqual([400, 'payload.Id']);
    const other = await createOtherFirm(t.database.db, 'qbo-attachable-other');
    const foreign = await receive(
      { authorization: other.authorization, 'x-organization-id': other.orgId },
      'theirs.pdf',
      'Their receipt',
    );
    const linkForeign = await attach({ Id: foreign.id, AttachableRef: [ref] }, 'qbo-attach-foreign');
    expect([linkForeign.statusCode, linkForeign.json().error.code]).toEqual([404, 'RECORD_NOT_FOUND']);
    expect(fake.requests.filter((r) => r.method === 'POST')).toHaveLength(0);
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

describe("claiming another firm's QuickBooks company", () => {
  let firmB: { firmId: string; orgId: string; owner: CookieJar };
  let realmA: string;
  let realmB: string;
  /** An organization of the demo firm (A) that is not connected yet. */
  const orgA = () => t.demo.organizations[1]?.id as string;

  beforeAll(async () => {
    const b = await createLedgerFixture(t.database.db);
    await addUser(t.database.db, b.firmId, 'owner', 'owner@firm-b.test');
    firmB = { firmId: b.firmId, orgId: b.orgId, owner: await signIn(t.app, 'owner@firm-b.test') };
    realmA = fake.newRealm();
    realmB = fake.newRealm();
  });

  it("refuses A's own authorization sent back with B's company id: nothing stored, the tokens revoked", async () => {
    let page: Awaited<ReturnType<typeof callback>> | undefined;
    const revoked = await revokedDuring(async () => {
      page = await connectAs(owner, orgA(), fake.issueCode(realmA), realmB);
    });
    expect(page?.statusCode).toBe(400);
    expect(page?.headers['content-type']).toMatch(/text\/html/);
    expect(page?.body).toContain('did not confirm');
    expect(fake.requests).toContainEqual(
      expect.objectContaining({ path: `/v3/company/${realmB}/companyinfo/${realmB}` }),
    );
    expect(revoked).toHaveLength(1);
    expect(fake.isLive(revoked[0] as string)).toBe(false);
    expect(await realmRows(realmB)).toEqual([]);
    expect(await realmRows(realmA)).toEqual([]);

    // B, whose company it is, then connects it.
    const own = await connectAs(firmB.owner, firmB.orgId, fake.issueCode(realmB), realmB);
    expect(own.statusCode).toBe(200);
    expect(await realmRows(realmB)).toEqual([
      expect.objectContaining({ organization_id: firmB.orgId, firm_id: firmB.firmId, status: 'connected' }),
    ]);

    // Against B's live connection, the same trick is refused the same way, and B's row is untouched.
    const [before] = await realmRows(realmB);
    const again = await connectAs(owner, orgA(), fake.issueCode(realmA), realmB);
    expect(again.statusCode).toBe(400);
    expect(await realmRows(realmB)).toEqual([before]);
  });

  it("refuses a company B holds even with an authorization that reaches it, without naming B; B's row is intact", async () => {
    const [before] = await realmRows(realmB);
    expect(before).toMatchObject({ organization_id: firmB.orgId, status: 'connected' });
    let page: Awaited<ReturnType<typeof callback>> | undefined;
    const revoked = await revokedDuring(async () => {
      page = await connectAs(owner, orgA(), fake.issueCode(realmB), realmB);
    });
    expect(page?.statusCode).toBe(409);
    expect(page?.body).toContain('held by another connection');
    expect(page?.body).not.toContain(firmB.orgId);
    expect(page?.body).not.toContain(firmB.firmId);
    expect(revoked).toHaveLength(1);
    expect(fake.isLive(revoked[0] as string)).toBe(false);
    expect(await realmRows(realmB)).toEqual([before]);
  });

  it("never takes over or deletes B's disconnected row; B reconnects it", async () => {
    const gone = await t.app.inject({
      method: 'DELETE',
      url: '/api/v1/qbo/connection',
      headers: await asUser(firmB.owner, firmB.orgId),
    });
    expect(gone.statusCode).toBe(200);
    const [disconnected] = await realmRows(realmB);
    expect(disconnected).toMatchObject({ organization_id: firmB.orgId, status: 'disconnected' });

    // With A's own authorization and B's company id, and with one that reaches B's company: both refused.
    const forged = await connectAs(owner, orgA(), fake.issueCode(realmA), realmB);
    expect(forged.statusCode).toBe(400);
    let claim: Awaited<ReturnType<typeof callback>> | undefined;
    const revoked = await revokedDuring(async () => {
      claim = await connectAs(owner, orgA(), fake.issueCode(realmB), realmB);
    });
    expect(claim?.statusCode).toBe(409);
    expect(claim?.body).toContain('held by another connection');
    expect(revoked).toHaveLength(1);
    expect(await realmRows(realmB)).toEqual([disconnected]);
    const clientB = rowsOf(
      await t.database.db.execute(sql`select platform, acct_company_id from acct_clients
        where organization_id = ${firmB.orgId}`),
    );
    expect(clientB).toEqual([{ platform: 'qbo', acct_company_id: realmB }]);
    expect(
      rowsOf(await t.database.db.execute(sql`select 1 from qbo_connections where organization_id = ${orgA()}`)),
    ).toEqual([]);

    const back = await connectAs(firmB.owner, firmB.orgId, fake.issueCode(realmB), realmB);
    expect(back.statusCode).toBe(200);
    expect(await realmRows(realmB)).toEqual([
      expect.objectContaining({ organization_id: firmB.orgId, firm_id: firmB.firmId, status: 'connected' }),
    ]);
  });
});

describe('a connection is begun and finished by one person', () => {
  const org = () => t.demo.organizations[1]?.id as string;
  const states = async () =>
    Number(
      rowsOf<{ n: number }>(await t.database.db.execute(sql`select count(*)::int as n from qbo_oauth_states`))[0]?.n,
    );

  it('refuses an operator key (made without a user), writing no state', async () => {
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, name: 'Operator key' });
    const before = await states();
    const res = await start({ authorization: `Bearer ${key}`, 'x-organization-id': org() });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toMatchObject({ code: 'FORBIDDEN', retryable: false, requestId: expect.any(String) });
    expect(res.json().error.message).toMatch(/begun by a person/);
    expect(await states()).toBe(before);
  });

  it("binds a key's state to the user who made the key: no session is refused and leaves it, another user's too", async () => {
    // The demo key was made by the demo owner.
    const res = await start({ ...t.auth, 'x-organization-id': org() });
    expect(res.statusCode).toBe(201);
    const state = stateOf(res.json().data.authorizationUrl);
    const realmId = fake.newRealm();
    const tokenCalls = () => fake.requests.filter((r) => r.path === '/oauth2/v1/tokens/bearer').length;
    const calls = tokenCalls();

    const anonymous = await callback({ state, code: fake.issueCode(realmId), realmId });
    expect(anonymous.statusCode).toBe(401);
    expect(anonymous.headers['content-type']).toMatch(/text\/html/);
    expect(anonymous.body).toContain('sign in');
    const stranger = await callback({ state, code: fake.issueCode(realmId), realmId }, member);
    expect(stranger.statusCode).toBe(400);
    expect(tokenCalls()).toBe(calls);
    expect(await realmRows(realmId)).toEqual([]);

    // The state was left as it was: its person finishes it.
    const done = await callback({ state, code: fake.issueCode(realmId), realmId }, owner);
    expect(done.statusCode).toBe(200);
    expect(await realmRows(realmId)).toEqual([
      expect.objectContaining({ organization_id: org(), status: 'connected' }),
    ]);
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
