import { oauthClients } from '@firm/db';
import { findOAuthClient, type OAuthClient } from '@firm/identity';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app';
import { testConfig } from '../../config';
import { createTestApp, type TestApp } from '../../testing';
import { bearer, connect, signIn } from './fixtures';

let t: TestApp;
beforeAll(async () => {
  // Registration is limited per IP; this file registers more clients than the default allows.
  t = await createTestApp({ config: { OAUTH_REGISTER_RATE_LIMIT_MAX: 1000 } });
});
afterAll(() => t.close());

const get = (url: string, headers: Record<string, string> = {}) => t.app.inject({ method: 'GET', url, headers });
const register = (payload: unknown) =>
  t.app.inject({ method: 'POST', url: '/api/oauth/register', payload: payload as object });

describe('discovery from one 401', () => {
  it('leads from WWW-Authenticate to the resource metadata, then to the authorization server metadata', async () => {
    const unauthorized = await get('/api/v1/companies');
    expect(unauthorized.statusCode).toBe(401);
    const challenge = unauthorized.headers['www-authenticate'] as string;
    expect(challenge).toBe('Bearer resource_metadata="http://localhost:80/.well-known/oauth-protected-resource"');
    const prmUrl = new URL(/resource_metadata="([^"]+)"/.exec(challenge)?.[1] as string);

    const prm = await get(prmUrl.pathname);
    expect(prm.statusCode).toBe(200);
    expect(prm.json()).toMatchObject({
      resource: 'http://localhost:80',
      authorization_servers: ['http://localhost:80'],
      bearer_methods_supported: ['header'],
    });
    expect(prm.json().scopes_supported).toContain('accounts:read');

    const as = await get('/.well-known/oauth-authorization-server');
    expect(as.statusCode).toBe(200);
    expect(as.json()).toEqual({
      issuer: 'http://localhost:80',
      authorization_endpoint: 'http://localhost:80/api/oauth/authorize',
      token_endpoint: 'http://localhost:80/api/oauth/token',
      registration_endpoint: 'http://localhost:80/api/oauth/register',
      revocation_endpoint: 'http://localhost:80/api/oauth/revoke',
      scopes_supported: expect.arrayContaining(['accounts:read', 'connections:read', 'connections:write']),
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      authorization_response_iss_parameter_supported: true,
      service_documentation: 'http://localhost:80/api/openapi.json',
    });
  });

  it('uses PUBLIC_ORIGIN when it is set', async () => {
    const other = await buildApp({
      config: testConfig({ PUBLIC_ORIGIN: 'https://books.example.com' }),
      database: t.database,
    });
    try {
      const as = await other.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' });
      expect(as.json().issuer).toBe('https://books.example.com');
      const res = await other.inject({ method: 'GET', url: '/api/v1/companies' });
      expect(res.headers['www-authenticate']).toContain(
        'resource_metadata="https://books.example.com/.well-known/oauth-protected-resource"',
      );
    } finally {
      await other.close();
    }
  });

  it('puts the challenge on 401s of API keys too, and insufficient_scope on 403s of bearer tokens', async () => {
    const res = await get('/api/v1/companies', { authorization: 'Bearer dk_live_wrong' });
    expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
    const owner = await signIn(t.app, 'owner@demo-firm.test');
    const client = await t.app.inject({
      method: 'POST',
      url: '/api/oauth/register',
      payload: { redirect_uris: ['https://app.example/cb'], client_name: 'Scoped' },
    });
    const registered = await findOAuthClient(t.database.db, client.json().client_id);
    const tokens = await connect(
      t.app,
      owner,
      { client: registered as OAuthClient, secret: null },
      { scope: 'accounts:read' },
    );
    const forbidden = await get('/api/v1/companies', bearer(tokens.access_token));
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json().error.code).toBe('INSUFFICIENT_SCOPE');
    expect(forbidden.headers['www-authenticate']).toContain('error="insufficient_scope", scope="organizations:read"');
  });
});

describe('POST /api/oauth/register (RFC 7591)', () => {
  it('registers a public client and answers its metadata', async () => {
    const res = await register({
      redirect_uris: ['http://127.0.0.1:7777/callback', 'com.example.desktop:/oauth'],
      client_name: 'Claude Desktop',
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      logo_uri: 'https://example.com/logo.png',
    });
    expect(res.statusCode).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    const body = res.json();
    expect(body).toMatchObject({
      client_id: expect.stringMatching(/^oc_/),
      client_name: 'Claude Desktop',
      redirect_uris: ['http://127.0.0.1:7777/callback', 'com.example.desktop:/oauth'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    });
    expect(body.client_secret).toBeUndefined();
    const [row] = await t.database.db.select().from(oauthClients).where(eq(oauthClients.clientId, body.client_id));
    expect(row).toMatchObject({ isPublic: true, secretHash: null, firmId: null });
  });

  it('names an unnamed client after its redirect host', async () => {
    const res = await register({ redirect_uris: ['https://tool.example/cb'] });
    expect(res.json().client_name).toBe('App at tool.example');
  });

  it.each([
    ['http on a public host', 'http://app.example/cb'],
    ['a fragment', 'https://app.example/cb#x'],
    ['javascript:', 'javascript:alert(1)'],
    ['a relative URI', '/callback'],
    ['a bare private scheme', 'myapp:/cb'],
    ['user information', 'https://user:pw@app.example/cb'],
  ])('refuses a redirect URI with %s: invalid_redirect_uri', async (_name, uri) => {
    const res = await register({ redirect_uris: [uri] });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_redirect_uri');
  });

  it.each([
    ['a confidential auth method', { token_endpoint_auth_method: 'client_secret_basic' }],
    ['another grant type', { grant_types: ['client_credentials'] }],
    ['another response type', { response_types: ['token'] }],
    ['an unknown scope', { scope: 'everything:all' }],
    ['no redirect URI', { redirect_uris: [] }],
    ['redirect_uris missing', { redirect_uris: undefined }],
    ['a NUL character in a name', { client_name: 'App\u0000' }],
  ])('refuses %s: invalid_client_metadata', async (_name, extra) => {
    const res = await register({ redirect_uris: ['https://app.example/cb'], ...extra });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('invalid_client_metadata');
  });
});
