import { oauthCodes, oauthGrants, oauthTokens } from '@firm/db';
import { hashSecret, type OAuthClient, revokeOAuthClient } from '@firm/identity';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import {
  addUser,
  authorizeParams,
  authorizeUrl,
  bearer,
  type CookieJar,
  connect,
  FORM,
  form,
  hiddenFields,
  pkce,
  registerClient,
  signIn,
  tokenRequest,
  exchangeCode,
  freshCodeFor,
} from './fixtures';

/** Attacks on the OAuth flow from the outside: replays, crossed clients, near-miss redirect URIs, bad PKCE. */

let t: TestApp;
let owner: CookieJar;
let confidential: { client: OAuthClient; secret: string };
let publicClient: { client: OAuthClient; secret: null };

beforeAll(async () => {
  t = await createTestApp({ config: { OAUTH_TOKEN_RATE_LIMIT_MAX: 1000 } });
  owner = await signIn(t.app, 'owner@demo-firm.test');
  confidential = (await registerClient(t.database.db)) as typeof confidential;
  publicClient = (await registerClient(t.database.db, {
    isPublic: true,
    name: 'Desktop MCP client',
    redirectUris: ['http://127.0.0.1:33418/callback'],
  })) as typeof publicClient;
});
afterAll(() => t.close());

const basic = (c: { client: OAuthClient; secret: string } = confidential) => ({
  clientId: c.client.clientId,
  secret: c.secret,
});
const companies = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/companies', headers: bearer(token) });
const refresh = (token: string, auth = basic()) =>
  tokenRequest(t.app, { grant_type: 'refresh_token', refresh_token: token }, auth);

/** A fresh code of the confidential client (or another), with its verifier. */
const freshCode = (client: OAuthClient = confidential.client) => freshCodeFor(t.app, owner, client);
const exchange = (c: { code: string; verifier?: string; redirectUri?: string }, auth = basic()) =>
  exchangeCode(t.app, c, auth);

function expectOAuthError(
  res: { statusCode: number; json(): unknown; headers: Record<string, unknown> },
  error: string,
  status?: number,
) {
  expect(res.statusCode, JSON.stringify(res.json())).toBeGreaterThanOrEqual(400);
  if (status) expect(res.statusCode).toBe(status);
  expect(res.json()).toMatchObject({ error });
  expect(res.headers['cache-control']).toBe('no-store');
}

const tokenCount = async () => (await t.database.db.select({ n: count() }).from(oauthTokens))[0]?.n ?? 0;
const codeCount = async () => (await t.database.db.select({ n: count() }).from(oauthCodes))[0]?.n ?? 0;

describe('code replay', () => {
  it('after the tokens were refreshed: the replay still revokes the whole family, refreshed tokens included', async () => {
    const c = await freshCode();
    const first = (await exchange(c)).json();
    const second = (await refresh(first.refresh_token)).json();
    expect((await companies(second.access_token)).statusCode).toBe(200);
    expectOAuthError(await exchange(c), 'invalid_grant', 400);
    expect((await companies(second.access_token)).statusCode).toBe(401);
    expectOAuthError(await refresh(second.refresh_token), 'invalid_grant');
  });

  it('two exchanges of one code at once: at most one answer carries tokens, and none of them work', async () => {
    const c = await freshCode();
    const results = await Promise.all([exchange(c), exchange(c), exchange(c)]);
    const ok = results.filter((r) => r.statusCode === 200);
    expect(ok.length).toBeLessThanOrEqual(1);
    for (const r of results.filter((x) => x.statusCode !== 200)) expectOAuthError(r, 'invalid_grant');
    if (ok.length === 1) {
      // the losers' replay revoked the family, so the winner's tokens are dead too
      expect((await companies(ok[0]?.json().access_token)).statusCode).toBe(401);
    }
  });

  it('a code presented by another client is refused and does not burn the family of its owner', async () => {
    const c = await freshCode();
    const other = (await registerClient(t.database.db)) as { client: OAuthClient; secret: string };
    expectOAuthError(await exchange(c, basic(other)), 'invalid_grant', 400);
    expectOAuthError(
      await tokenRequest(t.app, {
        grant_type: 'authorization_code',
        code: c.code,
        code_verifier: c.verifier,
        redirect_uri: c.redirectUri,
        client_id: publicClient.client.clientId,
      }),
      'invalid_grant',
    );
    expect((await exchange(c)).statusCode).toBe(200);
  });
});

describe('refresh tokens across clients and kinds', () => {
  it('a refresh token of client A presented by client B (confidential or public) is invalid_grant, A keeps working', async () => {
    const tokens = await connect(t.app, owner, confidential);
    const other = (await registerClient(t.database.db)) as { client: OAuthClient; secret: string };
    const before = await tokenCount();
    expectOAuthError(await refresh(tokens.refresh_token, basic(other)), 'invalid_grant', 400);
    expectOAuthError(
      await tokenRequest(t.app, {
        grant_type: 'refresh_token',
        refresh_token: tokens.refresh_token,
        client_id: publicClient.client.clientId,
      }),
      'invalid_grant',
    );
    expect(await tokenCount()).toBe(before);
    expect((await companies(tokens.access_token)).statusCode).toBe(200);
    expect((await refresh(tokens.refresh_token)).statusCode).toBe(200);
  });

  it('two refreshes with one refresh token at once: at most one pair is issued, and the family ends', async () => {
    const tokens = await connect(t.app, owner, confidential);
    const results = await Promise.all([refresh(tokens.refresh_token), refresh(tokens.refresh_token)]);
    expect(results.filter((r) => r.statusCode === 200).length).toBeLessThanOrEqual(1);
    for (const r of results.filter((x) => x.statusCode !== 200)) expectOAuthError(r, 'invalid_grant');
    for (const r of results.filter((x) => x.statusCode === 200)) {
      expect((await companies(r.json().access_token)).statusCode).toBe(401);
      expectOAuthError(await refresh(r.json().refresh_token), 'invalid_grant');
    }
    expect((await companies(tokens.access_token)).statusCode).toBe(401);
  });

  it('a refresh token of a public client presented by a confidential one, with its own secret, is refused', async () => {
    const tokens = await connect(t.app, owner, publicClient);
    expectOAuthError(await refresh(tokens.refresh_token, basic()), 'invalid_grant');
  });

  it('tokens are not interchangeable: an access token is no refresh token, a refresh token or a code no bearer', async () => {
    const tokens = await connect(t.app, owner, confidential);
    expectOAuthError(await refresh(tokens.access_token), 'invalid_grant');
    const code = (await freshCode()).code;
    for (const token of [tokens.refresh_token, code]) {
      const res = await companies(token);
      expect(res.statusCode).toBe(401);
      expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    }
    expect((await companies(tokens.access_token)).statusCode).toBe(200);
  });

  it('a revoked client: its tokens stop and its refresh token no longer refreshes', async () => {
    const victim = (await registerClient(t.database.db)) as { client: OAuthClient; secret: string };
    const tokens = await connect(t.app, owner, victim);
    await revokeOAuthClient(t.database.db, victim.client.clientId);
    expect((await companies(tokens.access_token)).statusCode).toBe(401);
    expectOAuthError(await refresh(tokens.refresh_token, basic(victim)), 'invalid_client', 401);
  });
});

describe('redirect_uri near misses', () => {
  it.each([
    ['a trailing slash', 'https://partner.example/callback/'],
    ['an upper-case host', 'https://PARTNER.example/callback'],
    ['an added query', 'https://partner.example/callback?next=1'],
    ['an empty query', 'https://partner.example/callback?'],
    ['a default port spelled out', 'https://partner.example:443/callback'],
    ['a dot-segment', 'https://partner.example/x/../callback'],
    ['an encoded path', 'https://partner.example/%63allback'],
    ['a fragment', 'https://partner.example/callback#x'],
  ])('at the authorization endpoint, %s: an error page, never a redirect', async (_name, uri) => {
    const { challenge } = pkce();
    const res = await t.app.inject({
      method: 'GET',
      url: authorizeUrl(authorizeParams(confidential.client, challenge, { redirect_uri: uri })),
      headers: owner.header(),
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });

  it('in the consent form post: a near miss is refused without a redirect and without a code', async () => {
    const { challenge } = pkce();
    const page = await t.app.inject({
      method: 'GET',
      url: authorizeUrl(authorizeParams(confidential.client, challenge)),
      headers: owner.header(),
    });
    const before = await codeCount();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/authorize',
      headers: { ...FORM, ...owner.header() },
      payload: form({
        ...hiddenFields(page.body),
        redirect_uri: 'https://PARTNER.example/callback',
        decision: 'approve',
      }),
    });
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(await codeCount()).toBe(before);
  });

  it.each([
    ['a trailing slash', 'https://partner.example/callback/'],
    ['an upper-case host', 'https://PARTNER.example/callback'],
    ['an added query', 'https://partner.example/callback?next=1'],
  ])('at the token endpoint, %s: invalid_grant, no tokens', async (_name, uri) => {
    const c = await freshCode();
    const before = await tokenCount();
    expectOAuthError(await exchange({ ...c, redirectUri: uri }), 'invalid_grant', 400);
    expect(await tokenCount()).toBe(before);
  });
});

describe('PKCE verifier shape (RFC 7636 4.1)', () => {
  const valid = pkce().verifier; // 43 characters
  it.each([
    ['42 characters (too short)', 'a'.repeat(42)],
    ['129 characters (too long)', 'a'.repeat(129)],
    ['a "+" (not unreserved)', `${valid.slice(0, -1)}+`],
    ['a "/" (not unreserved)', `${valid.slice(0, -1)}/`],
    ['a space', `${valid.slice(0, -1)} `],
    ['a non-ASCII letter', `${valid.slice(0, -1)}é`],
  ])('a verifier with %s is refused, no tokens, and the code is spent', async (_name, verifier) => {
    const c = await freshCode();
    const before = await tokenCount();
    const res = await exchange({ ...c, verifier });
    expect(res.statusCode).toBe(400);
    expect(['invalid_request', 'invalid_grant']).toContain(res.json().error);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(await tokenCount()).toBe(before);
    expectOAuthError(await exchange(c), 'invalid_grant');
  });

  it('the challenge itself must be 43 base64url characters at the authorization endpoint', async () => {
    for (const challenge of ['a'.repeat(42), 'a'.repeat(44), `${'a'.repeat(42)}+`, `${'a'.repeat(42)}=`]) {
      const res = await t.app.inject({
        method: 'GET',
        url: authorizeUrl(authorizeParams(confidential.client, challenge)),
        headers: owner.header(),
      });
      expect(res.statusCode).toBe(302);
      expect(new URL(res.headers.location as string).searchParams.get('error')).toBe('invalid_request');
    }
  });

  it('a consent form whose method was switched to plain after the page was shown gives no code', async () => {
    const { challenge } = pkce();
    const page = await t.app.inject({
      method: 'GET',
      url: authorizeUrl(authorizeParams(confidential.client, challenge)),
      headers: owner.header(),
    });
    const before = await codeCount();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/authorize',
      headers: { ...FORM, ...owner.header() },
      payload: form({ ...hiddenFields(page.body), code_challenge_method: 'plain', decision: 'approve' }),
    });
    expect(res.statusCode).toBe(303);
    const location = new URL(res.headers.location as string);
    expect(location.searchParams.get('error')).toBe('invalid_request');
    expect(location.searchParams.get('code')).toBeNull();
    expect(await codeCount()).toBe(before);
  });
});

describe('the token endpoint refuses anything but a form body (RFC 6749 3.2)', () => {
  it('a complete, valid exchange sent as JSON is refused with no-store, and the code stays unspent', async () => {
    const c = await freshCode(publicClient.client);
    const body = {
      grant_type: 'authorization_code',
      code: c.code,
      code_verifier: c.verifier,
      redirect_uri: c.redirectUri,
      client_id: publicClient.client.clientId,
    };
    const before = await tokenCount();
    const json = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/token',
      headers: { 'content-type': 'application/json' },
      payload: body,
    });
    expectOAuthError(json, 'invalid_request', 400);
    expect(await tokenCount()).toBe(before);
    const query = await t.app.inject({
      method: 'POST',
      url: `/api/oauth/token?${new URLSearchParams(body)}`,
      headers: FORM,
      payload: '',
    });
    expectOAuthError(query, 'invalid_request', 400);
    const get = await t.app.inject({ method: 'GET', url: `/api/oauth/token?${new URLSearchParams(body)}` });
    expect(get.statusCode).toBeGreaterThanOrEqual(400);
    expect(await tokenCount()).toBe(before);
    expect(
      (
        await tokenRequest(t.app, body as Record<string, string>)
      ) // the same, as a form
      .statusCode,
    ).toBe(200);
  });

  it('the revocation endpoint refuses JSON too, and revokes nothing', async () => {
    const tokens = await connect(t.app, owner, publicClient);
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/revoke',
      headers: { 'content-type': 'application/json' },
      payload: { token: tokens.refresh_token, client_id: publicClient.client.clientId },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_request');
    expect((await companies(tokens.access_token)).statusCode).toBe(200);
  });
});

describe('Cache-Control: no-store on every token endpoint answer', () => {
  it('on invalid_client (401), invalid_grant, unsupported_grant_type and schema errors', async () => {
    expectOAuthError(
      await tokenRequest(t.app, { grant_type: 'refresh_token', refresh_token: 'x' }, { clientId: 'oc_x', secret: 'y' }),
      'invalid_client',
      401,
    );
    expectOAuthError(await refresh('mcp_rt_nope'), 'invalid_grant', 400);
    expectOAuthError(await tokenRequest(t.app, { grant_type: 'implicit' }, basic()), 'unsupported_grant_type');
    expectOAuthError(await tokenRequest(t.app, { grant_type: 'x'.repeat(5000) }, basic()), 'invalid_request');
  });
});

describe('tokens across firms', () => {
  it('a token of firm A with x-organization-id of firm B is 404, also on writes, and nothing is written', async () => {
    const tokens = await connect(t.app, owner, confidential, { scope: 'accounts:read accounts:write' });
    const other = await createOtherFirm(t.database.db, 'hostile-b');
    const headers = { ...bearer(tokens.access_token), 'x-organization-id': other.orgId };
    const read = await t.app.inject({ method: 'GET', url: '/api/v1/accounts', headers });
    expect(read.statusCode).toBe(404);
    expect(read.json().error.code).toBe('ORGANIZATION_NOT_FOUND');
    const write = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers,
      payload: { code: '6952', name: 'Planted', type: 'expense' },
    });
    expect(write.statusCode).toBe(404);
    const path = await t.app.inject({
      method: 'POST',
      url: `/api/v1/companies/${other.orgId}/accounts`,
      headers: bearer(tokens.access_token),
      payload: { code: '6952', name: 'Planted', type: 'expense' },
    });
    // The company path takes no POST whoever asks (405 from the route table, before any organization is looked at).
    expect(path.statusCode).toBe(405);
    // firm B's owner sees no such account
    const theirs = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${other.orgId}/accounts`,
      headers: { authorization: other.authorization },
    });
    expect(theirs.statusCode).toBe(200);
    expect(JSON.stringify(theirs.json())).not.toContain('Planted');
  });

  it('an owner of firm B cannot approve for a client registered to firm A, and firm B’s approval sees only firm B', async () => {
    const other = await createOtherFirm(t.database.db, 'hostile-c');
    await addUser(t.database.db, other.firmId, 'owner', 'owner@hostile-c.test');
    const ownerB = await signIn(t.app, 'owner@hostile-c.test');
    const firmA = (await registerClient(t.database.db, { firmId: t.demo.firmId })) as typeof confidential;
    const res = await t.app.inject({
      method: 'GET',
      url: authorizeUrl(authorizeParams(firmA.client, pkce().challenge)),
      headers: ownerB.header(),
    });
    expect(new URL(res.headers.location as string).searchParams.get('error')).toBe('unauthorized_client');
    const tokensB = await connect(t.app, ownerB, confidential);
    const list = (await companies(tokensB.access_token)).json();
    expect(list.data.map((o: { id: string }) => o.id)).toEqual([other.orgId]);
    const [grant] = await t.database.db
      .select({ firmId: oauthGrants.firmId })
      .from(oauthGrants)
      .innerJoin(oauthTokens, eq(oauthTokens.grantId, oauthGrants.id))
      .where(eq(oauthTokens.tokenHash, hashSecret(tokensB.access_token)));
    expect(grant?.firmId).toBe(other.firmId);
  });
});

describe('the consent form and the session', () => {
  it('a CSRF token of another session of another user is refused (403, no code)', async () => {
    await addUser(t.database.db, t.demo.firmId, 'admin', 'admin-csrf@demo-firm.test');
    const admin = await signIn(t.app, 'admin-csrf@demo-firm.test');
    const adminCsrf = (await t.app.inject({ method: 'GET', url: '/api/session', headers: admin.header() })).json()
      .csrfToken as string;
    const page = await t.app.inject({
      method: 'GET',
      url: authorizeUrl(authorizeParams(confidential.client, pkce().challenge)),
      headers: owner.header(),
    });
    const before = await codeCount();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/authorize',
      headers: { ...FORM, ...owner.header() },
      payload: form({ ...hiddenFields(page.body), csrf_token: adminCsrf, decision: 'approve' }),
    });
    expect(res.statusCode).toBe(403);
    expect(res.headers.location).toBeUndefined();
    expect(await codeCount()).toBe(before);
  });

  it('a consent form posted with a session cookie replayed after logout: sent to sign in, no code', async () => {
    const jar = await signIn(t.app, 'owner@demo-firm.test');
    const page = await t.app.inject({
      method: 'GET',
      url: authorizeUrl(authorizeParams(confidential.client, pkce().challenge)),
      headers: jar.header(),
    });
    const fields = hiddenFields(page.body);
    const stale = jar.header();
    const loginPage = await t.app.inject({ method: 'GET', url: '/login', headers: stale });
    const out = await t.app.inject({
      method: 'POST',
      url: '/logout',
      headers: { ...FORM, ...stale },
      payload: form(hiddenFields(loginPage.body)),
    });
    expect(out.statusCode).toBe(303);
    const before = await codeCount();
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/authorize',
      headers: { ...FORM, ...stale },
      payload: form({ ...fields, decision: 'approve' }),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(/^\/login\?/);
    expect(await codeCount()).toBe(before);
  });
});

describe('the token endpoint over its rate limit', () => {
  it('answers 429 RATE_LIMITED with Retry-After, and no-store like every token endpoint answer', async () => {
    const strict = await createTestApp({ config: { OAUTH_TOKEN_RATE_LIMIT_MAX: 1 } });
    try {
      const post = () => tokenRequest(strict.app, { grant_type: 'refresh_token', refresh_token: 'mcp_rt_x' });
      expect((await post()).statusCode).toBe(400);
      const limited = await post();
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error.code).toBe('RATE_LIMITED');
      expect(limited.headers['retry-after']).toBeDefined();
      expect(limited.headers['cache-control']).toBe('no-store');
    } finally {
      await strict.close();
    }
  });
});
