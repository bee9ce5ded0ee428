import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Scope } from '@firm/core';
import {
  type CoverageEntry,
  coverageOf,
  coverageOfShortcut,
  covered,
  coveredTransaction,
  type Client,
  type GatewayWrite,
  notCovered,
  type ProposalRow,
} from '@firm/gateway';
import type { WriteResult } from '@firm/platform';
import type { FastifyContextConfig, FastifyInstance, FastifyReply, FastifyRequest, FastifySchema } from 'fastify';
import { errorResponses } from '../../errors/responses';
import { sendOutcome } from '../../plugins/idempotency';
import { DEFAULT_LIMIT } from '../../schemas';
import { actorOf, isDryRun, passThroughRespond, tags, writeKeyOf } from './hooks';
import {
  AGENT_REASON_HEADER,
  ClientParams,
  HELD,
  OptionalWriteHeaders,
  WriteHeaders,
  EntityDeleteBody,
  EntityDeleteQuery,
  EntityIdParams,
  EntityParams,
  EntityPayload,
  PagingQuery,
  ProposalOne,
  QueryResponse,
  READ_TIMEOUT,
  RecordOne,
  ShortcutParams,
  TransactionDelete,
  TransactionGetQuery,
  TransactionListQuery,
  TransactionParams,
  TransactionWrite,
  TransactionWriteResponse,
  WriteQuery,
} from './schemas';

type Action = 'list' | 'read' | 'create' | 'update' | 'delete';

/** What a request to a record route names: its entity (or transaction type), the record, the write's payload. */
interface Target {
  entity?: string;
  transactionType?: string;
  id?: string;
  payload?: Record<string, unknown>;
  syncToken?: string;
}

/** One record route: its door (method, path, schema) and what its request names. */
interface RecordRoute {
  action: Action;
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  url: string;
  schema: FastifySchema;
  target: (request: FastifyRequest) => Target;
}

/** A resource's record routes: generic entities, or the allowlisted transaction types. */
interface RecordResource {
  /** The audit operation's prefix (`entities.create`) and the route scopes' resource. */
  name: 'entities' | 'transactions';
  config: (action: Action) => FastifyContextConfig;
  /** The body of a write's response: the record, or the transaction's envelope. */
  respond?: (
    client: Client,
    transactionType: string | undefined,
    action: Action,
  ) => (r: WriteResult, dryRun: boolean) => object;
  routes: RecordRoute[];
}

const operationOf = (action: Action) => (action === 'list' ? 'read' : action);

/** The scope an entity route needs: the registry's scope for the entity and operation, else the route's own. */
const entityScope =
  (action: Action) =>
  (request: FastifyRequest): Scope | undefined =>
    coverageOf((request.params as { entity?: string }).entity ?? '')?.scopes[operationOf(action)];

const params = (request: FastifyRequest) => request.params as { entity: string; id: string; transactionId: string };
const body = <T>(request: FastifyRequest) => request.body as T;

const ENTITIES: RecordResource = {
  name: 'entities',
  config: (action) => ({
    scope: operationOf(action) === 'read' ? 'acct:entities:read' : 'acct:entities:write',
    scopeOf: entityScope(action),
    organization: 'client',
    ...(action === 'list' || action === 'read' ? {} : { agentWrite: true }),
    audit: `entities.${action}`,
  }),
  routes: [
    {
      action: 'list',
      method: 'GET',
      url: '/acct/clients/:clientId/entities/:entity',
      schema: {
        tags,
        summary: 'List records of an entity',
        description:
          "Answers in the platform's QueryResponse shape. The scope is the entity's read scope (GET /acct/coverage): " +
          `\`acct:transactions:read\` for transactions, else \`acct:entities:read\`. ${READ_TIMEOUT}`,
        params: EntityParams,
        querystring: PagingQuery,
        response: { 200: QueryResponse, ...errorResponses(422) },
      },
      target: (request) => ({ entity: params(request).entity }),
    },
    {
      action: 'read',
      method: 'GET',
      url: '/acct/clients/:clientId/entities/:entity/:id',
      schema: {
        tags,
        summary: 'One record',
        description: READ_TIMEOUT,
        params: EntityIdParams,
        response: { 200: RecordOne, ...errorResponses(422) },
      },
      target: (request) => ({ entity: params(request).entity, id: params(request).id }),
    },
    {
      action: 'create',
      method: 'POST',
      url: '/acct/clients/:clientId/entities/:entity',
      schema: {
        tags,
        summary: 'Create a record',
        description: "The body is the platform's payload for the entity. Requires Idempotency-Key." + HELD,
        params: EntityParams,
        querystring: WriteQuery,
        headers: WriteHeaders,
        body: EntityPayload,
        response: { 200: RecordOne, 201: RecordOne, 202: ProposalOne, ...errorResponses(409, 415, 422) },
      },
      target: (request) => ({ entity: params(request).entity, payload: body(request) }),
    },
    {
      action: 'update',
      method: 'PATCH',
      url: '/acct/clients/:clientId/entities/:entity/:id',
      schema: {
        tags,
        summary: 'Sparse update of a record',
        description:
          'Fields left out keep their values. The body carries the SyncToken of the record as last read; a stale one ' +
          'is 409 STALE_SYNC_TOKEN with the current record in details[0].current.' +
          HELD,
        params: EntityIdParams,
        querystring: WriteQuery,
        headers: OptionalWriteHeaders,
        body: EntityPayload,
        response: { 200: RecordOne, 202: ProposalOne, ...errorResponses(409, 415, 422) },
      },
      target: (request) => ({ entity: params(request).entity, id: params(request).id, payload: body(request) }),
    },
    {
      action: 'delete',
      method: 'DELETE',
      url: '/acct/clients/:clientId/entities/:entity/:id',
      schema: {
        tags,
        summary: 'Delete a record',
        description:
          'Transactions are voided: they leave every list and report, and the books keep them as void. The ' +
          'SyncToken goes in the body or the query string.' +
          HELD,
        params: EntityIdParams,
        querystring: EntityDeleteQuery,
        headers: OptionalWriteHeaders,
        body: EntityDeleteBody,
        response: { 200: RecordOne, 202: ProposalOne, ...errorResponses(409, 415, 422) },
      },
      target: (request) => ({
        entity: params(request).entity,
        id: params(request).id,
        syncToken:
          body<{ SyncToken?: string } | undefined>(request)?.SyncToken ??
          (request.query as { SyncToken?: string }).SyncToken,
      }),
    },
  ],
};

/** A transaction route names its type in the query (reads, `purchase` by default) or in the body (writes). */
const typeOf = (request: FastifyRequest) => (request.query as { entityType?: string }).entityType ?? 'purchase';
const write = (request: FastifyRequest) => body<{ entityType: string; payload?: Record<string, unknown> }>(request);

const TRANSACTIONS: RecordResource = {
  name: 'transactions',
  config: (action) => ({
    scope: `acct:transactions:${operationOf(action)}` as Scope,
    organization: 'client',
    ...(action === 'list' || action === 'read' ? {} : { agentWrite: true }),
    audit: `transactions.${action}`,
  }),
  respond: (client, transactionType, action) => (r, dryRun) => ({
    data: {
      clientId: client.id,
      acctCompanyId: client.acctCompanyId,
      entityType: transactionType,
      transactionId: r.record.Id,
      operation: action,
      source: 'acct' as const,
      postedAt: new Date().toISOString(),
      data: r.record,
      journal: r.journal,
      ...(dryRun ? { dryRun: true } : {}),
      ...(!dryRun && r.bankTransactionIds?.length ? { bankTransactionIds: r.bankTransactionIds } : {}),
    },
  }),
  routes: [
    {
      action: 'list',
      method: 'GET',
      url: '/acct/clients/:clientId/transactions',
      schema: {
        tags,
        summary: 'List transactions of one type',
        description: `\`entityType\` defaults to \`purchase\`. Answers in the platform's QueryResponse shape. ${READ_TIMEOUT}`,
        params: ClientParams,
        querystring: TransactionListQuery,
        response: { 200: QueryResponse, ...errorResponses(422) },
      },
      target: (request) => ({ transactionType: typeOf(request) }),
    },
    {
      action: 'read',
      method: 'GET',
      url: '/acct/clients/:clientId/transactions/:transactionId',
      schema: {
        tags,
        summary: 'One transaction',
        description: `\`entityType\` defaults to \`purchase\`. ${READ_TIMEOUT}`,
        params: TransactionParams,
        querystring: TransactionGetQuery,
        response: { 200: RecordOne, ...errorResponses(422) },
      },
      target: (request) => ({ transactionType: typeOf(request), id: params(request).transactionId }),
    },
    {
      action: 'create',
      method: 'POST',
      url: '/acct/clients/:clientId/transactions',
      schema: {
        tags,
        summary: 'Create a transaction',
        description:
          "`payload` is the platform's payload for `entityType`. Requires Idempotency-Key. `dryRun=true` answers 200 " +
          'with the record and its journal lines and writes nothing.' +
          HELD,
        params: ClientParams,
        querystring: WriteQuery,
        headers: WriteHeaders,
        body: TransactionWrite,
        response: {
          200: TransactionWriteResponse,
          201: TransactionWriteResponse,
          202: ProposalOne,
          ...errorResponses(409, 415, 422),
        },
      },
      target: (request) => ({ transactionType: write(request).entityType, payload: write(request).payload ?? {} }),
    },
    {
      action: 'update',
      method: 'PATCH',
      url: '/acct/clients/:clientId/transactions/:transactionId',
      schema: {
        tags,
        summary: 'Update a transaction',
        description:
          'A sparse update: `payload` carries the changed fields and the SyncToken of the record as last read. A ' +
          'stale SyncToken is 409 STALE_SYNC_TOKEN with the current record in details[0].current.' +
          HELD,
        params: TransactionParams,
        querystring: WriteQuery,
        headers: OptionalWriteHeaders,
        body: TransactionWrite,
        response: { 200: TransactionWriteResponse, 202: ProposalOne, ...errorResponses(409, 415, 422) },
      },
      target: (request) => ({
        transactionType: write(request).entityType,
        id: params(request).transactionId,
        payload: write(request).payload ?? {},
      }),
    },
    {
      action: 'delete',
      method: 'DELETE',
      url: '/acct/clients/:clientId/transactions/:transactionId',
      schema: {
        tags,
        summary: 'Delete (void) a transaction',
        description:
          'Needs `syncToken`. The books keep the transaction as void; it leaves every list and report.' + HELD,
        params: TransactionParams,
        querystring: WriteQuery,
        headers: OptionalWriteHeaders,
        body: TransactionDelete,
        response: { 200: TransactionWriteResponse, 202: ProposalOne, ...errorResponses(409, 415, 422) },
      },
      target: (request) => ({
        transactionType: body<{ entityType: string }>(request).entityType,
        id: params(request).transactionId,
        syncToken: body<{ syncToken: string }>(request).syncToken,
      }),
    },
  ],
};

/** A page of an entity's records in the platform's QueryResponse shape. */
async function listEntity(app: FastifyInstance, request: FastifyRequest, entry: CoverageEntry) {
  const { maxResults, startPosition } = request.query as { maxResults?: number; startPosition?: number };
  request.agentAudit.entityType = entry.entity;
  const page = await app.gateway.list(actorOf(request), request.client, entry.entity, {
    maxResults: maxResults ?? DEFAULT_LIMIT,
    startPosition: startPosition ?? 1,
  });
  return {
    data: {
      QueryResponse: {
        [entry.entity]: page.records,
        startPosition: page.startPosition,
        maxResults: page.maxResults,
        totalCount: page.totalCount,
      },
    },
  };
}

/** The one handler of every record route: a read through the gateway's bounded read, a write through its pipeline. */
async function handle(
  app: FastifyInstance,
  resource: RecordResource,
  route: RecordRoute,
  request: FastifyRequest,
  reply: FastifyReply,
) {
  const target = route.target(request);
  if (route.action === 'list' || route.action === 'read') {
    const entry =
      target.transactionType !== undefined
        ? coveredTransaction(target.transactionType, 'read')
        : covered(target.entity ?? '', 'read');
    if (route.action === 'list') return listEntity(app, request, entry);
    request.agentAudit.entityType = entry.entity;
    return {
      data: await app.gateway.readRecord(actorOf(request), request.client, entry.entity, target.id as string),
    };
  }
  const reason = request.headers[AGENT_REASON_HEADER];
  const outcome = await app.approvals.submit(actorOf(request), request.client, {
    write: { ...target, operation: route.action } satisfies GatewayWrite,
    options: {
      dryRun: isDryRun(request),
      key: writeKeyOf(request),
      audit: request.agentAudit,
      ...(resource.respond ? { respond: resource.respond(request.client, target.transactionType, route.action) } : {}),
    },
    request: { method: request.method, path: request.url, body: request.body ?? null, resource: resource.name },
    reason: typeof reason === 'string' && reason.trim() !== '' ? reason.trim() : null,
  });
  return sendOutcome(reply, outcome);
}

/** The response body an approved proposal's write answers with: the one its route would have sent. */
export const respondForProposal = (proposal: ProposalRow, client: Client) => {
  const resource = (proposal.request as { resource?: string }).resource;
  if (resource === 'passthrough') return passThroughRespond;
  if (resource !== 'transactions' || !TRANSACTIONS.respond) return undefined;
  return TRANSACTIONS.respond(client, proposal.transactionType ?? undefined, proposal.operation);
};

/** Generic entities and the allowlisted transaction types: list, read, create, sparse update, delete. */
export const recordRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const resource of [ENTITIES, TRANSACTIONS]) {
    for (const route of resource.routes) {
      app.route({
        method: route.method,
        url: route.url,
        config: resource.config(route.action),
        schema: route.schema,
        handler: (request, reply) => handle(app, resource, route, request, reply),
      });
    }
  }
};

/** The shortcut lists; registered last, since `/acct/clients/:clientId/:entity` matches any one segment. */
export const shortcutRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/acct/clients/:clientId/:entity',
    {
      config: { scope: 'acct:entities:read', organization: 'client', audit: 'entities.list' },
      schema: {
        tags,
        summary: 'Shortcut lists: chart-accounts, vendors, customers',
        description: `The Account, Vendor or Customer list in the platform's QueryResponse shape. ${READ_TIMEOUT}`,
        params: ShortcutParams,
        querystring: PagingQuery,
        response: { 200: QueryResponse, ...errorResponses(422) },
      },
    },
    async (request) => {
      const entry = coverageOfShortcut(request.params.entity);
      if (!entry) throw notCovered(request.params.entity);
      return listEntity(app, request, entry);
    },
  );
};
