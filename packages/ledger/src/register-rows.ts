import { type SQL, sql } from 'drizzle-orm';

/**
 * The one place the ledger writes a table it does not own: the register rows (`bank_transactions` of the banking
 * package) of a posting through bank-linked accounts, written by the posting statement itself. The posting statement
 * stays one prepared statement (one round trip, its text constant), and the ledger cannot call the banking package,
 * which depends on it; so the statement embeds this fragment. Banking reads these rows as its own: source type
 * `POSTING_SOURCE_TYPE`, status `categorized`, the entry as their `journal_entry_id`.
 */

/** The source type of a register row a posting wrote (banking's `SOURCE_TYPES`). */
export const POSTING_SOURCE_TYPE = 'posting';

const p = sql.placeholder;

/**
 * The posting statement's CTE body writing the register rows: of the rows of `rows` (n, id, account_id, amount_cents)
 * whose posting `n` is in `written` (the postings written, with entry_id, entry_date, at, payee_name and
 * register_description), one per row whose account a bank account of the organization holds; returns their ids.
 * Placeholder: organizationId.
 */
export function postingRegisterRowsSql(rows: SQL, written: SQL): SQL {
  return sql`
      insert into bank_transactions
        (id, organization_id, bank_account_id, txn_date, amount_cents, description, counterparty, source_type, status,
         journal_entry_id, created_at, updated_at)
      select v.id, ${p('organizationId')}, b.id, w.entry_date, v.amount_cents, w.register_description, w.payee_name,
             ${sql.raw(`'${POSTING_SOURCE_TYPE}'`)}, 'categorized', w.entry_id, w.at, w.at
      from ${rows} v
      join ${written} w on w.n = v.n
      join bank_accounts b on b.organization_id = ${p('organizationId')} and b.account_id = v.account_id
      order by v.n, v.ord
      returning id`;
}
