import { recordPayment } from '@firm/banking';
import { isUuid } from '@firm/core';
import { type Executor, type Tx } from '@firm/db';
import {
  type AllocationInput,
  contactNames,
  type Document,
  documentTypes,
  getDocument,
  type PaymentType,
  voidPayment,
} from '@firm/documents';
import { todayUtc } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import type { PlatformRecord, WriteResult } from '../types';
import {
  amountOf,
  centsOf,
  checkSyncToken,
  dateOf,
  envelope,
  invalid,
  ledgerContextOf,
  linesOf,
  objectOf,
  type Payload,
  refOf,
  textOf,
  versionsOf,
} from './common';
import type { EntityHandler } from './handler';
import { documentReads } from './documents';
import { versioned } from './query';

interface PaymentShape {
  entity: 'Payment' | 'BillPayment';
  type: PaymentType;
  contactField: 'CustomerRef' | 'VendorRef';
  /** The platform's names of what a payment pays, and of the credits it uses. */
  target: { type: 'invoice' | 'bill'; txnType: string };
  credit: { type: 'credit_memo' | 'vendor_credit'; txnType: string };
}

const SHAPES: readonly PaymentShape[] = [
  {
    entity: 'Payment',
    type: 'customer_payment',
    contactField: 'CustomerRef',
    target: { type: 'invoice', txnType: 'Invoice' },
    credit: { type: 'credit_memo', txnType: 'CreditMemo' },
  },
  {
    entity: 'BillPayment',
    type: 'bill_payment',
    contactField: 'VendorRef',
    target: { type: 'bill', txnType: 'Bill' },
    credit: { type: 'vendor_credit', txnType: 'VendorCredit' },
  },
];

/** Where the money moved: `DepositToAccountRef` on a payment, `CheckPayment.BankAccountRef` on a bill payment. */
function bankRefOf(shape: PaymentShape, payload: Payload): string | undefined {
  if (shape.entity === 'Payment') return refOf(payload, 'DepositToAccountRef');
  const check = objectOf(payload, 'CheckPayment') ?? objectOf(payload, 'CreditCardPayment');
  const field = objectOf(payload, 'CheckPayment') ? 'BankAccountRef' : 'CCAccountRef';
  return check ? refOf(check, field) : undefined;
}

/**
 * Customer payments (`Payment`) and bill payments (`BillPayment`) in the platform's shape: each line pays one
 * linked transaction (`LinkedTxn`: an invoice or bill, or a credit used towards them), `UnappliedAmt` is what the
 * payment has not applied. Created through the documents package's payment rules; deleting voids the payment, and
 * what it paid is open again. A payment is not edited: delete it and create it again.
 */
function paymentHandler(shape: PaymentShape): EntityHandler {
  async function presentAll(db: Executor, organizationId: string, docs: Document[]): Promise<PlatformRecord[]> {
    if (docs.length === 0) return [];
    const contactIds = [...new Set(docs.map((d) => d.contactId))];
    const names = await contactNames(db, organizationId, contactIds);
    const nameOf = new Map(names.map((n) => [n.id, n.name]));
    const linked = [...new Set(docs.flatMap((d) => d.allocations.map((a) => a.targetId)))];
    const types = linked.length === 0 ? [] : await documentTypes(db, organizationId, linked);
    const typeOf = new Map(types.map((t) => [t.id, t.type]));
    const versions = await versionsOf(
      db,
      organizationId,
      docs.map((d) => d.id),
    );
    return docs.map((d) => {
      const lines = d.allocations
        .filter((a) => a.paymentId === d.id && a.voidedAt === null)
        .map((a, i) => ({
          Id: String(i + 1),
          Amount: amountOf(a.amountCents),
          LinkedTxn: [
            {
              TxnId: a.targetId,
              TxnType: typeOf.get(a.targetId) === shape.credit.type ? shape.credit.txnType : shape.target.txnType,
            },
          ],
        }));
      const bank = d.bankAccountId ? { value: d.bankAccountId } : undefined;
      return {
        ...envelope(d.id, d.createdAt, versions.get(d.id)),
        TxnDate: d.date,
        [shape.contactField]: { value: d.contactId, name: nameOf.get(d.contactId) ?? '' },
        TotalAmt: amountOf(d.totalCents),
        UnappliedAmt: amountOf(d.openCents),
        ...(shape.entity === 'Payment'
          ? { ...(bank ? { DepositToAccountRef: bank } : {}), ...(d.number ? { PaymentRefNum: d.number } : {}) }
          : { PayType: 'Check', ...(bank ? { CheckPayment: { BankAccountRef: bank } } : {}) }),
        ...(shape.entity === 'BillPayment' && d.number ? { DocNumber: d.number } : {}),
        ...(d.memo ? { PrivateNote: d.memo } : {}),
        CurrencyRef: { value: 'USD' },
        Line: lines,
      };
    });
  }

  const { getMany, getOne, journal, list } = documentReads(shape.entity, shape.type, presentAll);

  /** Lines pay what their `LinkedTxn` names: the target documents, or credits used towards them. */
  async function allocationsOf(
    tx: Tx,
    organizationId: string,
    lines: Payload[],
  ): Promise<{ allocations: AllocationInput[]; credits: AllocationInput[] }> {
    const parsed = lines.map((line, i) => {
      const linked = line.LinkedTxn;
      const first = Array.isArray(linked) && linked.length === 1 ? (linked[0] as Payload) : undefined;
      const txnId = first && typeof first.TxnId === 'string' ? first.TxnId : undefined;
      if (!txnId) throw invalid(`Line.${i}.LinkedTxn`, 'must name exactly one transaction: [{TxnId, TxnType}]');
      return { documentId: txnId, amountCents: centsOf(line.Amount, `Line.${i}.Amount`), field: `payload.Line.${i}` };
    });
    const ids = parsed.map((p) => p.documentId).filter(isUuid);
    const rows = ids.length === 0 ? [] : await documentTypes(tx, organizationId, ids);
    const credit = new Set(rows.filter((r) => r.type === shape.credit.type).map((r) => r.id));
    return {
      allocations: parsed.filter((p) => !credit.has(p.documentId)),
      credits: parsed.filter((p) => credit.has(p.documentId)),
    };
  }

  return {
    table: 'documents',
    operations: ['read', 'create', 'delete'],
    query: {
      from: versioned('documents'),
      where: (organizationId) =>
        sql`t.organization_id = ${organizationId} and t.type::text = ${shape.type} and t.status::text <> 'void'`,
      fields: {
        TxnDate: { sql: sql`t.date`, type: 'date' },
        TotalAmt: { sql: sql`t.total_cents / 100.0`, type: 'number' },
        UnappliedAmt: { sql: sql`t.open_cents / 100.0`, type: 'number' },
        [shape.contactField]: { sql: sql`t.contact_id::text`, type: 'id' },
      },
    },
    list,
    get: (db, ctx, id) => getOne(db, ctx.organizationId, id),
    getMany: (db, ctx, ids) => getMany(db, ctx.organizationId, ids),
    async create(tx, ctx, payload): Promise<WriteResult> {
      const contactId = refOf(payload, shape.contactField);
      if (!contactId) throw invalid(shape.contactField, 'is required');
      const bankAccountId = bankRefOf(shape, payload);
      if (!bankAccountId) {
        throw invalid(
          shape.entity === 'Payment' ? 'DepositToAccountRef' : 'CheckPayment.BankAccountRef',
          'is required: the account the money moved through',
        );
      }
      const lines = linesOf(payload) ?? [];
      const { allocations, credits } = await allocationsOf(tx, ctx.organizationId, lines);
      const number = textOf(payload, shape.entity === 'Payment' ? 'PaymentRefNum' : 'DocNumber');
      const { document, bankTransactionIds } = await recordPayment(tx, ledgerContextOf(ctx), ctx.organizationId, {
        type: shape.type,
        contactId,
        date: dateOf(payload, 'TxnDate') ?? todayUtc(),
        bankAccountId,
        ...(payload.TotalAmt !== undefined ? { amountCents: centsOf(payload.TotalAmt, 'TotalAmt') } : {}),
        number: number ?? null,
        memo: textOf(payload, 'PrivateNote') ?? null,
        allocations,
        credits,
      });
      return {
        record: await getOne(tx, ctx.organizationId, document.id),
        syncTokenBefore: null,
        journal: await journal(tx, ctx.organizationId, document),
        bankTransactionIds,
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
      await getOne(tx, ctx.organizationId, id);
      await voidPayment(
        tx,
        ledgerContextOf(ctx),
        ctx.organizationId,
        shape.type,
        id,
        'deleted through the agent gateway',
      );
      const voided = await getDocument(tx, ctx.organizationId, shape.type, id, true);
      const versions = await versionsOf(tx, ctx.organizationId, [id]);
      return {
        record: { ...envelope(id, voided.createdAt, versions.get(id)), status: 'Deleted' },
        syncTokenBefore: before,
        journal: [],
      };
    },
  };
}

export const paymentHandlers = new Map(SHAPES.map((s) => [s.entity, paymentHandler(s)]));
