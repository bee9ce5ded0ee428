import { createOAuthClient } from '@firm/identity';
import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DEMO_PASSWORD, type TestApp } from '../../testing';
import { hiddenFields } from './fixtures';

/**
 * A partner app connecting as it would in production, with oauth4webapi (a standards-checking
 * OAuth client) over real HTTP: discovery from a 401, registration, PKCE, sign-in and consent,
 * code exchange, an API call, refresh and revocation.
 */

let t: TestApp;
let base: string;
const insecure = { [oauth.allowInsecureRequests]: true }; // plain http on 127.0.0.1 in tests

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(() => t.close());

/** A browser's cookies, enough for our pages. */
class Browser {
  private cookies = new Map<string, string>();

  async fetch(url: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers);
    if (this.cookies.size > 0) headers.set('cookie', [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '));
    const res = await fetch(new URL(url, base), { ...init, headers, redirect: 'manual' });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      const value = pair.slice(eq + 1);
      if (value && !/max-age=0/i.test(line)) this.cookies.set(pair.slice(0, eq), value);
      else this.cookies.delete(pair.slice(0, eq));
    }
    return res;
  }

  postForm(url: string, fields: Record<string, string>) {
    return this.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }
}

/** What the person does between the app's redirect and the app's callback: sign in, then allow. */
async function signInAndApprove(authorizationUrl: URL): Promise<URL> {
  const browser = new Browser();
  const toLogin = await browser.fetch(authorizationUrl.href);
  expect(toLogin.status).toBe(302);
  const loginUrl = toLogin.headers.get('location') as string;
  expect(loginUrl).toMatch(/^\/login\?return_to=/);
  const loginPage = await browser.fetch(loginUrl);
  const signedIn = await browser.postForm('/login', {
    ...hiddenFields(await loginPage.text()),
    email: 'owner@demo-firm.test',
    password: DEMO_PASSWORD,
  });
  expect(signedIn.status).toBe(303);
  const consent = await browser.fetch(signedIn.headers.get('location') as string);
  expect(consent.status).toBe(200);
  const page = await consent.text();
  expect(page).toContain('Connect');
  const decided = await browser.postForm('/api/oauth/authorize', { ...hiddenFields(page), decision: 'approve' });
  expect(decided.status).toBe(303);
  return new URL(decided.headers.get('location') as string);
}

describe('a partner app with oauth4webapi', () => {
  it('discovers, registers, connects, calls the API, refreshes and revokes', async () => {
    // 1. A call without a token: 401, whose WWW-Authenticate names the resource metadata.
    const unauthorized = await fetch(`${base}/api/v1/companies`);
    expect(unauthorized.status).toBe(401);
    const challenge = unauthorized.headers.get('www-authenticate') as string;
    expect(challenge).toContain('resource_metadata=');

    // 2. Resource metadata (RFC 9728), then authorization server metadata (RFC 8414).
    const resource = await oauth.processResourceDiscoveryResponse(
      new URL(base),
      await oauth.resourceDiscoveryRequest(new URL(base), insecure),
    );
    const issuer = new URL(resource.authorization_servers?.[0] as string);
    const as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', ...insecure }),
    );
    expect(as.code_challenge_methods_supported).toEqual(['S256']);

    // 3. Dynamic registration of a public client (RFC 7591).
    const redirectUri = 'http://127.0.0.1:53682/callback';
    const registered = await oauth.processDynamicClientRegistrationResponse(
      await oauth.dynamicClientRegistrationRequest(
        as,
        { redirect_uris: [redirectUri], client_name: 'MCP test client', token_endpoint_auth_method: 'none' },
        insecure,
      ),
    );
    const client: oauth.Client = { client_id: registered.client_id };
    const clientAuth = oauth.None();

    // 4. Authorization request with PKCE S256, through sign-in and consent.
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const authorizationUrl = new URL(as.authorization_endpoint as string);
    authorizationUrl.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'organizations:read accounts:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      resource: base,
    }).toString();
    const callback = await signInAndApprove(authorizationUrl);
    expect(`${callback.origin}${callback.pathname}`).toBe(redirectUri);

    // 5. The callback: state and iss checked by the library, then the code exchange.
    const params = oauth.validateAuthResponse(as, client, callback, state);
    const exchanged = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, redirectUri, verifier, insecure),
    );
    expect(exchanged.access_token).toMatch(/^mcp_at_/);
    expect(exchanged.refresh_token).toMatch(/^mcp_rt_/);
    expect(exchanged.scope).toBe('organizations:read accounts:read');

    // 6. The partner API with the token.
    const companies = await oauth.protectedResourceRequest(
      exchanged.access_token,
      'GET',
      new URL(`${base}/api/v1/companies`),
      undefined,
      undefined,
      insecure,
    );
    expect(companies.status).toBe(200);
    const orgId = ((await companies.json()) as { data: { id: string }[] }).data[0]?.id as string;
    const accounts = await oauth.protectedResourceRequest(
      exchanged.access_token,
      'GET',
      new URL(`${base}/api/v1/accounts`),
      new Headers({ 'x-organization-id': orgId }),
      undefined,
      insecure,
    );
    expect(accounts.status).toBe(200);

    // 7. Refresh: a new pair; the new access token works.
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, exchanged.refresh_token as string, insecure),
    );
    expect(refreshed.refresh_token).not.toBe(exchanged.refresh_token);
    const again = await oauth.protectedResourceRequest(
      refreshed.access_token,
      'GET',
      new URL(`${base}/api/v1/companies`),
      undefined,
      undefined,
      insecure,
    );
    expect(again.status).toBe(200);

    // 8. Revoke the refresh token (RFC 7009): the whole family stops.
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, clientAuth, refreshed.refresh_token as string, insecure),
    );
    const after = await fetch(`${base}/api/v1/companies`, {
      headers: { authorization: `Bearer ${refreshed.access_token}` },
    });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toContain('error="invalid_token"');
  });

  it('connects a confidential client with client_secret_basic', async () => {
    const discovered = await oauth.processDiscoveryResponse(
      new URL(base),
      await oauth.discoveryRequest(new URL(base), { algorithm: 'oauth2', ...insecure }),
    );
    const redirectUri = 'https://partner.example/oauth/callback';
    const { client: record, clientSecret } = await createOAuthClient(t.database.db, {
      name: 'Confidential partner',
      redirectUris: [redirectUri],
      isPublic: false,
    });
    const client: oauth.Client = { client_id: record.clientId };
    const clientAuth = oauth.ClientSecretBasic(clientSecret as string);
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(discovered.authorization_endpoint as string);
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: redirectUri,
      response_type: 'code',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();
    const callback = await signInAndApprove(url);
    const params = oauth.validateAuthResponse(discovered, client, callback, state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      discovered,
      client,
      await oauth.authorizationCodeGrantRequest(
        discovered,
        client,
        clientAuth,
        params,
        redirectUri,
        verifier,
        insecure,
      ),
    );
    expect(tokens.scope?.split(' ')).toContain('entries:write');

    // the same client without its secret is refused, PKCE or not
    const params2 = oauth.validateAuthResponse(discovered, client, await signInAndApprove(url), state);
    const refused = await oauth.authorizationCodeGrantRequest(
      discovered,
      client,
      oauth.None(),
      params2,
      redirectUri,
      verifier,
      insecure,
    );
    expect(refused.status).toBeGreaterThanOrEqual(400);
    expect(((await refused.json()) as { error: string }).error).toBe('invalid_client');
  });
});
