import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DEFAULT_LIMIT } from '../../schemas';
import { errorResponses } from '../../errors/responses';
import { actorOf, tags } from './hooks';
import { ClientParams, QUERY_BOUNDS, QueryBody, QueryResponse, READ_TIMEOUT } from './schemas';

/** A query of the client's books in the platform's query language. */
export const queryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.post(
    '/acct/clients/:clientId/query',
    {
      config: { scope: 'acct:clients:read', organization: 'client', audit: 'query' },
      schema: {
        tags,
        summary: 'Run a query',
        description:
          'Parsed and checked against the coverage registry before anything runs: an unknown entity or field, or a ' +
          'malformed query, is 400 QUERY_INVALID naming the position (details[0].offset, line, column). Also needs ' +
          "the read scope of the entity it names. Answers in the platform's QueryResponse shape. " +
          `${QUERY_BOUNDS} ${READ_TIMEOUT}`,
        params: ClientParams,
        body: QueryBody,
        response: { 200: QueryResponse, ...errorResponses(415, 422) },
      },
    },
    async (request) => ({
      data: await app.gateway.query(actorOf(request), request.client, request.body.query, {
        defaultMaxResults: DEFAULT_LIMIT,
        audit: request.agentAudit,
      }),
    }),
  );
};
