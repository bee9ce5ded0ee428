import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listOrganizations, type Organization } from '@firm/identity';
import { DEFAULT_LIMIT } from '../../schemas';
import { CompanyParams, OrganizationList, OrganizationListQuery, OrganizationOne } from './schemas';

const present = (o: Organization) => ({
  id: o.id,
  name: o.name,
  legalName: o.legalName,
  currency: o.currency,
  fiscalYearStartMonth: o.fiscalYearStartMonth,
  booksClosedThrough: o.booksClosedThrough,
  createdAt: o.createdAt.toISOString(),
});

export const organizationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  // Both lists return the same records: "organizations" for account-level OAuth mapping, "companies" for company-path clients.
  for (const [path, summary] of [
    ['/organizations', 'Client organizations the firm manages'],
    ['/companies', 'Companies the connected firm manages (the same records as organizations)'],
  ] as const) {
    app.get(
      path,
      {
        config: { scope: 'organizations:read', organization: 'none' },
        schema: {
          tags: ['organizations'],
          summary,
          querystring: OrganizationListQuery,
          response: { 200: OrganizationList },
        },
      },
      async (request) => {
        const page = await listOrganizations(app.database.db, request.credential, {
          limit: request.query.limit ?? DEFAULT_LIMIT,
          cursor: request.query.cursor,
        });
        return { data: page.data.map(present), nextCursor: page.nextCursor };
      },
    );
  }

  app.get(
    '/companies/:companyId',
    {
      config: { scope: 'organizations:read', organization: 'path' },
      schema: {
        tags: ['organizations'],
        summary: 'Company details',
        params: CompanyParams,
        response: { 200: OrganizationOne },
      },
    },
    async (request) => ({ data: present(request.organization) }),
  );
};
