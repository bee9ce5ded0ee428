import { DomainError, decodeCursor, isEventType, isUuid, type Page, toPage } from '@firm/core';
import {
  documentAllocations,
  documentLines,
  documents,
  type documentStatus,
  type documentType,
  type Executor,
  pgErrorOf,
  rowsOf,
  type Tx,
} from '@firm/db';
import {
  type DebitCreditLine,
  type DocumentEntryKind,
  isIsoDate,
  type LedgerContext,
  nowOf,
  postTransaction,
  recordEvent,
  voidEntry,
  firstActiveAccountOfSubtype,
} from '@firm/ledger';
import { and, asc, count, eq, gt, gte, inArray, lte, ne, or, sql } from 'drizzle-orm';
import { activeAccounts, idList, invalidAccount, validation } from './common';
import { type Contact, contactServes, getContact } from './contacts';
import { lineAmountCents, lineTaxCents, quantityText } from './rounding';

export type DocumentType = (typeof documentType.enumValues)[number];
export type DocumentStatus = (typeof documentStatus.enumValues)[number];
export type LineDocumentType = Exclude<DocumentType, 'customer_payment' | 'bill_payment'>;
export type PaymentType = 'customer_payment' | 'bill_payment';

export type DocumentRow = typeof documents.$inferSelect;
export type DocumentLineRow = typeof documentLines.$inferSelect;
export type AllocationRow = typeof documentAllocations.$inferSelect;

interface TypeRule {
  /** Sales documents take customers, purchase documents vendors. */
  contact: 'customer' | 'vendor';
  /** What the document's total posts against: receivables, payables, or a bank account given on it. */
  counter: 'receivable' | 'payable' | 'bank' | null;
  /** Sign of the line (and tax) postings: 1 debits the line accounts, -1 credits them. */
  lineSign: 1 | -1;
  /** Account subtypes a bank-counter document may name as its bank account. */
  bankSubtypes?: readonly string[];
  label: string;
}

/**
 * How each document with lines posts. Invoices debit receivables and credit income (and the tax
 * liability); credit memos the reverse. Sales receipts debit the bank directly; refund receipts credit
 * it. Bills credit payables and debit expenses, and the tax rate's liability account with reclaimable
 * purchase tax; vendor credits the reverse. Estimates post nothing.
 */
export const LINE_DOCUMENTS: Record<LineDocumentType, TypeRule> = {
  invoice: { contact: 'customer', counter: 'receivable', lineSign: -1, label: 'Invoice' },
  sales_receipt: {
    contact: 'customer',
    counter: 'bank',
    lineSign: -1,
    bankSubtypes: ['bank', 'other_current_asset'],
    label: 'Sales receipt',
  },
  credit_memo: { contact: 'customer', counter: 'receivable', lineSign: 1, label: 'Credit memo' },
  refund_receipt: {
    contact: 'customer',
    counter: 'bank',
    lineSign: 1,
    bankSubtypes: ['bank', 'credit_card', 'other_current_asset'],
    label: 'Refund receipt',
  },
  estimate: { contact: 'customer', counter: null, lineSign: -1, label: 'Estimate' },
  bill: { contact: 'vendor', counter: 'payable', lineSign: 1, label: 'Bill' },
  vendor_credit: { contact: 'vendor', counter: 'payable', lineSign: -1, label: 'Vendor credit' },
};

export interface LineInput {
  itemId?: string | null | undefined;
  accountId?: string | null | undefined;
  description?: string | null | undefined;
  /** Default 1; more than zero, at most four decimals. */
  quantity?: number | undefined;
  /** Default: the item's unit price. Required on a line by account. */
  unitPriceCents?: number | undefined;
  taxRateId?: string | null | undefined;
}

export interface DocumentInput {
  contactId: string;
  date: string;
  dueDate?: string | null | undefined;
  number?: string | null | undefined;
  memo?: string | null | undefined;
  reference?: string | null | undefined;
  /** Sales and refund receipts: where the money went in or came out. */
  bankAccountId?: string | null | undefined;
  lines: LineInput[];
}

export type DocumentPatch = Partial<DocumentInput>;

export interface DocumentFilter {
  contactId?: string | undefined;
  status?: DocumentStatus | undefined;
  startDate?: string | undefined;
  endDate?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

export interface Document extends DocumentRow {
  lines: DocumentLineRow[];
  allocations: AllocationRow[];
}

export const documentNotFound = (type: DocumentType) =>
  new DomainError('DOCUMENT_NOT_FOUND', `${type.replace('_', ' ')} not found`);

/** The document as the API returns it and as its events carry it. */
export const presentDocument = (d: Document) => ({
  id: d.id,
  organizationId: d.organizationId,
  type: d.type,
  status: d.status,
  number: d.number,
  contactId: d.contactId,
  date: d.date,
  dueDate: d.dueDate,
  memo: d.memo,
  reference: d.reference,
  bankAccountId: d.bankAccountId,
  controlAccountId: d.controlAccountId,
  subtotalCents: d.subtotalCents,
  taxCents: d.taxCents,
  totalCents: d.totalCents,
  openBalanceCents: d.status === 'void' ? 0 : d.openCents,
  journalEntryId: d.journalEntryId,
  estimateId: d.estimateId,
  invoiceId: d.invoiceId,
  voidReason: d.voidReason,
  voidedAt: d.voidedAt ? d.voidedAt.toISOString() : null,
  createdAt: d.createdAt.toISOString(),
  updatedAt: d.updatedAt.toISOString(),
  lines: d.lines.map((l) => ({
    lineNo: l.lineNo,
    itemId: l.itemId,
    accountId: l.accountId,
    description: l.description,
    quantity: Number(l.quantity),
    unitPriceCents: l.unitPriceCents,
    amountCents: l.amountCents,
    taxRateId: l.taxRateId,
    taxCents: l.taxCents,
  })),
  allocations: d.allocations.map((a) => ({
    paymentId: a.paymentId,
    documentId: a.targetId,
    amountCents: a.amountCents,
    voided: a.voidedAt !== null,
  })),
});

export type PresentedDocument = ReturnType<typeof presentDocument>;

/** Adds lines and allocations (both directions) to document rows. */
export async function withDetail(db: Executor, organizationId: string, rows: DocumentRow[]): Promise<Document[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const lines = await db
    .select()
    .from(documentLines)
    .where(and(eq(documentLines.organizationId, organizationId), inArray(documentLines.documentId, ids)))
    .orderBy(asc(documentLines.documentId), asc(documentLines.lineNo));
  const allocations = await db
    .select()
    .from(documentAllocations)
    .where(
      and(
        eq(documentAllocations.organizationId, organizationId),
        or(inArray(documentAllocations.paymentId, ids), inArray(documentAllocations.targetId, ids)),
      ),
    )
    .orderBy(asc(documentAllocations.createdAt), asc(documentAllocations.id));
  return rows.map((r) => ({
    ...r,
    lines: lines.filter((l) => l.documentId === r.id),
    allocations: allocations.filter((a) => a.paymentId === r.id || a.targetId === r.id),
  }));
}

export async function listDocuments(
  db: Executor,
  organizationId: string,
  type: DocumentType,
  filter: DocumentFilter,
): Promise<Page<Document>> {
  let after: ReturnType<typeof or>;
  if (filter.cursor) {
    const [date, id] = decodeCursor(filter.cursor, ['date', 'uuid']).map(String) as [string, string];
    after = or(gt(documents.date, date), and(eq(documents.date, date), gt(documents.id, id)));
  }
  if (filter.contactId !== undefined && !isUuid(filter.contactId)) return { data: [], nextCursor: null };
  const rows = await db
    .select()
    .from(documents)
    .where(
      and(
        eq(documents.organizationId, organizationId),
        eq(documents.type, type),
        filter.contactId ? eq(documents.contactId, filter.contactId) : undefined,
        filter.status ? eq(documents.status, filter.status) : undefined,
        filter.startDate ? gte(documents.date, filter.startDate) : undefined,
        filter.endDate ? lte(documents.date, filter.endDate) : undefined,
        after,
      ),
    )
    .orderBy(asc(documents.date), asc(documents.id))
    .limit(filter.limit + 1);
  const page = toPage(rows, filter.limit, (d) => [d.date, d.id]);
  return { data: await withDetail(db, organizationId, page.data), nextCursor: page.nextCursor };
}

export async function getDocument(
  db: Executor,
  organizationId: string,
  type: DocumentType,
  id: string,
  lock = false,
): Promise<Document> {
  if (!isUuid(id)) throw documentNotFound(type);
  const query = db
    .select()
    .from(documents)
    .where(and(eq(documents.organizationId, organizationId), eq(documents.id, id), eq(documents.type, type)));
  const [row] = lock ? await query.for('update') : await query;
  if (!row) throw documentNotFound(type);
  const [doc] = await withDetail(db, organizationId, [row]);
  return doc as Document;
}

/** The organization's documents of `type` that are not void. */
const liveOfType = (organizationId: string, type: DocumentType) =>
  and(eq(documents.organizationId, organizationId), eq(documents.type, type), ne(documents.status, 'void'));

/** The organization's documents of `type` among `ids` (well-formed) that are not void, without their detail. */
export async function liveDocumentsByIds(
  db: Executor,
  organizationId: string,
  type: DocumentType,
  ids: readonly string[],
): Promise<DocumentRow[]> {
  return db
    .select()
    .from(documents)
    .where(and(liveOfType(organizationId, type), inArray(documents.id, [...ids])));
}

/**
 * The organization's documents of `type` that are not void, in date order, `limit` of them from `offset`, and how
 * many there are, without their detail: for lists paged by position (the embedded platform's).
 */
export async function liveDocumentsAtOffset(
  db: Executor,
  organizationId: string,
  type: DocumentType,
  offset: number,
  limit: number,
): Promise<{ rows: DocumentRow[]; total: number }> {
  const rows = await db
    .select()
    .from(documents)
    .where(liveOfType(organizationId, type))
    .orderBy(asc(documents.date), asc(documents.id))
    .offset(offset)
    .limit(limit);
  const [total] = await db.select({ n: count() }).from(documents).where(liveOfType(organizationId, type));
  return { rows, total: total?.n ?? 0 };
}

/** The type of each of the organization's documents among `ids` (well-formed), void or not. */
export async function documentTypes(
  db: Executor,
  organizationId: string,
  ids: readonly string[],
): Promise<{ id: string; type: DocumentType }[]> {
  return db
    .select({ id: documents.id, type: documents.type })
    .from(documents)
    .where(and(eq(documents.organizationId, organizationId), inArray(documents.id, [...ids])));
}

// ---------------------------------------------------------------- building a document from its input

interface BuiltLine {
  lineNo: number;
  itemId: string | null;
  accountId: string;
  description: string | null;
  quantity: string;
  unitPriceCents: number;
  amountCents: number;
  taxRateId: string | null;
  taxCents: number;
  /** Where the tax posts. */
  taxAccountId: string | null;
}

interface Built {
  contact: Contact;
  lines: BuiltLine[];
  subtotalCents: number;
  taxCents: number;
  totalCents: number;
  controlAccountId: string | null;
  bankAccountId: string | null;
}

const CONTROL_SUBTYPE = { receivable: 'accounts_receivable', payable: 'accounts_payable' } as const;

/** The receivables (or payables) account documents post to: the active one with the lowest code. */
export async function controlAccount(
  db: Executor,
  organizationId: string,
  side: 'receivable' | 'payable',
): Promise<string> {
  const id = await firstActiveAccountOfSubtype(db, organizationId, CONTROL_SUBTYPE[side]);
  if (!id) {
    throw new DomainError(
      'CONTROL_ACCOUNT_MISSING',
      `the organization has no active ${side === 'receivable' ? 'accounts-receivable' : 'accounts-payable'} account`,
    );
  }
  return id;
}

/** The contact named by a document: active, of this organization, and of the kind the document needs. */
export async function documentContact(
  db: Executor,
  organizationId: string,
  contactId: string,
  side: 'customer' | 'vendor',
): Promise<Contact> {
  const contact = await getContact(db, organizationId, contactId, 'share').catch(() => null);
  if (!contact || contact.archived) {
    throw new DomainError('INVALID_CONTACT', `contact ${contactId} is not an active contact of this organization`, [
      { field: 'contactId', message: 'not an active contact of this organization' },
    ]);
  }
  if (!contactServes(contact.kind, side)) {
    throw new DomainError('WRONG_CONTACT_KIND', `${contact.name} is a ${contact.kind}; this document needs a ${side}`, [
      { field: 'contactId', message: `not a ${side}` },
    ]);
  }
  return contact;
}

export async function bankAccount(
  db: Executor,
  organizationId: string,
  id: string | null | undefined,
  subtypes: readonly string[],
  field: string,
): Promise<string> {
  if (!id) throw validation(field, 'is required');
  const account = (await activeAccounts(db, organizationId, [id])).get(id);
  if (!account) throw invalidAccount(field);
  if (!subtypes.includes(account.subtype)) {
    throw invalidAccount(field, `not an account of subtype ${subtypes.join(' or ')}`);
  }
  return id;
}

async function buildDocument(
  db: Executor,
  organizationId: string,
  type: LineDocumentType,
  input: DocumentInput,
): Promise<Built> {
  const rule = LINE_DOCUMENTS[type];
  if (!isIsoDate(input.date)) throw validation('date', 'is not a YYYY-MM-DD date');
  if (input.dueDate !== null && input.dueDate !== undefined) {
    if (!isIsoDate(input.dueDate)) throw validation('dueDate', 'is not a YYYY-MM-DD date');
    if (input.dueDate < input.date) throw validation('dueDate', 'is before date');
  }
  if (input.lines.length === 0) throw validation('lines', 'needs at least 1 line');
  input.lines.forEach((line, i) => {
    if (!line.itemId && !line.accountId) {
      throw new DomainError('LINE_TARGET_REQUIRED', `lines[${i}] needs an itemId or an accountId`, [
        { field: `lines[${i}]`, message: 'needs an itemId or an accountId' },
      ]);
    }
    if (!line.itemId && line.unitPriceCents === undefined) {
      throw validation(`lines[${i}].unitPriceCents`, 'is required on a line by account');
    }
  });
  const contact = await documentContact(db, organizationId, input.contactId, rule.contact);

  const itemIds = [...new Set(input.lines.map((l) => l.itemId).filter((id): id is string => Boolean(id)))];
  const itemRows =
    itemIds.filter(isUuid).length === 0
      ? []
      : rowsOf<{
          id: string;
          unit_price_cents: number;
          income_account_id: string | null;
          expense_account_id: string | null;
        }>(
          await db.execute(sql`
            select id, unit_price_cents, income_account_id, expense_account_id from items
            where organization_id = ${organizationId} and not archived and id in (${idList(itemIds.filter(isUuid))})`),
        );
  const itemsById = new Map(itemRows.map((r) => [r.id, r]));
  const rateIds = [...new Set(input.lines.map((l) => l.taxRateId).filter((id): id is string => Boolean(id)))];
  const rateRows =
    rateIds.filter(isUuid).length === 0
      ? []
      : rowsOf<{ id: string; rate_bps: number; liability_account_id: string }>(
          await db.execute(sql`
            select id, rate_bps, liability_account_id from tax_rates
            where organization_id = ${organizationId} and not archived and id in (${idList(rateIds.filter(isUuid))})`),
        );
  const ratesById = new Map(rateRows.map((r) => [r.id, r]));

  const resolved = input.lines.map((line, i) => {
    let accountId = line.accountId ?? null;
    let unitPrice = line.unitPriceCents;
    if (line.itemId) {
      const item = itemsById.get(line.itemId);
      if (!item) {
        throw new DomainError('INVALID_ITEM', `lines[${i}].itemId is not an active item of this organization`, [
          { field: `lines[${i}].itemId`, message: 'not an active item of this organization' },
        ]);
      }
      const itemAccount = rule.contact === 'customer' ? item.income_account_id : item.expense_account_id;
      if (!accountId && !itemAccount) {
        throw new DomainError(
          'INVALID_ITEM',
          `lines[${i}].itemId has no ${rule.contact === 'customer' ? 'income' : 'expense'} account; give the line an accountId`,
          [{ field: `lines[${i}].itemId`, message: 'has no account for this kind of document' }],
        );
      }
      accountId ??= itemAccount;
      unitPrice ??= Number(item.unit_price_cents);
    }
    let rate: { id: string; rate_bps: number; liability_account_id: string } | null = null;
    if (line.taxRateId) {
      rate = ratesById.get(line.taxRateId) ?? null;
      if (!rate) {
        throw new DomainError(
          'INVALID_TAX_RATE',
          `lines[${i}].taxRateId is not an active tax rate of this organization`,
          [{ field: `lines[${i}].taxRateId`, message: 'not an active tax rate of this organization' }],
        );
      }
    }
    return { line, i, accountId: accountId as string, unitPrice: unitPrice ?? 0, rate };
  });

  const accounts = await activeAccounts(db, organizationId, [
    ...resolved.map((r) => r.accountId),
    ...resolved.flatMap((r) => (r.rate ? [r.rate.liability_account_id] : [])),
  ]);
  const lines: BuiltLine[] = resolved.map(({ line, i, accountId, unitPrice, rate }) => {
    const field = line.accountId ? `lines[${i}].accountId` : `lines[${i}].itemId`;
    const account = accounts.get(accountId);
    if (!account) throw invalidAccount(field);
    // Receivables and payables move only through documents, so their aging always matches the ledger.
    if (account.subtype === 'accounts_receivable' || account.subtype === 'accounts_payable') {
      throw invalidAccount(field, 'a receivables or payables control account; lines cannot post to it');
    }
    if (rate && !accounts.get(rate.liability_account_id)) {
      throw invalidAccount(`lines[${i}].taxRateId`, 'a tax rate whose liability account is not active');
    }
    if (unitPrice < 0) throw validation(`lines[${i}].unitPriceCents`, 'must not be negative');
    const amountCents = lineAmountCents(line.quantity ?? 1, unitPrice, `lines[${i}].quantity`);
    return {
      lineNo: i + 1,
      itemId: line.itemId ?? null,
      accountId,
      description: line.description ?? null,
      quantity: quantityText(line.quantity ?? 1),
      unitPriceCents: unitPrice,
      amountCents,
      taxRateId: rate?.id ?? null,
      taxCents: rate ? lineTaxCents(amountCents, rate.rate_bps) : 0,
      taxAccountId: rate?.liability_account_id ?? null,
    };
  });
  const subtotalCents = lines.reduce((s, l) => s + l.amountCents, 0);
  const taxCents = lines.reduce((s, l) => s + l.taxCents, 0);
  const totalCents = subtotalCents + taxCents;
  if (!Number.isSafeInteger(totalCents)) throw validation('lines', 'total more cents than can be represented exactly');
  if (totalCents <= 0) {
    throw new DomainError('ZERO_TOTAL', `a ${rule.label.toLowerCase()} must total more than zero cents`, [
      { field: 'lines', message: 'total is zero' },
    ]);
  }
  let controlAccountId: string | null = null;
  let bankAccountId: string | null = null;
  if (rule.counter === 'receivable' || rule.counter === 'payable') {
    controlAccountId = await controlAccount(db, organizationId, rule.counter);
  } else if (rule.counter === 'bank') {
    bankAccountId = await bankAccount(
      db,
      organizationId,
      input.bankAccountId,
      rule.bankSubtypes ?? [],
      'bankAccountId',
    );
  }
  return { contact, lines, subtotalCents, taxCents, totalCents, controlAccountId, bankAccountId };
}

/** The balanced lines of a document's entry: the counter account with the total, each line, tax per account. */
function entryLines(type: LineDocumentType, built: Built, memo: string): DebitCreditLine[] {
  const rule = LINE_DOCUMENTS[type];
  const side = (sign: number, cents: number) => (sign > 0 ? { debitCents: cents } : { creditCents: cents });
  const counterAccount = (built.controlAccountId ?? built.bankAccountId) as string;
  const out: DebitCreditLine[] = [
    { accountId: counterAccount, description: memo, ...side(-rule.lineSign, built.totalCents) },
  ];
  for (const l of built.lines) {
    if (l.amountCents > 0)
      out.push({ accountId: l.accountId, description: l.description, ...side(rule.lineSign, l.amountCents) });
  }
  const taxByAccount = new Map<string, number>();
  for (const l of built.lines) {
    if (l.taxAccountId && l.taxCents > 0)
      taxByAccount.set(l.taxAccountId, (taxByAccount.get(l.taxAccountId) ?? 0) + l.taxCents);
  }
  for (const [accountId, cents] of taxByAccount)
    out.push({ accountId, description: 'Tax', ...side(rule.lineSign, cents) });
  return out;
}

async function postDocumentEntry(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  type: LineDocumentType,
  built: Built,
  header: { date: string; number: string | null; memo: string | null; reference: string | null },
): Promise<string | null> {
  if (type === 'estimate') return null;
  const label = `${LINE_DOCUMENTS[type].label}${header.number ? ` ${header.number}` : ''}`;
  const receipt = await postTransaction(tx, ctx, organizationId, {
    kind: type as DocumentEntryKind,
    date: header.date,
    memo: header.memo ?? label,
    reference: header.reference ?? header.number,
    payeeName: built.contact.name,
    lines: entryLines(type, built, label),
  });
  return receipt.journalEntryId;
}

function rethrowNumberTaken(err: unknown, number: string | null | undefined): never {
  const pgErr = pgErrorOf(err);
  if (pgErr?.code === '23505' && pgErr.message.includes('documents_org_type_number_key')) {
    throw new DomainError(
      'DOCUMENT_NUMBER_TAKEN',
      `number ${number} is already used by another document of this type`,
      [{ field: 'number', message: 'already used' }],
    );
  }
  throw err;
}

async function insertLines(tx: Tx, organizationId: string, documentId: string, lines: BuiltLine[]): Promise<void> {
  await tx.insert(documentLines).values(
    lines.map((l) => ({
      organizationId,
      documentId,
      lineNo: l.lineNo,
      itemId: l.itemId,
      accountId: l.accountId,
      description: l.description,
      quantity: l.quantity,
      unitPriceCents: l.unitPriceCents,
      amountCents: l.amountCents,
      taxRateId: l.taxRateId,
      taxCents: l.taxCents,
    })),
  );
}

export async function documentEvent(
  tx: Tx,
  ctx: LedgerContext,
  verb: 'created' | 'updated' | 'voided' | 'converted',
  doc: Document,
): Promise<void> {
  const action = `${doc.type}.${verb}`;
  // Only published event types reach the outbox; a document type and verb without one is a programming error.
  if (!isEventType(action)) throw new Error(`${action} is not in the event catalogue`);
  await recordEvent(tx, ctx, {
    organizationId: doc.organizationId,
    action,
    resourceType: doc.type,
    resourceId: doc.id,
    data: {
      number: doc.number,
      contactId: doc.contactId,
      date: doc.date,
      totalCents: doc.totalCents,
      status: doc.status,
      journalEntryId: doc.journalEntryId,
    },
    payload: presentDocument(doc),
  });
}

/** Status of an invoice or bill, or of a credit (or a payment's unapplied amount), from its open balance. */
export function statusOf(type: DocumentType, openCents: number, totalCents: number): DocumentStatus {
  const owed = type === 'invoice' || type === 'bill';
  if (type === 'sales_receipt' || type === 'refund_receipt') return 'paid';
  if (type === 'estimate') return 'open';
  if (openCents === totalCents) return 'open';
  if (openCents === 0) return owed ? 'paid' : 'applied';
  return owed ? 'partially_paid' : 'partially_applied';
}

const openOnCreate = (type: LineDocumentType, total: number) =>
  type === 'invoice' || type === 'bill' || type === 'credit_memo' || type === 'vendor_credit' ? total : 0;

/**
 * Creates a document with lines and, except for estimates, posts its entry through the ledger's posting
 * path in the same transaction (so the ledger's rules apply: accounts, balance, closed period).
 */
export async function createDocument(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  type: LineDocumentType,
  input: DocumentInput,
  extra: { estimateId?: string } = {},
): Promise<Document> {
  const built = await buildDocument(tx, organizationId, type, input);
  const header = {
    date: input.date,
    number: input.number ?? null,
    memo: input.memo ?? null,
    reference: input.reference ?? null,
  };
  const journalEntryId = await postDocumentEntry(tx, ctx, organizationId, type, built, header);
  const now = nowOf(ctx);
  const open = openOnCreate(type, built.totalCents);
  let row: DocumentRow;
  try {
    const [inserted] = await tx
      .insert(documents)
      .values({
        organizationId,
        type,
        status: statusOf(type, open, built.totalCents),
        number: header.number,
        contactId: built.contact.id,
        date: input.date,
        dueDate: type === 'invoice' || type === 'bill' ? (input.dueDate ?? input.date) : (input.dueDate ?? null),
        memo: header.memo,
        reference: header.reference,
        subtotalCents: built.subtotalCents,
        taxCents: built.taxCents,
        totalCents: built.totalCents,
        openCents: open,
        controlAccountId: built.controlAccountId,
        bankAccountId: built.bankAccountId,
        journalEntryId,
        estimateId: extra.estimateId ?? null,
        createdAt: now,
        updatedAt: now,
      })
      .returning();
    row = inserted as DocumentRow;
  } catch (err) {
    rethrowNumberTaken(err, header.number);
  }
  await insertLines(tx, organizationId, row.id, built.lines);
  const doc = await getDocument(tx, organizationId, type, row.id);
  await documentEvent(tx, ctx, 'created', doc);
  return doc;
}

const liveAllocations = (doc: Document) => doc.allocations.filter((a) => a.voidedAt === null);

/**
 * Changes a document. A posted document is changed by voiding its entry and posting a new one in the same
 * transaction, so the ledger keeps both; this is refused (DOCUMENT_NOT_EDITABLE) once a payment or credit is
 * applied to it, and for void or converted documents.
 */
export async function updateDocument(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  type: LineDocumentType,
  id: string,
  patch: DocumentPatch,
): Promise<Document> {
  const current = await getDocument(tx, organizationId, type, id, true);
  if (current.status === 'void' || current.status === 'converted') {
    throw new DomainError(
      'DOCUMENT_NOT_EDITABLE',
      `this ${LINE_DOCUMENTS[type].label.toLowerCase()} is ${current.status}`,
    );
  }
  if (liveAllocations(current).length > 0) {
    throw new DomainError(
      'DOCUMENT_NOT_EDITABLE',
      `a payment or credit is applied to this ${LINE_DOCUMENTS[type].label.toLowerCase()}; void the payment first`,
    );
  }
  const input: DocumentInput = {
    contactId: patch.contactId ?? current.contactId,
    date: patch.date ?? current.date,
    dueDate:
      patch.dueDate !== undefined
        ? patch.dueDate
        : current.dueDate && current.dueDate >= (patch.date ?? current.date)
          ? current.dueDate
          : null,
    number: patch.number !== undefined ? patch.number : current.number,
    memo: patch.memo !== undefined ? patch.memo : current.memo,
    reference: patch.reference !== undefined ? patch.reference : current.reference,
    bankAccountId: patch.bankAccountId !== undefined ? patch.bankAccountId : current.bankAccountId,
    lines:
      patch.lines ??
      current.lines.map((l) => ({
        itemId: l.itemId,
        accountId: l.accountId,
        description: l.description,
        quantity: Number(l.quantity),
        unitPriceCents: l.unitPriceCents,
        taxRateId: l.taxRateId,
      })),
  };
  const built = await buildDocument(tx, organizationId, type, input);
  const header = {
    date: input.date,
    number: input.number ?? null,
    memo: input.memo ?? null,
    reference: input.reference ?? null,
  };
  const journalEntryId = await postDocumentEntry(tx, ctx, organizationId, type, built, header);
  const open = openOnCreate(type, built.totalCents);
  try {
    await tx
      .update(documents)
      .set({
        contactId: built.contact.id,
        date: input.date,
        dueDate: type === 'invoice' || type === 'bill' ? (input.dueDate ?? input.date) : (input.dueDate ?? null),
        number: header.number,
        memo: header.memo,
        reference: header.reference,
        subtotalCents: built.subtotalCents,
        taxCents: built.taxCents,
        totalCents: built.totalCents,
        openCents: open,
        status: statusOf(type, open, built.totalCents),
        controlAccountId: built.controlAccountId,
        bankAccountId: built.bankAccountId,
        journalEntryId,
        updatedAt: nowOf(ctx),
      })
      .where(and(eq(documents.organizationId, organizationId), eq(documents.id, id)));
  } catch (err) {
    rethrowNumberTaken(err, header.number);
  }
  // Voided only once the document names its new entry: the database refuses to void the entry of a live
  // document (migrations/0005_documents.sql), so that no path can take an entry from under its document.
  if (current.journalEntryId) {
    await voidEntry(
      tx,
      ctx,
      organizationId,
      current.journalEntryId,
      `replaced by an edit of ${type.replace('_', ' ')} ${current.id}`,
    );
  }
  await tx
    .delete(documentLines)
    .where(and(eq(documentLines.organizationId, organizationId), eq(documentLines.documentId, id)));
  await insertLines(tx, organizationId, id, built.lines);
  const doc = await getDocument(tx, organizationId, type, id);
  await documentEvent(tx, ctx, 'updated', doc);
  return doc;
}

/**
 * Voids a document with lines: its entry is voided (the closed-period rule applies to the entry's date)
 * and it leaves every open balance. Refused while a payment or credit is applied to it.
 */
export async function voidDocument(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  type: LineDocumentType,
  id: string,
  reason: string,
): Promise<Document> {
  const why = reason.trim();
  if (why.length === 0) throw validation('reason', 'is empty');
  const current = await getDocument(tx, organizationId, type, id, true);
  if (current.status === 'void' || current.status === 'converted') {
    throw new DomainError(
      'INVALID_STATE',
      `this ${LINE_DOCUMENTS[type].label.toLowerCase()} is already ${current.status}`,
    );
  }
  if (liveAllocations(current).length > 0) {
    throw new DomainError(
      'DOCUMENT_HAS_PAYMENTS',
      `payments or credits are applied to this ${LINE_DOCUMENTS[type].label.toLowerCase()}; void them first`,
      liveAllocations(current).map((a) => ({ message: 'applied', paymentId: a.paymentId, amountCents: a.amountCents })),
    );
  }
  const now = nowOf(ctx);
  await tx
    .update(documents)
    .set({ status: 'void', openCents: 0, voidedAt: now, voidReason: why, updatedAt: now })
    .where(and(eq(documents.organizationId, organizationId), eq(documents.id, id)));
  // After the document is void: the database refuses to void the entry of a live document.
  if (current.journalEntryId) await voidEntry(tx, ctx, organizationId, current.journalEntryId, why);
  const doc = await getDocument(tx, organizationId, type, id);
  await documentEvent(tx, ctx, 'voided', doc);
  return doc;
}

/** Makes an invoice from an open estimate (its lines, today's prices kept), and marks the estimate converted. */
export async function convertEstimate(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  input: { date?: string | undefined; dueDate?: string | null | undefined; number?: string | null | undefined },
): Promise<{ estimate: Document; invoice: Document }> {
  const estimate = await getDocument(tx, organizationId, 'estimate', id, true);
  if (estimate.status !== 'open') throw new DomainError('INVALID_STATE', `this estimate is ${estimate.status}`);
  const invoice = await createDocument(
    tx,
    ctx,
    organizationId,
    'invoice',
    {
      contactId: estimate.contactId,
      date: input.date ?? estimate.date,
      dueDate: input.dueDate ?? null,
      number: input.number ?? null,
      memo: estimate.memo,
      reference: estimate.reference,
      lines: estimate.lines.map((l) => ({
        itemId: l.itemId,
        accountId: l.accountId,
        description: l.description,
        quantity: Number(l.quantity),
        unitPriceCents: l.unitPriceCents,
        taxRateId: l.taxRateId,
      })),
    },
    { estimateId: estimate.id },
  );
  await tx
    .update(documents)
    .set({ status: 'converted', invoiceId: invoice.id, updatedAt: nowOf(ctx) })
    .where(and(eq(documents.organizationId, organizationId), eq(documents.id, id)));
  const converted = await getDocument(tx, organizationId, 'estimate', id);
  await documentEvent(tx, ctx, 'converted', converted);
  return { estimate: converted, invoice };
}
