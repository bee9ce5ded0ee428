import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import {
  addComment,
  auditClose,
  closeBoard,
  closeOf,
  evidenceFile,
  finishClose,
  listCloses,
  listEvidence,
  openClose,
  readClose,
  reopenClose,
  signOffItem,
} from '@firm/close';
import { DomainError } from '@firm/core';
import { listOrganizations, type Organization } from '@firm/identity';
import type { Tx } from '@firm/db';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { IDEMPOTENCY_HEADER, OptionalIdempotencyHeaders, runIdempotent } from '../../plugins/idempotency';
import { CompanyParams, DataOf, DEFAULT_LIMIT, PageOf } from '../../schemas';
import { firmManager, ledgerContext } from '../context';
import {
  BoardEntry,
  BoardQuery,
  CloseDetail,
  CloseList,
  CloseListQuery,
  CloseParams,
  Comment,
  CommentBody,
  Close as CloseSchema,
  ChecklistItem,
  EvidenceFileSchema,
  EvidenceParams,
  ItemParams,
  OpenBody,
  ReopenBody,
  SignOffBody,
  presentClose,
  presentComment,
  presentDetail,
  presentEvidence,
  presentItem,
} from './schemas';

const tags = ['closes'];

const WHO =
  'Agents (OAuth tokens: the gateway and MCP) open, read and comment on closes, never sign off, finish or reopen. ' +
  'Signing off takes a person: a session of a firm user (a member on their companies), or an API key an owner or ' +
  'admin made (or the operator); finishing an owner or admin; reopening an owner.';

/**
 * Signing off is a person's judgement: never an agent's (an OAuth token), and an API key only when it stands for an
 * owner or admin (or the operator), as `firmManager` decides; a session of any user of the firm may.
 */
async function requirePerson(request: FastifyRequest, what: string): Promise<void> {
  if (request.credential.kind === 'oauth_token') {
    throw new DomainError('FORBIDDEN', `an agent cannot ${what}; a person of the firm does`);
  }
  if (request.credential.kind === 'api_key') await firmManager(request, what);
}

/** A write answering 201 with what `work` returns, once per Idempotency-Key when the request sends one. */
export async function createdOnce(request: FastifyRequest, reply: FastifyReply, work: (tx: Tx) => Promise<object>) {
  const run = async (tx: Tx) => ({ status: 201, body: await work(tx) });
  if (request.headers[IDEMPOTENCY_HEADER] !== undefined) return runIdempotent(request, reply, run);
  return reply.code(201).send((await request.server.database.db.transaction(run)).body);
}

const Binary = { schema: Type.String({ format: 'binary', description: 'The file' }) };

/** Month-end closes of a company, and the firm's close board. */
export const closeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  const orgId = (request: FastifyRequest) => request.organization.id;

  app.post(
    '/companies/:companyId/closes',
    {
      config: { scope: 'entries:write', organization: 'path' },
      schema: {
        tags,
        summary: 'Open a close of a period',
        description:
          'Default: the month ending at periodEnd, which must then be the last day of a month; with periodStart any ' +
          'range within one fiscal year. One open close per company and period: another is 409 CLOSE_ALREADY_OPEN ' +
          'with the open close in details (closeId). A bad period is 400 VALIDATION_ERROR. An Idempotency-Key is ' +
          'honoured when sent. Records close.opened.',
        params: CompanyParams,
        headers: OptionalIdempotencyHeaders,
        body: OpenBody,
        response: { 201: DataOf(CloseSchema), ...errorResponses(400, 409, 415, 422) },
      },
    },
    async (request, reply) =>
      createdOnce(request, reply, async (tx) => ({
        data: presentClose(await openClose(tx, ledgerContext(request), orgId(request), request.body)),
      })),
  );

  app.get(
    '/companies/:companyId/closes',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: "A company's closes",
        description: 'Newest period first; without their checklists (read one close for that).',
        params: CompanyParams,
        querystring: CloseListQuery,
        response: { 200: CloseList },
      },
    },
    async (request) => {
      const { limit, cursor, status } = request.query;
      const page = await listCloses(db(), orgId(request), { limit: limit ?? DEFAULT_LIMIT, cursor, status });
      return { data: page.data.map(presentClose), nextCursor: page.nextCursor };
    },
  );

  app.get(
    '/companies/:companyId/closes/:closeId',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: 'A close with its checklist',
        description:
          'The checklist is computed from the books on every read: an item goes away when the books change so it ' +
          'no longer holds. Each item shows its sign-off (who, when, note) when one is kept under its key; `open` ' +
          'counts the items not signed off.',
        params: CloseParams,
        response: { 200: DataOf(CloseDetail), ...errorResponses(404) },
      },
    },
    async (request) => ({ data: presentDetail(await readClose(db(), orgId(request), request.params.closeId)) }),
  );

  app.post(
    '/companies/:companyId/closes/:closeId/items/:itemKey/sign-off',
    {
      config: { scope: 'entries:write', organization: 'path' },
      schema: {
        tags,
        summary: 'Sign off a checklist item as fine as it is',
        description:
          `With a note, kept and shown with who and when. ${WHO} An item not on the checklist as computed now is 404 ` +
          'CLOSE_ITEM_NOT_FOUND; a close not open is 409 INVALID_STATE. Records close.item_signed_off.',
        params: ItemParams,
        body: SignOffBody,
        response: { 200: DataOf(ChecklistItem), ...errorResponses(400, 404, 409, 415) },
      },
    },
    async (request) => {
      await requirePerson(request, 'sign off a checklist item');
      const { closeId, itemKey } = request.params;
      const item = await db().transaction((tx) =>
        signOffItem(tx, ledgerContext(request), orgId(request), closeId, itemKey, request.body.note),
      );
      return { data: presentItem(item) };
    },
  );

  app.post(
    '/companies/:companyId/closes/:closeId/comments',
    {
      config: { scope: 'entries:write', organization: 'path' },
      schema: {
        tags,
        summary: 'Comment on a close or one of its items',
        description:
          'People and agents comment, on any close of the company, open or not. An Idempotency-Key is honoured ' +
          'when sent.',
        params: CloseParams,
        headers: OptionalIdempotencyHeaders,
        body: CommentBody,
        response: { 201: DataOf(Comment), ...errorResponses(400, 404, 415) },
      },
    },
    async (request, reply) =>
      createdOnce(request, reply, async (tx) => ({
        data: presentComment(
          await addComment(tx, ledgerContext(request), orgId(request), request.params.closeId, request.body),
        ),
      })),
  );

  app.post(
    '/companies/:companyId/closes/:closeId/finish',
    {
      config: { scope: 'books:close', organization: 'path' },
      schema: {
        tags,
        summary: 'Finish a close: close the books through its period end and keep its evidence',
        description:
          'Owners and admins, when no blocking item is open (else 409 CLOSE_BLOCKED listing them in details). ' +
          'In one transaction: the books are closed through the period end (the rule of PATCH .../books: posting ' +
          'on or before it is then 422 PERIOD_CLOSED), the evidence is rendered and stored (the financial packet ' +
          'PDF, the checklist with its sign-offs, the reconciliation status; each with its SHA-256) and the close ' +
          "keeps the SHA-256 of the evidence's manifest, which an event in the hash-chained agent audit trail " +
          'records, so `audit verify` proves the evidence unchanged. Records close.finished. ' +
          WHO,
        params: CloseParams,
        response: { 200: DataOf(CloseSchema), ...errorResponses(404, 409) },
      },
    },
    async (request) => {
      await firmManager(request, 'finish a close');
      const ctx = ledgerContext(request);
      const close = await finishClose(db(), ctx, orgId(request), request.params.closeId);
      app.apiKeyCache.clear();
      await auditClose(db(), app.auditTrail, ctx, close, 'closes.finish');
      return { data: presentClose(close) };
    },
  );

  app.post(
    '/companies/:companyId/closes/:closeId/reopen',
    {
      config: { scope: 'books:close', organization: 'path' },
      schema: {
        tags,
        summary: 'Reopen a finished close',
        description:
          'Owners only, with a reason. The books-closed date moves back to the day before the period; refused with ' +
          '409 INVALID_STATE while the books are closed beyond the period end (a later period is closed: reopen it ' +
          'first). The close turns `reopened`, keeps its evidence, and a new close of the period can be opened. ' +
          'Records close.reopened and an agent audit event.',
        params: CloseParams,
        body: ReopenBody,
        response: { 200: DataOf(CloseSchema), ...errorResponses(400, 404, 409, 415) },
      },
    },
    async (request) => {
      const manager = await firmManager(request, 'reopen a close');
      if (manager.role !== 'owner') throw new DomainError('FORBIDDEN', 'only owners of the firm reopen a close');
      const ctx = ledgerContext(request);
      const close = await db().transaction((tx) =>
        reopenClose(tx, ctx, orgId(request), request.params.closeId, request.body.reason),
      );
      app.apiKeyCache.clear();
      await auditClose(db(), app.auditTrail, ctx, close, 'closes.reopen');
      return { data: presentClose(close) };
    },
  );

  app.get(
    '/companies/:companyId/closes/:closeId/evidence',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: "A finished close's evidence files",
        description: 'Empty until the close is finished; kept when it is reopened.',
        params: CloseParams,
        response: { 200: DataOf(Type.Array(EvidenceFileSchema)), ...errorResponses(404) },
      },
    },
    async (request) => {
      const { closeId } = request.params;
      await closeOf(db(), orgId(request), closeId);
      return { data: (await listEvidence(db(), orgId(request), closeId)).map(presentEvidence) };
    },
  );

  app.get(
    '/companies/:companyId/closes/:closeId/evidence/:name',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: 'Download one evidence file',
        params: EvidenceParams,
        response: {
          200: {
            description: 'The file, as stored',
            content: { 'application/pdf': Binary, 'application/json': Binary },
          },
          ...errorResponses(404),
        },
      },
    },
    async (request, reply) => {
      const { closeId, name } = request.params;
      const file = await evidenceFile(db(), orgId(request), closeId, name);
      if (!file) throw new DomainError('NOT_FOUND', 'no such evidence file of this close');
      return reply
        .type(file.contentType)
        .header('content-disposition', `attachment; filename="${file.name}"`)
        .header('x-content-type-options', 'nosniff')
        .header('x-evidence-sha256', file.sha256)
        .send(file.content as never);
    },
  );

  app.get(
    '/closes',
    {
      config: { scope: 'entries:read', organization: 'none' },
      schema: {
        tags,
        summary: "The firm's close board for a period",
        description:
          'Every active company this credential may see (a member: their companies), each with its close of the ' +
          'period ending at periodEnd (the latest opened; null when none), its status, who finished it and when, and ' +
          'its open blocking and advisory items.',
        querystring: BoardQuery,
        response: { 200: PageOf(BoardEntry), ...errorResponses(400) },
      },
    },
    async (request) => ({ data: await boardOf(request, request.query.periodEnd), nextCursor: null }),
  );

  async function boardOf(request: FastifyRequest, periodEnd: string) {
    const companies: Organization[] = [];
    let cursor: string | undefined;
    do {
      const page = await listOrganizations(db(), request.credential, { limit: 1000, cursor });
      companies.push(...page.data);
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    const rows = await closeBoard(
      db(),
      request.credential.firmId,
      companies.map((c) => c.id),
      periodEnd,
    );
    return rows.map((row, i) => ({
      companyId: row.organizationId,
      companyName: companies[i]?.name ?? '',
      close: row.close && presentClose(row.close),
      open: row.open,
    }));
  }
};
