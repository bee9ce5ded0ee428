import { createApiKey } from '@firm/identity';
import type { FastifyInstance } from 'fastify';
import { redisReachable } from '@firm/core/redis-probe';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp } from '../app';
import { testConfig } from '../config';
import { bearer, connect, registerClient, signIn, tokenRequest } from '../routes/oauth/fixtures';
import { createTestApp, type TestApp } from '../testing';

const LIMITS = { RATE_LIMIT_MAX: 4, RATE_LIMIT_ANONYMOUS_MAX: 3, OAUTH_TOKEN_RATE_LIMIT_MAX: 3 };

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: LIMITS });
});
afterAll(() => t.close());

const companies = (headers: Record<string, string>, app: FastifyInstance = t.app) =>
  app.inject({ method: 'GET', url: '/api/v1/companies', headers });

async function newKey() {
  const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId });
  return { authorization: `Bearer ${key}` };
}

describe('per credential', () => {
  it('counts each API key on its own and answers 429 RATE_LIMITED with Retry-After and RateLimit-*', async () => {
    const a = await newKey();
    const b = await newKey();
    for (let i = 1; i <= 4; i++) {
      const res = await companies(a);
      expect(res.statusCode).toBe(200);
      expect(res.headers['ratelimit-limit']).toBe('4');
      expect(res.headers['ratelimit-remaining']).toBe(String(4 - i));
      expect(Number(res.headers['ratelimit-reset'])).toBeGreaterThan(0);
    }
    const limited = await companies(a);
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toEqual({
      error: {
        code: 'RATE_LIMITED',
        message: expect.stringContaining('retry in'),
        retryable: true,
        requestId: limited.headers['x-request-id'],
      },
    });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    expect(limited.headers['ratelimit-remaining']).toBe('0');
    expect((await companies(b)).statusCode).toBe(200);
  });

  it('counts a token family as one credential across refreshes, and a session per user', async () => {
    const owner = await signIn(t.app, 'owner@demo-firm.test');
    const registered = await registerClient(t.database.db);
    const first = await connect(t.app, owner, registered);
    const refreshed = (
      await tokenRequest(
        t.app,
        { grant_type: 'refresh_token', refresh_token: first.refresh_token },
        { clientId: registered.client.clientId, secret: registered.secret as string },
      )
    ).json();
    for (const token of [first.access_token, first.access_token, refreshed.access_token, refreshed.access_token]) {
      expect((await companies(bearer(token))).statusCode).toBe(200);
    }
    expect((await companies(bearer(refreshed.access_token))).statusCode).toBe(429);

    // The session's user already spent two requests on the consent page; a second session shares the count.
    const again = await signIn(t.app, 'owner@demo-firm.test');
    const before = await companies(owner.header());
    expect(before.statusCode).toBe(200);
    expect(before.headers['ratelimit-remaining']).toBe('1');
    expect((await companies(again.header())).statusCode).toBe(200);
    expect((await companies(again.header())).statusCode).toBe(429);
  });

  it('limits requests without a valid credential per IP address, bad tokens included', async () => {
    const from = (ip: string, headers: Record<string, string> = {}) =>
      t.app.inject({ method: 'GET', url: '/api/v1/companies', headers, remoteAddress: ip });
    for (let i = 0; i < 3; i++)
      expect((await from('10.0.0.7', { authorization: `Bearer dk_live_guess${i}` })).statusCode).toBe(401);
    const limited = await from('10.0.0.7');
    expect(limited.statusCode).toBe(429);
    expect(limited.json().error.code).toBe('RATE_LIMITED');
    expect((await from('10.0.0.8')).statusCode).toBe(401);
  });

  it('limits the token endpoint more strictly, per IP address', async () => {
    const post = () =>
      tokenRequest(t.app, { grant_type: 'refresh_token', refresh_token: 'mcp_rt_x', client_id: 'oc_x' });
    // the flow above used two of this address's three token requests
    expect((await post()).statusCode).toBe(400);
    const res = await post();
    expect(res.statusCode).toBe(429);
    expect(res.json().error.code).toBe('RATE_LIMITED');
    expect(res.headers['retry-after']).toBeDefined();
    expect(res.headers['ratelimit-limit']).toBe('3');
  });
});

const hasRedis = await redisReachable();
if (!hasRedis)
  console.warn('rate-limit.test.ts: Redis is not reachable at 127.0.0.1:6379; the Redis store tests are skipped');

describe.skipIf(!hasRedis)('with REDIS_URL', () => {
  const prefix = `test-rate-limit:${process.pid}:${Date.now()}:`;
  const config = testConfig({ ...LIMITS, REDIS_URL: 'redis://127.0.0.1:6379', REDIS_KEY_PREFIX: prefix });

  afterAll(async () => {
    const redis = new Redis('redis://127.0.0.1:6379');
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
  });

  it('shares the counters between instances', async () => {
    const one = await buildApp({ config, database: t.database });
    const two = await buildApp({ config, database: t.database });
    try {
      const key = await newKey();
      for (const app of [one, two, one, two]) expect((await companies(key, app)).statusCode).toBe(200);
      const limited = await companies(key, two);
      expect(limited.statusCode).toBe(429);
      expect(limited.json().error.code).toBe('RATE_LIMITED');
      expect(limited.headers['retry-after']).toBeDefined();
      const redis = new Redis('redis://127.0.0.1:6379');
      expect((await redis.keys(`${prefix}*`)).length).toBeGreaterThan(0);
      redis.disconnect();
    } finally {
      await one.close();
      await two.close();
    }
  });
});

describe('when Redis is down', () => {
  it('lets requests through rather than failing them', async () => {
    const app = await buildApp({
      config: testConfig({ ...LIMITS, REDIS_URL: 'redis://127.0.0.1:1' }),
      database: t.database,
    });
    try {
      const key = await newKey();
      for (let i = 0; i < 6; i++) expect((await companies(key, app)).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});

describe('public routes', () => {
  it('count a request carrying a valid key against the key, not the anonymous per-IP limit', async () => {
    const key = await newKey();
    const statuses: number[] = [];
    for (let i = 0; i < LIMITS.RATE_LIMIT_ANONYMOUS_MAX + 1; i++) {
      statuses.push((await t.app.inject({ method: 'GET', url: '/api/openapi.json', headers: key })).statusCode);
    }
    expect(statuses).toEqual([200, 200, 200, 200]);
    // The key's own limit still applies.
    expect((await t.app.inject({ method: 'GET', url: '/api/openapi.json', headers: key })).statusCode).toBe(429);
  });

  it('document the 429 they can answer, and the probes that are never limited do not', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json', headers: await newKey() })).json();
    for (const path of ['/api/openapi.json', '/api/session', '/.well-known/oauth-authorization-server']) {
      expect(Object.keys(doc.paths[path].get.responses), path).toContain('429');
    }
    expect(Object.keys(doc.paths['/api/health'].get.responses)).not.toContain('429');
  });
});
