import { timingSafeEqual } from 'node:crypto';
import { type Server, createServer } from 'node:http';
import { type PostingStatementStats, postingStatementStats } from '@firm/ledger';
import { outboxLagSeconds } from '@firm/webhooks';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { Type } from 'typebox';
import { errorResponses, sendError } from '../errors/responses';

export interface Metrics {
  registry: Registry;
  /** Counts a webhook delivery attempt by its outcome. */
  webhookAttempt(outcome: string): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics;
    /** The metrics listener on METRICS_PORT, when there is one. */
    metricsServer?: Server;
  }
}

/**
 * Prometheus metrics (prom-client), one registry per app: requests by route and status with their latency,
 * idempotent replays, rate-limit refusals, the Postgres pool, the outbox's oldest unprocessed event, webhook
 * delivery outcomes, and Node's own process metrics. Served at `GET /metrics` behind `METRICS_TOKEN`, and/or
 * without a token on a port of its own (`METRICS_PORT`, on `METRICS_HOST`); with neither set, not served.
 */
export const metricsPlugin = fp(async (app: FastifyInstance) => {
  const { config, database } = app;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });

  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests answered, by method, route pattern and status',
    labelNames,
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'Time to answer, by method, route pattern and status',
    labelNames,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const replays = new Counter({
    name: 'idempotency_replays_total',
    help: 'Responses replayed for a repeated Idempotency-Key, by route pattern',
    labelNames: ['route'],
    registers: [registry],
  });
  const refusals = new Counter({
    name: 'rate_limit_refusals_total',
    help: 'Requests refused with 429 RATE_LIMITED, by route pattern',
    labelNames: ['route'],
    registers: [registry],
  });
  const webhookAttempts = new Counter({
    name: 'webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts made by this process, by outcome (succeeded, retrying, failed, gone, lease_lost)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  new Gauge({
    name: 'db_pool_connections',
    help: 'Postgres pool connections, by state (in_use, idle, max)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const pool = database.poolStats();
      if (!pool) return;
      this.set({ state: 'in_use' }, pool.total - pool.idle);
      this.set({ state: 'idle' }, pool.idle);
      this.set({ state: 'max' }, pool.max);
    },
  });
  new Gauge({
    name: 'db_pool_waiting_queries',
    help: 'Queries waiting for a Postgres pool connection',
    registers: [registry],
    collect() {
      const pool = database.poolStats();
      if (pool) this.set(pool.waiting);
    },
  });
  new Gauge({
    name: 'outbox_lag_seconds',
    help: 'Age of the oldest event not yet fanned out to webhook deliveries (0 when none waits)',
    registers: [registry],
    async collect() {
      try {
        this.set(await outboxLagSeconds(database.db));
      } catch {
        // The database is unavailable: the gauge keeps its last value; the outage is reported elsewhere.
      }
    },
  });
  // What the process's pool wrote its postings in (packages/ledger/src/posting-batches.ts), read at each scrape.
  const postingCounter = (name: string, help: string, read: (stats: PostingStatementStats) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(read(postingStatementStats(database.db)));
      },
    });
  postingCounter('posting_statements_total', 'Posting statements run by this process', (s) => s.statements);
  postingCounter(
    'posting_statement_postings_total',
    'Postings those statements carried (÷ posting_statements_total: postings per statement)',
    (s) => s.postings,
  );
  postingCounter(
    'posting_statement_splits_total',
    'Statements of several postings that failed, whose postings were then written one by one',
    (s) => s.splits,
  );
  new Gauge({
    name: 'database_up',
    help: '1 while the database answers and is migrated, else 0',
    registers: [registry],
    collect() {
      this.set(app.databaseStatus.known.ready ? 1 : 0);
    },
  });

  app.decorate('metrics', {
    registry,
    webhookAttempt: (outcome: string) => webhookAttempts.inc({ outcome }),
  });

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    if (route === '/metrics') return;
    const labels = { method: request.method, route, status: String(reply.statusCode) };
    requests.inc(labels);
    latency.observe(labels, reply.elapsedTime / 1000);
    if (reply.getHeader('idempotent-replayed') === 'true') replays.inc({ route });
    if (reply.statusCode === 429) refusals.inc({ route });
  });

  const token = config.METRICS_TOKEN ? Buffer.from(config.METRICS_TOKEN) : null;
  app.get(
    '/metrics',
    {
      config: { rateLimit: false, withoutDatabase: true },
      schema: {
        tags: ['health'],
        summary: 'Prometheus metrics',
        description:
          'Prometheus text exposition format. Needs `Authorization: Bearer <METRICS_TOKEN>`; served only when ' +
          '`METRICS_TOKEN` is set (or without a token on `METRICS_PORT`).',
        security: [{ metricsToken: [] }],
        response: {
          200: {
            description: 'The metrics',
            content: { 'text/plain; version=0.0.4': { schema: Type.String() } },
          },
          // 401 without the token; 404 when METRICS_TOKEN is not set on this port.
          ...errorResponses(401, 404),
        },
      },
    },
    async (request, reply) => {
      if (!token) {
        return sendError(reply, request, 'NOT_FOUND', 'metrics are not served here: set METRICS_TOKEN or METRICS_PORT');
      }
      const given = Buffer.from(/^Bearer (.+)$/.exec(request.headers.authorization ?? '')?.[1] ?? '');
      if (given.length !== token.length || !timingSafeEqual(given, token)) {
        reply.header('www-authenticate', 'Bearer realm="metrics"');
        return sendError(reply, request, 'UNAUTHENTICATED', 'metrics need the bearer token in METRICS_TOKEN');
      }
      return reply.type(registry.contentType).send(await registry.metrics());
    },
  );

  if (config.METRICS_PORT !== undefined) {
    const server: Server = createServer((req, res) => {
      if (req.method !== 'GET' || req.url?.split('?')[0] !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        () => res.writeHead(500).end(),
      );
    });
    app.addHook('onReady', async () => {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.METRICS_PORT, config.METRICS_HOST, () => resolve());
      });
    });
    app.addHook('onClose', async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    app.decorate('metricsServer', server);
  }
});
