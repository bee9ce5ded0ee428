import {
  type Attachment,
  attachmentsAtOffset,
  type EntityRef,
  getAttachment,
  linkAttachment,
  linkedRecordKinds,
} from '@firm/attachments';
import { DomainError, isUuid } from '@firm/core';
import type { Executor } from '@firm/db';
import type { PlatformContext, PlatformRecord } from '../types';
import { invalid, ledgerContextOf, offsetOf, pageOf, type Payload, recordNotFound } from './common';
import type { EntityHandler } from './handler';

/** The platform's entity names an `AttachableRef` may name, and the kind of record each is in the books. */
const REF_KINDS: Readonly<Record<string, EntityRef['entityType']>> = {
  Invoice: 'document',
  SalesReceipt: 'document',
  CreditMemo: 'document',
  RefundReceipt: 'document',
  Estimate: 'document',
  Bill: 'document',
  VendorCredit: 'document',
  Payment: 'payment',
  BillPayment: 'payment',
  JournalEntry: 'journal_entry',
  Purchase: 'journal_entry',
  Deposit: 'journal_entry',
  Transfer: 'journal_entry',
  Customer: 'contact',
  Vendor: 'contact',
};

/** The platform's entity name of a linked record, from its document type, entry source or contact kind. */
const DOCUMENT_ENTITIES: Readonly<Record<string, string>> = {
  invoice: 'Invoice',
  sales_receipt: 'SalesReceipt',
  credit_memo: 'CreditMemo',
  refund_receipt: 'RefundReceipt',
  estimate: 'Estimate',
  bill: 'Bill',
  vendor_credit: 'VendorCredit',
  customer_payment: 'Payment',
  bill_payment: 'BillPayment',
};
const ENTRY_ENTITIES: Readonly<Record<string, string>> = {
  purchase: 'Purchase',
  deposit: 'Deposit',
  transfer: 'Transfer',
};

/** The platform's entity name of each linked record; links to records the platform does not present are left out. */
async function refTypesOf(db: Executor, organizationId: string, a: Attachment): Promise<Map<string, string>> {
  const kinds = await linkedRecordKinds(
    db,
    organizationId,
    a.links.map((l) => l.entityId),
  );
  const types = new Map<string, string>();
  for (const [id, r] of kinds) {
    const name =
      r.table === 'document'
        ? DOCUMENT_ENTITIES[r.kind]
        : r.table === 'entry'
          ? (ENTRY_ENTITIES[r.kind] ?? 'JournalEntry')
          : r.kind === 'vendor'
            ? 'Vendor'
            : 'Customer';
    if (name) types.set(id, name);
  }
  return types;
}

/**
 * An attachment as the platform presents one: QuickBooks' `Attachable`, with its `TempDownloadUri` (a link working
 * without a credential for 15 minutes, as QuickBooks') when reads are given a way to make one.
 */
export async function presentAttachable(
  db: Executor,
  organizationId: string,
  a: Attachment,
  downloadLink?: PlatformContext['downloadLink'],
): Promise<PlatformRecord> {
  const types = await refTypesOf(db, organizationId, a);
  const refs = a.links.flatMap((l) => {
    const type = types.get(l.entityId);
    return type ? [{ EntityRef: { type, value: l.entityId }, IncludeOnSend: false }] : [];
  });
  return {
    Id: a.id,
    SyncToken: String(a.links.length),
    FileName: a.fileName,
    ContentType: a.contentType,
    Size: a.sizeBytes,
    ...(downloadLink ? { TempDownloadUri: downloadLink(a.id) } : {}),
    ...(a.note !== null ? { Note: a.note } : {}),
    AttachableRef: refs,
    MetaData: {
      CreateTime: a.createdAt,
      LastUpdatedTime: a.links.reduce((at, l) => (l.linkedAt > at ? l.linkedAt : at), a.createdAt),
    },
  };
}

/** The records an `AttachableRef` names, in the books' terms. */
export function attachableRefsOf(payload: Payload): EntityRef[] {
  const refs = payload.AttachableRef;
  if (!Array.isArray(refs) || refs.length === 0) throw invalid('AttachableRef', 'must name at least one record');
  return refs.map((ref: unknown, i) => {
    const entityRef = (ref as Payload | null)?.EntityRef as Payload | undefined;
    const type = entityRef?.type;
    const value = entityRef?.value;
    if (typeof type !== 'string' || typeof value !== 'string' || value === '') {
      throw invalid(`AttachableRef[${i}].EntityRef`, 'must have a type and a value');
    }
    const entityType = REF_KINDS[type];
    if (!entityType) {
      throw invalid(`AttachableRef[${i}].EntityRef.type`, `must be one of ${Object.keys(REF_KINDS).join(', ')}`);
    }
    return { entityType, entityId: value };
  });
}

const notFound = (err: unknown) => {
  if (err instanceof DomainError && err.code === 'ATTACHMENT_NOT_FOUND') return recordNotFound('Attachable');
  return err;
};

/**
 * The company's attachments as the platform's `Attachable` records: read, and created by attaching a file already
 * received (`POST /api/v1/attachments`, or the `attach_file` tool) to the records its `AttachableRef` names; the
 * payload's `Id` names the file. A file's bytes are not sent through the platform.
 */
export const attachableHandler: EntityHandler = {
  table: 'attachments',
  operations: ['read', 'create'],
  async list(db, ctx, options) {
    const org = ctx.organizationId;
    const { rows, total } = await attachmentsAtOffset(db, org, offsetOf(options), options.maxResults);
    const records: PlatformRecord[] = [];
    for (const a of rows) records.push(await presentAttachable(db, org, a, ctx.downloadLink));
    return pageOf(records, options, total);
  },
  async get(db, ctx, id) {
    if (!isUuid(id)) throw recordNotFound('Attachable');
    const a = await getAttachment(db, ctx.organizationId, id).catch((err: unknown) => {
      throw notFound(err);
    });
    return presentAttachable(db, ctx.organizationId, a, ctx.downloadLink);
  },
  async create(tx, ctx, payload) {
    const id = payload.Id;
    if (typeof id !== 'string' || id === '') {
      throw invalid('Id', 'must name a file already received (POST /api/v1/attachments or attach_file)');
    }
    const refs = attachableRefsOf(payload);
    let a: Attachment | undefined;
    try {
      for (const ref of refs) a = await linkAttachment(tx, ledgerContextOf(ctx), ctx.organizationId, id, ref);
    } catch (err) {
      throw notFound(err);
    }
    const record = await presentAttachable(tx, ctx.organizationId, a as Attachment);
    return { record, syncTokenBefore: null, journal: [] };
  },
};
