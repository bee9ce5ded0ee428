import multipart from '@fastify/multipart';
import { type FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import {
  type Attachment,
  createAttachment,
  deleteAttachment,
  discardBlob,
  ENTITY_TYPES,
  type EntityRef,
  type EntityType,
  getAttachment,
  linkAttachment,
  listAttachments,
  openAttachment,
  type ReceivedFile,
  receiveFile,
  recordDownload,
  removeOrphan,
  tooLarge,
  unlinkAttachment,
  verifyDownload,
} from '@firm/attachments';
import { DomainError, isStorableText } from '@firm/core';
import { firmOfCompany } from '@firm/ledger';
import { Readable } from 'node:stream';
import type { Tx } from '@firm/db';
import { errorResponses } from '../../errors/responses';
import { IDEMPOTENCY_HEADER, OptionalIdempotencyHeaders, runIdempotentHashed } from '../../plugins/idempotency';
import { DEFAULT_LIMIT } from '../../schemas';
import { ledgerContext } from '../context';
import { publicOrigin } from '../../origin';
import { downloadLinkOf } from './links';
import { validatorCompiler } from '../../validation';
import {
  AttachmentList,
  AttachmentListQuery,
  AttachmentOne,
  AttachmentParams,
  CompanyAttachmentParams,
  CompanyLinkParams,
  CompanyParams,
  DeletedAttachment,
  DownloadParams,
  DownloadQuery,
  INLINE_MAX_BYTES,
  InlineUploadBody,
  LinkBody,
  LinkParams,
  UploadForm,
} from './schemas';

const tags = ['attachments'];

/** The API's shape of an attachment. */
export const presentAttachment = (a: Attachment) => ({
  id: a.id,
  companyId: a.organizationId,
  fileName: a.fileName,
  contentType: a.contentType,
  size: a.sizeBytes,
  sha256: a.sha256,
  note: a.note,
  createdBy: a.createdBy,
  createdAt: a.createdAt,
  links: a.links,
});

/** The API's shape of an attachment as read: with its download link. */
const presentRead = (request: FastifyRequest, a: Attachment) => ({
  ...presentAttachment(a),
  ...downloadLinkOf(request.server.downloadLinkKeys, publicOrigin(request), a),
});

/** Sends an attachment's bytes as a download: the same headers through the API and through a download link. */
function sendFile(reply: FastifyReply, attachment: Attachment, body: Readable) {
  return reply
    .type(attachment.contentType)
    .header('content-length', String(attachment.sizeBytes))
    .header('content-disposition', contentDisposition(attachment.fileName))
    .header('x-content-type-options', 'nosniff')
    .header('cache-control', 'private, no-store')
    .header('referrer-policy', 'no-referrer')
    .send(body as never);
}

/** RFC 6266 Content-Disposition: an ASCII fallback name, and the real one as RFC 5987 `filename*`. */
export function contentDisposition(fileName: string): string {
  const fallback = fileName.replace(/[^\x20-\x7e]|["\\%/]/g, '_').trim() || 'attachment';
  const encoded = encodeURIComponent(fileName).replace(
    /['()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `attachment; filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

/** A file name as data: what Postgres can store, without control characters or path, at most 255 characters. */
function fileNameOf(given: string | undefined): string {
  // eslint-disable-next-line no-control-regex
  const name = (given ?? '').replace(/[\u0000-\u001f\u007f]/g, '').trim();
  const cut = [...name].slice(0, 255).join('');
  return cut && isStorableText(cut) ? cut : 'attachment';
}

const isEntityType = (v: string): v is EntityType => (ENTITY_TYPES as readonly string[]).includes(v);

/** Multipart overhead allowed beyond the file itself before Content-Length alone refuses the upload. */
const FORM_OVERHEAD = 64 * 1024;

export const attachmentRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  const stores = () => app.attachmentStores;

  /**
   * A received file made an attachment of the request's company, once per Idempotency-Key when one is given (the
   * file's hash and what it is filed as stand for the body). A replay, a refusal, or bytes the company already had:
   * this upload's own copy goes.
   */
  const saveUpload = async (
    request: FastifyRequest,
    reply: FastifyReply,
    received: ReceivedFile,
    filed: { fileName: string; note: string | null; links: EntityRef[] },
  ) => {
    try {
      const ctx = ledgerContext(request);
      const work = async (tx: Tx) => {
        const attachment = await createAttachment(tx, ctx, received, filed);
        return { status: 201, body: { data: presentAttachment(attachment) } };
      };
      if (request.headers[IDEMPOTENCY_HEADER] !== undefined) {
        const requestHash = `attachment:${received.sha256}:${JSON.stringify([filed.fileName, filed.note, filed.links])}`;
        return await runIdempotentHashed(request, reply, requestHash, work);
      }
      const result = await db().transaction(work);
      return reply.code(201).send(result.body);
    } finally {
      await discardBlob(db(), received.store, request.organization.id, received.blobId);
    }
  };
  const maxBytes = app.config.ATTACHMENTS_MAX_BYTES;
  // This plugin's own parser: the form is read by the handler, part by part, the file as a stream.
  await app.register(multipart, {
    limits: { fileSize: maxBytes + 1, files: 1, fields: 5, fieldSize: 4096, parts: 6, headerPairs: 50 },
  });

  app.get(
    '/companies/:companyId/attachments/:attachmentId/download',
    {
      schema: {
        tags,
        summary: 'Download an attachment’s file through a download link',
        description:
          'No credential: the link itself is one, for one attachment of one company, signed by this service ' +
          '(HMAC-SHA256 over the attachment, the company and the expiry) and working for 15 minutes. Reads answer it ' +
          'as downloadUrl (the partner API, list_attachments) or TempDownloadUri (the gateway’s Attachable). An ' +
          'altered link, or one for another file or company, is 403 DOWNLOAD_LINK_INVALID; an expired one 410 ' +
          'DOWNLOAD_LINK_EXPIRED; a deleted attachment 404 ATTACHMENT_NOT_FOUND. The file is answered as by ' +
          'GET …/content, and the download is in the audit trail (actor download_link).',
        params: DownloadParams,
        querystring: DownloadQuery,
        response: {
          200: {
            description: 'The file',
            content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
          },
          ...errorResponses(403, 404, 410),
        },
      },
    },
    async (request, reply) => {
      const { companyId, attachmentId } = request.params;
      const { expires, signature } = request.query;
      verifyDownload(app.downloadLinkKeys, { organizationId: companyId, attachmentId, expires, signature });
      const organizationId = companyId.toLowerCase();
      const firmId = await firmOfCompany(db(), organizationId);
      if (!firmId) throw new DomainError('ATTACHMENT_NOT_FOUND', 'no such attachment in this company');
      const { attachment, body } = await openAttachment(db(), stores(), organizationId, attachmentId.toLowerCase());
      await recordDownload(
        db(),
        { firmId, actor: { kind: 'download_link', id: attachment.id }, requestId: request.id },
        attachment,
        { via: 'download_link', linkExpiresAt: new Date(expires * 1000).toISOString() },
      );
      return sendFile(reply, attachment, body);
    },
  );

  for (const form of ['header', 'path'] as const) {
    const base = form === 'header' ? '/attachments' : '/companies/:companyId/attachments';
    const one = `${base}/:attachmentId`;
    const onePath = form === 'header' ? { params: AttachmentParams } : { params: CompanyAttachmentParams };
    const company = form === 'header' ? 'the company of X-Organization-Id' : 'the company';

    app.post(
      base,
      {
        config: { scope: 'attachments:write', organization: form },
        // After the organization is known (the auth plugin's preValidation runs first): another firm's company is 404
        // whatever was sent; the form is not read yet.
        preValidation: async (request) => {
          if (!request.isMultipart()) {
            throw new DomainError(
              'UNSUPPORTED_MEDIA_TYPE',
              'send the file as multipart/form-data, in a part named file',
            );
          }
          const length = Number(request.headers['content-length']);
          if (Number.isFinite(length) && length > maxBytes + FORM_OVERHEAD) throw tooLarge(maxBytes);
        },
        validatorCompiler: (route) => (route.httpPart === 'body' ? () => true : validatorCompiler(route)),
        schema: {
          tags,
          summary: `Upload a file (receipt, invoice, statement) to ${company}`,
          description:
            'multipart/form-data: optional fields entityType and entityId (the record to attach it to) and note, then ' +
            'the part `file`, read as it arrives: hashed, counted and stored as it streams, never held whole. Its type ' +
            'is decided by its bytes (never its name or declared type): PDF, PNG, JPEG, HEIC, TIFF, CSV or XLSX; ' +
            'anything else is 415 UNSUPPORTED_FILE_TYPE naming the type found. Larger than ATTACHMENTS_MAX_BYTES ' +
            '(25 MB by default): 413 PAYLOAD_TOO_LARGE. A refused or cut-off upload leaves nothing stored. The same ' +
            'bytes uploaded again are stored once per company. With Idempotency-Key, the same file, name and record ' +
            'again replay the first answer.',
          ...(form === 'path' ? { params: CompanyParams } : {}),
          headers: OptionalIdempotencyHeaders,
          consumes: ['multipart/form-data'],
          body: UploadForm,
          response: { 201: AttachmentOne, ...errorResponses(404, 409, 413, 415, 422) },
        },
      },
      async (request, reply) => {
        const organizationId = request.organization.id;
        const part = await request.file();
        if (!part) throw new DomainError('VALIDATION_ERROR', 'the form has no file part');
        const field = (name: string): string | undefined => {
          const f = part.fields[name];
          const v = Array.isArray(f) ? f[0] : f;
          return v && v.type === 'field' && typeof v.value === 'string' && v.value !== '' ? v.value : undefined;
        };
        const entityType = field('entityType');
        const entityId = field('entityId');
        const note = field('note');
        if ((entityType === undefined) !== (entityId === undefined) || (entityType && !isEntityType(entityType))) {
          part.file.resume();
          throw new DomainError('VALIDATION_ERROR', 'the request failed validation', [
            {
              field: 'body.entityType',
              message: `give entityType (one of ${ENTITY_TYPES.join(', ')}) and entityId together`,
            },
          ]);
        }
        if (note !== undefined && (!isStorableText(note) || note.length > 1000)) {
          part.file.resume();
          throw new DomainError('VALIDATION_ERROR', 'the request failed validation', [
            { field: 'body.note', message: 'at most 1000 characters of text' },
          ]);
        }
        const links: EntityRef[] = entityType
          ? [{ entityType: entityType as EntityType, entityId: entityId as string }]
          : [];
        const fileName = fileNameOf(part.filename);
        const received = await receiveFile(db(), stores(), organizationId, part.file, { maxBytes });
        return saveUpload(request, reply, received, { fileName, note: note ?? null, links });
      },
    );

    app.post(
      `${base}/inline`,
      {
        config: { scope: 'attachments:write', organization: form },
        bodyLimit: Math.ceil(INLINE_MAX_BYTES / 3) * 4 + 64 * 1024,
        schema: {
          tags,
          summary: `Upload a small file as base64 JSON to ${company}`,
          description:
            'For callers that cannot send a form (agents’ tools): the file as base64 in JSON, at most 5 MB decoded ' +
            '(and ATTACHMENTS_MAX_BYTES). The same checks as the multipart upload: type by magic bytes (415 ' +
            'UNSUPPORTED_FILE_TYPE), nothing stored when refused, the record checked, Idempotency-Key replays.',
          ...(form === 'path' ? { params: CompanyParams } : {}),
          headers: OptionalIdempotencyHeaders,
          body: InlineUploadBody,
          response: { 201: AttachmentOne, ...errorResponses(404, 409, 413, 415, 422) },
        },
      },
      async (request, reply) => {
        const organizationId = request.organization.id;
        const { fileName: given, contentBase64, entityType, entityId, note } = request.body;
        if ((entityType === undefined) !== (entityId === undefined)) {
          throw new DomainError('VALIDATION_ERROR', 'the request failed validation', [
            { field: 'body.entityType', message: 'give entityType and entityId together' },
          ]);
        }
        const bytes = Buffer.from(contentBase64, 'base64');
        const limit = Math.min(maxBytes, INLINE_MAX_BYTES);
        if (bytes.length > limit) throw tooLarge(limit);
        const links: EntityRef[] = entityType ? [{ entityType, entityId: entityId as string }] : [];
        const fileName = fileNameOf(given);
        const received = await receiveFile(db(), stores(), organizationId, Readable.from([bytes]), { maxBytes: limit });
        return saveUpload(request, reply, received, { fileName, note: note ?? null, links });
      },
    );

    app.get(
      base,
      {
        config: { scope: 'attachments:read', organization: form },
        schema: {
          tags,
          summary: `Attachments of ${company}`,
          description:
            'Newest first; entityType and entityId narrow it to the files of one record. Each has a download link ' +
            '(downloadUrl) that works without a credential for 15 minutes, to hand to a person.',
          ...(form === 'path' ? { params: CompanyParams } : {}),
          querystring: AttachmentListQuery,
          response: { 200: AttachmentList },
        },
      },
      async (request) => {
        const { limit, cursor, entityType, entityId } = request.query;
        const page = await listAttachments(db(), request.organization.id, {
          limit: limit ?? DEFAULT_LIMIT,
          cursor,
          entityType,
          entityId,
        });
        return { data: page.data.map((a) => presentRead(request, a)), nextCursor: page.nextCursor };
      },
    );

    app.get(
      one,
      {
        config: { scope: 'attachments:read', organization: form },
        schema: {
          tags,
          summary: 'An attachment',
          description:
            'Its name, detected type, size, SHA-256, the records it is attached to, and a download link (downloadUrl) ' +
            'that works without a credential for 15 minutes.',
          ...onePath,
          response: { 200: AttachmentOne, ...errorResponses(404) },
        },
      },
      async (request) => ({
        data: presentRead(request, await getAttachment(db(), request.organization.id, request.params.attachmentId)),
      }),
    );

    app.get(
      `${one}/content`,
      {
        config: { scope: 'attachments:read', organization: form },
        schema: {
          tags,
          summary: 'Download an attachment’s file',
          description:
            'The bytes as uploaded, with the detected Content-Type, Content-Length, Content-Disposition: attachment ' +
            '(the uploaded name as RFC 6266 filename and RFC 5987 filename*) and X-Content-Type-Options: nosniff. ' +
            'Every download is in the audit trail.',
          ...onePath,
          response: {
            200: {
              description: 'The file',
              content: { 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
            },
            ...errorResponses(404),
          },
        },
      },
      async (request, reply) => {
        const organizationId = request.organization.id;
        const { attachment, body } = await openAttachment(db(), stores(), organizationId, request.params.attachmentId);
        await recordDownload(db(), ledgerContext(request), attachment);
        return sendFile(reply, attachment, body);
      },
    );

    app.delete(
      one,
      {
        config: { scope: 'attachments:write', organization: form },
        schema: {
          tags,
          summary: 'Delete an attachment',
          description:
            'It leaves lists and reads (404 after). Attached to posted records (a posted entry, a document in the ' +
            'books, a classified or reconciled bank row, a finished reconciliation), its file and links are kept as ' +
            'their evidence (fileRetained); otherwise its links go, and its file when no other attachment has the ' +
            'same bytes.',
          ...onePath,
          response: { 200: DeletedAttachment, ...errorResponses(404, 409) },
        },
      },
      async (request) => {
        const organizationId = request.organization.id;
        const deleted = await db().transaction((tx) =>
          deleteAttachment(tx, ledgerContext(request), organizationId, request.params.attachmentId),
        );
        await removeOrphan(stores(), organizationId, deleted.orphan).catch((err: unknown) =>
          request.log.warn({ err }, 'the file of a deleted attachment could not be removed from its store'),
        );
        return { data: { id: deleted.attachment.id, deleted: true as const, fileRetained: deleted.retained } };
      },
    );

    app.post(
      `${one}/links`,
      {
        config: { scope: 'attachments:write', organization: form },
        schema: {
          tags,
          summary: 'Attach an attachment to one more record',
          description:
            'A file can prove several records (a statement every row of a reconciliation). Attaching it again to the ' +
            'same record changes nothing. A record not in the company is 404 with its own code (ENTRY_NOT_FOUND...).',
          ...onePath,
          body: LinkBody,
          response: { 200: AttachmentOne, ...errorResponses(404, 409, 415) },
        },
      },
      async (request) => {
        const attachment = await db().transaction((tx) =>
          linkAttachment(
            tx,
            ledgerContext(request),
            request.organization.id,
            request.params.attachmentId,
            request.body,
          ),
        );
        return { data: presentAttachment(attachment) };
      },
    );

    app.delete(
      `${one}/links/:entityType/:entityId`,
      {
        config: { scope: 'attachments:write', organization: form },
        schema: {
          tags,
          summary: 'Take an attachment off a record',
          description: 'A posted record keeps the attachment it was posted with: 409 INVALID_STATE.',
          params: form === 'header' ? LinkParams : CompanyLinkParams,
          response: { 200: AttachmentOne, ...errorResponses(404, 409) },
        },
      },
      async (request) => {
        const { attachmentId, entityType, entityId } = request.params;
        const attachment = await db().transaction((tx) =>
          unlinkAttachment(tx, ledgerContext(request), request.organization.id, attachmentId, { entityType, entityId }),
        );
        return { data: presentAttachment(attachment) };
      },
    );
  }
};
