import { isUuid } from '@firm/core';
import { type Executor, type Tx } from '@firm/db';
import {
  createDocument,
  type Document,
  type DocumentInput,
  type DocumentType,
  getDocument,
  type LineDocumentType,
  type LineInput,
  liveDocumentsAtOffset,
  liveDocumentsByIds,
  updateDocument,
  voidDocument,
  withDetail,
} from '@firm/documents';
import { getEntry, todayUtc } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import type { JournalEffectLine, PlatformRecord, WriteResult } from '../types';
import {
  amountOf,
  centsOf,
  checkSyncToken,
  contactNamesAndVersionsOf,
  dateOf,
  envelope,
  invalid,
  journalOf,
  ledgerContextOf,
  linesOf,
  objectOf,
  offsetOf,
  type Payload,
  pageOf,
  recordNotFound,
  refOf,
  textOf,
  versionsOf,
} from './common';
import type { EntityHandler } from './handler';
import { versioned } from './query';

interface DocumentShape {
  entity: string;
  type: LineDocumentType;
  /** Sales lines are `SalesItemLineDetail`; purchase lines are by item or by account. */
  side: 'sales' | 'purchase';
  /** The field naming the bank account of a receipt. */
  bankField?: 'DepositToAccountRef';
}

function presentLines(shape: DocumentShape, d: Document): Payload[] {
  const lines: Payload[] = d.lines.map((l) => {
    const base = {
      Id: String(l.lineNo),
      LineNum: l.lineNo,
      ...(l.description ? { Description: l.description } : {}),
      Amount: amountOf(l.amountCents),
    };
    const qty = Number(l.quantity);
    if (shape.side === 'sales') {
      return {
        ...base,
        DetailType: 'SalesItemLineDetail',
        SalesItemLineDetail: {
          ...(l.itemId ? { ItemRef: { value: l.itemId } } : {}),
          ItemAccountRef: { value: l.accountId },
          Qty: qty,
          UnitPrice: amountOf(l.unitPriceCents),
          ...(l.taxRateId ? { TaxCodeRef: { value: l.taxRateId } } : {}),
        },
      };
    }
    if (l.itemId) {
      return {
        ...base,
        DetailType: 'ItemBasedExpenseLineDetail',
        ItemBasedExpenseLineDetail: {
          ItemRef: { value: l.itemId },
          Qty: qty,
          UnitPrice: amountOf(l.unitPriceCents),
          ...(l.taxRateId ? { TaxCodeRef: { value: l.taxRateId } } : {}),
        },
      };
    }
    return {
      ...base,
      DetailType: 'AccountBasedExpenseLineDetail',
      AccountBasedExpenseLineDetail: {
        AccountRef: { value: l.accountId },
        ...(l.taxRateId ? { TaxCodeRef: { value: l.taxRateId } } : {}),
      },
    };
  });
  if (shape.side === 'sales') {
    lines.push({ Amount: amountOf(d.subtotalCents), DetailType: 'SubTotalLineDetail', SubTotalLineDetail: {} });
  }
  return lines;
}

function present(
  shape: DocumentShape,
  d: Document,
  contactName: string | undefined,
  version: Parameters<typeof envelope>[2],
): PlatformRecord {
  const contactRef = { value: d.contactId, ...(contactName ? { name: contactName } : {}) };
  const balanced = d.type === 'invoice' || d.type === 'bill' || d.type === 'credit_memo' || d.type === 'vendor_credit';
  return {
    ...envelope(d.id, d.createdAt, version),
    ...(d.number ? { DocNumber: d.number } : {}),
    TxnDate: d.date,
    ...(d.dueDate ? { DueDate: d.dueDate } : {}),
    ...(shape.side === 'sales' ? { CustomerRef: contactRef } : { VendorRef: contactRef }),
    ...(d.controlAccountId && shape.side === 'purchase' ? { APAccountRef: { value: d.controlAccountId } } : {}),
    ...(d.controlAccountId && shape.side === 'sales' ? { ARAccountRef: { value: d.controlAccountId } } : {}),
    ...(d.bankAccountId && shape.bankField ? { [shape.bankField]: { value: d.bankAccountId } } : {}),
    ...(d.memo ? { PrivateNote: d.memo } : {}),
    Line: presentLines(shape, d),
    TxnTaxDetail: { TotalTax: amountOf(d.taxCents) },
    TotalAmt: amountOf(d.totalCents),
    ...(balanced ? { Balance: amountOf(d.openCents) } : {}),
    ...(d.type === 'estimate' ? { TxnStatus: d.status === 'converted' ? 'Converted' : 'Pending' } : {}),
  };
}

/** The document's lines from the platform's `Line[]`; subtotal and other summary lines carry nothing to keep. */
function linesIn(shape: DocumentShape, lines: Payload[]): LineInput[] {
  const out: LineInput[] = [];
  lines.forEach((line, i) => {
    const at = `Line[${i}]`;
    const detailType = textOf(line, 'DetailType');
    if (detailType === 'SubTotalLineDetail' || detailType === 'DiscountLineDetail') return;
    const allowed =
      shape.side === 'sales'
        ? ['SalesItemLineDetail']
        : ['AccountBasedExpenseLineDetail', 'ItemBasedExpenseLineDetail'];
    if (!detailType || !allowed.includes(detailType)) {
      throw invalid(`${at}.DetailType`, `must be one of ${allowed.join(', ')}`);
    }
    const detail = objectOf(line, detailType);
    if (!detail) throw invalid(`${at}.${detailType}`, 'is required');
    const amount = line.Amount === undefined ? undefined : centsOf(line.Amount, `${at}.Amount`, { allowZero: true });
    const description = textOf(line, 'Description') ?? null;
    const taxRateId = refOf(detail, 'TaxCodeRef') ?? null;
    if (detailType === 'AccountBasedExpenseLineDetail') {
      const accountId = refOf(detail, 'AccountRef');
      if (!accountId) throw invalid(`${at}.${detailType}.AccountRef`, 'is required');
      if (amount === undefined) throw invalid(`${at}.Amount`, 'is required');
      out.push({ accountId, description, quantity: 1, unitPriceCents: amount, taxRateId });
      return;
    }
    const itemId = refOf(detail, 'ItemRef') ?? null;
    const accountId = refOf(detail, 'ItemAccountRef') ?? null;
    if (!itemId && !accountId) throw invalid(`${at}.${detailType}.ItemRef`, 'is required');
    const qtyRaw = detail.Qty;
    if (qtyRaw !== undefined && (typeof qtyRaw !== 'number' || !(qtyRaw > 0))) {
      throw invalid(`${at}.${detailType}.Qty`, 'must be a number more than zero');
    }
    const quantity = typeof qtyRaw === 'number' ? qtyRaw : 1;
    let unitPriceCents =
      detail.UnitPrice === undefined
        ? undefined
        : centsOf(detail.UnitPrice, `${at}.${detailType}.UnitPrice`, { allowZero: true });
    if (unitPriceCents === undefined && amount !== undefined && quantity === 1) unitPriceCents = amount;
    out.push({
      itemId,
      accountId,
      description,
      quantity,
      ...(unitPriceCents !== undefined ? { unitPriceCents } : {}),
      taxRateId,
    });
  });
  return out;
}

/**
 * Reads of one kind of document as platform records, shared by the documents and the payments: by ids (a query
 * page), one (RECORD_NOT_FOUND when it is not there), a page of the live ones in date order, and a write's journal.
 */
export function documentReads(
  entity: string,
  type: DocumentType,
  presentAll: (db: Executor, organizationId: string, docs: Document[]) => Promise<PlatformRecord[]>,
) {
  async function getMany(db: Executor, organizationId: string, ids: readonly string[]): Promise<PlatformRecord[]> {
    const wanted = ids.filter(isUuid);
    if (wanted.length === 0) return [];
    const rows = await liveDocumentsByIds(db, organizationId, type, wanted);
    return presentAll(db, organizationId, await withDetail(db, organizationId, rows));
  }

  async function getOne(db: Executor, organizationId: string, id: string): Promise<PlatformRecord> {
    const [record] = await getMany(db, organizationId, [id]);
    if (!record) throw recordNotFound(entity);
    return record;
  }

  async function journal(tx: Tx, organizationId: string, doc: Document): Promise<JournalEffectLine[]> {
    if (!doc.journalEntryId) return [];
    return journalOf((await getEntry(tx, organizationId, doc.journalEntryId)).lines);
  }

  const list: EntityHandler['list'] = async (db, ctx, options) => {
    const { rows, total } = await liveDocumentsAtOffset(
      db,
      ctx.organizationId,
      type,
      offsetOf(options),
      options.maxResults,
    );
    const docs = await withDetail(db, ctx.organizationId, rows);
    return pageOf(await presentAll(db, ctx.organizationId, docs), options, total);
  };

  return { getMany, getOne, journal, list };
}

function documentHandler(shape: DocumentShape): EntityHandler {
  const contactField = shape.side === 'sales' ? 'CustomerRef' : 'VendorRef';

  async function presentAll(db: Executor, organizationId: string, docs: Document[]): Promise<PlatformRecord[]> {
    if (docs.length === 0) return [];
    const { names: nameOf, versions } = await contactNamesAndVersionsOf(
      db,
      organizationId,
      [...new Set(docs.map((d) => d.contactId))],
      docs.map((d) => d.id),
    );
    return docs.map((d) => present(shape, d, nameOf.get(d.contactId), versions.get(d.id)));
  }

  const { getMany, getOne, journal, list } = documentReads(shape.entity, shape.type, presentAll);

  function inputOf(payload: Payload, partial: boolean): Partial<DocumentInput> {
    const contactId = refOf(payload, contactField);
    const lines = linesOf(payload);
    const input: Partial<DocumentInput> = {
      ...(contactId !== undefined ? { contactId } : {}),
      ...(dateOf(payload, 'TxnDate') !== undefined ? { date: dateOf(payload, 'TxnDate') } : {}),
      ...(payload.DueDate !== undefined ? { dueDate: dateOf(payload, 'DueDate') ?? null } : {}),
      ...(payload.DocNumber !== undefined ? { number: textOf(payload, 'DocNumber') ?? null } : {}),
      ...(payload.PrivateNote !== undefined ? { memo: textOf(payload, 'PrivateNote') ?? null } : {}),
      ...(shape.bankField && payload[shape.bankField] !== undefined
        ? { bankAccountId: refOf(payload, shape.bankField) ?? null }
        : {}),
      ...(lines !== undefined ? { lines: linesIn(shape, lines) } : {}),
    };
    if (!partial) {
      if (!input.contactId) throw invalid(`${contactField}`, 'is required');
      if (!input.lines || input.lines.length === 0) throw invalid('Line', 'needs at least one line');
      input.date ??= todayUtc();
    }
    return input;
  }

  return {
    table: 'documents',
    operations: ['read', 'create', 'update', 'delete'],
    query: {
      from: versioned('documents'),
      where: (organizationId) =>
        sql`t.organization_id = ${organizationId} and t.type::text = ${shape.type} and t.status::text <> 'void'`,
      fields: {
        DocNumber: { sql: sql`t.number`, type: 'text' },
        TxnDate: { sql: sql`t.date`, type: 'date' },
        DueDate: { sql: sql`t.due_date`, type: 'date' },
        TotalAmt: { sql: sql`t.total_cents / 100.0`, type: 'number' },
        Balance: { sql: sql`t.open_cents / 100.0`, type: 'number' },
        [contactField]: { sql: sql`t.contact_id::text`, type: 'id' },
      },
    },
    list,
    get: (db, ctx, id) => getOne(db, ctx.organizationId, id),
    getMany: (db, ctx, ids) => getMany(db, ctx.organizationId, ids),
    async create(tx, ctx, payload): Promise<WriteResult> {
      const input = inputOf(payload, false) as DocumentInput;
      const doc = await createDocument(tx, ledgerContextOf(ctx), ctx.organizationId, shape.type, input);
      return {
        record: await getOne(tx, ctx.organizationId, doc.id),
        syncTokenBefore: null,
        journal: await journal(tx, ctx.organizationId, doc),
      };
    },
    async update(tx, ctx, id, payload): Promise<WriteResult> {
      const before = await checkSyncToken(
        tx,
        'documents',
        ctx.organizationId,
        id,
        payload.SyncToken,
        () => getOne(tx, ctx.organizationId, id),
        shape.entity,
      );
      await getOne(tx, ctx.organizationId, id);
      const doc = await updateDocument(
        tx,
        ledgerContextOf(ctx),
        ctx.organizationId,
        shape.type,
        id,
        inputOf(payload, true),
      );
      return {
        record: await getOne(tx, ctx.organizationId, id),
        syncTokenBefore: before,
        journal: await journal(tx, ctx.organizationId, doc),
      };
    },
    async delete(tx, ctx, id, syncToken): Promise<WriteResult> {
      const before = await checkSyncToken(
        tx,
        'documents',
        ctx.organizationId,
        id,
        syncToken,
        () => getOne(tx, ctx.organizationId, id),
        shape.entity,
      );
      const current = await getOne(tx, ctx.organizationId, id);
      const doc = await voidDocument(
        tx,
        ledgerContextOf(ctx),
        ctx.organizationId,
        shape.type,
        id,
        'deleted through the agent gateway',
      );
      const voided = await getDocument(tx, ctx.organizationId, shape.type, doc.id);
      const versions = await versionsOf(tx, ctx.organizationId, [id]);
      return {
        record: {
          ...envelope(id, voided.createdAt, versions.get(id)),
          status: 'Deleted',
          ...(current.DocNumber ? { DocNumber: current.DocNumber } : {}),
        },
        syncTokenBefore: before,
        journal: [],
      };
    },
  };
}

export const DOCUMENT_SHAPES: readonly DocumentShape[] = [
  { entity: 'Invoice', type: 'invoice', side: 'sales' },
  { entity: 'SalesReceipt', type: 'sales_receipt', side: 'sales', bankField: 'DepositToAccountRef' },
  { entity: 'CreditMemo', type: 'credit_memo', side: 'sales' },
  { entity: 'RefundReceipt', type: 'refund_receipt', side: 'sales', bankField: 'DepositToAccountRef' },
  { entity: 'Estimate', type: 'estimate', side: 'sales' },
  { entity: 'Bill', type: 'bill', side: 'purchase' },
  { entity: 'VendorCredit', type: 'vendor_credit', side: 'purchase' },
];

export const documentHandlers = new Map(DOCUMENT_SHAPES.map((s) => [s.entity, documentHandler(s)]));
