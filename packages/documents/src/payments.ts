import { DomainError, type ErrorDetail, isUuid } from '@firm/core';
import { documentAllocations, documents, pgErrorOf, rowsOf, type Tx } from '@firm/db';
import { isIsoDate, type LedgerContext, nowOf, type PostingReceipt, postTransaction, voidEntry } from '@firm/ledger';
import { and, eq, inArray, isNull, sql } from 'drizzle-orm';
import { idList, validation } from './common';
import {
  bankAccount,
  controlAccount,
  type Document,
  type DocumentRow,
  type DocumentType,
  documentContact,
  documentEvent,
  getDocument,
  type PaymentType,
  statusOf,
} from './documents';

export interface AllocationInput {
  documentId: string;
  amountCents: number;
  /** Where the allocation came from in the caller's input, for error details. */
  field: string;
}

export interface PaymentInput {
  type: PaymentType;
  contactId: string;
  date: string;
  /** The bank (or card, or undeposited-funds) account the money moves through. */
  bankAccountId: string;
  /** Default: the allocations net of the credits. More than that leaves an unapplied amount on the payment. */
  amountCents?: number | undefined;
  number?: string | null | undefined;
  memo?: string | null | undefined;
  reference?: string | null | undefined;
  /** Invoices (customer payment) or bills (bill payment) paid. */
  allocations: AllocationInput[];
  /** Credit memos (customer payment) or vendor credits (bill payment) used towards them. */
  credits?: AllocationInput[] | undefined;
}

interface PaymentRule {
  contact: 'customer' | 'vendor';
  control: 'receivable' | 'payable';
  target: DocumentType;
  credit: DocumentType;
  bankSubtypes: readonly string[];
  label: string;
}

export const PAYMENTS: Record<PaymentType, PaymentRule> = {
  customer_payment: {
    contact: 'customer',
    control: 'receivable',
    target: 'invoice',
    credit: 'credit_memo',
    bankSubtypes: ['bank', 'other_current_asset'],
    label: 'Customer payment',
  },
  bill_payment: {
    contact: 'vendor',
    control: 'payable',
    target: 'bill',
    credit: 'vendor_credit',
    bankSubtypes: ['bank', 'credit_card'],
    label: 'Bill payment',
  },
};

const invalidAllocation = (field: string, message: string) =>
  new DomainError('INVALID_ALLOCATION', `${field} ${message}`, [{ field, message }]);

/** Adds `delta` to a document's open balance and sets the status that follows. The row must be locked. */
async function adjustOpen(tx: Tx, organizationId: string, id: string, delta: number, now: Date): Promise<void> {
  await tx.execute(sql`
    update documents set
      open_cents = open_cents + ${delta},
      status = (case
        when open_cents + ${delta} = total_cents then 'open'
        when open_cents + ${delta} = 0 then case when type in ('invoice', 'bill') then 'paid' else 'applied' end
        else case when type in ('invoice', 'bill') then 'partially_paid' else 'partially_applied' end
      end)::document_status,
      updated_at = ${now.toISOString()}
    where organization_id = ${organizationId} and id = ${id}`);
}

/**
 * An `<type>.updated` event for each document whose open balance and status a payment changed, so that
 * subscribers following an invoice or a bill see it become paid (or open again) without reading payments.
 */
async function announcePaid(tx: Tx, ctx: LedgerContext, organizationId: string, ids: readonly string[]) {
  const rows = await tx
    .select({ id: documents.id, type: documents.type })
    .from(documents)
    .where(and(eq(documents.organizationId, organizationId), inArray(documents.id, [...ids])));
  for (const row of rows) {
    await documentEvent(tx, ctx, 'updated', await getDocument(tx, organizationId, row.type, row.id));
  }
}

/** The open balance check of the database (documents_open_within_total) as the error callers act on. */
function rethrowOverAllocation(err: unknown): never {
  const pgErr = pgErrorOf(err);
  if (pgErr?.code === '23514' && pgErr.message.includes('documents_open_within_total')) {
    throw new DomainError('OVER_ALLOCATION', 'an allocation is larger than the open balance of its document');
  }
  throw err;
}

/**
 * Records a customer payment or a bill payment: checks its allocations against the open balances of the
 * documents it pays, holding their rows locked (in id order, so concurrent payments cannot deadlock) until
 * commit, posts its entry through the ledger's posting path, writes the allocations and lowers the open
 * balances. The database refuses an open balance below zero, so even a path that skipped the lock could not
 * over-allocate.
 */
export async function createPayment(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: PaymentInput,
): Promise<{ document: Document; receipt: PostingReceipt }> {
  const rule = PAYMENTS[input.type];
  if (!isIsoDate(input.date)) throw validation('date', 'is not a YYYY-MM-DD date');
  const credits = input.credits ?? [];
  const all = [
    ...input.allocations.map((a) => ({ ...a, credit: false })),
    ...credits.map((a) => ({ ...a, credit: true })),
  ];
  const seen = new Set<string>();
  for (const a of all) {
    if (!Number.isSafeInteger(a.amountCents) || a.amountCents <= 0) {
      throw validation(`${a.field}.amountCents`, 'must be a positive whole number of cents');
    }
    if (seen.has(a.documentId)) {
      throw new DomainError('DUPLICATE_ALLOCATION', `${a.field} allocates to document ${a.documentId} a second time`, [
        { field: `${a.field}.documentId`, message: 'already allocated in this payment' },
      ]);
    }
    seen.add(a.documentId);
  }
  const netCents =
    input.allocations.reduce((s, a) => s + a.amountCents, 0) - credits.reduce((s, a) => s + a.amountCents, 0);
  const amountCents = input.amountCents ?? netCents;
  if (netCents > amountCents) {
    throw new DomainError(
      'ALLOCATION_EXCEEDS_PAYMENT',
      `the allocations net of credits (${netCents}) exceed the payment amount (${amountCents})`,
      [{ field: 'allocations', message: 'exceed amountCents', allocatedCents: netCents, amountCents }],
    );
  }
  if (amountCents <= 0) {
    throw new DomainError('ZERO_TOTAL', 'the payment must be more than zero cents after credits', [
      { field: 'allocations', message: 'credits use up the whole payment' },
    ]);
  }
  const contact = await documentContact(tx, organizationId, input.contactId, rule.contact);
  const bankAccountId = await bankAccount(tx, organizationId, input.bankAccountId, rule.bankSubtypes, 'bankAccountId');
  const controlAccountId = await controlAccount(tx, organizationId, rule.control);

  // Lock every document paid, in id order, then check what is still open.
  const ids = [...seen].filter(isUuid).sort();
  const locked =
    ids.length === 0
      ? []
      : rowsOf<{
          id: string;
          type: DocumentType;
          status: string;
          contact_id: string;
          open_cents: number;
          date: string;
        }>(
          await tx.execute(sql`
            select id, type, status, contact_id, open_cents, date::text as date from documents
            where organization_id = ${organizationId} and id in (${idList(ids)})
            order by id for update`),
        );
  const byId = new Map(locked.map((r) => [r.id, r]));
  const over: ErrorDetail[] = [];
  for (const a of all) {
    const wanted = a.credit ? rule.credit : rule.target;
    const doc = byId.get(a.documentId);
    // Unknown, another organization's, another type: the same words, so nothing leaks about other tenants.
    if (!doc || doc.type !== wanted) {
      throw invalidAllocation(`${a.field}.documentId`, `is not a ${wanted.replace('_', ' ')} of this organization`);
    }
    if (doc.contact_id !== contact.id) {
      throw invalidAllocation(`${a.field}.documentId`, `is a ${wanted.replace('_', ' ')} of another contact`);
    }
    if (doc.status === 'void') {
      throw invalidAllocation(`${a.field}.documentId`, `is a void ${wanted.replace('_', ' ')}`);
    }
    // A payment settles what exists on its date, so open balances as of any date keep their sign.
    if (doc.date > input.date) {
      throw invalidAllocation(`${a.field}.documentId`, `is dated after the payment (${doc.date})`);
    }
    if (a.amountCents > Number(doc.open_cents)) {
      over.push({
        field: `${a.field}.amountCents`,
        message: 'exceeds the open balance',
        documentId: a.documentId,
        openCents: Number(doc.open_cents),
        amountCents: a.amountCents,
      });
    }
  }
  if (over.length > 0) {
    throw new DomainError(
      'OVER_ALLOCATION',
      over.length === 1
        ? `${over[0]?.field} (${over[0]?.amountCents}) exceeds the open balance of its document (${over[0]?.openCents})`
        : `${over.length} allocations exceed the open balances of their documents`,
      over,
    );
  }

  const label = `${rule.label}${input.number ? ` ${input.number}` : ''}`;
  const common = {
    date: input.date,
    memo: input.memo ?? label,
    reference: input.reference ?? input.number ?? null,
    payeeName: contact.name,
  };
  const receipt = await postTransaction(
    tx,
    ctx,
    organizationId,
    input.type === 'bill_payment'
      ? {
          ...common,
          kind: 'bill_payment',
          sourceAccountId: bankAccountId,
          lines: [{ accountId: controlAccountId, description: label, amountCents }],
        }
      : {
          ...common,
          kind: 'customer_payment',
          lines: [
            { accountId: bankAccountId, description: label, debitCents: amountCents },
            { accountId: controlAccountId, description: label, creditCents: amountCents },
          ],
        },
  );
  const now = nowOf(ctx);
  const unapplied = amountCents - netCents;
  let payment: DocumentRow;
  try {
    const [row] = await tx
      .insert(documents)
      .values({
        organizationId,
        type: input.type,
        status: statusOf(input.type, unapplied, amountCents),
        number: input.number ?? null,
        contactId: contact.id,
        date: input.date,
        memo: input.memo ?? null,
        reference: input.reference ?? null,
        subtotalCents: amountCents,
        taxCents: 0,
        totalCents: amountCents,
        openCents: unapplied,
        controlAccountId,
        bankAccountId,
        journalEntryId: receipt.journalEntryId,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    payment = row as DocumentRow;
  } catch (err) {
    const pgErr = pgErrorOf(err);
    if (pgErr?.code === '23505' && pgErr.message.includes('documents_org_type_number_key')) {
      throw new DomainError('DOCUMENT_NUMBER_TAKEN', `number ${input.number} is already used by another payment`, [
        { field: 'number', message: 'already used' },
      ]);
    }
    throw err;
  }
  // A payment received before its invoices exist allocates nothing yet: all of it is unapplied.
  if (all.length > 0) {
    await tx.insert(documentAllocations).values(
      all.map((a) => ({
        organizationId,
        paymentId: payment.id,
        targetId: a.documentId,
        amountCents: a.amountCents,
        createdAt: now,
      })),
    );
  }
  try {
    for (const a of all) await adjustOpen(tx, organizationId, a.documentId, -a.amountCents, now);
  } catch (err) {
    rethrowOverAllocation(err);
  }
  const document = await getDocument(tx, organizationId, input.type, payment.id);
  await documentEvent(tx, ctx, 'created', document);
  await announcePaid(
    tx,
    ctx,
    organizationId,
    all.map((a) => a.documentId),
  );
  return { document, receipt };
}

/** Voids a payment: its entry is voided, its allocations too, and what it paid is open again. */
export async function voidPayment(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  type: PaymentType,
  id: string,
  reason: string,
): Promise<Document> {
  const why = reason.trim();
  if (why.length === 0) throw validation('reason', 'is empty');
  const payment = await getDocument(tx, organizationId, type, id, true);
  if (payment.status === 'void') throw new DomainError('INVALID_STATE', 'this payment is already void');
  const live = payment.allocations.filter((a) => a.paymentId === payment.id && a.voidedAt === null);
  const ids = [...new Set(live.map((a) => a.targetId))].sort();
  if (ids.length > 0) {
    await tx.execute(sql`
      select id from documents where organization_id = ${organizationId} and id in (${idList(ids)})
      order by id for update`);
  }
  const now = nowOf(ctx);
  for (const a of live) await adjustOpen(tx, organizationId, a.targetId, a.amountCents, now);
  await tx
    .update(documentAllocations)
    .set({ voidedAt: now })
    .where(
      and(
        eq(documentAllocations.organizationId, organizationId),
        eq(documentAllocations.paymentId, id),
        isNull(documentAllocations.voidedAt),
      ),
    );
  await tx
    .update(documents)
    .set({ status: 'void', openCents: 0, voidedAt: now, voidReason: why, updatedAt: now })
    .where(and(eq(documents.organizationId, organizationId), eq(documents.id, id)));
  // After the payment is void: the database refuses to void the entry of a live document.
  if (payment.journalEntryId) await voidEntry(tx, ctx, organizationId, payment.journalEntryId, why);
  const document = await getDocument(tx, organizationId, type, id);
  await documentEvent(tx, ctx, 'voided', document);
  await announcePaid(tx, ctx, organizationId, ids);
  return document;
}
