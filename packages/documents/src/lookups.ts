import { isUuid } from '@firm/core';
import { type Executor, rowsOf, type Tx } from '@firm/db';
import { type SQL, type SQLWrapper, sql } from 'drizzle-orm';

/** The queries other packages ask of documents, tax rates and contacts: they name these tables through us. */

const uuidList = (ids: string[]) =>
  sql.join(
    ids.map((id) => sql`${id}::uuid`),
    sql`, `,
  );

export interface ActiveTaxRate {
  id: string;
  rate_bps: number;
  liability_account_id: string;
}

/** The active tax rates of the organization among `ids` (well-formed, lower-case ids). */
export async function activeTaxRates(tx: Executor, organizationId: string, ids: string[]): Promise<ActiveTaxRate[]> {
  if (ids.length === 0) return [];
  return rowsOf<ActiveTaxRate>(
    await tx.execute(sql`select id, rate_bps, liability_account_id from tax_rates
      where organization_id = ${organizationId} and not archived
        and id in (${uuidList(ids)})`),
  );
}

/** A document's type and status, or undefined when the organization has no such document. */
export async function documentState(
  tx: Executor,
  organizationId: string,
  id: string,
): Promise<{ type: string; status: string } | undefined> {
  const [row] = rowsOf<{ type: string; status: string }>(
    await tx.execute(sql`select type, status from documents
      where organization_id = ${organizationId} and id = ${id}`),
  );
  return row;
}

export interface LockedDocument {
  id: string;
  type: string;
  status: string;
  contact_id: string;
  open_cents: number;
  total_cents: number;
  bank_account_id: string | null;
}

/**
 * Locks the organization's documents among `ids` (well-formed, lower-case ids, sorted: concurrent callers lock in
 * the same order and cannot deadlock) until the transaction ends, and returns them as they are.
 */
export async function lockDocuments(tx: Tx, organizationId: string, ids: string[]): Promise<LockedDocument[]> {
  if (ids.length === 0) return [];
  return rowsOf<LockedDocument>(
    await tx.execute(sql`
      select id, type, status, contact_id, open_cents::float8 as open_cents, total_cents::float8 as total_cents,
             bank_account_id from documents
      where organization_id = ${organizationId}
        and id in (${uuidList(ids)})
      order by id for update`),
  );
}

/** What each of the documents among `ids` is worth to a match: a payment's total, another document's open amount. */
export async function documentMatchAmounts(
  tx: Executor,
  organizationId: string,
  ids: string[],
): Promise<Map<string, number>> {
  const wanted = [...new Set(ids.map((i) => i.toLowerCase()).filter(isUuid))];
  if (wanted.length === 0) return new Map();
  const rows = rowsOf<{ id: string; cents: number }>(
    await tx.execute(sql`
      select id, (case when type in ('customer_payment', 'bill_payment') then total_cents else open_cents end)::float8
        as cents
      from documents where organization_id = ${organizationId}
        and id in (${uuidList(wanted)})`),
  );
  return new Map(rows.map((r) => [r.id, Number(r.cents)]));
}

/**
 * The documents a bank row could be matched to, as a select to embed in the caller's statement (columns
 * "documentId", "bankTransactionId", "journalEntryId", type, number, "contactId", "contactName", date,
 * "amountCents"): open documents of type `target`, and payments of type `payment` through the bank ledger account
 * `bankLedgerAccountId` that are not void and pass `unmatched`, the caller's condition on the payment `d`.
 */
export function matchableDocumentsQuery(input: {
  organizationId: string;
  target: string;
  payment: string;
  bankLedgerAccountId: string;
  unmatched: SQL;
}): SQL {
  const { organizationId, target, payment, bankLedgerAccountId, unmatched } = input;
  return sql`
      select d.id as "documentId", null::uuid as "bankTransactionId", null::uuid as "journalEntryId", d.type::text,
             d.number, d.contact_id as "contactId", c.name as "contactName", d.date::text as date,
             (case when d.type = ${target}::document_type then d.open_cents else d.total_cents end)::float8
               as "amountCents"
      from documents d
      join contacts c on c.organization_id = d.organization_id and c.id = d.contact_id
      where d.organization_id = ${organizationId}
        and (
          (d.type = ${target}::document_type and d.status in ('open', 'partially_paid'))
          or (d.type = ${payment}::document_type and d.status <> 'void' and d.bank_account_id = ${bankLedgerAccountId}
              and ${unmatched})
        )`;
}

/** The name of the organization's contact `contactIdColumn` names, as a column expression of the caller's row. */
export function contactNameOf(organizationIdColumn: SQL, contactIdColumn: SQL): SQL {
  return sql`(select c.name from contacts c where c.organization_id = ${organizationIdColumn} and c.id = ${contactIdColumn})`;
}

/** A document's type, as a column expression of the caller's row naming the organization and the document. */
export function documentTypeOf(organizationIdColumn: SQL, documentIdColumn: SQL): SQL {
  return sql`(select d.type from documents d where d.organization_id = ${organizationIdColumn} and d.id = ${documentIdColumn})`;
}

/** A document's journal entry, as a column expression; `paymentsOnly`: null unless the document is a payment. */
export function documentEntryOf(organizationIdColumn: SQL, documentIdColumn: SQL, paymentsOnly = false): SQL {
  const payments = paymentsOnly ? sql` and d.type in ('customer_payment', 'bill_payment')` : sql``;
  return sql`(select d.journal_entry_id from documents d
    where d.organization_id = ${organizationIdColumn} and d.id = ${documentIdColumn}${payments})`;
}

/**
 * A select of the organization's contacts among `ids` (columns id, name), to embed in the caller's statement;
 * `organizationId` and `ids` (a uuid[]) may be placeholders of a prepared statement.
 */
export function contactNamesSelect(organizationId: SQLWrapper, ids: SQLWrapper): SQL {
  return sql`select id, name from contacts where organization_id = ${organizationId} and id = any(${ids}::uuid[])`;
}
