import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import {
  type Client,
  COVERAGE,
  effectiveApprovalPolicy,
  getClient,
  listClients,
  setAgentAccess,
  setApprovalPolicy,
} from '@firm/gateway';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { DataOf } from '../../schemas';
import { VERSION } from '../../version';
import { requireFirmManager } from '../context';
import { tags } from './hooks';
import {
  Client as ClientSchema,
  ClientParams,
  ClientPatch,
  CoverageEntry as CoverageSchema,
  StatusResponse,
} from './schemas';

export const CAPABILITIES = [
  'clients',
  'coverage',
  'entities',
  'transactions',
  'audit-events',
  'idempotency',
  'dry-run',
];

export const presentClient = (c: Client) => ({
  id: c.id,
  name: c.name,
  acctCompanyId: c.acctCompanyId,
  platform: c.platform,
  status: c.status,
  lastSyncAt: c.lastSyncAt ? c.lastSyncAt.toISOString() : null,
  agentAccess: c.agentAccess,
});

/** The gateway's status, the firm's clients open to agents, and what the gateway covers. */
export const clientRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.get(
    '/status',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: {
        tags,
        summary: 'Gateway status',
        description: 'A bare object (no `data` envelope), as the spec defines it.',
        response: { 200: StatusResponse },
      },
    },
    async () => ({ ok: true, service: 'agent-gateway', version: VERSION, capabilities: CAPABILITIES }),
  );

  app.get(
    '/acct/clients',
    {
      config: { scope: 'acct:clients:read', organization: 'none', audit: 'clients.list' },
      schema: {
        tags,
        summary: "The firm's clients open to agents",
        description: 'Every organization of the firm this credential may see whose agentAccess is not `none`.',
        response: { 200: DataOf(Type.Array(ClientSchema)) },
      },
    },
    async (request) => ({ data: (await listClients(db(), request.credential)).map(presentClient) }),
  );

  app.get(
    '/acct/clients/:clientId',
    {
      config: { scope: 'acct:clients:read', organization: 'client', audit: 'clients.read' },
      schema: { tags, summary: 'One client', params: ClientParams, response: { 200: DataOf(ClientSchema) } },
    },
    async (request) => ({
      data: {
        ...presentClient(request.client),
        approvalPolicy: await effectiveApprovalPolicy(db(), request.credential.firmId, request.client.id, null),
      },
    }),
  );

  app.patch(
    '/acct/clients/:clientId',
    {
      config: { scope: 'acct:clients:write', organization: 'none', audit: 'clients.update' },
      schema: {
        tags,
        summary: 'Open or close a client to agents (its agentAccess), or set its approval policy',
        description:
          'For firm owners and admins, signed in or through an API key of the firm; an OAuth access token (an ' +
          'agent) cannot change what agents may do: 403 FORBIDDEN. Reaches clients whose access is `none` too. ' +
          "`approvalPolicy` sets the client's own policy (null: the firm's default again); a policy naming an " +
          'entity agents do not write, an unknown operation or a negative amount is 400 VALIDATION_ERROR.',
        params: ClientParams,
        body: ClientPatch,
        response: { 200: DataOf(ClientSchema), ...errorResponses(415) },
      },
    },
    async (request) => {
      if (request.credential.kind === 'oauth_token') {
        throw new DomainError('FORBIDDEN', 'an agent cannot change agent access; a firm owner or admin does');
      }
      await requireFirmManager(request, 'change what agents may do');
      const { agentAccess, approvalPolicy } = request.body;
      const client = await db().transaction(async (tx) => {
        const current =
          agentAccess === undefined
            ? await getClient(tx, request.credential, request.params.clientId, { includeClosed: true })
            : await setAgentAccess(tx, request.credential, request.params.clientId, agentAccess);
        if (approvalPolicy !== undefined) {
          await setApprovalPolicy(tx, request.credential.firmId, 'client', current.id, approvalPolicy);
        }
        return current;
      });
      request.agentAudit.clientId = client.id;
      return {
        data: {
          ...presentClient(client),
          approvalPolicy: await effectiveApprovalPolicy(db(), request.credential.firmId, client.id, null),
        },
      };
    },
  );

  app.get(
    '/acct/coverage',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: {
        tags,
        summary: 'What the gateway covers',
        description:
          'One entry per entity: its operations and the scope each needs, its transaction type, its shortcut.',
        response: { 200: DataOf(Type.Array(CoverageSchema)) },
      },
    },
    async () => ({ data: COVERAGE.map((e) => ({ ...e, operations: [...e.operations], scopes: { ...e.scopes } })) }),
  );
};
