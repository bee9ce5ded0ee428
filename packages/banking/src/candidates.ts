import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { getBankAccount } from './accounts';
import { getBankTransaction } from './transactions';

export interface MatchCandidate {
  documentId: string;
  type: 'invoice' | 'customer_payment' | 'bill' | 'bill_payment';
  number: string | null;
  contactId: string;
  contactName: string;
  date: string;
  /** What matching it takes by default: an invoice's or bill's open balance, a payment's amount. */
  amountCents: number;
  /** The amount equals the bank amount. */
  exact: boolean;
}

/**
 * What a bank transaction could be matched to: open invoices and customer payments through its bank account for
 * money in, open bills and bill payments for money out, payments not yet matched to a bank row (the register row
 * a posting route wrote for a payment gives way to the bank's own). Exact amounts
 * first, then the nearest dates.
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
      select d.id as "documentId", d.type, d.number, d.contact_id as "contactId", c.name as "contactName",
             d.date::text as date,
             (case when d.type = ${target}::document_type then d.open_cents else d.total_cents end)::float8
               as "amountCents"
      from documents d
      join contacts c on c.organization_id = d.organization_id and c.id = d.contact_id
      where d.organization_id = ${organizationId}
        and (
          (d.type = ${target}::document_type and d.status in ('open', 'partially_paid'))
          or (d.type = ${payment}::document_type and d.status <> 'void' and d.bank_account_id = ${bank.accountId}
              and not exists (select 1 from bank_transaction_lines l
                              join bank_transactions h on h.organization_id = l.organization_id
                                and h.id = l.bank_transaction_id
                              where l.organization_id = d.organization_id and l.document_id = d.id
                                and (h.source_type <> 'posting' or h.reconciliation_id is not null)))
        )
      order by ((case when d.type = ${target}::document_type then d.open_cents else d.total_cents end) = ${absolute}) desc,
               abs(d.date - ${t.date}::date), d.id
      limit ${limit}`),
  );
  return rows.map((r) => ({ ...r, amountCents: Number(r.amountCents), exact: Number(r.amountCents) === absolute }));
}
