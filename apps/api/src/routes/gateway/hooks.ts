import type { ErrorCode } from '@firm/core';
import type { IdempotencyKey } from '@firm/db';
import { agentClientOf, type GatewayActor } from '@firm/gateway';
import type { PlatformAdapter, ReportName, ReportParams as PlatformReportParams, WriteResult } from '@firm/platform';
import type { CoverageEntry } from '@firm/gateway';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { sendError } from '../../errors/responses';
import { requestKeyOf } from '../../plugins/idempotency';
import { refuseArchivedWrite } from '../../plugins/auth';
import { enforceLimit } from '../../plugins/rate-limit';
import { storableOrNull } from '../../text';
import { streamedReportJson } from './report-json';

export const tags = ['agent-gateway'];

/** The caller of a gateway route, as the gateway service knows it. */
export const actorOf = (request: FastifyRequest): GatewayActor => ({
  firmId: request.credential.firmId,
  kind: request.credential.kind,
  id: request.credential.id,
  scopes: request.credential.scopes,
  requestId: request.id,
});

/** The body of a pass-through write: the record under its entity's name, as the platform's v3 API answers. */
export const passThroughRespond = (r: WriteResult, _dryRun: boolean, entry: CoverageEntry) => ({
  data: { [entry.entity]: r.record, time: new Date().toISOString() },
});

/** Whether a write route's request is a dry run (`dryRun=true`): nothing is written, not even its key's record. */
export const isDryRun = (request: FastifyRequest) => (request.query as { dryRun?: boolean }).dryRun === true;

/** The idempotency key a write runs under: the request's Idempotency-Key when it sent one and it is not a dry run. */
export const writeKeyOf = (request: FastifyRequest): IdempotencyKey | undefined =>
  !isDryRun(request) && request.headers['idempotency-key'] !== undefined ? requestKeyOf(request) : undefined;

/**
 * A report as `{data}`: streamed as it is read where the platform can (the embedded general ledger), else whole.
 */
export async function sendReport(
  reply: FastifyReply,
  platform: PlatformAdapter,
  name: ReportName,
  params: PlatformReportParams,
) {
  const streamed = await platform.reportStream?.(name, params);
  if (streamed) return reply.type('application/json; charset=utf-8').send(streamedReportJson(streamed));
  return { data: await platform.report(name, params) };
}

// The write budget (dry runs included) and the read limit, spent where the MCP tools that call partner routes
// spend them too.
const isWrite = (request: FastifyRequest) =>
  request.routeOptions.config.agentWrite === true ||
  (request.routeOptions.url?.endsWith('/request') === true &&
    ((request.body as { method?: string } | undefined)?.method ?? 'GET') !== 'GET');

/**
 * The hooks every gateway route runs: the read and write limits; the client a route names as `:clientId`, open to
 * agents (404 CLIENT_NOT_FOUND otherwise), refusing writes to a read-only client before the body is read; and the
 * call's event in the firm's hash-chained agent audit trail, recorded before its response is sent.
 */
export function addGatewayHooks(app: FastifyInstance): void {
  app.addHook('onRequest', async (request) => {
    request.agentAudit = {};
  });

  app.addHook('preValidation', async (request, reply) => {
    const config = request.routeOptions.config;
    // Reads of the firm-wide routes (clients, coverage, skills, the health scan, the audit trail) count too.
    if (config.organization !== 'client' && request.credential && !isWrite(request) && request.method === 'GET') {
      enforceLimit(reply, await app.agentLimits.spend(request, 'read'));
    }
    if (config.organization !== 'client' || !request.organization) return;
    const client = await agentClientOf(app.database.db, request.credential.firmId, request.organization);
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
    await app.gateway.recordCall({
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
}
