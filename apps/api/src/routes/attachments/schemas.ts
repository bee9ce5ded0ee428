import { ENTITY_TYPES } from '@firm/attachments';
import { Type } from 'typebox';
import { DataOf, ListQuery, PageOf, Timestamp, Uuid } from '../../schemas';

export { CompanyParams } from '../../schemas';

export const AttachmentParams = Type.Object({ attachmentId: Type.String({ description: 'Attachment id.' }) });
export const CompanyAttachmentParams = Type.Object({
  companyId: Type.String({ description: 'Company (organization) id.' }),
  attachmentId: Type.String({ description: 'Attachment id.' }),
});

export const EntityTypeSchema = Type.Enum([...ENTITY_TYPES], {
  description:
    'The kind of record: journal_entry, document (an invoice, bill, credit, receipt or estimate), payment (a ' +
    'customer or bill payment), contact, bank_transaction or reconciliation (its statement).',
});

const LinkFields = {
  entityType: EntityTypeSchema,
  entityId: Type.String({ description: 'The record’s id.' }),
};

export const LinkParams = Type.Object({
  attachmentId: Type.String({ description: 'Attachment id.' }),
  ...LinkFields,
});
export const CompanyLinkParams = Type.Object({
  companyId: Type.String({ description: 'Company (organization) id.' }),
  attachmentId: Type.String({ description: 'Attachment id.' }),
  ...LinkFields,
});

export const LinkBody = Type.Object(LinkFields, { additionalProperties: false });

export const AttachmentListQuery = Type.Object({
  ...ListQuery,
  entityType: Type.Optional(EntityTypeSchema),
  entityId: Type.Optional(Type.String({ description: 'Only the attachments of this record.' })),
});

export const AttachmentSchema = Type.Object(
  {
    id: Uuid(),
    companyId: Uuid(),
    fileName: Type.String({ description: 'The name it was uploaded with: data, never a path.' }),
    contentType: Type.String({ description: 'The type its bytes are (detected, never the declared one).' }),
    size: Type.Integer({ description: 'Bytes.' }),
    sha256: Type.String({ description: 'SHA-256 of the bytes, hex.' }),
    note: Type.Union([Type.String(), Type.Null()]),
    createdBy: Type.Object({ kind: Type.String(), id: Type.String() }),
    createdAt: Timestamp(),
    downloadUrl: Type.Optional(
      Type.String({
        format: 'uri',
        description:
          'Reads only: a link that downloads the file without a credential, for 15 minutes (downloadUrlExpiresAt), ' +
          'to hand to a person. It is a credential for this one file: share it as such.',
      }),
    ),
    downloadUrlExpiresAt: Type.Optional(Timestamp()),
    links: Type.Array(
      Type.Object(
        { entityType: EntityTypeSchema, entityId: Uuid(), linkedAt: Timestamp() },
        { title: 'AttachmentLink' },
      ),
      { description: 'The records it is attached to.' },
    ),
  },
  { title: 'Attachment' },
);

export const AttachmentOne = DataOf(AttachmentSchema);
export const AttachmentList = PageOf(AttachmentSchema);

export const DeletedAttachment = DataOf(
  Type.Object(
    {
      id: Uuid(),
      deleted: Type.Literal(true),
      fileRetained: Type.Boolean({
        description: 'The file is kept: posted records (entries, documents in the books, reconciled rows) refer to it.',
      }),
    },
    { title: 'DeletedAttachment' },
  ),
);

/** The multipart form, as documented (the handler reads it as a stream). */
export const UploadForm = Type.Object(
  {
    entityType: Type.Optional(EntityTypeSchema),
    entityId: Type.Optional(Type.String({ description: 'With entityType: the record to attach the file to.' })),
    note: Type.Optional(Type.String({ maxLength: 1000 })),
    file: Type.String({ format: 'binary', description: 'The file; send it as the last part.' }),
  },
  { title: 'AttachmentUpload' },
);

/** The largest file the JSON (base64) upload takes, decoded: 5 MB (agents' tools send files this way). */
export const INLINE_MAX_BYTES = 5 * 1024 * 1024;

export const InlineUploadBody = Type.Object(
  {
    fileName: Type.String({ minLength: 1, maxLength: 255, description: 'The file’s name: data, never a path.' }),
    contentBase64: Type.String({
      minLength: 4,
      maxLength: Math.ceil(INLINE_MAX_BYTES / 3) * 4,
      pattern: '^[A-Za-z0-9+/]+={0,2}$',
      description: 'The file’s bytes, base64 (at most 5 MB decoded).',
    }),
    entityType: Type.Optional(EntityTypeSchema),
    entityId: Type.Optional(Type.String({ description: 'With entityType: the record to attach the file to.' })),
    note: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false, title: 'AttachmentInlineUpload' },
);

export const DownloadParams = Type.Object({
  companyId: Type.String({ description: 'Company (organization) id.' }),
  attachmentId: Type.String({ description: 'Attachment id.' }),
});

export const DownloadQuery = Type.Object({
  expires: Type.Integer({ minimum: 0, description: 'When the link stops working, Unix seconds (as signed).' }),
  signature: Type.String({ maxLength: 128, description: 'HMAC-SHA256 of the link, base64url (as signed).' }),
});
