import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError, type ErrorCode, isUuid, type Scope } from '@firm/core';
import { type Executor, pgErrorOf } from '@firm/db';
import {
  agentClientOf,
  appendAuditEvent,
  checkQuery,
  type Client,
  COVERAGE,
  type CoverageEntry,
  coverageOf,
  coverageOfShortcut,
  coverageOfTransaction,
  healthScan,
  listAgentAuditEvents,
  RECIPES_VERSION,
  SKILLS,
  skillOf,
  listClients,
  parseQuery,
  resolvePassThrough,
  setAgentAccess,
  getAgentLimits,
  setAgentLimits,
} from '@firm/gateway';
import { todayUtc } from '@firm/ledger';
import {
  createEmbeddedPlatform,
  type PlatformAdapter,
  type PlatformOperation,
  type ReportName,
  type ReportParams as PlatformReportParams,
  type WriteResult,
} from '@firm/platform';
import { createQboPlatform, QboHttp } from '@firm/qbo';
import { sql } from 'drizzle-orm';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { requireFirmManager } from '../context';
import { errorResponses, sendError } from '../../errors';
import {
  IdempotencyHeaders,
  OptionalIdempotencyHeaders,
  runIdempotent,
  runIdempotentRemote,
} from '../../plugins/idempotency';
import { AGENT_READ_WINDOW_SECONDS } from '../../plugins/agent-limits';
import { refuseArchivedWrite } from '../../plugins/auth';
import { exportLimited } from '../../plugins/export-slots';
import { enforceLimit } from '../../plugins/rate-limit';
import { DataOf, DEFAULT_LIMIT, PageOf } from '../../schemas';
import { VERSION } from '../../version';
import { streamedReportJson } from './report-json';
import { storableOrNull } from '../../text';
import {
  AgentLimitsBody,
  AgentLimitsResponse,
  AuditEvent,
  AuditQuery,
  Client as ClientSchema,
  ClientParams,
  ClientPatch,
  CoverageEntry as CoverageSchema,
  EntityDeleteBody,
  EntityDeleteQuery,
  EntityIdParams,
  EntityParams,
  EntityPayload,
  PagingQuery,
  PassThroughBody,
  PassThroughResponse,
  QUERY_BOUNDS,
  QueryBody,
  READ_TIMEOUT,
  QueryResponse,
  ReportParams,
  ReportQuery,
  ReportResponse,
  RecordOne,
  HealthScanQuery,
  HealthScanResponse,
  ShortcutParams,
  Skill as SkillSchema,
  SkillParams,
  StatusResponse,
  TransactionDelete,
  TransactionGetQuery,
  TransactionListQuery,
  TransactionParams,
  TransactionWrite,
  TransactionWriteResponse,
  WriteQuery,
} from './schemas';

const tags = ['agent-gateway'];

export const CAPABILITIES = [
  'clients',
  'coverage',
  'entities',
  'transactions',
  'audit-events',
  'idempotency',
  'dry-run',
];

const presentClient = (c: Client) => ({
  id: c.id,
  name: c.name,
  acctCompanyId: c.acctCompanyId,
  platform: c.platform,
  status: c.status,
  lastSyncAt: c.lastSyncAt ? c.lastSyncAt.toISOString() : null,
  agentAccess: c.agentAccess,
});

const notCovered = (name: string) =>
  new DomainError('ENTITY_NOT_COVERED', `the gateway does not cover ${name}; GET /acct/coverage lists what it covers`);

function covered(name: string, operation: PlatformOperation): CoverageEntry {
  const entry = coverageOf(name);
  if (!entry) throw notCovered(name);
  if (!entry.operations.includes(operation)) {
    throw new DomainError('OPERATION_NOT_SUPPORTED', `${entry.entity} does not support ${operation}`, [
      { field: 'entity', message: `supports ${entry.operations.join(', ')}` },
    ]);
  }
  return entry;
}

function coveredTransaction(type: string, operation: PlatformOperation): CoverageEntry {
  const entry = coverageOfTransaction(type);
  if (!entry) throw notCovered(type);
  return covered(entry.entity, operation);
}

/** The scope an entity route needs: the registry's scope for the entity and operation, else the route's own. */
const entityScope =
  (operation: PlatformOperation) =>
  (request: FastifyRequest): Scope | undefined =>
    coverageOf((request.params as { entity?: string }).entity ?? '')?.scopes[operation];

/**
 * The client's platform, for one request; writes pass the transaction they run in. A QuickBooks client's writes go
 * to QBO with a requestid derived from the request's Idempotency-Key (so a retried request is one write at QBO too),
 * and its dry runs read but send no write.
 */
function platformOf(request: FastifyRequest, db: Executor, options: { dryRun?: boolean } = {}): PlatformAdapter {
  return platformFor(request, request.client, db, options);
}

/** A client's platform for a request that may reach several clients (the health scan). */
function platformFor(
  request: FastifyRequest,
  client: Client,
  db: Executor,
  options: { dryRun?: boolean } = {},
): PlatformAdapter {
  if (client.platform === 'qbo') {
    const qbo = request.server.qbo;
    if (!qbo) {
      throw new DomainError('SERVICE_UNAVAILABLE', 'QuickBooks Online is not configured in this deployment');
    }
    const key = request.headers['idempotency-key'];
    const http = new QboHttp({
      config: qbo.config,
      db: request.server.database.db,
      limiter: qbo.limiter,
      organizationId: client.id,
    });
    return createQboPlatform(http, {
      realmId: client.acctCompanyId,
      dryRun: options.dryRun ?? false,
      requestKey: typeof key === 'string' ? `${request.credential.firmId}:${client.id}:${key}` : null,
    });
  }
  return createEmbeddedPlatform(db, {
    firmId: request.credential.firmId,
    organizationId: client.id,
    acctCompanyId: client.acctCompanyId,
    actor: { kind: request.credential.kind, id: request.credential.id },
    requestId: request.id,
    generalLedgerMaxLines: request.server.config.GENERAL_LEDGER_MAX_LINES,
  });
}

/**
 * A report as `{data}`: streamed as it is read where the platform can (the embedded general ledger), else whole.
 */
async function sendReport(
  reply: FastifyReply,
  platform: PlatformAdapter,
  name: ReportName,
  params: PlatformReportParams,
) {
  const streamed = await platform.reportStream?.(name, params);
  if (streamed) return reply.type('application/json; charset=utf-8').send(streamedReportJson(streamed));
  return { data: await platform.report(name, params) };
}

/** A scope the call needs beyond its route's: the entity's, known once the body is read. */
function requireScope(request: FastifyRequest, scope: Scope | undefined): void {
  if (!scope || !request.credential.scopes.has(scope)) {
    throw new DomainError('INSUFFICIENT_SCOPE', `this credential lacks the scope ${scope}`, [
      { message: 'missing scope', scope },
    ]);
  }
}

/**
 * An agent's read of its client's books. On this service's own books it is one transaction in which each statement
 * may run GATEWAY_STATEMENT_TIMEOUT_MS (a SET LOCAL, so the setting ends with the transaction, behind a transaction
 * pooler too); a statement that runs longer is cancelled and the read answered 422 QUERY_TIMEOUT, leaving the
 * connection healthy. Another platform's reads are calls over the network with timeouts of their own, and no
 * transaction of ours is held over them.
 */
async function readBooks<T>(request: FastifyRequest, read: (platform: PlatformAdapter) => Promise<T>): Promise<T> {
  const db = request.server.database.db;
  if (request.client.platform !== 'embedded') return read(platformOf(request, db));
  const timeoutMs = request.server.config.GATEWAY_STATEMENT_TIMEOUT_MS;
  try {
    return await db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('statement_timeout', ${String(timeoutMs)}, true)`);
      return read(platformOf(request, tx));
    });
  } catch (err) {
    // 57014 query_canceled: here, the timeout set above.
    if (pgErrorOf(err)?.code !== '57014') throw err;
    const message = `the read ran longer than ${timeoutMs} ms and was cancelled; narrow it and send it again`;
    throw new DomainError('QUERY_TIMEOUT', message, [{ message: 'statement timeout', timeoutMs }]);
  }
}

/**
 * An agent's read of one record by its id: a lookup by key that cannot run long, so it runs without the bounded
 * read's transaction and its timeout (three round trips fewer on every record read).
 */
function readRecord(request: FastifyRequest, entity: string, id: string) {
  return platformOf(request, request.server.database.db).get(entity, id);
}

/** Parses, checks and runs a query for the request's client. */
async function runAgentQuery(request: FastifyRequest, text: string) {
  const query = checkQuery(parseQuery(text));
  request.agentAudit.entityType = query.entity;
  requireScope(request, query.coverage.scopes.read);
  return readBooks(request, (platform) =>
    platform.query({
      entity: query.entity,
      select: query.select,
      where: query.where,
      orderBy: query.orderBy,
      startPosition: query.startPosition ?? 1,
      maxResults: query.maxResults ?? DEFAULT_LIMIT,
    }),
  );
}

const ROLLBACK = Symbol('dry run');

/**
 * Runs a write: on a dry run inside a transaction that is then rolled back (nothing is written, not even an
 * idempotency record); with an Idempotency-Key under the partner API's idempotency rules, the write and the key's
 * record committing together; otherwise in a transaction of its own.
 */
async function runWrite(
  request: FastifyRequest,
  reply: FastifyReply,
  status: number,
  write: (platform: PlatformAdapter) => Promise<WriteResult>,
  shape: (result: WriteResult, dryRun: boolean) => object,
): Promise<FastifyReply> {
  const db = request.server.database.db;
  const dryRun = (request.query as { dryRun?: boolean }).dryRun === true;
  const audited = (result: WriteResult, isDry: boolean) => {
    Object.assign(request.agentAudit, {
      entityId: result.record.Id,
      syncTokenBefore: result.syncTokenBefore,
      syncTokenAfter: isDry ? null : result.record.SyncToken,
      dryRun: isDry,
    });
    return shape(result, isDry);
  };
  if (request.client.platform !== 'embedded') {
    // Another platform's write is not ours to roll back: a dry run sends none, and no transaction of ours is held
    // over the remote call (the platform deduplicates a repeated key's write itself; see runIdempotentRemote).
    const run = async () => ({ status, body: audited(await write(platformOf(request, db, { dryRun })), dryRun) });
    if (dryRun) return reply.code(200).send((await run()).body);
    if (request.headers['idempotency-key'] !== undefined) return runIdempotentRemote(request, reply, run);
    const outcome = await run();
    return reply.code(outcome.status).send(outcome.body);
  }
  if (dryRun) {
    let body: object | undefined;
    await db
      .transaction(async (tx) => {
        body = audited(await write(platformOf(request, tx, { dryRun: true })), true);
        throw ROLLBACK;
      })
      .catch((err: unknown) => {
        if (err !== ROLLBACK) throw err;
      });
    return reply.code(200).send(body);
  }
  const work = async (tx: Executor) => ({ status, body: audited(await write(platformOf(request, tx)), false) });
  if (request.headers['idempotency-key'] !== undefined) return runIdempotent(request, reply, work);
  const outcome = await db.transaction(work);
  return reply.code(outcome.status).send(outcome.body);
}

/**
 * The agent gateway (spec: agent-gateway-api.md), under /agent/v1. Every route that acts on a client names it as
 * `:clientId`; the auth plugin checks it is an organization this credential may see, and the hook below that the
 * firm opened it to agents (`agentAccess`), refusing writes to a read-only client before the body is read. Every call
 * of an authenticated caller is recorded in the firm's hash-chained agent audit trail before its response is sent.
 */
export const gatewayRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.addHook('onRequest', async (request) => {
    request.agentAudit = {};
  });

  // The write budget (dry runs included) and the read limit, spent where the MCP tools that call partner routes
  // spend them too.
  const isWrite = (request: FastifyRequest) =>
    request.routeOptions.config.agentWrite === true ||
    (request.routeOptions.url?.endsWith('/request') === true &&
      ((request.body as { method?: string } | undefined)?.method ?? 'GET') !== 'GET');

  app.addHook('preValidation', async (request, reply) => {
    const config = request.routeOptions.config;
    // Reads of the firm-wide routes (clients, coverage, skills, the health scan, the audit trail) count too.
    if (config.organization !== 'client' && request.credential && !isWrite(request) && request.method === 'GET') {
      enforceLimit(reply, await app.agentLimits.spend(request, 'read'));
    }
    if (config.organization !== 'client' || !request.organization) return;
    const client = await agentClientOf(db(), request.credential.firmId, request.organization);
    if (!client || client.agentAccess === 'none')
      return sendError(reply, request, 'CLIENT_NOT_FOUND', 'client not found');
    request.client = client;
    request.agentAudit.clientId = client.id;
    const archived = refuseArchivedWrite(request, reply, isWrite(request));
    if (archived) return archived;
    if (config.agentWrite && client.agentAccess !== 'read_write') {
      return sendError(
        reply,
        request,
        'CLIENT_READ_ONLY',
        'the firm opened this client to agents for reading only; writes are refused',
      );
    }
    enforceLimit(reply, await app.agentLimits.spend(request, isWrite(request) ? 'write' : 'read'));
  });

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

  app.addHook('onSend', async (request, reply, payload) => {
    const operation = request.routeOptions.config.audit;
    if (!operation) return payload;
    const credential = request.credential ?? (await app.resolveCredential(request));
    if (!credential) return payload;
    let errorCode: string | null = null;
    if (reply.statusCode >= 400 && typeof payload === 'string') {
      try {
        errorCode = (JSON.parse(payload) as { error?: { code?: ErrorCode } }).error?.code ?? null;
      } catch {
        errorCode = null;
      }
    }
    const params = request.params as { id?: string; transactionId?: string; entity?: string };
    const a = request.agentAudit ?? {};
    await appendAuditEvent(db(), app.auditTrail, {
      firmId: credential.firmId,
      organizationId: a.clientId ?? null,
      actorKind: credential.kind,
      actorId: credential.id,
      actorName: null,
      operation,
      // A refused request's path may name text Postgres cannot hold (a NUL): recorded as no id.
      entityType: a.entityType ?? storableOrNull(params.entity),
      entityId: a.entityId ?? storableOrNull(params.id ?? params.transactionId),
      outcome: reply.statusCode < 400 ? 'succeeded' : reply.statusCode < 500 ? 'refused' : 'failed',
      statusCode: reply.statusCode,
      errorCode,
      requestId: request.id,
      dryRun: a.dryRun ?? false,
      syncTokenBefore: a.syncTokenBefore ?? null,
      syncTokenAfter: a.syncTokenAfter ?? null,
    });
    return payload;
  });

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
    async (request) => ({ data: presentClient(request.client) }),
  );

  app.patch(
    '/acct/clients/:clientId',
    {
      config: { scope: 'acct:clients:write', organization: 'none', audit: 'clients.update' },
      schema: {
        tags,
        summary: 'Open or close a client to agents (set its agentAccess)',
        description:
          'For firm owners and admins, signed in or through an API key of the firm; an OAuth access token (an ' +
          'agent) cannot change what agents may do: 403 FORBIDDEN. Reaches clients whose access is `none` too.',
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
      const client = await db().transaction((tx) =>
        setAgentAccess(tx, request.credential, request.params.clientId, request.body.agentAccess),
      );
      request.agentAudit.clientId = client.id;
      return { data: presentClient(client) };
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

  // ------------------------------------------------------------------ generic entities

  const listEntity = async (request: FastifyRequest, entry: CoverageEntry, paging: object) => {
    const { maxResults, startPosition } = paging as { maxResults?: number; startPosition?: number };
    request.agentAudit.entityType = entry.entity;
    const page = await readBooks(request, (platform) =>
      platform.list(entry.entity, { maxResults: maxResults ?? DEFAULT_LIMIT, startPosition: startPosition ?? 1 }),
    );
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
  };

  app.get(
    '/acct/clients/:clientId/entities/:entity',
    {
      config: {
        scope: 'acct:entities:read',
        scopeOf: entityScope('read'),
        organization: 'client',
        audit: 'entities.list',
      },
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
    },
    async (request) => listEntity(request, covered(request.params.entity, 'read'), request.query),
  );

  app.get(
    '/acct/clients/:clientId/entities/:entity/:id',
    {
      config: {
        scope: 'acct:entities:read',
        scopeOf: entityScope('read'),
        organization: 'client',
        audit: 'entities.read',
      },
      schema: {
        tags,
        summary: 'One record',
        description: READ_TIMEOUT,
        params: EntityIdParams,
        response: { 200: RecordOne, ...errorResponses(422) },
      },
    },
    async (request) => {
      const entry = covered(request.params.entity, 'read');
      request.agentAudit.entityType = entry.entity;
      return { data: await readRecord(request, entry.entity, request.params.id) };
    },
  );

  app.post(
    '/acct/clients/:clientId/entities/:entity',
    {
      config: {
        scope: 'acct:entities:write',
        scopeOf: entityScope('create'),
        organization: 'client',
        agentWrite: true,
        audit: 'entities.create',
      },
      schema: {
        tags,
        summary: 'Create a record',
        description: "The body is the platform's payload for the entity. Requires Idempotency-Key.",
        params: EntityParams,
        querystring: WriteQuery,
        headers: IdempotencyHeaders,
        body: EntityPayload,
        response: { 200: RecordOne, 201: RecordOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const entry = covered(request.params.entity, 'create');
      request.agentAudit.entityType = entry.entity;
      return runWrite(
        request,
        reply,
        201,
        (p) => p.create(entry.entity, request.body as Record<string, unknown>),
        (r) => ({ data: r.record }),
      );
    },
  );

  app.patch(
    '/acct/clients/:clientId/entities/:entity/:id',
    {
      config: {
        scope: 'acct:entities:write',
        scopeOf: entityScope('update'),
        organization: 'client',
        agentWrite: true,
        audit: 'entities.update',
      },
      schema: {
        tags,
        summary: 'Sparse update of a record',
        description:
          'Fields left out keep their values. The body carries the SyncToken of the record as last read; a stale one ' +
          'is 409 STALE_SYNC_TOKEN with the current record in details[0].current.',
        params: EntityIdParams,
        querystring: WriteQuery,
        headers: OptionalIdempotencyHeaders,
        body: EntityPayload,
        response: { 200: RecordOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const entry = covered(request.params.entity, 'update');
      request.agentAudit.entityType = entry.entity;
      return runWrite(
        request,
        reply,
        200,
        (p) => p.update(entry.entity, request.params.id, request.body as Record<string, unknown>),
        (r) => ({ data: r.record }),
      );
    },
  );

  app.delete(
    '/acct/clients/:clientId/entities/:entity/:id',
    {
      config: {
        scope: 'acct:entities:write',
        scopeOf: entityScope('delete'),
        organization: 'client',
        agentWrite: true,
        audit: 'entities.delete',
      },
      schema: {
        tags,
        summary: 'Delete a record',
        description:
          'Transactions are voided: they leave every list and report, and the books keep them as void. The ' +
          'SyncToken goes in the body or the query string.',
        params: EntityIdParams,
        querystring: EntityDeleteQuery,
        headers: OptionalIdempotencyHeaders,
        body: EntityDeleteBody,
        response: { 200: RecordOne, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const entry = covered(request.params.entity, 'delete');
      request.agentAudit.entityType = entry.entity;
      const syncToken = request.body?.SyncToken ?? request.query.SyncToken;
      if (!syncToken) {
        throw new DomainError('VALIDATION_ERROR', 'send the SyncToken in the body or the query string', [
          { field: 'SyncToken', message: 'is required' },
        ]);
      }
      return runWrite(
        request,
        reply,
        200,
        (p) => p.delete(entry.entity, request.params.id, syncToken),
        (r) => ({ data: r.record }),
      );
    },
  );

  // ------------------------------------------------------------------ transactions

  const writeResponse =
    (request: FastifyRequest, entityType: string, operation: 'create' | 'update' | 'delete') =>
    (r: WriteResult, dryRun: boolean) => ({
      data: {
        clientId: request.client.id,
        acctCompanyId: request.client.acctCompanyId,
        entityType,
        transactionId: r.record.Id,
        operation,
        source: 'acct' as const,
        postedAt: new Date().toISOString(),
        data: r.record,
        journal: r.journal,
        ...(dryRun ? { dryRun: true } : {}),
      },
    });

  app.get(
    '/acct/clients/:clientId/transactions',
    {
      config: { scope: 'acct:transactions:read', organization: 'client', audit: 'transactions.list' },
      schema: {
        tags,
        summary: 'List transactions of one type',
        description: `\`entityType\` defaults to \`purchase\`. Answers in the platform's QueryResponse shape. ${READ_TIMEOUT}`,
        params: ClientParams,
        querystring: TransactionListQuery,
        response: { 200: QueryResponse, ...errorResponses(422) },
      },
    },
    async (request) => {
      const entry = coveredTransaction(request.query.entityType ?? 'purchase', 'read');
      return listEntity(request, entry, request.query);
    },
  );

  app.get(
    '/acct/clients/:clientId/transactions/:transactionId',
    {
      config: { scope: 'acct:transactions:read', organization: 'client', audit: 'transactions.read' },
      schema: {
        tags,
        summary: 'One transaction',
        description: `\`entityType\` defaults to \`purchase\`. ${READ_TIMEOUT}`,
        params: TransactionParams,
        querystring: TransactionGetQuery,
        response: { 200: RecordOne, ...errorResponses(422) },
      },
    },
    async (request) => {
      const entry = coveredTransaction(request.query.entityType ?? 'purchase', 'read');
      request.agentAudit.entityType = entry.entity;
      return { data: await readRecord(request, entry.entity, request.params.transactionId) };
    },
  );

  app.post(
    '/acct/clients/:clientId/transactions',
    {
      config: {
        scope: 'acct:transactions:create',
        organization: 'client',
        agentWrite: true,
        audit: 'transactions.create',
      },
      schema: {
        tags,
        summary: 'Create a transaction',
        description:
          "`payload` is the platform's payload for `entityType`. Requires Idempotency-Key. `dryRun=true` answers 200 " +
          'with the record and its journal lines and writes nothing.',
        params: ClientParams,
        querystring: WriteQuery,
        headers: IdempotencyHeaders,
        body: TransactionWrite,
        response: { 200: TransactionWriteResponse, 201: TransactionWriteResponse, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const { entityType, payload } = request.body;
      const entry = coveredTransaction(entityType, 'create');
      request.agentAudit.entityType = entry.entity;
      return runWrite(
        request,
        reply,
        201,
        (p) => p.create(entry.entity, (payload ?? {}) as Record<string, unknown>),
        writeResponse(request, entityType, 'create'),
      );
    },
  );

  app.patch(
    '/acct/clients/:clientId/transactions/:transactionId',
    {
      config: {
        scope: 'acct:transactions:update',
        organization: 'client',
        agentWrite: true,
        audit: 'transactions.update',
      },
      schema: {
        tags,
        summary: 'Update a transaction',
        description:
          'A sparse update: `payload` carries the changed fields and the SyncToken of the record as last read. A ' +
          'stale SyncToken is 409 STALE_SYNC_TOKEN with the current record in details[0].current.',
        params: TransactionParams,
        querystring: WriteQuery,
        headers: OptionalIdempotencyHeaders,
        body: TransactionWrite,
        response: { 200: TransactionWriteResponse, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const { entityType, payload } = request.body;
      const entry = coveredTransaction(entityType, 'update');
      request.agentAudit.entityType = entry.entity;
      return runWrite(
        request,
        reply,
        200,
        (p) => p.update(entry.entity, request.params.transactionId, (payload ?? {}) as Record<string, unknown>),
        writeResponse(request, entityType, 'update'),
      );
    },
  );

  app.delete(
    '/acct/clients/:clientId/transactions/:transactionId',
    {
      config: {
        scope: 'acct:transactions:delete',
        organization: 'client',
        agentWrite: true,
        audit: 'transactions.delete',
      },
      schema: {
        tags,
        summary: 'Delete (void) a transaction',
        description: 'Needs `syncToken`. The books keep the transaction as void; it leaves every list and report.',
        params: TransactionParams,
        querystring: WriteQuery,
        headers: OptionalIdempotencyHeaders,
        body: TransactionDelete,
        response: { 200: TransactionWriteResponse, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const { entityType, syncToken } = request.body;
      const entry = coveredTransaction(entityType, 'delete');
      request.agentAudit.entityType = entry.entity;
      return runWrite(
        request,
        reply,
        200,
        (p) => p.delete(entry.entity, request.params.transactionId, syncToken),
        writeResponse(request, entityType, 'delete'),
      );
    },
  );

  // ------------------------------------------------------------------ query

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
    async (request) => ({ data: await runAgentQuery(request, request.body.query) }),
  );

  // ------------------------------------------------------------------ pass-through

  app.post(
    '/acct/clients/:clientId/request',
    {
      config: { scope: 'acct:clients:read', organization: 'client', audit: 'request' },
      schema: {
        tags,
        summary: "Relay a call to the client's platform API",
        description:
          "Reads and writes the covered entities as the platform's v3 API does: GET `<entity>/<id>`, POST " +
          '`<entity>` (create, or a sparse update with Id and SyncToken in the body), POST `<entity>?operation=delete`, ' +
          '`query?query=...`, `reports/<Name>`, `companyinfo/<id>`. A GET needs the read scope of the entity it ' +
          "reaches, a write its write scope (and a client open to agents for writing). Answers with the platform's " +
          "response body. A `query` call's text (the `query` parameter, or `query` in the body) is held to the query " +
          `route's bounds: ${QUERY_BOUNDS} ${READ_TIMEOUT} A write to an archived company is 409 COMPANY_ARCHIVED.`,
        params: ClientParams,
        querystring: WriteQuery,
        headers: OptionalIdempotencyHeaders,
        body: PassThroughBody,
        response: { 200: PassThroughResponse, ...errorResponses(409, 415, 422) },
      },
    },
    async (request, reply) => {
      const { method = 'GET', path, query = {}, body } = request.body;
      const target = resolvePassThrough(
        method,
        path,
        query,
        body as Record<string, unknown> | undefined,
        request.client.acctCompanyId,
      );
      const time = () => new Date().toISOString();
      if (target.kind === 'query') return { data: { ...(await runAgentQuery(request, target.query)), time: time() } };
      if (target.kind === 'report') {
        requireScope(request, 'acct:reports:read');
        if (target.report === 'general-ledger') request.server.takeExportSlot(request, reply);
        request.agentAudit.entityType = target.report;
        const q = query;
        return sendReport(reply, platformOf(request, db()), target.report, {
          startDate: q.start_date ?? q.startDate,
          endDate: q.end_date ?? q.endDate,
        });
      }
      const { operation, id } = target;
      const entry = covered(target.entry.entity, operation);
      request.agentAudit.entityType = entry.entity;
      requireScope(request, entry.scopes[operation]);
      if (operation === 'read') {
        const record = await readRecord(request, entry.entity, id as string);
        return { data: { [entry.entity]: record, time: time() } };
      }
      if (request.client.agentAccess !== 'read_write') {
        throw new DomainError('CLIENT_READ_ONLY', 'the firm opened this client to agents for reading only');
      }
      const payload = (body ?? {}) as Record<string, unknown>;
      return runWrite(
        request,
        reply,
        200,
        (p) =>
          operation === 'create'
            ? p.create(entry.entity, payload)
            : operation === 'update'
              ? p.update(entry.entity, id as string, payload)
              : p.delete(entry.entity, id as string, String(payload.SyncToken ?? '')),
        (r) => ({ data: { [entry.entity]: r.record, time: time() } }),
      );
    },
  );

  // ------------------------------------------------------------------ reports

  app.get(
    '/acct/clients/:clientId/reports/:reportName',
    {
      config: { scope: 'acct:reports:read', organization: 'client', audit: 'reports.read' },
      schema: {
        tags,
        summary: 'A financial report',
        description:
          "In the platform's report JSON. Dates: start_date/end_date (or startDate/endDate); end defaults to today, " +
          'start to the fiscal-year start (profit-loss, general-ledger) or the beginning of the books (trial-balance). ' +
          "Every figure is the partner API's report for the same company and dates.\n\n" +
          'general-ledger lists at most GENERAL_LEDGER_MAX_LINES posted lines (50,000 by default), as the partner ' +
          "API's: a range with more is refused with 422 REPORT_TOO_LARGE (details[0] gives lineCount and maxLines); " +
          'ask for a shorter period or one account (accountId). It also counts as an export: each credential may ' +
          'run EXPORTS_PER_CREDENTIAL of them at once (2 by default), each server process EXPORTS_PER_PROCESS (4); ' +
          'beyond either, 429 RATE_LIMITED with Retry-After. The same holds for reports/GeneralLedger through the ' +
          'pass-through.',
        params: ReportParams,
        querystring: ReportQuery,
        response: { 200: ReportResponse, ...errorResponses(422), 429: exportLimited },
      },
    },
    async (request, reply) => {
      const q = request.query;
      if (request.params.reportName === 'general-ledger') request.server.takeExportSlot(request, reply);
      request.agentAudit.entityType = request.params.reportName;
      return sendReport(reply, platformOf(request, db()), request.params.reportName, {
        startDate: q.start_date ?? q.startDate,
        endDate: q.end_date ?? q.endDate,
        accountId: q.accountId,
      });
    },
  );

  // ------------------------------------------------------------------ skills and recipes

  app.get(
    '/skills',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: { tags, summary: 'The skills agents can follow', response: { 200: DataOf(Type.Array(SkillSchema)) } },
    },
    async () => ({ data: [...SKILLS] }),
  );

  app.get(
    '/recipes',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: {
        tags,
        summary: 'The whole recipe bundle',
        response: { 200: DataOf(Type.Object({}, { additionalProperties: true })) },
      },
    },
    async () => ({ data: { version: RECIPES_VERSION, baseUrl: '/agent/v1', skills: SKILLS } }),
  );

  app.get(
    '/skills/client-health-scan',
    {
      config: { scope: 'acct:reports:read', organization: 'none', audit: 'skills.client-health-scan' },
      schema: {
        tags,
        summary: "Health scan across the agent's clients",
        description:
          'Read-only. For every client open to the caller: stale bank accounts, suspense or uncategorized balances, ' +
          'negative balances, receivables over 90 days, draft entries left open, and books not closed; each finding ' +
          'with its severity, client, evidence and the call that starts the fix. A client on QuickBooks Online is ' +
          "read through QBO's API (suspense and negative balances, receivables over 90 days); one that cannot be " +
          'read (its authorization refused, QBO down) is a CLIENT_UNREACHABLE finding, not an error of the scan.',
        querystring: HealthScanQuery,
        response: { 200: HealthScanResponse },
      },
    },
    async (request) => ({
      data: await healthScan(
        db(),
        await listClients(db(), request.credential),
        request.query.asOf ?? todayUtc(),
        (client) => platformFor(request, client, db()),
      ),
    }),
  );

  app.get(
    '/skills/:skillId',
    {
      config: { scope: 'acct:clients:read', organization: 'none' },
      schema: { tags, summary: 'One skill recipe', params: SkillParams, response: { 200: DataOf(SkillSchema) } },
    },
    async (request) => {
      const skill = skillOf(request.params.skillId);
      if (!skill) throw new DomainError('NOT_FOUND', `no skill ${request.params.skillId}; GET /skills lists them`);
      return { data: skill };
    },
  );

  // ------------------------------------------------------------------ audit events

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
          createdAt: e.createdAt.toISOString(),
          prevHash: e.prevHash,
          hash: e.hash,
          keyId: e.keyId,
        })),
        nextCursor: page.nextCursor,
      };
    },
  );

  // The shortcut lists; registered last, since `/acct/clients/:clientId/:entity` matches any one segment.
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
      return listEntity(request, entry, request.query);
    },
  );
};
