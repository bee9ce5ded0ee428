import { type Db, rowsOf } from '@firm/db';
import { createDocumentsFixture, type DocumentsFixture } from '@firm/documents/testing';
import { sql } from 'drizzle-orm';
import { type BankAccount, createBankAccount } from './accounts';
import { insertBankTransaction, type NewBankTransaction } from './transactions';

/** A documents fixture (firm, organization, customer, vendor) with checking (1000) and card (2100) registers. */
export interface BankingFixture extends DocumentsFixture {
  checking: BankAccount;
  card: BankAccount;
  /** Adds an unreviewed feed row to a register and returns its id. */
  row(input: Partial<NewBankTransaction> & { amountCents: number }): Promise<string>;
}

export async function createBankingFixture(db: Db): Promise<BankingFixture> {
  const f = await createDocumentsFixture(db);
  const checking = await db.transaction((tx) =>
    createBankAccount(tx, f.ctx, f.orgId, {
      accountId: f.account('1000'),
      institution: 'First Platypus Bank',
      mask: '0000',
    }),
  );
  const card = await db.transaction((tx) =>
    createBankAccount(tx, f.ctx, f.orgId, {
      accountId: f.account('2100'),
      institution: 'First Platypus Bank',
      mask: '3333',
    }),
  );
  let n = 0;
  return {
    ...f,
    checking,
    card,
    row: (input) =>
      db.transaction((tx) =>
        insertBankTransaction(tx, f.ctx, f.orgId, {
          bankAccountId: checking.id,
          date: '2026-03-10',
          description: `Row ${++n}`,
          sourceType: 'aggregator_bank_feed',
          externalId: `ext-${n}-${Math.random().toString(36).slice(2)}`,
          ...input,
        }),
      ),
  };
}

/**
 * Everything a bank action can write for an organization, to compare before and after a refusal: rows and
 * their lines, entries by status, documents, reconciliations, and the audit and outbox rows.
 */
export async function bankingWrites(db: Db, organizationId: string): Promise<Record<string, unknown>> {
  const [row] = rowsOf<Record<string, unknown>>(
    await db.execute(sql`
      select
        (select json_agg(json_build_object('id', id, 'status', status, 'entry', journal_entry_id,
                 'reconciliation', reconciliation_id, 'amount', amount_cents) order by id)
         from bank_transactions where organization_id = ${organizationId}) as transactions,
        (select count(*)::int from bank_transaction_lines where organization_id = ${organizationId}) as lines,
        (select json_object_agg(status, n) from (select status, count(*)::int as n from journal_entries
           where organization_id = ${organizationId} group by status) s) as entries,
        (select json_agg(json_build_object('id', id, 'status', status, 'open', open_cents) order by id)
         from documents where organization_id = ${organizationId}) as documents,
        (select json_agg(json_build_object('id', id, 'status', status) order by id)
         from reconciliations where organization_id = ${organizationId}) as reconciliations,
        (select count(*)::int from audit_events where organization_id = ${organizationId}) as audit,
        (select count(*)::int from outbox_events where organization_id = ${organizationId}) as outbox`),
  );
  return row ?? {};
}
