import { inProcessLimiter, type QboConfig, type QboLimiter, redisLimiter, resealTokens } from '@firm/qbo';
import type { FastifyPluginAsync } from 'fastify';
import fp from 'fastify-plugin';
import { Redis } from 'ioredis';
import { qboConfigOf } from '../config';

export interface QboRuntime {
  config: QboConfig;
  /** QBO's per-company limits, shared by every process through Redis when REDIS_URL is set. */
  limiter: QboLimiter;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** QuickBooks Online, when QBO_CLIENT_ID is set; null otherwise (clients stay on the embedded platform). */
    qbo: QboRuntime | null;
  }
}

export const qboPlugin: FastifyPluginAsync = fp(async (app) => {
  const config = qboConfigOf(app.config);
  if (!config) {
    app.decorate('qbo', null);
    return;
  }
  let limiter = inProcessLimiter();
  if (app.config.REDIS_URL) {
    const redis = new Redis(app.config.REDIS_URL, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
    });
    redis.on('error', (err: Error) => app.log.warn({ err: err.message }, 'QBO limiter: Redis unavailable'));
    await redis.connect().catch(() => {});
    limiter = redisLimiter(redis);
    app.addHook('onClose', async () => void redis.disconnect());
  }
  app.decorate('qbo', { config, limiter });
  // Tokens sealed under a key that is no longer first in QBO_TOKEN_ENCRYPTION_KEY are sealed anew, once per start.
  app.addHook('onReady', async () => {
    try {
      const { resealed, unreadable } = await resealTokens(app.database.db, config);
      if (resealed || unreadable) app.log.info({ resealed, unreadable }, 'QBO tokens sealed under the current key');
    } catch (err) {
      app.log.warn({ err: (err as Error).message }, 'QBO tokens could not be resealed');
    }
  });
});
