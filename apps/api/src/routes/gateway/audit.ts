import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { isUuid } from '@firm/core';
import { listAgentAuditEvents } from '@firm/gateway';
import { DEFAULT_LIMIT, PageOf } from '../../schemas';
import { tags } from './hooks';
import { AuditEvent, AuditQuery } from './schemas';

/** What agents did: the firm's agent audit trail. */
export const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.get(
    '/audit-events',
    {
      config: { scope: 'acct:audit:read', organization: 'none' },
      schema: {
        tags,
        summary: 'What agents did',
        description:
          'Every call an authenticated caller made on the gateway, newest first, chained per firm under an HMAC ' +
          'audit key and anchored outside the database (`npm run cli -- audit verify` checks each chain, and that ' +
          'none was cut short). A credential narrowed to some organizations sees only their events.',
        querystring: AuditQuery,
        response: { 200: PageOf(AuditEvent) },
      },
    },
    async (request) => {
      const { limit, clientId, ...rest } = request.query;
      if (clientId && !isUuid(clientId)) return { data: [], nextCursor: null };
      const page = await listAgentAuditEvents(db(), request.credential, {
        ...rest,
        clientId,
        limit: limit ?? DEFAULT_LIMIT,
      });
      return {
        data: page.data.map((e) => ({
          id: e.id,
          seq: e.seq,
          clientId: e.organizationId,
          actor: { kind: e.actorKind, id: e.actorId, name: e.actorName },
          operation: e.operation,
          entityType: e.entityType,
          entityId: e.entityId,
          outcome: e.outcome,
          statusCode: e.statusCode,
          errorCode: e.errorCode,
          requestId: e.requestId,
          dryRun: e.dryRun,
          syncTokenBefore: e.syncTokenBefore,
          syncTokenAfter: e.syncTokenAfter,
          note: e.note,
          createdAt: e.createdAt.toISOString(),
          prevHash: e.prevHash,
          hash: e.hash,
          keyId: e.keyId,
        })),
        nextCursor: page.nextCursor,
      };
    },
  );
};
