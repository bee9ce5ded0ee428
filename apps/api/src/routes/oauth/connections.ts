import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isUuid } from '@firm/core';
import { canManageApps, disconnect, listConnections } from '@firm/identity';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { sendError } from '../../errors';
import { DEFAULT_LIMIT } from '../../schemas';
import { ConnectionList, ConnectionListQuery, ConnectionParams } from './schemas';

const tags = ['oauth'];

/**
 * Only owners and admins manage connected apps. A credential acting for a user (session, OAuth token,
 * key made by a user) is checked against that user's current role; an operator's key (made with the
 * CLI, no user) is firm-level and needs only the scope.
 */
async function refuseNonAdmin(request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | null> {
  const { userId, firmId } = request.credential;
  if (!userId || (await canManageApps(request.server.database.db, userId, firmId))) return null;
  return sendError(reply, request, 'FORBIDDEN', 'only owners and admins of the firm manage connected apps');
}

/** The partner apps connected to the firm over OAuth, and disconnecting them. */
export const oauthConnectionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/oauth-connections',
    {
      config: { scope: 'connections:read', organization: 'firm' },
      schema: {
        tags,
        summary: 'Partner apps connected to the firm',
        description:
          'One entry per approval that still holds live tokens: the app, the approved scopes and organizations, ' +
          'and who approved. Owners and admins only.',
        querystring: ConnectionListQuery,
        response: { 200: ConnectionList },
      },
    },
    async (request, reply) => {
      const refused = await refuseNonAdmin(request, reply);
      if (refused) return refused;
      const page = await listConnections(app.database.db, request.credential.firmId, {
        limit: request.query.limit ?? DEFAULT_LIMIT,
        cursor: request.query.cursor,
      });
      return {
        data: page.data.map((c) => ({ ...c, createdAt: c.createdAt.toISOString() })),
        nextCursor: page.nextCursor,
      };
    },
  );

  app.delete(
    '/oauth-connections/:id',
    {
      config: { scope: 'connections:write', organization: 'firm' },
      schema: {
        tags,
        summary: 'Disconnect a partner app',
        description:
          'Revokes the connection: its access and refresh tokens stop working at once. Owners and admins only.',
        params: ConnectionParams,
        response: { 204: Type.Null({ description: 'Disconnected.' }) },
      },
    },
    async (request, reply) => {
      const refused = await refuseNonAdmin(request, reply);
      if (refused) return refused;
      const { id } = request.params;
      const found = isUuid(id) && (await disconnect(app.database.db, request.credential.firmId, id));
      if (!found) return sendError(reply, request, 'NOT_FOUND', 'no such connection');
      return reply.code(204).send(null);
    },
  );
};
