import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { addComment, closeBoard, listCloses, openClose, readClose } from '@firm/close';
import { DomainError } from '@firm/core';
import { listClients } from '@firm/gateway';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { OptionalIdempotencyHeaders } from '../../plugins/idempotency';
import { DataOf, DEFAULT_LIMIT, PageOf } from '../../schemas';
import {
  BoardEntry,
  BoardQuery,
  Close,
  CloseDetail,
  CloseList,
  CloseListQuery,
  Comment,
  CommentBody,
  OpenBody,
  presentClose,
  presentComment,
  presentDetail,
} from '../closes/schemas';
import { createdOnce } from '../closes/index';
import { ledgerContext } from '../context';
import { tags } from './hooks';
import { ClientParams } from './schemas';

const CloseParams = Type.Object({ ...ClientParams.properties, closeId: Type.String({ format: 'uuid' }) });

const AGENTS =
  'Agents open closes, read their checklists and comment; signing off items, finishing and reopening are for ' +
  'people of the firm, on the partner API (/api/v1/companies/{companyId}/closes/...), never through the gateway.';

/** A close's checklist is computed from these books: a client on another platform has none here. */
function embeddedOnly(request: FastifyRequest): string {
  if (request.client.platform !== 'embedded') {
    throw new DomainError('OPERATION_NOT_SUPPORTED', 'month-end closes are kept for clients whose books are here');
  }
  request.agentAudit.entityType = 'Close';
  return request.client.id;
}

/** Month-end closes for agents: the board, a client's closes, opening one, reading its checklist, commenting. */
export const closeGatewayRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  app.get(
    '/acct/closes',
    {
      config: { scope: 'acct:closes:read', organization: 'none', audit: 'closes.board' },
      schema: {
        tags,
        summary: 'The close board for a period',
        description:
          'Every client open to this agent with its close of the period ending at periodEnd (or null), its status and ' +
          `its open blocking and advisory items. ${AGENTS}`,
        querystring: BoardQuery,
        response: { 200: PageOf(BoardEntry), ...errorResponses(400) },
      },
    },
    async (request) => {
      const clients = (await listClients(db(), request.credential)).filter((c) => c.platform === 'embedded');
      const rows = await closeBoard(
        db(),
        request.credential.firmId,
        clients.map((c) => c.id),
        request.query.periodEnd,
      );
      return {
        data: rows.map((row, i) => ({
          companyId: row.organizationId,
          companyName: clients[i]?.name ?? '',
          close: row.close && presentClose(row.close),
          open: row.open,
        })),
        nextCursor: null,
      };
    },
  );

  app.get(
    '/acct/clients/:clientId/closes',
    {
      config: { scope: 'acct:closes:read', organization: 'client', audit: 'closes.list' },
      schema: {
        tags,
        summary: "A client's closes",
        params: ClientParams,
        querystring: CloseListQuery,
        response: { 200: CloseList, ...errorResponses(422) },
      },
    },
    async (request) => {
      const { limit, cursor, status } = request.query;
      const page = await listCloses(db(), embeddedOnly(request), { limit: limit ?? DEFAULT_LIMIT, cursor, status });
      return { data: page.data.map(presentClose), nextCursor: page.nextCursor };
    },
  );

  app.post(
    '/acct/clients/:clientId/closes',
    {
      config: { scope: 'acct:closes:write', organization: 'client', audit: 'closes.open', agentWrite: true },
      schema: {
        tags,
        summary: 'Open a close of a period',
        description:
          'As POST /api/v1/companies/{companyId}/closes: a month by default, one open close per period (409 ' +
          `CLOSE_ALREADY_OPEN naming it). ${AGENTS}`,
        params: ClientParams,
        headers: OptionalIdempotencyHeaders,
        body: OpenBody,
        response: { 201: DataOf(Close), ...errorResponses(400, 409, 415, 422) },
      },
    },
    async (request, reply) => {
      const organizationId = embeddedOnly(request);
      const close = await db().transaction((tx) => openClose(tx, ledgerContext(request), organizationId, request.body));
      request.agentAudit.entityId = close.id;
      return reply.code(201).send({ data: presentClose(close) });
    },
  );

  app.get(
    '/acct/clients/:clientId/closes/:closeId',
    {
      config: { scope: 'acct:closes:read', organization: 'client', audit: 'closes.read' },
      schema: {
        tags,
        summary: 'A close with its checklist',
        description: `The checklist is computed from the books on every read, each item with its sign-off. ${AGENTS}`,
        params: CloseParams,
        response: { 200: DataOf(CloseDetail), ...errorResponses(404, 422) },
      },
    },
    async (request) => {
      request.agentAudit.entityId = request.params.closeId;
      return { data: presentDetail(await readClose(db(), embeddedOnly(request), request.params.closeId)) };
    },
  );

  app.post(
    '/acct/clients/:clientId/closes/:closeId/comments',
    {
      config: { scope: 'acct:closes:write', organization: 'client', audit: 'closes.comment', agentWrite: true },
      schema: {
        tags,
        summary: 'Comment on a close or one of its items',
        description: `For the people who sign off: what the agent found, checked or could not resolve. ${AGENTS}`,
        params: CloseParams,
        headers: OptionalIdempotencyHeaders,
        body: CommentBody,
        response: { 201: DataOf(Comment), ...errorResponses(400, 404, 415, 422) },
      },
    },
    async (request, reply) => {
      const organizationId = embeddedOnly(request);
      request.agentAudit.entityId = request.params.closeId;
      return createdOnce(request, reply, async (tx) => ({
        data: presentComment(
          await addComment(tx, ledgerContext(request), organizationId, request.params.closeId, request.body),
        ),
      }));
    },
  );
};
