import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Tx } from '@firm/db';
import { listOrganizations } from '@firm/identity';
import { createCompany, presentCompany, setCompanyArchived, updateCompany } from '@firm/ledger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errorResponses } from '../../errors/responses';
import {
  IDEMPOTENCY_HEADER,
  IdempotencyHeaders,
  OptionalIdempotencyHeaders,
  runIdempotent,
  runIdempotentCreation,
} from '../../plugins/idempotency';
import { DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext, requireFirmManager } from '../context';
import {
  CompanyParams,
  CreateCompanyBody,
  OrganizationList,
  OrganizationListQuery,
  OrganizationOne,
  UpdateCompanyBody,
} from './schemas';

const tags = ['organizations'];
const MANAGE = 'create, change and archive client companies';

export const organizationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  /**
   * A change to a company, once per Idempotency-Key when one is sent. The company's row changed: lookups that kept
   * it (the API key cache) start again, so the next request sees it archived, renamed...
   */
  const change = async (
    request: FastifyRequest,
    reply: FastifyReply,
    work: (tx: Tx) => Promise<{ status: number; body: unknown }>,
  ) => {
    await requireFirmManager(request, MANAGE);
    try {
      if (request.headers[IDEMPOTENCY_HEADER] !== undefined) return await runIdempotent(request, reply, work);
      const outcome = await db().transaction(work);
      return reply.code(outcome.status).send(outcome.body);
    } finally {
      app.apiKeyCache.clear();
    }
  };

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
          tags,
          summary,
          description: 'Active companies by default; `status=archived` or `status=all` lists archived ones.',
          querystring: OrganizationListQuery,
          response: { 200: OrganizationList },
        },
      },
      async (request) => {
        const page = await listOrganizations(db(), request.credential, {
          limit: request.query.limit ?? DEFAULT_LIMIT,
          cursor: request.query.cursor,
          status: request.query.status,
        });
        return { data: page.data.map(presentCompany), nextCursor: page.nextCursor };
      },
    );

    app.post(
      path,
      {
        config: { scope: 'companies:write', organization: 'firm' },
        schema: {
          tags,
          summary: path === '/companies' ? 'Create a company' : 'Create a client organization (a company)',
          description:
            'A new client company of the firm, with the chart of its template (`standard` by default, or `empty`), ' +
            'its currency (ISO 4217, USD by default) and the month its fiscal year starts in (January by default). ' +
            'Names are unique in the firm (409 COMPANY_NAME_TAKEN). The agent gateway lists it as a client with ' +
            'agentAccess `none` until an owner or admin opens it (PATCH /agent/v1/acct/clients/{clientId}). ' +
            'Records company.created. Owners and admins only. Requires Idempotency-Key: the key is the firm’s (one ' +
            'key, one new company), and the same key and body replay the company created with ' +
            '`Idempotent-Replayed: true`.',
          headers: IdempotencyHeaders,
          body: CreateCompanyBody,
          response: { 201: OrganizationOne, ...errorResponses(409, 415, 422) },
        },
      },
      async (request, reply) => {
        await requireFirmManager(request, MANAGE);
        return runIdempotentCreation(request, reply, async (tx) => {
          const company = await createCompany(tx, ledgerContext(request), request.body);
          return { status: 201, body: { data: presentCompany(company) }, organizationId: company.id };
        });
      },
    );
  }

  app.get(
    '/companies/:companyId',
    {
      config: { scope: 'organizations:read', organization: 'path' },
      schema: {
        tags,
        summary: 'Company details',
        description: 'Archived companies too.',
        params: CompanyParams,
        response: { 200: OrganizationOne },
      },
    },
    async (request) => ({ data: presentCompany(request.organization) }),
  );

  app.patch(
    '/companies/:companyId',
    {
      config: { scope: 'companies:write', organization: 'path' },
      schema: {
        tags,
        summary: 'Change a company',
        description:
          'Name, legal name, tax id, currency, fiscal-year start month; the fields sent change, null clears legal ' +
          'name and tax id. The currency cannot change once the company has posted entries (409 CURRENCY_LOCKED). ' +
          'A new fiscal-year start month is also recorded as books.fiscal_year_changed. Records company.updated ' +
          'when anything changed. Owners and admins only. An Idempotency-Key is honoured when sent.',
        params: CompanyParams,
        headers: OptionalIdempotencyHeaders,
        body: UpdateCompanyBody,
        response: { 200: OrganizationOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) =>
      change(request, reply, async (tx) => ({
        status: 200,
        body: {
          data: presentCompany(await updateCompany(tx, ledgerContext(request), request.organization.id, request.body)),
        },
      })),
  );

  for (const [action, archived, description] of [
    [
      'archive',
      true,
      'Its books, reports, history and settings stay readable (GET routes, reports, exports, agents’ reads); every ' +
        'write to it (partner API, agent gateway, MCP tools) is 409 COMPANY_ARCHIVED, scheduled entries and bank-feed ' +
        'syncs wait, and it leaves the default company lists and the agents’ client list. Records company.archived.',
    ],
    [
      'unarchive',
      false,
      'It can be written to again, and is listed again. Scheduled entries that fell due while it was archived run ' +
        'at the next round; requested bank-feed syncs run. Records company.unarchived.',
    ],
  ] as const) {
    app.post(
      `/companies/:companyId/${action}`,
      {
        config: { scope: 'companies:write', organization: 'path', archivedAllowed: true },
        schema: {
          tags,
          summary: archived ? 'Archive a company' : 'Unarchive a company',
          description:
            `${description} A company already ${archived ? 'archived' : 'active'} is answered as it is, and ` +
            'nothing is recorded. Owners and admins only. An Idempotency-Key is honoured when sent.',
          params: CompanyParams,
          headers: OptionalIdempotencyHeaders,
          response: { 200: OrganizationOne, ...errorResponses(409) },
        },
      },
      async (request, reply) =>
        change(request, reply, async (tx) => {
          const { company } = await setCompanyArchived(tx, ledgerContext(request), request.organization.id, archived);
          return { status: 200, body: { data: presentCompany(company) } };
        }),
    );
  }
};
