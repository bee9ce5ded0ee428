import { oauthCodes, oauthGrants } from '@firm/db';
import type { OAuthClient } from '@firm/identity';
import { count } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import {
  addUser,
  approveForCode,
  authorizeParams,
  authorizeUrl,
  bearer,
  CookieJar,
  connect,
  decide,
  FORM,
  form,
  hiddenFields,
  pkce,
  REDIRECT_URI,
  registerClient,
  signIn,
  tokenRequest,
} from './fixtures';

let t: TestApp;
let owner: CookieJar;
let member: CookieJar;
let client: OAuthClient;
let secret: string;
const { verifier, challenge } = pkce();

beforeAll(async () => {
  t = await createTestApp();
  await addUser(t.database.db, t.demo.firmId, 'member', 'member@demo-firm.test');
  owner = await signIn(t.app, 'owner@demo-firm.test');
  member = await signIn(t.app, 'member@demo-firm.test');
  const registered = await registerClient(t.database.db, {
    name: 'Ledger <Sync> & Co',
    redirectUris: [REDIRECT_URI, 'http://127.0.0.1:8765/cb', 'https://partner.example/cb?tenant=1'],
  });
  client = registered.client;
  secret = registered.secret as string;
});
afterAll(() => t.close());

const get = (url: string, jar?: CookieJar) => t.app.inject({ method: 'GET', url, headers: jar?.header() ?? {} });
const params = (extra: Record<string, string | undefined> = {}) => ({
  ...authorizeParams(client, challenge),
  ...extra,
});
const redirected = (location: string | undefined) => {
  const url = new URL(location as string);
  return { base: `${url.origin}${url.pathname}`, query: Object.fromEntries(url.searchParams) };
};
const codeCount = async () => (await t.database.db.select({ n: count() }).from(oauthCodes))[0]?.n;

describe('GET /api/oauth/authorize: requests that must not redirect', () => {
  it.each([
    ['an extra path', 'https://partner.example/callback/extra'],
    ['an extra query', 'https://partner.example/callback?x=1'],
    ['another port', 'https://partner.example:8443/callback'],
    ['another loopback port', 'http://127.0.0.1:8766/cb'],
    ['a trailing slash', 'https://partner.example/callback/'],
    ['http instead of https', 'http://partner.example/callback'],
    ['another host', 'https://evil.example/callback'],
    ['a changed case', 'https://partner.example/Callback'],
  ])('refuses a redirect URI with %s with an error page, not a redirect', async (_name, uri) => {
    const res = await get(authorizeUrl(params({ redirect_uri: uri })), owner);
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('not one this app registered');
    expect(res.body).not.toContain('evil.example');
  });

  it('refuses a missing redirect URI, a missing client and an unknown client with a page', async () => {
    for (const p of [
      params({ redirect_uri: undefined }),
      params({ client_id: undefined }),
      params({ client_id: 'oc_unknown' }),
    ]) {
      const res = await get(authorizeUrl(p), owner);
      expect(res.statusCode).toBe(400);
      expect(res.headers.location).toBeUndefined();
    }
  });

  it('refuses a client_id given twice with a page', async () => {
    const url = `${authorizeUrl(params())}&client_id=${client.clientId}`;
    const res = await get(url, owner);
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
  });

  it('accepts a registered redirect URI that has its own query, and keeps that query', async () => {
    const res = await decide(t.app, owner, params({ redirect_uri: 'https://partner.example/cb?tenant=1' }));
    const { base, query } = redirected(res.headers.location);
    expect(base).toBe('https://partner.example/cb');
    expect(query).toMatchObject({ tenant: '1', state: 'st-123', code: expect.stringMatching(/^mcp_ac_/) });
  });
});

describe('GET /api/oauth/authorize: errors redirected to the app (RFC 6749 4.1.2.1)', () => {
  // Errors go back only to an app the user's firm has approved before (RFC 9700 4.11.2; see the next block).
  beforeAll(() => connect(t.app, owner, { client, secret }));

  it.each([
    ['a missing code_challenge', { code_challenge: undefined }, 'invalid_request'],
    ['the plain method', { code_challenge_method: 'plain', code_challenge: verifier }, 'invalid_request'],
    ['a missing method', { code_challenge_method: undefined }, 'invalid_request'],
    ['a malformed challenge', { code_challenge: 'short' }, 'invalid_request'],
    ['a missing response_type', { response_type: undefined }, 'invalid_request'],
    ['response_type=token', { response_type: 'token' }, 'unsupported_response_type'],
    ['an unknown scope', { scope: 'accounts:read ledger:everything' }, 'invalid_scope'],
    ['a foreign resource', { resource: 'https://elsewhere.example' }, 'invalid_target'],
  ])('%s', async (_name, extra, error) => {
    const before = await codeCount();
    const res = await get(authorizeUrl(params(extra as Record<string, string | undefined>)), owner);
    expect(res.statusCode).toBe(302);
    const { base, query } = redirected(res.headers.location);
    expect(base).toBe(REDIRECT_URI);
    expect(query).toMatchObject({ error, state: 'st-123', iss: 'http://localhost:80' });
    expect(query.error_description).toBeTruthy();
    expect(query.code).toBeUndefined();
    expect(await codeCount()).toBe(before);
  });

  it('refuses a parameter given twice', async () => {
    const res = await get(`${authorizeUrl(params())}&scope=accounts:write`, owner);
    expect(redirected(res.headers.location).query).toMatchObject({ error: 'invalid_request', state: 'st-123' });
  });

  it('redirects without state when the request had none', async () => {
    const res = await get(authorizeUrl(params({ state: undefined, response_type: 'token' })), owner);
    expect(redirected(res.headers.location).query.state).toBeUndefined();
  });
});

describe('signing in on the way', () => {
  it('sends a visitor to /login and back to the same authorization request', async () => {
    const url = authorizeUrl(params());
    const res = await get(url);
    expect(res.statusCode).toBe(302);
    const login = new URL(res.headers.location as string, 'http://localhost');
    expect(login.pathname).toBe('/login');
    expect(login.searchParams.get('return_to')).toBe(url);

    const page = await get(`${login.pathname}${login.search}`);
    expect(hiddenFields(page.body).return_to).toBe(url);
    const browser = new CookieJar().store(page);
    const signedIn = await t.app.inject({
      method: 'POST',
      url: '/login',
      headers: { ...FORM, ...browser.header() },
      payload: form({
        ...hiddenFields(page.body),
        email: 'owner@demo-firm.test',
        password: 'correct horse battery staple',
      }),
    });
    expect(signedIn.statusCode).toBe(303);
    expect(signedIn.headers.location).toBe(url);
    browser.store(signedIn);
    const consent = await get(url, browser);
    expect(consent.statusCode).toBe(200);
  });
});

describe('the consent page', () => {
  it('names the app, its redirect host and each scope in plain words, escaped', async () => {
    const res = await get(authorizeUrl(params({ scope: 'accounts:read entries:write' })), owner);
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('Ledger &lt;Sync&gt; &amp; Co');
    expect(res.body).not.toContain('<Sync>');
    expect(res.body).toContain('partner.example');
    expect(res.body).toContain('Read charts of accounts and account balances');
    expect(res.body).toContain('Create, post and void journal entries');
    expect(res.body).not.toContain('Run financial reports');
    expect(res.body).toContain('Northwind Bakery LLC');
  });

  it('cannot be framed or cached, and its form may only end at us or the app', async () => {
    const res = await get(authorizeUrl(params()), owner);
    expect(res.headers['x-frame-options']).toBe('DENY');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(res.headers['content-security-policy']).toContain("form-action 'self' https://partner.example");
  });

  it('asks for the default scopes (all but connections:*) when the app asks none', async () => {
    const res = await get(authorizeUrl(params({ scope: undefined })), owner);
    expect(hiddenFields(res.body).scope).toContain('entries:write');
    expect(hiddenFields(res.body).scope).not.toContain('connections:');
  });
});

describe('who may approve', () => {
  it('shows a member a clear refusal, and refuses the form post too', async () => {
    const res = await get(authorizeUrl(params()), member);
    expect(res.statusCode).toBe(403);
    expect(res.body).toContain('Only owners and admins');
    expect(res.body).toContain('access_denied');
    const before = await codeCount();
    const csrf = (await t.app.inject({ method: 'GET', url: '/api/session', headers: member.header() })).json()
      .csrfToken as string;
    const post = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/authorize',
      headers: { ...FORM, ...member.header() },
      payload: form({ ...params(), csrf_token: csrf, decision: 'approve' }),
    });
    expect(post.statusCode).toBe(403);
    expect(post.headers.location).toBeUndefined();
    expect(await codeCount()).toBe(before);
  });

  it('lets an admin approve', async () => {
    await addUser(t.database.db, t.demo.firmId, 'admin', 'admin@demo-firm.test');
    const admin = await signIn(t.app, 'admin@demo-firm.test');
    expect(await approveForCode(t.app, admin, params())).toMatch(/^mcp_ac_/);
  });

  it('refuses a client registered for another firm', async () => {
    const other = await createOtherFirm(t.database.db, 'client-firm');
    const theirs = await registerClient(t.database.db, { firmId: other.firmId });
    const res = await get(authorizeUrl(authorizeParams(theirs.client, challenge)), owner);
    expect(redirected(res.headers.location).query).toMatchObject({ error: 'unauthorized_client', state: 'st-123' });
  });
});

describe('POST /api/oauth/authorize', () => {
  it('refuses a form without the CSRF token, or with a wrong one (403, no code)', async () => {
    const before = await codeCount();
    for (const csrf of [undefined, 'forged']) {
      const res = await t.app.inject({
        method: 'POST',
        url: '/api/oauth/authorize',
        headers: { ...FORM, ...owner.header() },
        payload: form({ ...params(), decision: 'approve', csrf_token: csrf }),
      });
      expect(res.statusCode).toBe(403);
      expect(res.headers.location).toBeUndefined();
    }
    expect(await codeCount()).toBe(before);
  });

  it('sends a form posted without a session to sign in first', async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/authorize',
      headers: FORM,
      payload: form({ ...params(), decision: 'approve' }),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toMatch(/^\/login\?return_to=%2Fapi%2Foauth%2Fauthorize%3F/);
  });

  it('deny: back to the app with access_denied and the state', async () => {
    const res = await decide(t.app, owner, params(), { decision: 'deny' });
    expect(res.statusCode).toBe(303);
    expect(redirected(res.headers.location).query).toMatchObject({ error: 'access_denied', state: 'st-123' });
  });

  it('approve: back to the app with a code and the state', async () => {
    const res = await decide(t.app, owner, params());
    expect(res.statusCode).toBe(303);
    const { base, query } = redirected(res.headers.location);
    expect(base).toBe(REDIRECT_URI);
    expect(query).toMatchObject({ state: 'st-123', iss: 'http://localhost:80' });
    expect(query.code).toMatch(/^mcp_ac_/);
  });

  it('approve for chosen organizations: the token sees only those', async () => {
    const [first, second] = t.demo.organizations as unknown as [{ id: string }, { id: string }];
    const tokens = await connect(
      t.app,
      owner,
      { client, secret },
      {},
      {
        decision: 'approve',
        organizations: 'selected',
        organization_ids: [first.id],
      },
    );
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/companies', headers: bearer(tokens.access_token) });
    expect(list.json().data.map((o: { id: string }) => o.id)).toEqual([first.id]);
    const other = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${second.id}/accounts`,
      headers: bearer(tokens.access_token),
    });
    expect(other.statusCode).toBe(404);
  });

  it('refuses "selected" with no organization or with one of another firm', async () => {
    const other = await createOtherFirm(t.database.db, 'org-choice');
    for (const ids of [[], [other.orgId]]) {
      const res = await decide(t.app, owner, params(), {
        decision: 'approve',
        organizations: 'selected',
        organization_ids: ids,
      });
      expect(res.statusCode).toBe(400);
      expect(res.headers.location).toBeUndefined();
    }
  });

  it('records one token family per approval', async () => {
    const before = (await t.database.db.select({ n: count() }).from(oauthGrants))[0]?.n ?? 0;
    await approveForCode(t.app, owner, params());
    expect((await t.database.db.select({ n: count() }).from(oauthGrants))[0]?.n).toBe(before + 1);
  });

  it('binds the code to the challenge: another verifier cannot redeem it', async () => {
    const code = await approveForCode(t.app, owner, params());
    const res = await tokenRequest(
      t.app,
      { grant_type: 'authorization_code', code, code_verifier: pkce().verifier, redirect_uri: REDIRECT_URI },
      { clientId: client.clientId, secret },
    );
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_grant');
  });
});

describe('GET /api/oauth/authorize: no open redirect through client registration (RFC 9700 4.11.2)', () => {
  const ATTACKER = 'https://attacker.example/landing';
  let stranger: OAuthClient;
  beforeAll(async () => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/register',
      payload: { client_name: 'Free Prizes', redirect_uris: [ATTACKER], token_endpoint_auth_method: 'none' },
    });
    expect(res.statusCode).toBe(201);
    stranger = { ...client, clientId: res.json().client_id, redirectUris: [ATTACKER] };
  });
  const bad = () => authorizeUrl({ ...authorizeParams(stranger, challenge), response_type: 'token' });

  it('shows an error page, not a redirect, to a visitor who is not signed in', async () => {
    const res = await get(bad());
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.body).toContain('unsupported_response_type');
  });

  it('shows an error page to a signed-in owner whose firm never approved the app', async () => {
    const res = await get(bad(), owner);
    expect(res.statusCode).toBe(400);
    expect(res.headers.location).toBeUndefined();
  });

  it('redirects the error once the firm has approved the app', async () => {
    await connect(t.app, owner, { client: stranger, secret: null });
    const res = await get(bad(), owner);
    expect(res.statusCode).toBe(302);
    expect(redirected(res.headers.location).base).toBe(ATTACKER);
  });
});
