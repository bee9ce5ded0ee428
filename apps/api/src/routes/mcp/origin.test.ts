import { rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import {
  authorizeParams,
  authorizeUrl,
  type CookieJar,
  FORM,
  form,
  hiddenFields,
  pkce,
  registerClient,
  signIn,
} from '../oauth/fixtures';

/** inject's requests reach the app as http://localhost:80 unless a Host header says otherwise. */
const OWN = 'http://localhost:80';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: { ALLOWED_ORIGINS: 'http://localhost:6274' } });
});
afterAll(() => t.close());

const initialize = (headers: Record<string, string>) =>
  t.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      authorization: `Bearer ${t.demo.apiKey}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      ...headers,
    },
    payload: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'origin-test', version: '1' } },
    },
  });

describe('the MCP endpoint checks Origin and Host', () => {
  it.each([
    ['a foreign Origin', { origin: 'http://evil.example.com' }],
    ['Origin null', { origin: 'null' }],
    ['a foreign Host (a rebound name)', { host: 'evil.example.com' }],
    ['a foreign Host and its own Origin', { host: 'evil.example.com:80', origin: 'http://evil.example.com:80' }],
    ['its own host on another scheme', { origin: 'https://localhost:80' }],
  ])('refuses %s with 403 before anything runs', async (_, headers) => {
    const res = await initialize(headers);
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toMatchObject({ code: 'FORBIDDEN', requestId: res.headers['x-request-id'] });
  });

  it('refuses a foreign Origin without a token too, and on GET', async () => {
    const res = await t.app.inject({ method: 'POST', url: '/mcp', headers: { origin: 'http://evil.example.com' } });
    expect(res.statusCode).toBe(403);
    const get = await t.app.inject({ method: 'GET', url: '/mcp', headers: { origin: 'http://evil.example.com' } });
    expect(get.statusCode).toBe(403);
  });

  it.each([
    ['no Origin (not a browser)', {}],
    ['its own Origin', { origin: OWN }],
    ['an origin of ALLOWED_ORIGINS', { origin: 'http://localhost:6274' }],
    ['an IP address as Host', { host: '127.0.0.1:3000', origin: 'http://127.0.0.1:3000' }],
    ['an IPv6 address as Host', { host: '[::1]:3000' }],
  ])('answers %s', async (_, headers) => {
    const res = await initialize(headers);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json().result.serverInfo).toBeDefined();
  });
});

describe('PUBLIC_ORIGIN names the host and origin browsers use', () => {
  let pub: TestApp;
  beforeAll(async () => {
    pub = await createTestApp({ config: { PUBLIC_ORIGIN: 'https://books.example.com' } });
  });
  afterAll(() => pub.close());

  const call = (headers: Record<string, string>) =>
    pub.app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        authorization: `Bearer ${pub.demo.apiKey}`,
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        ...headers,
      },
      payload: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
    });

  it('accepts its host and origin, and refuses another name', async () => {
    expect((await call({ host: 'books.example.com', origin: 'https://books.example.com' })).statusCode).toBe(200);
    expect((await call({ host: 'books.example.com', origin: 'https://evil.example.com' })).statusCode).toBe(403);
    expect((await call({ host: 'evil.example.com' })).statusCode).toBe(403);
  });
});

describe('the browser-facing form posts share the rule', () => {
  let jar: CookieJar;
  beforeAll(async () => {
    jar = await signIn(t.app, 'owner@demo-firm.test');
  });

  const codes = async () =>
    rowsOf<{ n: number }>(await t.database.db.execute(sql`select count(*)::int as n from oauth_codes`))[0]?.n;

  it('refuses a consent decision posted from a foreign origin, issuing no code', async () => {
    const registered = await registerClient(t.database.db, { isPublic: true, name: 'Origin Check' });
    const params = authorizeParams(registered.client, pkce().challenge);
    const page = await t.app.inject({ method: 'GET', url: authorizeUrl(params), headers: jar.header() });
    expect(page.statusCode).toBe(200);
    const before = await codes();
    const post = (origin: string) =>
      t.app.inject({
        method: 'POST',
        url: '/api/oauth/authorize',
        headers: { ...FORM, ...jar.header(), origin },
        payload: form({ ...hiddenFields(page.body), decision: 'approve' }),
      });
    const foreign = await post('http://evil.example.com');
    expect(foreign.statusCode).toBe(403);
    expect(foreign.headers['content-type']).toMatch(/^text\/html/);
    expect(foreign.headers.location).toBeUndefined();
    expect(await codes()).toBe(before);
    const own = await post(OWN);
    expect(own.statusCode).toBe(303);
    expect(new URL(own.headers.location as string).searchParams.get('code')).toBeTruthy();
  });

  it('refuses sign-in and sign-out posted from a foreign origin', async () => {
    const login = await t.app.inject({
      method: 'POST',
      url: '/login',
      headers: { ...FORM, origin: 'http://evil.example.com' },
      payload: form({ email: 'owner@demo-firm.test', password: 'x', csrf_token: 'x' }),
    });
    expect(login.statusCode).toBe(403);
    expect(login.body).toContain('evil.example.com');
    const logout = await t.app.inject({
      method: 'POST',
      url: '/logout',
      headers: { ...FORM, ...jar.header(), origin: 'null' },
      payload: form({ csrf_token: 'x' }),
    });
    expect(logout.statusCode).toBe(403);
  });
});
