import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    prepare: (app) => {
      app.get('/api/test/boom', async () => {
        throw new Error('relation "secret_table" does not exist at /srv/app.ts:12');
      });
    },
  });
});
afterAll(() => t.close());

describe('GET /api/health', () => {
  it('is public and reports the database', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ok',
      version: expect.any(String),
      database: { reachable: true, kind: expect.stringMatching(/postgres|embedded/) },
    });
  });
});

describe('GET /api/ready', () => {
  it('is 200 on a migrated database that answers', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/ready' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ready',
      version: expect.any(String),
      database: { reachable: true, kind: expect.stringMatching(/postgres|embedded/), pendingMigrations: 0 },
    });
  });
});

describe('request ids', () => {
  it('generates one for every response', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/health' });
    expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('echoes a well-formed caller id and replaces a malformed one', async () => {
    const good = await t.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'req-12345678' } });
    expect(good.headers['x-request-id']).toBe('req-12345678');
    const bad = await t.app.inject({ method: 'GET', url: '/api/health', headers: { 'x-request-id': 'x y<script>' } });
    expect(bad.headers['x-request-id']).not.toBe('x y<script>');
  });

  it('is in error bodies too', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/nope', headers: { 'x-request-id': 'req-abcdefgh' } });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      error: {
        code: 'ROUTE_NOT_FOUND',
        message: expect.any(String),
        retryable: false,
        requestId: 'req-abcdefgh',
      },
    });
  });
});

describe('unexpected errors', () => {
  it('answer 500 without stack, SQL or paths', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/api/test/boom' });
    expect(res.statusCode).toBe(500);
    const body = res.json();
    expect(body.error).toMatchObject({ code: 'INTERNAL_ERROR', retryable: true });
    expect(res.body).not.toMatch(/secret_table|app\.ts|at \//);
  });
});
