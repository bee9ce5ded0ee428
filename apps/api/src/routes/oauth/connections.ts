import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isUuid } from '@firm/core';
import { disconnect, listConnections } from '@firm/identity';
import { Type } from 'typebox';
import { requireFirmManager } from '../context';
import { sendError } from '../../errors/responses';
import { DEFAULT_LIMIT } from '../../schemas';
import { ConnectionList, ConnectionListQuery, ConnectionParams } from './schemas';

const tags = ['oauth'];

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
    async (request) => {
      await requireFirmManager(request, 'manage connected apps');
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
      await requireFirmManager(request, 'manage connected apps');
      const { id } = request.params;
      const found = isUuid(id) && (await disconnect(app.database.db, request.credential.firmId, id));
      if (!found) return sendError(reply, request, 'NOT_FOUND', 'no such connection');
      return reply.code(204).send(null);
    },
  );
};
