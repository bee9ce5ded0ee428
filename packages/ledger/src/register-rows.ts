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
 * The posting statement's CTE body writing the register rows: one per `registerAccountIds` that a bank account of
 * the organization holds, when `written`; returns their ids. Placeholders: organizationId, date, entryId, at,
 * payeeName, registerDescription, registerIds, registerAccountIds, registerAmounts.
 */
export function postingRegisterRowsSql(written: SQL): SQL {
  return sql`
      insert into bank_transactions
        (id, organization_id, bank_account_id, txn_date, amount_cents, description, counterparty, source_type, status,
         journal_entry_id, created_at, updated_at)
      select v.id, ${p('organizationId')}, b.id, ${p('date')}, v.amount_cents, ${p('registerDescription')},
             ${p('payeeName')}, ${sql.raw(`'${POSTING_SOURCE_TYPE}'`)}, 'categorized', ${p('entryId')}, ${p('at')}, ${p('at')}
      from unnest(${p('registerIds')}::uuid[], ${p('registerAccountIds')}::uuid[], ${p('registerAmounts')}::bigint[])
        as v(id, account_id, amount_cents)
      join bank_accounts b on b.organization_id = ${p('organizationId')} and b.account_id = v.account_id
      where ${written}
      returning id`;
}
