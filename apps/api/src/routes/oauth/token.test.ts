import { oauthCodes, oauthGrants, oauthTokens, users } from '@firm/db';
import { hashSecret, type OAuthClient } from '@firm/identity';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import {
  addUser,
  bearer,
  type CookieJar,
  connect,
  FORM,
  form,
  pkce,
  REDIRECT_URI,
  registerClient,
  signIn,
  tokenRequest,
  exchangeCode,
  freshCodeFor,
} from './fixtures';

let t: TestApp;
let owner: CookieJar;
let confidential: { client: OAuthClient; secret: string };
let publicClient: { client: OAuthClient; secret: null };

beforeAll(async () => {
  t = await createTestApp();
  owner = await signIn(t.app, 'owner@demo-firm.test');
  confidential = (await registerClient(t.database.db)) as typeof confidential;
  publicClient = (await registerClient(t.database.db, {
    isPublic: true,
    name: 'Desktop MCP client',
    redirectUris: ['http://127.0.0.1:33418/callback'],
  })) as typeof publicClient;
});
afterAll(() => t.close());

const basic = () => ({ clientId: confidential.client.clientId, secret: confidential.secret });
const companies = (token: string) => t.app.inject({ method: 'GET', url: '/api/v1/companies', headers: bearer(token) });

/** A fresh code of the confidential client (or another), with its verifier. */
const freshCode = (client: OAuthClient = confidential.client) => freshCodeFor(t.app, owner, client);
const exchange = (c: { code: string; verifier?: string; redirectUri?: string }, auth = basic()) =>
  exchangeCode(t.app, c, auth);

function expectOAuthError(
  res: { statusCode: number; json(): unknown; headers: Record<string, unknown> },
  error: string,
) {
  expect(res.statusCode, JSON.stringify(res.json())).toBeGreaterThanOrEqual(400);
  expect(res.json()).toMatchObject({ error });
  expect(res.headers['cache-control']).toBe('no-store');
}

describe('authorization_code grant', () => {
  it('issues mcp_at_ and mcp_rt_ tokens with the granted scope, no-store, stored only as hashes', async () => {
    const c = await freshCode();
    const res = await exchange(c);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    const body = res.json();
    expect(body).toMatchObject({ token_type: 'Bearer', scope: 'organizations:read accounts:read' });
    expect(body.access_token).toMatch(/^mcp_at_[0-9A-Za-z]{38}$/);
    expect(body.refresh_token).toMatch(/^mcp_rt_[0-9A-Za-z]{38}$/);
    expect(body.expires_in).toBeGreaterThan(3590);
    expect(body.expires_in).toBeLessThanOrEqual(3600);
    const rows = await t.database.db.select().from(oauthTokens);
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(body.access_token);
    expect(stored).not.toContain(body.refresh_token);
    const refresh = rows.find((r) => r.tokenHash === hashSecret(body.refresh_token));
    const days = ((refresh?.expiresAt.getTime() ?? 0) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);
    expect((await companies(body.access_token)).statusCode).toBe(200);
  });

  it('takes client_secret_post as well as client_secret_basic', async () => {
    const c = await freshCode();
    const res = await tokenRequest(t.app, {
      grant_type: 'authorization_code',
      code: c.code,
      code_verifier: c.verifier,
      redirect_uri: c.redirectUri,
      client_id: confidential.client.clientId,
      client_secret: confidential.secret,
    });
    expect(res.statusCode).toBe(200);
  });

  it('decodes form-encoded HTTP Basic credentials (RFC 6749 2.3.1)', async () => {
    const c = await freshCode();
    const encode = (v: string) => encodeURIComponent(v).replace(/_/g, '%5F');
    const res = await tokenRequest(
      t.app,
      { grant_type: 'authorization_code', code: c.code, code_verifier: c.verifier, redirect_uri: c.redirectUri },
      { clientId: encode(confidential.client.clientId), secret: encode(confidential.secret) },
    );
    expect(res.statusCode).toBe(200);
  });

  it('refuses a code stored with the plain method, even with the matching verifier', async () => {
    const c = await freshCode();
    await t.database.db
      .update(oauthCodes)
      .set({ codeChallengeMethod: 'plain', codeChallenge: c.verifier })
      .where(eq(oauthCodes.codeHash, hashSecret(c.code)));
    expectOAuthError(await exchange(c), 'invalid_grant');
  });

  it('refuses a wrong code with invalid_grant', async () => {
    await freshCode();
    expectOAuthError(
      await exchange({ code: 'mcp_ac_nope', verifier: pkce().verifier, redirectUri: REDIRECT_URI }),
      'invalid_grant',
    );
  });

  it('refuses an expired code with invalid_grant', async () => {
    const c = await freshCode();
    await t.database.db
      .update(oauthCodes)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(oauthCodes.codeHash, hashSecret(c.code)));
    expectOAuthError(await exchange(c), 'invalid_grant');
  });

  it('lives 60 seconds', async () => {
    const c = await freshCode();
    const [row] = await t.database.db
      .select()
      .from(oauthCodes)
      .where(eq(oauthCodes.codeHash, hashSecret(c.code)));
    const seconds = ((row?.expiresAt.getTime() ?? 0) - Date.now()) / 1000;
    expect(seconds).toBeGreaterThan(50);
    expect(seconds).toBeLessThanOrEqual(60);
  });

  it('refuses a replayed code with invalid_grant, and the replay revokes the tokens issued from it', async () => {
    const c = await freshCode();
    const first = (await exchange(c)).json();
    expect((await companies(first.access_token)).statusCode).toBe(200);
    expectOAuthError(await exchange(c), 'invalid_grant');
    const after = await companies(first.access_token);
    expect(after.statusCode).toBe(401);
    expect(after.headers['www-authenticate']).toContain('resource_metadata=');
    const refresh = await tokenRequest(
      t.app,
      { grant_type: 'refresh_token', refresh_token: first.refresh_token },
      basic(),
    );
    expectOAuthError(refresh, 'invalid_grant');
    const [grant] = await t.database.db
      .select()
      .from(oauthGrants)
      .innerJoin(oauthCodes, eq(oauthCodes.grantId, oauthGrants.id))
      .where(eq(oauthCodes.codeHash, hashSecret(c.code)));
    expect(grant?.oauth_grants.revokedReason).toBe('code_replay');
  });

  it('refuses a wrong verifier with invalid_grant, and the code is spent', async () => {
    const c = await freshCode();
    expectOAuthError(await exchange({ ...c, verifier: pkce().verifier }), 'invalid_grant');
    expectOAuthError(await exchange(c), 'invalid_grant');
  });

  it('refuses a missing verifier', async () => {
    const c = await freshCode();
    expectOAuthError(await exchange({ ...c, verifier: undefined }), 'invalid_grant');
  });

  it('refuses a redirect_uri that differs from the authorization request, or is missing', async () => {
    for (const redirectUri of ['https://partner.example/other', undefined]) {
      const c = await freshCode();
      expectOAuthError(await exchange({ ...c, redirectUri }), 'invalid_grant');
    }
  });

  it('refuses a confidential client without its secret, even with a verifier: invalid_client', async () => {
    const c = await freshCode();
    const res = await tokenRequest(t.app, {
      grant_type: 'authorization_code',
      code: c.code,
      code_verifier: c.verifier,
      redirect_uri: c.redirectUri,
      client_id: confidential.client.clientId,
    });
    expectOAuthError(res, 'invalid_client');
    // the code was not spent on an unauthenticated request
    expect((await exchange(c)).statusCode).toBe(200);
  });

  it('refuses a wrong secret: invalid_client (401 with a Basic challenge over Basic)', async () => {
    const c = await freshCode();
    const res = await exchange(c, { clientId: confidential.client.clientId, secret: 'mcp_cs_wrong' });
    expectOAuthError(res, 'invalid_client');
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Basic/);
    const post = await tokenRequest(t.app, {
      grant_type: 'authorization_code',
      code: c.code,
      code_verifier: c.verifier,
      redirect_uri: c.redirectUri,
      client_id: confidential.client.clientId,
      // one character changed (never to itself: the secret may end in any base62 character)
      client_secret: `${confidential.secret.slice(0, -1)}${confidential.secret.endsWith('x') ? 'y' : 'x'}`,
    });
    expectOAuthError(post, 'invalid_client');
  });

  it('refuses a client authenticating twice (Basic and client_secret)', async () => {
    const c = await freshCode();
    const res = await tokenRequest(
      t.app,
      {
        grant_type: 'authorization_code',
        code: c.code,
        code_verifier: c.verifier,
        redirect_uri: c.redirectUri,
        client_secret: confidential.secret,
      },
      basic(),
    );
    expectOAuthError(res, 'invalid_request');
  });

  it('refuses a code presented by another client', async () => {
    const other = (await registerClient(t.database.db)) as { client: OAuthClient; secret: string };
    const c = await freshCode();
    expectOAuthError(await exchange(c, { clientId: other.client.clientId, secret: other.secret }), 'invalid_grant');
  });

  it('lets a public client exchange with its client_id and verifier, and refuses it a secret', async () => {
    const c = await freshCode(publicClient.client);
    const withSecret = await tokenRequest(t.app, {
      grant_type: 'authorization_code',
      code: c.code,
      code_verifier: c.verifier,
      redirect_uri: c.redirectUri,
      client_id: publicClient.client.clientId,
      client_secret: 'mcp_cs_anything',
    });
    expectOAuthError(withSecret, 'invalid_client');
    const res = await tokenRequest(t.app, {
      grant_type: 'authorization_code',
      code: c.code,
      code_verifier: c.verifier,
      redirect_uri: c.redirectUri,
      client_id: publicClient.client.clientId,
    });
    expect(res.statusCode).toBe(200);
  });

  it('answers RFC 6749 5.2 codes for malformed requests', async () => {
    expectOAuthError(
      await tokenRequest(t.app, { grant_type: 'password', username: 'a', password: 'b' }, basic()),
      'unauthorized_client',
    );
    expectOAuthError(await tokenRequest(t.app, { grant_type: 'urn:nope' }, basic()), 'unsupported_grant_type');
    expectOAuthError(await tokenRequest(t.app, {}, basic()), 'invalid_request');
    expectOAuthError(await tokenRequest(t.app, { grant_type: 'authorization_code' }), 'invalid_client');
    const twice = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/token',
      headers: FORM,
      payload: 'grant_type=authorization_code&grant_type=refresh_token',
    });
    expectOAuthError(twice, 'invalid_request');
    const json = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/token',
      headers: { 'content-type': 'application/json' },
      payload: { grant_type: 'authorization_code', client_id: publicClient.client.clientId },
    });
    expectOAuthError(json, 'invalid_request');
    const text = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/token',
      headers: { 'content-type': 'text/plain' },
      payload: 'grant_type=x',
    });
    expectOAuthError(text, 'invalid_request');
  });
});

describe('refresh_token grant', () => {
  const refresh = (token: string, extra: Record<string, string> = {}) =>
    tokenRequest(t.app, { grant_type: 'refresh_token', refresh_token: token, ...extra }, basic());

  it('rotates: a new pair each time, the old refresh token spent', async () => {
    const first = await connect(t.app, owner, confidential);
    const res = await refresh(first.refresh_token);
    expect(res.statusCode).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    const second = res.json();
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(second.access_token).not.toBe(first.access_token);
    expect(second.scope).toBe(first.scope);
    expect((await companies(second.access_token)).statusCode).toBe(200);
    expect((await refresh(second.refresh_token)).statusCode).toBe(200);
  });

  it('reuse of a rotated refresh token: invalid_grant, and every token of the family stops at once', async () => {
    const first = await connect(t.app, owner, confidential);
    const second = (await refresh(first.refresh_token)).json();
    expect((await companies(first.access_token)).statusCode).toBe(200);
    expectOAuthError(await refresh(first.refresh_token), 'invalid_grant');
    expect((await companies(first.access_token)).statusCode).toBe(401);
    expect((await companies(second.access_token)).statusCode).toBe(401);
    expectOAuthError(await refresh(second.refresh_token), 'invalid_grant');
  });

  it('narrows scope on request, never widens it', async () => {
    const first = await connect(t.app, owner, confidential);
    const narrow = await refresh(first.refresh_token, { scope: 'accounts:read' });
    expect(narrow.json().scope).toBe('accounts:read');
    const orgs = await companies(narrow.json().access_token);
    expect(orgs.statusCode).toBe(403);
    expect(orgs.json().error.code).toBe('INSUFFICIENT_SCOPE');
    expectOAuthError(
      await refresh(narrow.json().refresh_token, { scope: 'accounts:read entries:write' }),
      'invalid_scope',
    );
  });

  it('refuses an expired, a garbled and another client’s refresh token', async () => {
    const first = await connect(t.app, owner, confidential);
    await t.database.db
      .update(oauthTokens)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(oauthTokens.tokenHash, hashSecret(first.refresh_token)));
    expectOAuthError(await refresh(first.refresh_token), 'invalid_grant');
    expectOAuthError(await refresh('mcp_rt_garbled'), 'invalid_grant');
    const mine = await connect(t.app, owner, confidential);
    const other = (await registerClient(t.database.db)) as { client: OAuthClient; secret: string };
    const res = await tokenRequest(
      t.app,
      { grant_type: 'refresh_token', refresh_token: mine.refresh_token },
      { clientId: other.client.clientId, secret: other.secret },
    );
    expectOAuthError(res, 'invalid_grant');
    expect((await refresh(mine.refresh_token)).statusCode).toBe(200);
  });

  it('lets a public client refresh with its client_id', async () => {
    const first = await connect(t.app, owner, publicClient);
    const res = await tokenRequest(t.app, {
      grant_type: 'refresh_token',
      refresh_token: first.refresh_token,
      client_id: publicClient.client.clientId,
    });
    expect(res.statusCode).toBe(200);
  });
});

describe('POST /api/oauth/revoke (RFC 7009)', () => {
  const revoke = (
    fields: Record<string, string | undefined>,
    auth: { clientId: string; secret: string } | null = basic(),
  ) =>
    t.app.inject({
      method: 'POST',
      url: '/api/oauth/revoke',
      headers: {
        ...FORM,
        ...(auth
          ? { authorization: `Basic ${Buffer.from(`${auth.clientId}:${auth.secret}`).toString('base64')}` }
          : {}),
      },
      payload: form(fields),
    });

  it('revokes an access token alone', async () => {
    const tokens = await connect(t.app, owner, confidential);
    const res = await revoke({ token: tokens.access_token, token_type_hint: 'access_token' });
    expect(res.statusCode).toBe(200);
    expect((await companies(tokens.access_token)).statusCode).toBe(401);
    const refreshed = await tokenRequest(
      t.app,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      basic(),
    );
    expect(refreshed.statusCode).toBe(200);
  });

  it('revokes a refresh token with its whole family', async () => {
    const tokens = await connect(t.app, owner, confidential);
    expect((await revoke({ token: tokens.refresh_token })).statusCode).toBe(200);
    expect((await companies(tokens.access_token)).statusCode).toBe(401);
    expectOAuthError(
      await tokenRequest(t.app, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token }, basic()),
      'invalid_grant',
    );
  });

  it('answers 200 for unknown tokens and ignores tokens of other clients', async () => {
    expect((await revoke({ token: 'mcp_at_unknown' })).statusCode).toBe(200);
    const theirs = await connect(t.app, owner, publicClient);
    expect((await revoke({ token: theirs.access_token })).statusCode).toBe(200);
    expect((await companies(theirs.access_token)).statusCode).toBe(200);
  });

  it('lets a public client revoke with its client_id', async () => {
    const tokens = await connect(t.app, owner, publicClient);
    const res = await revoke({ token: tokens.refresh_token, client_id: publicClient.client.clientId }, null);
    expect(res.statusCode).toBe(200);
    expect((await companies(tokens.access_token)).statusCode).toBe(401);
  });

  it('refuses bad client authentication and a missing token', async () => {
    const tokens = await connect(t.app, owner, confidential);
    const wrong = await revoke(
      { token: tokens.access_token },
      { clientId: confidential.client.clientId, secret: 'mcp_cs_x' },
    );
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error).toBe('invalid_client');
    const noSecret = await revoke({ token: tokens.access_token, client_id: confidential.client.clientId }, null);
    expect(noSecret.statusCode).toBe(401);
    expect((await companies(tokens.access_token)).statusCode).toBe(200);
    const missing = await revoke({});
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error).toBe('invalid_request');
  });
});

describe('access tokens on the partner API', () => {
  it('401 with WWW-Authenticate for a garbled, an expired and a revoked token', async () => {
    const tokens = await connect(t.app, owner, confidential);
    await t.database.db
      .update(oauthTokens)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(oauthTokens.tokenHash, hashSecret(tokens.access_token)));
    const revoked = await connect(t.app, owner, confidential);
    await t.app.inject({
      method: 'POST',
      url: '/api/oauth/revoke',
      headers: FORM,
      payload: form({
        token: revoked.access_token,
        client_id: confidential.client.clientId,
        client_secret: confidential.secret,
      }),
    });
    const flipped = `${tokens.access_token.slice(0, 10)}${tokens.access_token[10] === 'A' ? 'B' : 'A'}${tokens.access_token.slice(11)}`;
    for (const token of [tokens.access_token, revoked.access_token, 'mcp_at_garbled', flipped]) {
      const res = await companies(token);
      expect(res.statusCode).toBe(401);
      expect(res.json().error.code).toBe('UNAUTHENTICATED');
      expect(res.headers['www-authenticate']).toBe(
        'Bearer resource_metadata="http://localhost:80/.well-known/oauth-protected-resource", error="invalid_token"',
      );
    }
  });

  it('stop working when the approving user is no longer an owner or admin', async () => {
    const admin = await addUser(t.database.db, t.demo.firmId, 'admin', 'demoted@demo-firm.test');
    const jar = await signIn(t.app, 'demoted@demo-firm.test');
    const tokens = await connect(t.app, jar, confidential);
    expect((await companies(tokens.access_token)).statusCode).toBe(200);
    await t.database.db.update(users).set({ role: 'member' }).where(eq(users.id, admin.id));
    expect((await companies(tokens.access_token)).statusCode).toBe(401);
  });
});
