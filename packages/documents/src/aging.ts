import { DomainError } from '@firm/core';
import { type Executor, rowsOf } from '@firm/db';
import { isIsoDate, subtypeNetAsOf } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { getContact } from './contacts';
import type { DocumentType } from './documents';

export type AgingSide = 'receivable' | 'payable';

const SIDE = {
  receivable: {
    owed: 'invoice',
    credit: 'credit_memo',
    payment: 'customer_payment',
    subtype: 'accounts_receivable' as const,
  },
  payable: { owed: 'bill', credit: 'vendor_credit', payment: 'bill_payment', subtype: 'accounts_payable' as const },
} as const;

export interface OpenDocument {
  documentId: string;
  type: DocumentType;
  number: string | null;
  contactId: string;
  date: string;
  dueDate: string;
  totalCents: number;
  /** Still owed (positive), or a credit or unapplied payment (negative), as of the date. */
  openCents: number;
  daysPastDue: number;
}

/**
 * Every document with an open balance on `asOf`, seen from one side (receivables or payables). A document
 * counts from its date; an allocation counts from the later of its payment's and its document's dates, so
 * the open balances as of any date add up to the control accounts' balance from the entries dated through
 * it. Void documents and voided allocations count nowhere, as void entries count nowhere in the ledger.
 */
export async function openDocuments(
  db: Executor,
  organizationId: string,
  side: AgingSide,
  asOf: string,
  contactId?: string,
): Promise<OpenDocument[]> {
  const s = SIDE[side];
  const rows = rowsOf<{
    id: string;
    type: DocumentType;
    number: string | null;
    contact_id: string;
    date: string;
    due: string;
    total_cents: number;
    open_cents: number | string;
    days: number;
  }>(
    await db.execute(sql`
      with live as (
        select * from documents
        where organization_id = ${organizationId} and status <> 'void' and date <= ${asOf}::date
          and type in (${s.owed}::document_type, ${s.credit}::document_type, ${s.payment}::document_type)
          ${contactId ? sql`and contact_id = ${contactId}` : sql``}
      ), alloc as (
        select a.payment_id, a.target_id, a.amount_cents, t.type as target_type
        from document_allocations a
        join documents p on p.organization_id = a.organization_id and p.id = a.payment_id
        join documents t on t.organization_id = a.organization_id and t.id = a.target_id
        where a.organization_id = ${organizationId} and a.voided_at is null
          and greatest(p.date, t.date) <= ${asOf}::date
      ), applied as (
        select target_id as id, sum(amount_cents) as cents from alloc group by target_id
        union all
        select payment_id, sum(case when target_type = ${s.owed}::document_type then amount_cents else -amount_cents end)
        from alloc group by payment_id
      )
      select l.id, l.type, l.number, l.contact_id, l.date::text as date, coalesce(l.due_date, l.date)::text as due,
             l.total_cents, o.open_cents, (${asOf}::date - coalesce(l.due_date, l.date)) as days
      from live l
      cross join lateral (
        select (case when l.type = ${s.owed}::document_type then 1 else -1 end)
               * (l.total_cents - coalesce((select sum(cents) from applied where applied.id = l.id), 0)) as open_cents
      ) o
      where o.open_cents <> 0
      order by coalesce(l.due_date, l.date), l.date, l.id`),
  );
  return rows.map((r) => ({
    documentId: r.id,
    type: r.type,
    number: r.number,
    contactId: r.contact_id,
    date: r.date,
    dueDate: r.due,
    totalCents: Number(r.total_cents),
    openCents: Number(r.open_cents),
    daysPastDue: Number(r.days),
  }));
}

export interface AgingBuckets {
  currentCents: number;
  days1To30Cents: number;
  days31To60Cents: number;
  days61To90Cents: number;
  over90Cents: number;
  totalCents: number;
}

export interface AgingRow extends AgingBuckets {
  contactId: string;
  contactName: string;
}

export interface AgingReport {
  side: AgingSide;
  asOf: string;
  contacts: AgingRow[];
  totals: AgingBuckets;
  /** Balance of the receivables (payables) accounts from the entries dated through asOf, owed-positive. */
  controlAccountBalanceCents: number;
}

const empty = (): AgingBuckets => ({
  currentCents: 0,
  days1To30Cents: 0,
  days31To60Cents: 0,
  days61To90Cents: 0,
  over90Cents: 0,
  totalCents: 0,
});

/** Current: not yet due; then by days past the due date (credits and payments: past their date). */
export function bucketOf(daysPastDue: number): keyof Omit<AgingBuckets, 'totalCents'> {
  if (daysPastDue <= 0) return 'currentCents';
  if (daysPastDue <= 30) return 'days1To30Cents';
  if (daysPastDue <= 60) return 'days31To60Cents';
  if (daysPastDue <= 90) return 'days61To90Cents';
  return 'over90Cents';
}

function add(b: AgingBuckets, doc: OpenDocument): void {
  b[bucketOf(doc.daysPastDue)] += doc.openCents;
  b.totalCents += doc.openCents;
}

function checkAsOf(asOf: string): string {
  if (!isIsoDate(asOf)) {
    throw new DomainError('VALIDATION_ERROR', 'asOf must be a calendar date written YYYY-MM-DD', [
      { field: 'asOf', message: 'not a YYYY-MM-DD date' },
    ]);
  }
  return asOf;
}

/** Receivables (owed by customers) or payables (owed to vendors) by contact and age, as of a date. */
export async function agingReport(
  db: Executor,
  organizationId: string,
  side: AgingSide,
  asOf: string,
): Promise<AgingReport> {
  checkAsOf(asOf);
  const docs = await openDocuments(db, organizationId, side, asOf);
  const names = new Map(
    rowsOf<{ id: string; name: string }>(
      await db.execute(sql`select id, name from contacts where organization_id = ${organizationId}`),
    ).map((r) => [r.id, r.name]),
  );
  const byContact = new Map<string, AgingRow>();
  const totals = empty();
  for (const doc of docs) {
    let row = byContact.get(doc.contactId);
    if (!row) {
      row = { contactId: doc.contactId, contactName: names.get(doc.contactId) ?? '', ...empty() };
      byContact.set(doc.contactId, row);
    }
    add(row, doc);
    add(totals, doc);
  }
  const net = await subtypeNetAsOf(db, organizationId, SIDE[side].subtype, asOf);
  return {
    side,
    asOf,
    contacts: [...byContact.values()].sort((a, b) => a.contactName.localeCompare(b.contactName)),
    totals,
    controlAccountBalanceCents: side === 'receivable' ? net : 0 - net,
  };
}

export interface Statement {
  contactId: string;
  contactName: string;
  asOf: string;
  documents: OpenDocument[];
  /** What the customer owes (receivables side, net of credits and unapplied payments). */
  receivableCents: number;
  /** What is owed to the vendor (payables side, net of credits and unapplied payments). */
  payableCents: number;
}

/** A contact's open documents on both sides as of a date. */
export async function contactStatement(
  db: Executor,
  organizationId: string,
  contactId: string,
  asOf: string,
): Promise<Statement> {
  checkAsOf(asOf);
  const contact = await getContact(db, organizationId, contactId);
  const receivable = await openDocuments(db, organizationId, 'receivable', asOf, contact.id);
  const payable = await openDocuments(db, organizationId, 'payable', asOf, contact.id);
  return {
    contactId: contact.id,
    contactName: contact.name,
    asOf,
    documents: [...receivable, ...payable],
    receivableCents: receivable.reduce((s, d) => s + d.openCents, 0),
    payableCents: payable.reduce((s, d) => s + d.openCents, 0),
  };
}
