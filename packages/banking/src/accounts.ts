import { DomainError, decodeCursor, isUuid, newId, type Page, toPage } from '@firm/core';
import { type Executor, pgErrorOf, rowsOf, type Tx } from '@firm/db';
import { type LedgerContext, nowOf, recordEvent, accountSubtypeOf, accountWithCurrency } from '@firm/ledger';
import { sql } from 'drizzle-orm';

/** The subtypes of ledger account a register may hold. */
export const REGISTER_SUBTYPES = ['bank', 'credit_card'] as const;
export type RegisterSubtype = (typeof REGISTER_SUBTYPES)[number];

export interface BankAccount {
  id: string;
  organizationId: string;
  accountId: string;
  accountSubtype: RegisterSubtype;
  name: string;
  institution: string | null;
  mask: string | null;
  currency: string;
  feedConnectionId: string | null;
  feedAccountId: string | null;
  createdAt: string;
  updatedAt: string;
}

export interface BankAccountInput {
  accountId: string;
  name?: string | undefined;
  institution?: string | null | undefined;
  mask?: string | null | undefined;
  currency?: string | undefined;
  feedConnectionId?: string | null | undefined;
  feedAccountId?: string | null | undefined;
}

export const bankAccountNotFound = () => new DomainError('BANK_ACCOUNT_NOT_FOUND', 'bank account not found');

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

const SELECT = sql`
  select b.id, b.organization_id as "organizationId", b.account_id as "accountId",
         ${accountSubtypeOf(sql`b.organization_id`, sql`b.account_id`)} as "accountSubtype",
         b.name, b.institution, b.mask, b.currency, b.feed_connection_id as "feedConnectionId",
         b.feed_account_id as "feedAccountId", ${iso('b.created_at')} as "createdAt",
         ${iso('b.updated_at')} as "updatedAt"
  from bank_accounts b`;

/** A bank account of the organization; `lock` holds its row until commit (reconciliations take turns on it). */
export async function getBankAccount(
  db: Executor,
  organizationId: string,
  id: string,
  lock = false,
): Promise<BankAccount> {
  if (!isUuid(id)) throw bankAccountNotFound();
  const [row] = rowsOf<BankAccount>(
    await db.execute(sql`${SELECT} where b.organization_id = ${organizationId} and b.id = ${id}
      ${lock ? sql`for update of b` : sql``}`),
  );
  if (!row) throw bankAccountNotFound();
  return row;
}

export interface BankAccountFilter {
  limit: number;
  cursor?: string | undefined;
}

/** Bank accounts by name, then id. */
export async function listBankAccounts(
  db: Executor,
  organizationId: string,
  filter: BankAccountFilter,
): Promise<Page<BankAccount>> {
  const after = filter.cursor ? (decodeCursor(filter.cursor, ['string', 'uuid']) as [string, string]) : null;
  const rows = rowsOf<BankAccount>(
    await db.execute(sql`${SELECT}
      where b.organization_id = ${organizationId}
        ${after ? sql`and (lower(b.name), b.id) > (${after[0]}, ${after[1]}::uuid)` : sql``}
      order by lower(b.name), b.id
      limit ${filter.limit + 1}`),
  );
  return toPage(rows, filter.limit, (b) => [b.name.toLowerCase(), b.id]);
}

/**
 * Adds a register for a ledger account of subtype bank or credit_card. Each ledger account holds at most one
 * (BANK_ACCOUNT_TAKEN); an archived account or one of another subtype is INVALID_ACCOUNT.
 */
export async function createBankAccount(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: BankAccountInput,
): Promise<BankAccount> {
  const accountId = input.accountId.toLowerCase();
  const account = await accountWithCurrency(tx, organizationId, isUuid(accountId) ? accountId : null);
  if (!account || account.archived) {
    throw new DomainError('INVALID_ACCOUNT', 'accountId is not an active account of this organization', [
      { field: 'accountId', message: 'not an active account of this organization' },
    ]);
  }
  if (!(REGISTER_SUBTYPES as readonly string[]).includes(account.subtype)) {
    throw new DomainError('INVALID_ACCOUNT', `accountId is a ${account.subtype} account, not bank or credit_card`, [
      { field: 'accountId', message: 'not an account of subtype bank or credit_card' },
    ]);
  }
  const now = nowOf(ctx).toISOString();
  const id = newId();
  try {
    await tx.execute(sql`
      insert into bank_accounts
        (id, organization_id, account_id, name, institution, mask, currency, feed_connection_id, feed_account_id,
         created_at, updated_at)
      values (${id}, ${organizationId}, ${accountId}, ${input.name?.trim() || account.name}, ${input.institution ?? null},
              ${input.mask ?? null}, ${input.currency ?? account.currency}, ${input.feedConnectionId ?? null},
              ${input.feedAccountId ?? null}, ${now}, ${now})`);
  } catch (err) {
    const pgErr = pgErrorOf(err);
    if (pgErr?.code === '23505' && pgErr.message.includes('bank_accounts_org_account_key')) {
      throw new DomainError('BANK_ACCOUNT_TAKEN', 'this ledger account already holds a bank account', [
        { field: 'accountId', message: 'already linked to a bank account' },
      ]);
    }
    throw err;
  }
  const bankAccount = await getBankAccount(tx, organizationId, id);
  await recordEvent(tx, ctx, {
    organizationId,
    action: 'bank_account.created',
    resourceType: 'bank_account',
    resourceId: id,
    data: { accountId, name: bankAccount.name },
    payload: { ...bankAccount },
  });
  return bankAccount;
}
