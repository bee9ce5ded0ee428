import { firms, organizations, userSessions } from '@firm/db';
import { hashSecret } from '@firm/identity';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../../app';
import { testConfig } from '../../config';
import { createTestApp, DEMO_PASSWORD, type TestApp } from '../../testing';
import { addUser, CookieJar, FORM, form, hiddenFields, signIn } from '../oauth/fixtures';
import { safeReturnTo } from './index';

let t: TestApp;
beforeAll(async () => {
  // This file signs in more often than the per-IP default allows; the brute-force test sets its own limits.
  t = await createTestApp({ config: { LOGIN_RATE_LIMIT_IP_MAX: 1000 } });
});
afterAll(() => t.close());

const OWNER = 'owner@demo-firm.test';

async function loginForm(app = t.app) {
  const page = await app.inject({ method: 'GET', url: '/login' });
  return { page, jar: new CookieJar().store(page), fields: hiddenFields(page.body) };
}

const postLogin = (jar: CookieJar, fields: Record<string, string | undefined>, app = t.app) =>
  app.inject({ method: 'POST', url: '/login', headers: { ...FORM, ...jar.header() }, payload: form(fields) });

describe('GET /login', () => {
  it('serves the form with a CSRF token bound to a signed cookie', async () => {
    const { page, jar, fields } = await loginForm();
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.headers['cache-control']).toBe('no-store');
    expect(page.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(page.body).toContain('name="password"');
    expect(fields.csrf_token).toMatch(/^[\w-]{43}$/);
    expect(jar.raw.get('__Host-login-csrf')).toMatch(/HttpOnly/);
  });
});

describe('POST /login', () => {
  it('signs in: a signed, HttpOnly, SameSite=Lax, Secure __Host- cookie; only a hash is stored', async () => {
    const { jar, fields } = await loginForm();
    const res = await postLogin(jar, { ...fields, email: OWNER, password: DEMO_PASSWORD });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/login');
    jar.store(res);
    const line = jar.raw.get('__Host-session') as string;
    expect(line).toMatch(/HttpOnly/);
    expect(line).toMatch(/Secure/);
    expect(line).toMatch(/SameSite=Lax/);
    expect(line).toMatch(/Path=\//);
    expect(line).not.toMatch(/Domain=/);
    const value = jar.cookies.get('__Host-session') as string;
    const [token, signature] = decodeURIComponent(value).split('.');
    expect(token).toMatch(/^ses_/);
    expect(signature).toBeTruthy();
    const [row] = await t.database.db
      .select()
      .from(userSessions)
      .where(eq(userSessions.tokenHash, hashSecret(token as string)));
    expect(row).toBeDefined();
    const me = await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() });
    expect(me.json().user).toMatchObject({ email: OWNER, role: 'owner' });
    const page = await t.app.inject({ method: 'GET', url: '/login', headers: jar.header() });
    expect(page.body).toContain('You are signed in as');
  });

  it('accepts the email in any case', async () => {
    const { jar, fields } = await loginForm();
    expect(
      (await postLogin(jar, { ...fields, email: ' Owner@Demo-Firm.TEST', password: DEMO_PASSWORD })).statusCode,
    ).toBe(303);
  });

  it('refuses a form without the CSRF token, or whose token does not match the cookie (403)', async () => {
    const { jar, fields } = await loginForm();
    const missing = await postLogin(jar, { email: OWNER, password: DEMO_PASSWORD });
    expect(missing.statusCode).toBe(403);
    expect(missing.headers['set-cookie']).toBeUndefined();
    const noCookie = await postLogin(new CookieJar(), { ...fields, email: OWNER, password: DEMO_PASSWORD });
    expect(noCookie.statusCode).toBe(403);
    const other = await loginForm();
    const crossed = await postLogin(jar, { ...other.fields, email: OWNER, password: DEMO_PASSWORD });
    expect(crossed.statusCode).toBe(403);
  });

  it('refuses a wrong password and an unknown email alike, without a session', async () => {
    for (const [email, password] of [
      [OWNER, 'wrong password'],
      ['nobody@demo-firm.test', DEMO_PASSWORD],
    ]) {
      const { jar, fields } = await loginForm();
      const res = await postLogin(jar, { ...fields, email, password });
      expect(res.statusCode).toBe(401);
      expect(res.body).toContain('Email or password is wrong.');
      expect(String(res.headers['set-cookie'] ?? '')).not.toContain('session=');
    }
  });

  it('refuses an incomplete form with a 400 page', async () => {
    const { jar, fields } = await loginForm();
    const res = await postLogin(jar, { ...fields, email: OWNER });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
  });

  it('goes back to return_to, but never to another site', async () => {
    expect(safeReturnTo('/api/oauth/authorize?x=1')).toBe('/api/oauth/authorize?x=1');
    for (const evil of ['//evil.example/x', 'https://evil.example/', '/\\evil.example', 'evil', '']) {
      expect(safeReturnTo(evil)).toBeNull();
      const { jar, fields } = await loginForm();
      const res = await postLogin(jar, { ...fields, email: OWNER, password: DEMO_PASSWORD, return_to: evil });
      expect(res.headers.location).toBe('/login');
    }
  });

  it('ignores a session cookie whose signature is wrong', async () => {
    const jar = await signIn(t.app, OWNER);
    const value = decodeURIComponent(jar.cookies.get('__Host-session') as string);
    const forged = `${value.split('.')[0]}.${'A'.repeat(43)}`;
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/session',
      headers: { cookie: `__Host-session=${forged}` },
    });
    expect(res.statusCode).toBe(401);
  });
});

describe('POST /logout', () => {
  it('needs the CSRF token, then ends the session for good', async () => {
    const jar = await signIn(t.app, OWNER);
    const refused = await t.app.inject({
      method: 'POST',
      url: '/logout',
      headers: { ...FORM, ...jar.header() },
      payload: '',
    });
    expect(refused.statusCode).toBe(403);
    expect((await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() })).statusCode).toBe(200);
    const stale = jar.header();
    const page = await t.app.inject({ method: 'GET', url: '/login', headers: jar.header() });
    const res = await t.app.inject({
      method: 'POST',
      url: '/logout',
      headers: { ...FORM, ...jar.header() },
      payload: form(hiddenFields(page.body)),
    });
    expect(res.statusCode).toBe(303);
    expect(res.headers.location).toBe('/login');
    expect(jar.store(res).cookies.has('__Host-session')).toBe(false);
    expect((await t.app.inject({ method: 'GET', url: '/api/session', headers: stale })).statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/companies', headers: stale })).statusCode).toBe(401);
  });
});

describe('the session as a credential on the partner routes', () => {
  it('reads with the cookie, and needs x-organization-id when the firm has several organizations', async () => {
    const jar = await signIn(t.app, OWNER);
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/companies', headers: jar.header() })).statusCode).toBe(
      200,
    );
    const noHeader = await t.app.inject({ method: 'GET', url: '/api/v1/accounts', headers: jar.header() });
    expect(noHeader.statusCode).toBe(400);
    expect(noHeader.json().error.code).toBe('ORGANIZATION_REQUIRED');
    const withHeader = await t.app.inject({
      method: 'GET',
      url: '/api/v1/accounts',
      headers: { ...jar.header(), 'x-organization-id': t.orgId },
    });
    expect(withHeader.statusCode).toBe(200);
  });

  it('uses the only organization when the firm has one', async () => {
    const [firm] = await t.database.db.insert(firms).values({ slug: 'solo', name: 'Solo firm' }).returning();
    const [org] = await t.database.db
      .insert(organizations)
      .values({ firmId: firm?.id as string, name: 'Solo client' })
      .returning();
    await addUser(t.database.db, firm?.id as string, 'owner', 'solo@solo.test');
    const jar = await signIn(t.app, 'solo@solo.test');
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/accounts', headers: jar.header() });
    expect(res.statusCode).toBe(200);
    const other = await t.app.inject({
      method: 'GET',
      url: '/api/v1/accounts',
      headers: { ...jar.header(), 'x-organization-id': t.orgId },
    });
    expect(other.statusCode).toBe(404);
    expect(org?.id).toBeDefined();
  });

  it('needs x-csrf-token for changes', async () => {
    const jar = await signIn(t.app, OWNER);
    const payload = { code: '6951', name: 'Session account', type: 'expense' };
    const headers = { ...jar.header(), 'x-organization-id': t.orgId };
    const refused = await t.app.inject({ method: 'POST', url: '/api/v1/accounts', headers, payload });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error).toMatchObject({ code: 'FORBIDDEN' });
    const wrong = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { ...headers, 'x-csrf-token': 'x' },
      payload,
    });
    expect(wrong.statusCode).toBe(403);
    const csrf = (await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() })).json().csrfToken;
    const ok = await t.app.inject({
      method: 'POST',
      url: '/api/v1/accounts',
      headers: { ...headers, 'x-csrf-token': csrf },
      payload,
    });
    expect(ok.statusCode).toBe(201);
  });

  it('stops at expiry', async () => {
    const jar = await signIn(t.app, OWNER);
    const token = decodeURIComponent(jar.cookies.get('__Host-session') as string).split('.')[0] as string;
    await t.database.db
      .update(userSessions)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(userSessions.tokenHash, hashSecret(token)));
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/companies', headers: jar.header() });
    expect(res.statusCode).toBe(401);
  });

  it('a bearer header wins over the cookie', async () => {
    const jar = await signIn(t.app, OWNER);
    const res = await t.app.inject({
      method: 'GET',
      url: '/api/v1/companies',
      headers: { ...jar.header(), authorization: 'Bearer dk_live_wrong' },
    });
    expect(res.statusCode).toBe(401);
  });
});

describe('in development', () => {
  it('names the cookie without __Host- and drops Secure (plain http on localhost)', async () => {
    const dev = await buildApp({ config: testConfig({ NODE_ENV: 'development' }), database: t.database });
    try {
      const jar = await signIn(dev, OWNER);
      const line = jar.raw.get('session') as string;
      expect(line).toMatch(/HttpOnly/);
      expect(line).toMatch(/SameSite=Lax/);
      expect(line).not.toMatch(/Secure/);
    } finally {
      await dev.close();
    }
  });
});

describe('login brute force', () => {
  it('is limited per account, then per IP address: 429 RATE_LIMITED with Retry-After', async () => {
    const limited = await buildApp({
      config: testConfig({ LOGIN_RATE_LIMIT_ACCOUNT_MAX: 3, LOGIN_RATE_LIMIT_IP_MAX: 6 }),
      database: t.database,
    });
    try {
      const attempt = async (email: string, password = 'guess') => {
        const { jar, fields } = await loginForm(limited);
        return postLogin(jar, { ...fields, email, password }, limited);
      };
      expect((await attempt(OWNER, DEMO_PASSWORD)).statusCode).toBe(303); // successes do not count
      for (let i = 0; i < 3; i++) expect((await attempt(OWNER)).statusCode).toBe(401);
      const blocked = await attempt(OWNER, DEMO_PASSWORD);
      expect(blocked.statusCode).toBe(429);
      expect(blocked.json().error).toMatchObject({ code: 'RATE_LIMITED', retryable: true });
      expect(Number(blocked.headers['retry-after'])).toBeGreaterThan(0);
      expect(blocked.headers['ratelimit-limit']).toBe('3');
      expect(blocked.headers['set-cookie']).toBeUndefined();
      // another account from the same address still gets its attempts, until the address is out of them
      expect((await attempt('someone@demo-firm.test')).statusCode).toBe(401);
      const byIp = await attempt('third@demo-firm.test');
      expect(byIp.statusCode).toBe(429);
      expect(byIp.headers['ratelimit-limit']).toBe('6');
      expect(byIp.headers['retry-after']).toBeDefined();
    } finally {
      await limited.close();
    }
  });
});
