import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { covered, requireScope, resolvePassThrough } from '@firm/gateway';
import { errorResponses } from '../../errors/responses';
import { DEFAULT_LIMIT } from '../../schemas';
import { sendOutcome } from '../../plugins/idempotency';
import { actorOf, isDryRun, passThroughRespond, sendReport, tags, writeKeyOf } from './hooks';
import {
  AGENT_REASON_HEADER,
  ClientParams,
  HELD,
  OptionalWriteHeaders,
  PassThroughBody,
  ProposalOne,
  PassThroughResponse,
  QUERY_BOUNDS,
  READ_TIMEOUT,
  WriteQuery,
} from './schemas';

/** A call relayed to the client's platform API, as its v3 API takes it. */
export const passThroughRoutes: FastifyPluginAsyncTypebox = async (app) => {
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
          `route's bounds: ${QUERY_BOUNDS} ${READ_TIMEOUT} A write to an archived company is 409 COMPANY_ARCHIVED.${HELD}`,
        params: ClientParams,
        querystring: WriteQuery,
        headers: OptionalWriteHeaders,
        body: PassThroughBody,
        response: { 200: PassThroughResponse, 202: ProposalOne, ...errorResponses(409, 415, 422) },
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
      const actor = actorOf(request);
      if (target.kind === 'query') {
        const read = await app.gateway.query(actor, request.client, target.query, {
          defaultMaxResults: DEFAULT_LIMIT,
          audit: request.agentAudit,
        });
        return { data: { ...read, time: time() } };
      }
      if (target.kind === 'report') {
        requireScope(actor, 'acct:reports:read');
        if (target.report === 'general-ledger') request.server.takeExportSlot(request, reply);
        request.agentAudit.entityType = target.report;
        const q = query;
        return sendReport(reply, app.gateway.platform(actor, request.client), target.report, {
          startDate: q.start_date ?? q.startDate,
          endDate: q.end_date ?? q.endDate,
        });
      }
      const { operation, id } = target;
      if (operation === 'read') {
        const entry = covered(target.entry.entity, operation);
        request.agentAudit.entityType = entry.entity;
        requireScope(actor, entry.scopes[operation]);
        const record = await app.gateway.readRecord(actor, request.client, entry.entity, id as string);
        return { data: { [entry.entity]: record, time: time() } };
      }
      const payload = (body ?? {}) as Record<string, unknown>;
      const reason = request.headers[AGENT_REASON_HEADER];
      const outcome = await app.approvals.submit(actor, request.client, {
        write: {
          entity: target.entry.entity,
          operation,
          id: id as string,
          payload,
          syncToken: String(payload.SyncToken ?? ''),
        },
        options: {
          dryRun: isDryRun(request),
          key: writeKeyOf(request),
          status: 200,
          audit: request.agentAudit,
          requireReadWrite: true,
          respond: passThroughRespond,
        },
        request: {
          method: request.method,
          path: request.url,
          body: request.body,
          resource: 'passthrough',
          status: 200,
        },
        reason: typeof reason === 'string' && reason.trim() !== '' ? reason.trim() : null,
      });
      return sendOutcome(reply, outcome);
    },
  );
};
