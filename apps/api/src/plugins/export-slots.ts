import { DomainError } from '@firm/core';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { Type } from 'typebox';
import { ErrorResponse } from '../errors/responses';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route runs an export (or a general ledger): it takes one of the credential's and one of the process's
     * export slots for as long as its response is being sent.
     */
    exportSlot?: boolean;
  }
  interface FastifyInstance {
    /** Takes an export slot for this request until its response ends, or throws 429 RATE_LIMITED. */
    takeExportSlot(request: FastifyRequest, reply: FastifyReply): void;
  }
}

/** What a refused export is told to wait: a typical export of the largest allowed report takes a few seconds. */
export const EXPORT_RETRY_AFTER_SECONDS = 5;
/** A response that has sent nothing for this long (a client that stopped reading) is ended, freeing its slot. */
const EXPORT_IDLE_TIMEOUT_MS = 60_000;

/** The 429 of an export, with the Retry-After header it carries. */
export const exportLimited = {
  description:
    'RATE_LIMITED: the credential already runs EXPORTS_PER_CREDENTIAL exports at once, or the process ' +
    'EXPORTS_PER_PROCESS, or the credential went over its request rate limit. Retry after Retry-After seconds.',
  headers: {
    'retry-after': Type.Integer({
      minimum: 0,
      description: `Seconds to wait (${EXPORT_RETRY_AFTER_SECONDS} when a running export is in the way).`,
    }),
  },
  content: { 'application/json': { schema: ErrorResponse } },
};

/**
 * Concurrent exports. An export or a general ledger holds, for as long as it is sent, a database connection (on
 * Postgres, a read-only snapshot) and slices of the event loop; each credential may run EXPORTS_PER_CREDENTIAL of them
 * at once, and the process EXPORTS_PER_PROCESS whoever asks, so neither one caller nor many together can take every
 * connection or the heap. Beyond either: 429 RATE_LIMITED with Retry-After. The counts are the process's own: a guard
 * of its resources, not a quota, so n processes run n times as many and nothing depends on them being shared.
 */
export const exportSlotsPlugin = fp(async (app: FastifyInstance) => {
  const { EXPORTS_PER_CREDENTIAL: perCredential, EXPORTS_PER_PROCESS: perProcess } = app.config;
  const running = new Map<string, number>();
  let total = 0;

  const refuse = (message: string) =>
    new DomainError('RATE_LIMITED', message, [
      { message: 'retry once a running export has finished', retryAfterSeconds: EXPORT_RETRY_AFTER_SECONDS },
    ]);

  app.decorate('takeExportSlot', (request: FastifyRequest, reply: FastifyReply) => {
    const key = `${request.credential.kind}:${request.credential.id}`;
    const mine = running.get(key) ?? 0;
    if (mine >= perCredential) {
      throw refuse(
        `this credential already runs ${perCredential} exports or general ledgers at once; retry when one has finished`,
      );
    }
    if (total >= perProcess) {
      throw refuse(`the service already runs ${perProcess} exports or general ledgers at once; retry shortly`);
    }
    running.set(key, mine + 1);
    total++;
    let held = true;
    // 'close' ends every response: sent whole, refused, or cut off by the client.
    reply.raw.once('close', () => {
      if (!held) return;
      held = false;
      total--;
      const left = (running.get(key) ?? 1) - 1;
      if (left === 0) running.delete(key);
      else running.set(key, left);
    });
    reply.raw.setTimeout(EXPORT_IDLE_TIMEOUT_MS, () => reply.raw.destroy());
  });
  app.addHook('preHandler', async (request: FastifyRequest, reply: FastifyReply) => {
    if (request.routeOptions.config.exportSlot) app.takeExportSlot(request, reply);
  });
});
