import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../testing';

const TOKEN = 'metrics-token-0123456789';
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: { METRICS_TOKEN: TOKEN, METRICS_PORT: 0, RATE_LIMIT_ANONYMOUS_MAX: 2 } });
});
afterAll(() => t.close());

const scrape = async () => {
  const res = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return res.body;
};

/** The value of one sample line, e.g. `http_requests_total{method="GET",route="/x",status="200"}`. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    const [, body = '', value] = /^[^{ ]+(?:\{(.*)\})? (\S+)$/.exec(line) ?? [];
    if (Object.entries(labels).every(([k, v]) => body.includes(`${k}="${v}"`))) return Number(value);
  }
  return undefined;
}

describe('GET /metrics', () => {
  it('needs the metrics token', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(401);
    const wrong = await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json().error.code).toBe('UNAUTHENTICATED');
    // An API key is not a metrics token.
    expect((await t.app.inject({ method: 'GET', url: '/metrics', headers: t.auth })).statusCode).toBe(401);
  });

  it('counts requests by route pattern and status, with their latency', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await t.app.inject({ method: 'GET', url: `/api/v1/companies/${t.orgId}/accounts`, headers: t.auth });
      expect(res.statusCode).toBe(200);
    }
    const bad = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${t.orgId}/accounts?limit=0`,
      headers: t.auth,
    });
    expect(bad.statusCode).toBe(400);
    const text = await scrape();
    const route = '/api/v1/companies/:companyId/accounts';
    expect(sample(text, 'http_requests_total', { method: 'GET', route, status: '200' })).toBe(3);
    expect(sample(text, 'http_requests_total', { route, status: '400' })).toBe(1);
    expect(sample(text, 'http_request_duration_seconds_count', { route, status: '200' })).toBe(3);
    expect(text).not.toContain(t.orgId);
    expect(sample(text, 'database_up')).toBe(1);
    expect(sample(text, 'outbox_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(sample(text, 'process_cpu_seconds_total')).toBeGreaterThan(0);
    if (t.database.kind === 'postgres') {
      expect(sample(text, 'db_pool_connections', { state: 'max' })).toBe(10);
      expect(sample(text, 'db_pool_waiting_queries')).toBe(0);
    }
  });

  it('counts idempotent replays and rate-limit refusals', async () => {
    const body = {
      date: '2026-05-01',
      sourceAccountId: t.account('1000'),
      amountCents: 1250,
      categoryAccountId: t.account('6300'),
      description: 'Paper',
    };
    const headers = { ...t.auth, 'idempotency-key': 'metrics-replay-1' };
    const url = `/api/v1/companies/${t.orgId}/purchases`;
    expect((await t.app.inject({ method: 'POST', url, headers, payload: body })).statusCode).toBe(201);
    const replayed = await t.app.inject({ method: 'POST', url, headers, payload: body });
    expect(replayed.headers['idempotent-replayed']).toBe('true');
    for (let i = 0; i < 4; i++) await t.app.inject({ method: 'GET', url: '/api/oauth/authorize' });
    const text = await scrape();
    expect(sample(text, 'idempotency_replays_total', { route: '/api/v1/companies/:companyId/purchases' })).toBe(1);
    expect(sample(text, 'rate_limit_refusals_total')).toBeGreaterThanOrEqual(1);
  });

  it('counts the posting statements and the postings they carried', async () => {
    const before = await scrape();
    const url = `/api/v1/companies/${t.orgId}/purchases`;
    const posted = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        t.app.inject({
          method: 'POST',
          url,
          headers: { ...t.auth, 'idempotency-key': `metrics-batch-${i}` },
          payload: {
            date: '2026-05-02',
            sourceAccountId: t.account('1000'),
            amountCents: 100 + i,
            categoryAccountId: t.account('6300'),
          },
        }),
      ),
    );
    expect(posted.map((r) => r.statusCode)).toEqual(Array(12).fill(201));
    const after = await scrape();
    const delta = (name: string) => (sample(after, name) ?? 0) - (sample(before, name) ?? 0);
    expect(delta('posting_statement_postings_total')).toBe(12);
    expect(delta('posting_statements_total')).toBeGreaterThanOrEqual(1);
    // Sent at once, they shared statements (the embedded database answers one request's statements at a time, so
    // there the requests reach the posting one by one).
    if (t.database.kind === 'postgres') expect(delta('posting_statements_total')).toBeLessThan(12);
    expect(delta('posting_statement_splits_total')).toBe(0);
  });

  it('is served without a token on METRICS_PORT, and only there', async () => {
    const server = t.app.metricsServer;
    expect(server).toBeDefined();
    const { port } = server?.address() as AddressInfo;
    const res = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('http_requests_total');
    expect((await fetch(`http://127.0.0.1:${port}/api/health`)).status).toBe(404);
  });
});

describe('without METRICS_TOKEN', () => {
  it('is not served on the API port, and is documented all the same', async () => {
    const plain = await createTestApp();
    try {
      const res = await plain.app.inject({ method: 'GET', url: '/metrics', headers: plain.auth });
      expect(res.statusCode).toBe(404);
      expect(res.json().error.message).toMatch(/METRICS_TOKEN/);
      expect(plain.app.metricsServer).toBeUndefined();
      // The route is documented whatever the configuration, with its own security scheme.
      const doc = (await plain.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
      expect(doc.paths['/metrics'].get.security).toEqual([{ metricsToken: [] }]);
      expect(doc.components.securitySchemes.metricsToken).toMatchObject({ type: 'http', scheme: 'bearer' });
    } finally {
      await plain.close();
    }
  });
});
