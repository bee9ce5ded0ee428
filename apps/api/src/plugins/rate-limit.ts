import rateLimit from '@fastify/rate-limit';
import { DomainError } from '@firm/core';
import { isConnectionLost } from '@firm/db';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { getSession } from './session';

/** The per-IP key of requests without a credential. */
export const ipKey = (request: FastifyRequest): string => `ip:${request.ip}`;

/** The 429 every limiter throws: the documented error shape, code RATE_LIMITED. */
const rateLimited = (after: string) => new DomainError('RATE_LIMITED', `too many requests; retry in ${after}`);

export interface LimitResult {
  isAllowed: boolean;
  isExceeded?: boolean;
  max?: number;
  remaining?: number;
  ttlInSeconds?: number;
}

/**
 * For limiters run by hand (`app.createRateLimit`), such as the per-account sign-in limit that needs
 * the parsed body: the same headers and error as the plugin's own hooks. `result` may come from a
 * read (`{ increment: false }`), which counts as exceeded once nothing remains.
 */
export function enforceLimit(reply: FastifyReply, result: LimitResult, options: { read?: boolean } = {}): void {
  if (result.isAllowed || result.max === undefined) return;
  reply.header('ratelimit-limit', result.max);
  reply.header('ratelimit-remaining', result.remaining ?? 0);
  reply.header('ratelimit-reset', result.ttlInSeconds ?? 0);
  const refusal = limitRefusal(result, options);
  if (refusal) {
    reply.header('retry-after', result.ttlInSeconds ?? 0);
    throw refusal;
  }
}

/** The error `enforceLimit` throws for `result`, for a caller with no HTTP reply to send (an MCP tool); else null. */
export function limitRefusal(result: LimitResult, options: { read?: boolean } = {}): DomainError | null {
  if (result.isAllowed || result.max === undefined) return null;
  if (!result.isExceeded && !(options.read && result.remaining === 0)) return null;
  return rateLimited(`${result.ttlInSeconds ?? 0} seconds`);
}

/**
 * Rate limits with @fastify/rate-limit, counted in Redis when REDIS_URL is set (shared by every
 * instance) and in memory otherwise. Every route is limited per credential (API key id, OAuth token
 * family, session user) or, without one, per IP address; routes with stricter needs (sign-in, token,
 * registration) declare their own `config.rateLimit`. Over the limit: 429 RATE_LIMITED with
 * Retry-After and RateLimit-Limit/-Remaining/-Reset headers. If Redis fails, requests go through
 * rather than the API going down with it.
 */
export const rateLimitPlugin = fp(async (app: FastifyInstance) => {
  const { config } = app;
  let redis: Redis | null = null;
  if (config.REDIS_URL) {
    redis = new Redis(config.REDIS_URL, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 1 });
    let lastWarning = 0;
    redis.on('error', (err: Error) => {
      if (Date.now() - lastWarning < 60_000) return;
      lastWarning = Date.now();
      app.log.warn({ err }, 'rate-limit store (Redis) unavailable; requests are not being limited');
    });
    await redis.connect().catch(() => {});
    const client = redis;
    app.addHook('onClose', async () => {
      client.disconnect();
    });
  }
  await app.register(rateLimit, {
    global: false,
    enableDraftSpec: true,
    skipOnError: true,
    ...(redis ? { redis, nameSpace: config.REDIS_KEY_PREFIX } : {}),
    errorResponseBuilder: (_request, context) => rateLimited(context.after),
  });

  // A credential that cannot be looked up because the database is away is no reason to count the caller as
  // anonymous (and answer 429 for the rest of the window): the request answers 503 like any other meanwhile.
  const unlessDatabaseAway = (err: unknown): null => {
    if (isConnectionLost(err)) throw err;
    return null;
  };
  const perCaller = app.rateLimit({
    timeWindow: config.RATE_LIMIT_WINDOW_SECONDS * 1000,
    keyGenerator: async (request) => {
      // A valid credential counts against itself on every route, public ones (documents, session) included.
      if (request.routeOptions.config.scope || request.headers.authorization) {
        const credential = await app.resolveCredential(request).catch(unlessDatabaseAway);
        if (credential) return `${credential.kind}:${credential.id}`;
      }
      if (!request.routeOptions.config.scope) {
        // Pages of signed-in users (the consent page) count against the user, not the address.
        const session = await getSession(request).catch(unlessDatabaseAway);
        if (session) return `session:${session.user.id}`;
      }
      return ipKey(request);
    },
    max: (_request, key) => (key.startsWith('ip:') ? config.RATE_LIMIT_ANONYMOUS_MAX : config.RATE_LIMIT_MAX),
  });
  // An instance-level hook, registered before the auth plugin: it runs before authentication, so
  // requests with bad credentials count against their IP address too.
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.rateLimit !== undefined) return;
    await perCaller.call(app, request, reply);
  });
});
