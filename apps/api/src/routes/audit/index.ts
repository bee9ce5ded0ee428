import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import { findVisibleOrganization } from '@firm/identity';
import { listAuditEvents } from '@firm/ledger';
import { Type } from 'typebox';
import { DEFAULT_LIMIT, ListQuery, PageOf, Timestamp, Uuid } from '../../schemas';

const AuditEvent = Type.Object(
  {
    id: Uuid(),
    organizationId: Type.Union([Uuid(), Type.Null()], { description: 'Null for firm-level actions.' }),
    actor: Type.Object(
      {
        kind: Type.String({ description: 'api_key, oauth_token, session, cli...' }),
        id: Type.String({ description: 'API key id, OAuth token family id, user id...' }),
      },
      { description: 'The credential that made the change.' },
    ),
    action: Type.String({ description: '`resource.verb`, e.g. entry.posted, books.closed, account.updated.' }),
    resourceType: Type.String(),
    resourceId: Type.String(),
    requestId: Type.Union([Type.String(), Type.Null()], { description: 'The x-request-id of the change.' }),
    data: Type.Object({}, { additionalProperties: true, description: 'What changed.' }),
    createdAt: Timestamp(),
  },
  { title: 'AuditEvent' },
);

const AuditQuery = Type.Object({
  ...ListQuery,
  organizationId: Type.Optional(Uuid('Only this organization.')),
  action: Type.Optional(Type.String({ maxLength: 100, description: 'Only this action, e.g. entry.voided.' })),
  since: Type.Optional(Type.String({ format: 'date-time', description: 'Events at or after this instant.' })),
  until: Type.Optional(Type.String({ format: 'date-time', description: 'Events before this instant.' })),
});

export const auditRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/audit-events',
    {
      config: { scope: 'audit:read', organization: 'none' },
      schema: {
        tags: ['audit'],
        summary: 'Audit trail of the firm',
        description:
          'Every write (entries created, posted and voided, accounts changed, books closed...) with who made it, ' +
          'newest first. A credential narrowed to some organizations sees only their events.',
        querystring: AuditQuery,
        response: { 200: PageOf(AuditEvent) },
      },
    },
    async (request) => {
      const { limit, organizationId, ...rest } = request.query;
      if (organizationId && !(await findVisibleOrganization(app.database.db, request.credential, organizationId))) {
        throw new DomainError('ORGANIZATION_NOT_FOUND', 'organization not found');
      }
      return listAuditEvents(app.database.db, request.credential.firmId, {
        ...rest,
        organizationId,
        visibleOrganizationIds: request.credential.organizationIds,
        limit: limit ?? DEFAULT_LIMIT,
      });
    },
  );
};
