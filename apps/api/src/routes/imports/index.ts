import type { Readable } from 'node:stream';
import { type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { DomainError } from '@firm/core';
import {
  discardImport,
  getImport,
  listImportErrors,
  listImports,
  receiveImport,
  refusalOf,
  type Settled,
  settleImport,
  tooLarge,
} from '@firm/imports';
import type { Tx } from '@firm/db';
import type { FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import {
  IDEMPOTENCY_HEADER,
  OptionalIdempotencyHeaders,
  replayHashed,
  runIdempotentHashed,
} from '../../plugins/idempotency';
import { DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import { validatorCompiler } from '../../validation';
import {
  CompanyParams,
  ImportErrorList,
  ImportList,
  ImportListQuery,
  ImportOne,
  ImportParams,
  ImportQuery,
} from './schemas';

const tags = ['imports'];

/** The media types an imported file may be sent as; its format is the `format` parameter, not the media type. */
export const IMPORT_MEDIA_TYPES = ['text/csv', 'text/plain', 'application/octet-stream'];

/** The file of each import request, as the stream it arrives on (never buffered whole). */
const files = new WeakMap<FastifyRequest, Readable>();

const locationOf = (companyId: string, importId: string) => `/api/v1/companies/${companyId}/imports/${importId}`;

export const importRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  // This plugin's own parsers: they hand the body on as a stream, which the handler reads as it parses.
  app.addContentTypeParser(IMPORT_MEDIA_TYPES, (request, payload, done) => {
    files.set(request, payload);
    done(null, undefined);
  });

  app.post(
    '/companies/:companyId/imports',
    {
      config: { scope: 'entries:write', organization: 'path' },
      // After the organization is known (the auth plugin's preValidation runs first), so that another firm's company
      // is 404 whatever was sent; the file's stream is not read yet.
      preValidation: async (request) => {
        const type = (request.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
        if (!IMPORT_MEDIA_TYPES.includes(type)) {
          throw new DomainError(
            'UNSUPPORTED_MEDIA_TYPE',
            `send the file as the body, with Content-Type ${IMPORT_MEDIA_TYPES.join(', ')}`,
          );
        }
        const length = Number(request.headers['content-length']);
        if (Number.isFinite(length) && length > app.config.IMPORT_MAX_BYTES)
          throw tooLarge(app.config.IMPORT_MAX_BYTES);
      },
      // A new import (201, or 202 queued; a replay too) says where it can be followed.
      onSend: async (request, reply, payload) => {
        if ((reply.statusCode === 201 || reply.statusCode === 202) && typeof payload === 'string') {
          const id = (JSON.parse(payload) as { data?: { id?: string } }).data?.id;
          const { companyId } = request.params as { companyId: string };
          if (id) reply.header('location', locationOf(companyId, id));
        }
        return payload;
      },
      // The body is the file, read by the handler: only the parameters, query and headers are validated up front.
      validatorCompiler: (route) => (route.httpPart === 'body' ? () => true : validatorCompiler(route)),
      schema: {
        tags,
        summary: 'Import journal history or a chart of accounts from a file',
        description:
          'The body is the file (Content-Type text/csv, text/plain or application/octet-stream), read as it arrives; ' +
          'at most IMPORT_MAX_BYTES (200 MB by default), else 413. Journal CSV: a header, then date, reference ' +
          '(consecutive rows with one reference are one entry), memo, account (code or name), debit, credit (decimal, ' +
          'at most 2 places), optional contact and line_memo. hledger: transactions `DATE [*|!] [(CODE)] description` ' +
          'with indented postings `account  $amount`, one of which may leave its amount out. Accounts CSV: code, name, ' +
          'type (blank: implied by the code), subtype, description.\n\n' +
          'Every row is checked before anything is written; bad rows (unbalanced entry, unknown account, closed ' +
          'period, repeated or already imported reference, bad number or date) are listed together in 422 ' +
          'IMPORT_INVALID (the first 1,000, and their number), and with atomicity=file nothing is written. With ' +
          'atomicity=entry the good entries are posted and the bad ones reported (failedRows). Up to ' +
          'IMPORT_INLINE_MAX_ROWS rows (5,000) are posted before the answer (201); larger files are queued (202 with ' +
          'Location) and posted in the background: follow them with GET .../imports/{importId}. The same file again ' +
          '(same kind and SHA-256, its import not failed) answers 200 with that import and writes nothing.',
        params: CompanyParams,
        querystring: ImportQuery,
        headers: OptionalIdempotencyHeaders,
        consumes: IMPORT_MEDIA_TYPES,
        body: Type.String({ format: 'binary', description: 'The file.' }),
        response: {
          200: ImportOne,
          201: ImportOne,
          202: ImportOne,
          ...errorResponses(409, 413, 415, 422),
        },
      },
    },
    async (request, reply) => {
      const input = files.get(request);
      if (!input) throw new DomainError('UNSUPPORTED_MEDIA_TYPE', 'send the file as the body');
      const organizationId = request.organization.id;
      const ctx = ledgerContext(request);
      const { kind = 'journal', format = 'csv', atomicity = 'file' } = request.query;
      if (kind === 'accounts' && format !== 'csv') {
        throw new DomainError('VALIDATION_ERROR', 'the request failed validation', [
          { field: 'querystring.format', message: 'a chart of accounts is imported from CSV' },
        ]);
      }
      const received = await receiveImport(
        db(),
        ctx,
        organizationId,
        { kind, format, atomicity, maxBytes: app.config.IMPORT_MAX_BYTES },
        input,
      );
      try {
        const keyed = request.headers[IDEMPOTENCY_HEADER] !== undefined;
        const requestHash = `import:${received.sha256}`;
        const refusal = await refusalOf(db(), received);
        if (refusal) {
          // A key that answered a request before says so first, whatever is wrong with this file.
          const replayed = keyed ? await replayHashed(request, reply, requestHash) : null;
          if (replayed) return replayed;
          throw refusal;
        }
        const work = async (tx: Tx) => {
          const settled: Settled = await settleImport(tx, ctx, received, {
            inlineMaxRows: app.config.IMPORT_INLINE_MAX_ROWS,
          });
          return { status: settled.status, body: { data: settled.import } };
        };
        if (keyed) return await runIdempotentHashed(request, reply, requestHash, work);
        const result = await db().transaction(work);
        return reply.code(result.status).send(result.body);
      } finally {
        await discardImport(db(), organizationId, received.id);
      }
    },
  );

  app.get(
    '/companies/:companyId/imports',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: 'Imports of a company',
        description: 'Newest first, with their progress.',
        params: CompanyParams,
        querystring: ImportListQuery,
        response: { 200: ImportList },
      },
    },
    async (request) =>
      listImports(db(), request.organization.id, {
        limit: request.query.limit ?? DEFAULT_LIMIT,
        cursor: request.query.cursor,
      }),
  );

  app.get(
    '/companies/:companyId/imports/:importId',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: 'An import and its progress',
        description:
          'Status, counts (totalRows, doneRows, failedRows), rowsPerSecond, startedAt, finishedAt, and the first ' +
          '100 refused rows (the rest: GET .../imports/{importId}/errors). Another company’s import is 404 ' +
          'IMPORT_NOT_FOUND.',
        params: ImportParams,
        response: { 200: ImportOne, ...errorResponses(404) },
      },
    },
    async (request) => ({ data: await getImport(db(), request.organization.id, request.params.importId) }),
  );

  app.get(
    '/companies/:companyId/imports/:importId/errors',
    {
      config: { scope: 'entries:read', organization: 'path' },
      schema: {
        tags,
        summary: 'The refused rows of an import',
        description:
          'In line order, a page at a time (limit, cursor). The first 1,000 refused rows are kept; errorCount on the ' +
          'import counts them all.',
        params: ImportParams,
        querystring: ImportListQuery,
        response: { 200: ImportErrorList, ...errorResponses(404) },
      },
    },
    async (request) =>
      listImportErrors(db(), request.organization.id, request.params.importId, {
        limit: request.query.limit ?? DEFAULT_LIMIT,
        cursor: request.query.cursor,
      }),
  );
};
