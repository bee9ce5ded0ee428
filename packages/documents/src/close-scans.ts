import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';

/** What the month-end checklist asks of the sales and purchase documents: one statement a question. */

export interface PossibleDuplicate {
  type: string;
  contactId: string;
  contactName: string;
  totalCents: number;
  /** The two documents, the earlier first. */
  documentIds: [string, string];
  dates: [string, string];
}

/**
 * Pairs of live invoices or bills of the same contact and total dated at most `withinDays` apart, one of them dated
 * in the range: the same bill entered twice, or an invoice sent twice.
 */
export async function possibleDuplicateDocuments(
  db: Executor,
  organizationId: string,
  from: string,
  to: string,
  withinDays: number,
): Promise<PossibleDuplicate[]> {
  const rows = rowsOf<{
    type: string;
    contact_id: string;
    contact_name: string;
    total_cents: string;
    a_id: string;
    b_id: string;
    a_date: string;
    b_date: string;
  }>(
    await db.execute(sql`
      select a.type::text as type, a.contact_id, c.name as contact_name, a.total_cents::text as total_cents,
             a.id as a_id, b.id as b_id, a.date::text as a_date, b.date::text as b_date
      from documents a
      join documents b on b.organization_id = a.organization_id and b.type = a.type and b.contact_id = a.contact_id
        and b.total_cents = a.total_cents and b.status <> 'void'
        and (b.date, b.id) > (a.date, a.id) and b.date <= a.date + ${withinDays}::int
      join contacts c on c.organization_id = a.organization_id and c.id = a.contact_id
      where a.organization_id = ${organizationId} and a.type in ('invoice', 'bill') and a.status <> 'void'
        and a.total_cents > 0
        and a.date between ${from}::date - ${withinDays}::int and ${to}::date
        and (a.date between ${from}::date and ${to}::date or b.date between ${from}::date and ${to}::date)
      order by a.date, a.id, b.id`),
  );
  return rows.map((r) => ({
    type: r.type,
    contactId: r.contact_id,
    contactName: r.contact_name,
    totalCents: Number(r.total_cents),
    documentIds: [r.a_id, r.b_id],
    dates: [r.a_date, r.b_date],
  }));
}

/**
 * Vendors billed in each of the `months` calendar months before the range's first month and not in the range: a
 * recurring charge (rent, a subscription, a utility) that did not arrive or was not entered. The evidence is the
 * vendor's last bill.
 */
export async function missingRecurringBills(
  db: Executor,
  organizationId: string,
  from: string,
  to: string,
  months: number,
): Promise<{ contactId: string; contactName: string; lastBillId: string; lastBillDate: string }[]> {
  return rowsOf<{ contactId: string; contactName: string; lastBillId: string; lastBillDate: string }>(
    await db.execute(sql`
      with prior as (
        select contact_id, count(distinct date_trunc('month', date)) as months,
               (array_agg(id order by date desc, id desc))[1] as last_id, max(date) as last_date
        from documents
        where organization_id = ${organizationId} and type = 'bill' and status <> 'void'
          and date >= date_trunc('month', ${from}::date) - make_interval(months => ${months}::int)
          and date < date_trunc('month', ${from}::date)
        group by contact_id
      )
      select p.contact_id as "contactId", c.name as "contactName", p.last_id as "lastBillId",
             p.last_date::text as "lastBillDate"
      from prior p
      join contacts c on c.organization_id = ${organizationId} and c.id = p.contact_id
      where p.months = ${months}::int
        and not exists (
          select 1 from documents d
          where d.organization_id = ${organizationId} and d.type = 'bill' and d.status <> 'void'
            and d.contact_id = p.contact_id and d.date between ${from}::date and ${to}::date)
      order by lower(c.name), p.contact_id`),
  );
}

/**
 * Live documents moving money through one of the given bank or card accounts, dated in the range on or before that
 * account's last reconciled statement end and entered after that reconciliation was finished: money recorded into a
 * statement already reconciled, which the reconciliation cannot have included.
 */
export async function documentsEnteredAfterReconciliation(
  db: Executor,
  organizationId: string,
  from: string,
  to: string,
  reconciled: { accountId: string; through: string; at: string }[],
): Promise<{ id: string; type: string; number: string | null; date: string; accountId: string }[]> {
  if (reconciled.length === 0) return [];
  const list = sql.join(
    reconciled.map((r) => sql`(${r.accountId}::uuid, ${r.through}::date, ${r.at}::timestamptz)`),
    sql`, `,
  );
  return rowsOf<{ id: string; type: string; number: string | null; date: string; accountId: string }>(
    await db.execute(sql`
      select d.id, d.type::text as type, d.number, d.date::text as date, d.bank_account_id as "accountId"
      from documents d
      join (values ${list}) as r(account_id, through, at) on r.account_id = d.bank_account_id
      where d.organization_id = ${organizationId} and d.status <> 'void'
        and d.date between ${from}::date and ${to}::date and d.date <= r.through and d.created_at > r.at
      order by d.date, d.id`),
  );
}
