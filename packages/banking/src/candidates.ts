import { type Executor, rowsOf } from '@firm/db';
import { contactNameOf, matchableDocumentsQuery } from '@firm/documents';
import { sql } from 'drizzle-orm';
import { getBankAccount } from './accounts';
import { getBankTransaction } from './transactions';

export interface MatchCandidate {
  type: 'invoice' | 'customer_payment' | 'bill' | 'bill_payment' | 'posting';
  /** The invoice, bill or payment; null for a posting. */
  documentId: string | null;
  /** A posting's register row (match with `bankTransactionId`); null for a document. */
  bankTransactionId: string | null;
  /** The posting's entry; null for a document. */
  journalEntryId: string | null;
  number: string | null;
  contactId: string | null;
  /** The contact's name, or a posting's payee. */
  contactName: string | null;
  date: string;
  /** What matching it takes by default: an invoice's or bill's open balance, a payment's amount. */
  amountCents: number;
  /** The amount equals the bank amount. */
  exact: boolean;
}

/**
 * What a bank transaction could be matched to: open invoices and customer payments through its bank account for
 * money in, open bills and bill payments for money out, payments not yet matched to a bank row (the register row
 * a posting route wrote for a payment gives way to the bank's own), and the register rows posting routes wrote for
 * purchases, deposits and transfers through the same bank account with the same amount (the bank's row takes their
 * place). Exact amounts first, then the nearest dates.
 */
export async function matchCandidates(
  db: Executor,
  organizationId: string,
  id: string,
  limit = 20,
): Promise<MatchCandidate[]> {
  const t = await getBankTransaction(db, organizationId, id);
  const bank = await getBankAccount(db, organizationId, t.bankAccountId);
  const [target, payment] = t.amountCents > 0 ? ['invoice', 'customer_payment'] : ['bill', 'bill_payment'];
  const absolute = Math.abs(t.amountCents);
  const rows = rowsOf<MatchCandidate>(
    await db.execute(sql`
      select * from (
      ${matchableDocumentsQuery({
        organizationId,
        target,
        payment,
        bankLedgerAccountId: bank.accountId,
        unmatched: sql`not exists (select 1 from bank_transaction_lines l
                              join bank_transactions h on h.organization_id = l.organization_id
                                and h.id = l.bank_transaction_id
                              where l.organization_id = d.organization_id and l.document_id = d.id
                                and (h.source_type <> 'posting' or h.reconciliation_id is not null))`,
      })}
      union all
      select null, h.id, h.journal_entry_id, 'posting', null, h.contact_id,
             coalesce(${contactNameOf(sql`h.organization_id`, sql`h.contact_id`)}, h.counterparty),
             h.txn_date::text, abs(h.amount_cents)::float8
      from bank_transactions h
      where h.organization_id = ${organizationId} and h.bank_account_id = ${t.bankAccountId}
        and h.source_type = 'posting' and h.status <> 'excluded' and h.reconciliation_id is null
        and h.amount_cents = ${t.amountCents}
        and h.id <> ${t.id} and ${t.sourceType} <> 'posting'
        and not exists (select 1 from bank_transaction_lines l
                        where l.organization_id = h.organization_id and l.bank_transaction_id = h.id
                          and l.document_id is not null)
      ) u
      order by (u."amountCents" = ${absolute}) desc, abs(u.date::date - ${t.date}::date),
               coalesce(u."documentId", u."bankTransactionId")
      limit ${limit}`),
  );
  return rows.map((r) => ({ ...r, amountCents: Number(r.amountCents), exact: Number(r.amountCents) === absolute }));
}
