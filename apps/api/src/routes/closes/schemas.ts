import type { CloseComment, CloseItem, CloseRow, CloseView, EvidenceFile } from '@firm/close';
import { Type } from 'typebox';
import { CompanyParams, IsoDate, ListQuery, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';

const Actor = Type.Object(
  { kind: Type.String({ description: 'session, api_key or oauth_token' }), id: Type.String() },
  { title: 'CloseActor' },
);
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const CloseStatus = Type.Union([Type.Literal('open'), Type.Literal('finished'), Type.Literal('reopened')]);

export const Close = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    companyId: Type.String({ format: 'uuid' }),
    periodStart: IsoDate(),
    periodEnd: IsoDate(),
    status: CloseStatus,
    openedBy: Actor,
    openedAt: Timestamp(),
    finishedBy: Nullable(Actor),
    finishedAt: Nullable(Timestamp()),
    evidenceSha256: Nullable(
      Type.String({ description: "SHA-256 of the evidence's manifest (each file's name and SHA-256), once finished." }),
    ),
    reopenedBy: Nullable(Type.String()),
    reopenedAt: Nullable(Timestamp()),
    reopenReason: Nullable(Type.String()),
  },
  { title: 'Close' },
);

export const OpenCounts = Type.Object(
  {
    blocking: Type.Integer({
      description: 'Blocking items not signed off: while any is open, the close cannot finish.',
    }),
    advisory: Type.Integer(),
  },
  { title: 'CloseOpenCounts' },
);

export const Signoff = Type.Object({ note: Type.String(), by: Actor, at: Timestamp() }, { title: 'CloseSignoff' });

export const ChecklistItem = Type.Object(
  {
    key: Type.String({ description: "Stable while the same problem holds: its rule and its evidence's ids." }),
    kind: Type.String({ description: 'The rule that found it (GET /api/v1/close-rules).' }),
    severity: Type.Union([Type.Literal('blocking'), Type.Literal('advisory')]),
    message: Type.String(),
    evidence: Type.Array(Type.Object({ type: Type.String(), id: Type.String() })),
    signoff: Nullable(Signoff),
  },
  { title: 'CloseChecklistItem' },
);

export const Comment = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    itemKey: Nullable(Type.String()),
    author: Actor,
    body: Type.String(),
    createdAt: Timestamp(),
  },
  { title: 'CloseComment' },
);

export const CloseDetail = Type.Object(
  {
    ...Close.properties,
    items: Type.Array(ChecklistItem, { description: 'The checklist, computed from the books on this read.' }),
    comments: Type.Array(Comment),
    open: OpenCounts,
  },
  { title: 'CloseDetail' },
);

export const EvidenceFileSchema = Type.Object(
  { name: Type.String(), contentType: Type.String(), size: Type.Integer(), sha256: Type.String() },
  { title: 'CloseEvidenceFile' },
);

export const BoardEntry = Type.Object(
  {
    companyId: Type.String({ format: 'uuid' }),
    companyName: Type.String(),
    close: Nullable(Close),
    open: Nullable(OpenCounts),
  },
  { title: 'CloseBoardEntry' },
);

export const CloseParams = Type.Object({ ...CompanyParams.properties, closeId: Uuid('Close id.') });
export const ItemParams = Type.Object({
  ...CloseParams.properties,
  itemKey: Type.String({ maxLength: 100, description: "A checklist item's key." }),
});
export const EvidenceParams = Type.Object({
  ...CloseParams.properties,
  name: Type.String({ maxLength: 100, description: 'An evidence file name, as listed.' }),
});

export const OpenBody = Type.Object(
  {
    periodEnd: IsoDate('The last day of the period: the last day of a month unless periodStart is given.'),
    periodStart: Type.Optional(
      IsoDate('The first day, within the fiscal year of periodEnd. Default: the first of periodEnd’s month.'),
    ),
  },
  { additionalProperties: false, title: 'OpenClose' },
);

export const CloseListQuery = Type.Object({ ...ListQuery, status: Type.Optional(CloseStatus) });
export const BoardQuery = Type.Object({ periodEnd: IsoDate('The period end of the closes shown.') });

const text = (maxLength: number, description: string) =>
  Type.String({ minLength: 1, maxLength, pattern: NON_BLANK_TEXT, description });

export const SignOffBody = Type.Object(
  { note: text(2000, 'Why the item is fine as it is: kept and shown with who signed off and when.') },
  { additionalProperties: false, title: 'CloseSignOff' },
);
export const CommentBody = Type.Object(
  {
    body: text(4000, 'The comment.'),
    itemKey: Type.Optional(Type.String({ maxLength: 100, description: 'The item commented on; none: the close.' })),
  },
  { additionalProperties: false, title: 'CloseCommentInput' },
);
export const ReopenBody = Type.Object(
  { reason: text(2000, 'Why the period is opened again: kept on the close and in the audit trail.') },
  { additionalProperties: false, title: 'CloseReopen' },
);

export const CloseList = PageOf(Close);

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export const presentClose = (c: CloseRow) => ({
  id: c.id,
  companyId: c.organizationId,
  periodStart: c.periodStart,
  periodEnd: c.periodEnd,
  status: c.status,
  openedBy: { kind: c.openedByKind, id: c.openedById },
  openedAt: c.openedAt.toISOString(),
  finishedBy: c.finishedByKind && c.finishedById ? { kind: c.finishedByKind, id: c.finishedById } : null,
  finishedAt: iso(c.finishedAt),
  evidenceSha256: c.evidenceSha256,
  reopenedBy: c.reopenedById,
  reopenedAt: iso(c.reopenedAt),
  reopenReason: c.reopenReason,
});

export const presentItem = (i: CloseItem) => ({
  ...i,
  signoff: i.signoff && { note: i.signoff.note, by: i.signoff.by, at: i.signoff.at.toISOString() },
});

export const presentComment = (c: CloseComment) => ({ ...c, createdAt: c.createdAt.toISOString() });

export const presentDetail = (v: CloseView) => ({
  ...presentClose(v.close),
  items: v.items.map(presentItem),
  comments: v.comments.map(presentComment),
  open: v.open,
});

export const presentEvidence = (f: EvidenceFile) => ({
  name: f.name,
  contentType: f.contentType,
  size: f.size,
  sha256: f.sha256,
});
