import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app';
import { testConfig } from '../../config';
import { createTestApp, DEMO_PASSWORD, type TestApp } from '../../testing';
import { CookieJar, FORM, form, hiddenFields, signIn } from '../oauth/fixtures';
import { safeReturnTo } from './index';

/** Attacks on browser sign-in: open redirects, crossed CSRF tokens, replayed cookies, distributed guessing. */

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: { LOGIN_RATE_LIMIT_IP_MAX: 1000 } });
});
afterAll(() => t.close());

const OWNER = 'owner@demo-firm.test';

async function loginForm(app = t.app, remoteAddress?: string) {
  const page = await app.inject({ method: 'GET', url: '/login', ...(remoteAddress ? { remoteAddress } : {}) });
  return { jar: new CookieJar().store(page), fields: hiddenFields(page.body) };
}

const postLogin = (jar: CookieJar, fields: Record<string, string | undefined>, app = t.app, remoteAddress?: string) =>
  app.inject({
    method: 'POST',
    url: '/login',
    headers: { ...FORM, ...jar.header() },
    payload: form(fields),
    ...(remoteAddress ? { remoteAddress } : {}),
  });

/** Where a Location header sends a browser that is on this site. */
const resolved = (location: string | undefined) => new URL(location as string, 'https://books.example').origin;

describe('return_to is never an open redirect', () => {
  // Paths that the URL parser normalizes into a scheme-relative `//host`.
  const EVIL = [
    '/.//evil.example',
    '/./\\evil.example',
    '/a/..//evil.example',
    '/%2e//evil.example',
    '/%2E%2E//evil.example',
    '/.//evil.example/path?x=1',
  ];

  it.each(EVIL)('safeReturnTo(%s) is refused', (evil) => {
    expect(safeReturnTo(evil)).toBeNull();
  });

  it.each(EVIL)('after signing in with return_to=%s the browser stays on this site', async (evil) => {
    const { jar, fields } = await loginForm();
    const res = await postLogin(jar, { ...fields, email: OWNER, password: DEMO_PASSWORD, return_to: evil });
    expect(res.statusCode).toBe(303);
    expect(resolved(res.headers.location)).toBe('https://books.example');
  });

  it.each(EVIL)('a signed-in GET /login?return_to=%s stays on this site', async (evil) => {
    const jar = await signIn(t.app, OWNER);
    const res = await t.app.inject({
      method: 'GET',
      url: `/login?return_to=${encodeURIComponent(evil)}`,
      headers: jar.header(),
    });
    if (res.statusCode === 302) expect(resolved(res.headers.location)).toBe('https://books.example');
    else expect(res.statusCode).toBe(200);
  });

  it('still returns to a path on this site, with its query', async () => {
    expect(safeReturnTo('/api/oauth/authorize?client_id=oc_x&state=a%2Fb')).toBe(
      '/api/oauth/authorize?client_id=oc_x&state=a%2Fb',
    );
  });
});

describe('sessions', () => {
  it('a session cookie replayed after logout is no credential anywhere, and its CSRF token is dead', async () => {
    const jar = await signIn(t.app, OWNER);
    const stale = jar.header();
    const csrf = (await t.app.inject({ method: 'GET', url: '/api/session', headers: stale })).json().csrfToken;
    const page = await t.app.inject({ method: 'GET', url: '/login', headers: stale });
    await t.app.inject({
      method: 'POST',
      url: '/logout',
      headers: { ...FORM, ...stale },
      payload: form(hiddenFields(page.body)),
    });
    expect((await t.app.inject({ method: 'GET', url: '/api/session', headers: stale })).statusCode).toBe(401);
    const write = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { ...stale, 'x-csrf-token': csrf, 'x-organization-id': t.orgId },
      payload: { code: '6953', name: 'After logout', type: 'expense' },
    });
    expect(write.statusCode).toBe(401);
    expect(write.headers['www-authenticate']).toContain('resource_metadata=');
    // the sign-in page shows the form again, not "signed in"
    const again = await t.app.inject({ method: 'GET', url: '/login', headers: stale });
    expect(again.body).toContain('name="password"');
  });

  it('the x-csrf-token of another session is refused for changes (403), nothing written', async () => {
    const a = await signIn(t.app, OWNER);
    const b = await signIn(t.app, OWNER);
    const csrfB = (await t.app.inject({ method: 'GET', url: '/api/session', headers: b.header() })).json().csrfToken;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { ...a.header(), 'x-csrf-token': csrfB, 'x-organization-id': t.orgId },
      payload: { code: '6954', name: 'Crossed CSRF', type: 'expense' },
    });
    expect(res.statusCode).toBe(403);
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/accounts?limit=200',
      headers: { ...t.orgHeaders },
    });
    expect(JSON.stringify(list.json())).not.toContain('Crossed CSRF');
  });

  it('the logout form with the CSRF token of another session is refused and the session lives on', async () => {
    const a = await signIn(t.app, OWNER);
    const b = await signIn(t.app, OWNER);
    const csrfB = (await t.app.inject({ method: 'GET', url: '/api/session', headers: b.header() })).json().csrfToken;
    const res = await t.app.inject({
      method: 'POST',
      url: '/logout',
      headers: { ...FORM, ...a.header() },
      payload: form({ csrf_token: csrfB }),
    });
    expect(res.statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: '/api/session', headers: a.header() })).statusCode).toBe(200);
  });

  it('a login CSRF cookie of one browser with the form token of another is refused', async () => {
    const one = await loginForm();
    const two = await loginForm();
    const res = await postLogin(one.jar, { ...two.fields, email: OWNER, password: DEMO_PASSWORD });
    expect(res.statusCode).toBe(403);
    expect(String(res.headers['set-cookie'] ?? '')).not.toContain('session=');
  });
});

describe('login brute force from many addresses', () => {
  it('blocks an account per address, so a stranger cannot lock its owner out, and caps guesses from everywhere', async () => {
    const limited = await buildApp({
      config: testConfig({
        LOGIN_RATE_LIMIT_ACCOUNT_MAX: 3,
        LOGIN_RATE_LIMIT_ACCOUNT_ANY_IP_MAX: 5,
        LOGIN_RATE_LIMIT_IP_MAX: 100,
      }),
      database: t.database,
    });
    try {
      const attempt = async (ip: string, email: string, password: string) => {
        const { jar, fields } = await loginForm(limited, ip);
        return postLogin(jar, { ...fields, email, password }, limited, ip);
      };
      for (let i = 0; i < 3; i++) expect((await attempt('10.1.0.1', OWNER, `guess-${i}`)).statusCode).toBe(401);
      // from the guessing address, a differently spelled email, even the right password: blocked
      const blocked = await attempt('10.1.0.1', ' OWNER@demo-firm.test', DEMO_PASSWORD);
      expect(blocked.statusCode).toBe(429);
      expect(blocked.json().error.code).toBe('RATE_LIMITED');
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect(blocked.headers['set-cookie']).toBeUndefined();
      // the owner, from their own address, still signs in
      expect((await attempt('10.1.0.2', OWNER, DEMO_PASSWORD)).statusCode).toBe(303);
      // guesses spread over more addresses reach the account-wide cap: then every address is refused
      expect((await attempt('10.1.0.3', OWNER, 'guess-3')).statusCode).toBe(401);
      expect((await attempt('10.1.0.4', OWNER, 'guess-4')).statusCode).toBe(401);
      const capped = await attempt('10.1.0.2', OWNER, DEMO_PASSWORD);
      expect(capped.statusCode).toBe(429);
      expect(capped.headers['ratelimit-limit']).toBe('5');
      // another account is not affected
      expect((await attempt('10.1.0.9', 'someone@demo-firm.test', 'guess')).statusCode).toBe(401);
    } finally {
      await limited.close();
    }
  });
});

describe('login limits cannot be dodged', () => {
  it('a forged X-Forwarded-For does not give a fresh per-IP allowance', async () => {
    const limited = await buildApp({
      config: testConfig({ LOGIN_RATE_LIMIT_ACCOUNT_MAX: 100, LOGIN_RATE_LIMIT_IP_MAX: 2 }),
      database: t.database,
    });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const { jar, fields } = await loginForm(limited, '10.2.0.1');
        const res = await limited.inject({
          method: 'POST',
          url: '/login',
          headers: { ...FORM, ...jar.header(), 'x-forwarded-for': `203.0.113.${i}` },
          payload: form({ ...fields, email: `nobody${i}@demo-firm.test`, password: 'guess' }),
          remoteAddress: '10.2.0.1',
        });
        statuses.push(res.statusCode);
      }
      expect(statuses).toEqual([401, 401, 429]);
    } finally {
      await limited.close();
    }
  });

  it('with REDIS_URL, failed sign-ins on one instance block the account on another', async (context) => {
    const probe = new Redis('redis://127.0.0.1:6379', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    const reachable = await probe
      .connect()
      .then(() => true)
      .catch(() => false);
    if (!reachable) {
      probe.disconnect();
      context.skip('Redis is not reachable at 127.0.0.1:6379');
    }
    const prefix = `test-login-limit:${process.pid}:${Date.now()}:`;
    const config = testConfig({
      LOGIN_RATE_LIMIT_ACCOUNT_MAX: 100,
      LOGIN_RATE_LIMIT_ACCOUNT_ANY_IP_MAX: 2,
      LOGIN_RATE_LIMIT_IP_MAX: 100,
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_KEY_PREFIX: prefix,
    });
    const one = await buildApp({ config, database: t.database });
    const two = await buildApp({ config, database: t.database });
    try {
      const attempt = async (app: typeof one, ip: string, password: string) => {
        const { jar, fields } = await loginForm(app, ip);
        return postLogin(jar, { ...fields, email: OWNER, password }, app, ip);
      };
      expect((await attempt(one, '10.3.0.1', 'guess-1')).statusCode).toBe(401);
      expect((await attempt(two, '10.3.0.2', 'guess-2')).statusCode).toBe(401);
      const blocked = await attempt(one, '10.3.0.3', DEMO_PASSWORD);
      expect(blocked.statusCode).toBe(429);
      expect(blocked.json().error.code).toBe('RATE_LIMITED');
      expect((await probe.keys(`${prefix}*`)).length).toBeGreaterThan(0);
    } finally {
      await one.close();
      await two.close();
      const keys = await probe.keys(`${prefix}*`);
      if (keys.length > 0) await probe.del(...keys);
      probe.disconnect();
    }
  });
});
