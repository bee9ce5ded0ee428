import { AgentLimitsCache } from '@firm/gateway';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { LimitResult } from './rate-limit';

/** The read limit's window: reads per credential per minute. */
export const AGENT_READ_WINDOW_SECONDS = 60;

export interface AgentLimiter {
  /**
   * Counts one call of the request's credential against its write budget or its read limit. The gateway's routes
   * and the MCP tools that call partner routes both count here, so a credential has one budget whatever it calls.
   */
  spend(request: FastifyRequest, kind: 'write' | 'read'): Promise<LimitResult>;
  /** Forgets a firm's limits in this process (after this process changed them). */
  forget(firmId: string): void;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The agents' write budget and read limit (see AgentLimiter). */
    agentLimits: AgentLimiter;
  }
}

/**
 * The agents' write budget and read limit: counted per credential in the rate limiter's store (Redis when set), at
 * the firm's own numbers when it set them, else the deployment's. One limiter per process, shared by every route
 * that spends it: limiters of their own would each count from zero.
 */
export const agentLimitsPlugin = fp(async (app: FastifyInstance) => {
  const limits = new AgentLimitsCache(() => app.database.db, app.config.AGENT_LIMITS_CACHE_MS);
  const writeBudget = app.createRateLimit({
    timeWindow: app.config.AGENT_WRITE_WINDOW_SECONDS * 1000,
    max: async (request) => (await limits.get(request.credential.firmId)).writeBudget ?? app.config.AGENT_WRITE_BUDGET,
    keyGenerator: (request) => `agent-writes:${request.credential.kind}:${request.credential.id}`,
  });
  const readLimit = app.createRateLimit({
    timeWindow: AGENT_READ_WINDOW_SECONDS * 1000,
    max: async (request) => (await limits.get(request.credential.firmId)).readLimit ?? app.config.AGENT_READ_LIMIT,
    keyGenerator: (request) => `agent-reads:${request.credential.kind}:${request.credential.id}`,
  });
  app.decorate('agentLimits', {
    spend: (request, kind) => (kind === 'write' ? writeBudget : readLimit)(request),
    forget: (firmId) => limits.forget(firmId),
  } satisfies AgentLimiter);
});
