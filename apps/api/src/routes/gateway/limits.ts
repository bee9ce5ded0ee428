import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import { getAgentLimits, setAgentLimits } from '@firm/gateway';
import { errorResponses } from '../../errors/responses';
import { AGENT_READ_WINDOW_SECONDS } from '../../plugins/agent-limits';
import { requireFirmManager } from '../context';
import { tags } from './hooks';
import { AgentLimitsBody, AgentLimitsResponse } from './schemas';

/** The firm's limits for agents: what is in force, and the firm's own settings. */
export const limitRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  const limitsOf = async (firmId: string) => {
    const own = await getAgentLimits(db(), firmId);
    return {
      data: {
        writeBudget: own.writeBudget ?? app.config.AGENT_WRITE_BUDGET,
        writeWindowSeconds: app.config.AGENT_WRITE_WINDOW_SECONDS,
        readLimit: own.readLimit ?? app.config.AGENT_READ_LIMIT,
        readWindowSeconds: AGENT_READ_WINDOW_SECONDS,
        firm: own,
      },
    };
  };

  app.get(
    '/limits',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: {
        tags,
        summary: "The firm's limits for agents",
        description:
          'Writes per credential per write window (dry runs included) and reads per credential per minute, as in ' +
          "force, and the firm's own settings (null: the deployment's default). The gateway's routes and the MCP " +
          'tools (those that call the partner API too) spend the same budget. Over either: 429 RATE_LIMITED with ' +
          'Retry-After.',
        response: { 200: AgentLimitsResponse },
      },
    },
    async (request) => limitsOf(request.credential.firmId),
  );

  app.patch(
    '/limits',
    {
      config: { scope: 'acct:clients:write', organization: 'firm', audit: 'limits.update' },
      schema: {
        tags,
        summary: "Set the firm's limits for agents",
        description:
          'For firm owners and admins, signed in or through an API key of the firm that covers every organization; ' +
          'an OAuth access token (an agent) cannot change its own limits: 403 FORBIDDEN. Null restores the default. ' +
          'Every process applies a change within AGENT_LIMITS_CACHE_MS.',
        body: AgentLimitsBody,
        response: { 200: AgentLimitsResponse, ...errorResponses(415) },
      },
    },
    async (request) => {
      if (request.credential.kind === 'oauth_token') {
        throw new DomainError('FORBIDDEN', 'an agent cannot change its limits; a firm owner or admin does');
      }
      await requireFirmManager(request, 'change what agents may do');
      await setAgentLimits(db(), request.credential.firmId, request.body);
      app.agentLimits.forget(request.credential.firmId);
      return limitsOf(request.credential.firmId);
    },
  );
};
