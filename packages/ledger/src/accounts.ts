import {
  type AccountSubtype,
  type AccountType,
  DEFAULT_SUBTYPE,
  DomainError,
  decodeCursor,
  type EventType,
  type Page,
  subtypeBelongsTo,
  toPage,
} from '@firm/core';
import { accounts, type Executor, journalLines, pgErrorOf, type Tx } from '@firm/db';
import { and, asc, count, eq, gt, inArray, or, sql } from 'drizzle-orm';
import { type LedgerContext, nowOf } from './context';
import { recordEvent } from './events';

export type Account = typeof accounts.$inferSelect;

export interface AccountInput {
  code: string;
  name: string;
  type: AccountType;
  subtype?: AccountSubtype | undefined;
  description?: string | null | undefined;
}

export interface AccountPatch {
  code?: string | undefined;
  name?: string | undefined;
  type?: AccountType | undefined;
  subtype?: AccountSubtype | undefined;
  description?: string | null | undefined;
  archived?: boolean | undefined;
}

export interface AccountFilter {
  limit: number;
  cursor?: string | undefined;
  type?: AccountType | undefined;
  includeArchived?: boolean | undefined;
}

/** The account as the API returns it and as events carry it. */
export const presentAccount = (a: Account) => ({
  id: a.id,
  organizationId: a.organizationId,
  code: a.code,
  name: a.name,
  type: a.type,
  subtype: a.subtype,
  description: a.description,
  archived: a.archived,
  createdAt: a.createdAt.toISOString(),
  updatedAt: a.updatedAt.toISOString(),
});

/** The audit row and outbox event of an account change, in the change's transaction. */
function accountEvent(tx: Tx, ctx: LedgerContext, action: EventType, account: Account, data: Record<string, unknown>) {
  return recordEvent(tx, ctx, {
    organizationId: account.organizationId,
    action,
    resourceType: 'account',
    resourceId: account.id,
    data,
    payload: presentAccount(account),
  });
}

const notFound = () => new DomainError('ACCOUNT_NOT_FOUND', 'account not found');

function checkSubtype(type: AccountType, subtype: string): void {
  if (!subtypeBelongsTo(type, subtype)) {
    throw new DomainError('VALIDATION_ERROR', `subtype ${subtype} is not a kind of ${type} account`, [
      { field: 'subtype', message: `not allowed for type ${type}` },
    ]);
  }
}

/** Unique-code violations become a 409 the caller can act on; anything else is rethrown. */
function rethrowCodeTaken(err: unknown, code: string | undefined): never {
  const pgErr = pgErrorOf(err);
  if (pgErr?.code === '23505' && pgErr.message.includes('accounts_org_code_key')) {
    throw new DomainError('ACCOUNT_CODE_TAKEN', `account code ${code} is already used in this organization`, [
      { field: 'code', message: 'already used' },
    ]);
  }
  throw err;
}

export async function listAccounts(
  db: Executor,
  organizationId: string,
  filter: AccountFilter,
): Promise<Page<Account>> {
  let after: ReturnType<typeof or>;
  if (filter.cursor) {
    const [code, id] = decodeCursor(filter.cursor, ['string', 'uuid']).map(String) as [string, string];
    after = or(gt(accounts.code, code), and(eq(accounts.code, code), gt(accounts.id, id)));
  }
  const rows = await db
    .select()
    .from(accounts)
    .where(
      and(
        eq(accounts.organizationId, organizationId),
        filter.type ? eq(accounts.type, filter.type) : undefined,
        filter.includeArchived ? undefined : eq(accounts.archived, false),
        after,
      ),
    )
    .orderBy(asc(accounts.code), asc(accounts.id))
    .limit(filter.limit + 1);
  return toPage(rows, filter.limit, (a) => [a.code, a.id]);
}

export async function getAccount(db: Executor, organizationId: string, id: string): Promise<Account> {
  const [row] = await db
    .select()
    .from(accounts)
    .where(and(eq(accounts.organizationId, organizationId), eq(accounts.id, id)))
    .limit(1);
  if (!row) throw notFound();
  return row;
}

/** The id and code of each of the organization's accounts, archived or not: a chart to look accounts up by code. */
export async function accountCodes(db: Executor, organizationId: string): Promise<{ id: string; code: string }[]> {
  return db
    .select({ id: accounts.id, code: accounts.code })
    .from(accounts)
    .where(eq(accounts.organizationId, organizationId));
}

/** The organization's accounts among `ids` (well-formed), archived or not, in no particular order. */
export async function accountsByIds(db: Executor, organizationId: string, ids: readonly string[]): Promise<Account[]> {
  return db
    .select()
    .from(accounts)
    .where(and(eq(accounts.organizationId, organizationId), inArray(accounts.id, [...ids])));
}

/**
 * The organization's accounts by code, `limit` of them from `offset`, and how many it has: for lists paged by
 * position (the embedded platform's), where the cursor of `listAccounts` does not fit.
 */
export async function accountsAtOffset(
  db: Executor,
  organizationId: string,
  offset: number,
  limit: number,
): Promise<{ rows: Account[]; total: number }> {
  const where = eq(accounts.organizationId, organizationId);
  const rows = await db
    .select()
    .from(accounts)
    .where(where)
    .orderBy(asc(accounts.code), asc(accounts.id))
    .offset(offset)
    .limit(limit);
  const [total] = await db.select({ n: count() }).from(accounts).where(where);
  return { rows, total: total?.n ?? 0 };
}

/** The subtype of each of the organization's accounts among `ids` (well-formed). */
export async function accountSubtypes(
  db: Executor,
  organizationId: string,
  ids: readonly string[],
): Promise<Map<string, AccountSubtype>> {
  const rows = await db
    .select({ id: accounts.id, subtype: accounts.subtype })
    .from(accounts)
    .where(and(eq(accounts.organizationId, organizationId), inArray(accounts.id, [...ids])));
  return new Map(rows.map((a) => [a.id, a.subtype as AccountSubtype]));
}

export async function createAccount(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: AccountInput,
): Promise<Account> {
  const subtype = input.subtype ?? DEFAULT_SUBTYPE[input.type];
  checkSubtype(input.type, subtype);
  let account: Account;
  try {
    const [row] = await tx
      .insert(accounts)
      .values({
        organizationId,
        code: input.code,
        name: input.name,
        type: input.type,
        subtype,
        description: input.description ?? null,
      })
      .returning();
    account = row as Account;
  } catch (err) {
    rethrowCodeTaken(err, input.code);
  }
  await accountEvent(tx, ctx, 'account.created', account, { code: account.code, type: account.type });
  return account;
}

const isUsed = async (db: Executor, organizationId: string, id: string): Promise<boolean> => {
  const rows = await db
    .select({ one: sql`1` })
    .from(journalLines)
    .where(and(eq(journalLines.organizationId, organizationId), eq(journalLines.accountId, id)))
    .limit(1);
  return rows.length > 0;
};

export async function updateAccount(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  patch: AccountPatch,
): Promise<Account> {
  const [current] = await tx
    .select()
    .from(accounts)
    .where(and(eq(accounts.organizationId, organizationId), eq(accounts.id, id)))
    .for('update')
    .limit(1);
  if (!current) throw notFound();
  const type = patch.type ?? current.type;
  const subtype =
    patch.subtype ?? (patch.type && patch.type !== current.type ? DEFAULT_SUBTYPE[type] : current.subtype);
  checkSubtype(type, subtype);
  let account: Account;
  if (type !== current.type && (await isUsed(tx, organizationId, id))) {
    throw new DomainError('ACCOUNT_TYPE_LOCKED', 'the type of an account with journal lines cannot change', [
      { field: 'type', message: 'account has journal lines' },
    ]);
  }
  try {
    const [row] = await tx
      .update(accounts)
      .set({
        code: patch.code ?? current.code,
        name: patch.name ?? current.name,
        type,
        subtype,
        description: patch.description === undefined ? current.description : patch.description,
        archived: patch.archived ?? current.archived,
        updatedAt: nowOf(ctx),
      })
      .where(and(eq(accounts.organizationId, organizationId), eq(accounts.id, id)))
      .returning();
    account = row as Account;
  } catch (err) {
    rethrowCodeTaken(err, patch.code);
  }
  const changed = Object.fromEntries(
    Object.entries(patch).filter(([k, v]) => v !== undefined && current[k as keyof Account] !== v),
  );
  await accountEvent(tx, ctx, 'account.updated', account, { changed });
  return account;
}

/** Deletes an account no journal line has ever used; the foreign key makes this race-free. */
export async function deleteAccount(tx: Tx, ctx: LedgerContext, organizationId: string, id: string): Promise<void> {
  const inUse = () =>
    new DomainError('ACCOUNT_IN_USE', 'the account has journal lines; archive it instead of deleting it');
  if (await isUsed(tx, organizationId, id)) throw inUse();
  let deleted: Account | undefined;
  try {
    [deleted] = await tx
      .delete(accounts)
      .where(and(eq(accounts.organizationId, organizationId), eq(accounts.id, id)))
      .returning();
  } catch (err) {
    if (pgErrorOf(err)?.code === '23503') throw inUse();
    throw err;
  }
  if (!deleted) throw notFound();
  await accountEvent(tx, ctx, 'account.deleted', deleted, { code: deleted.code, name: deleted.name });
}

/**
 * Whether an account's name says it holds what waits to be sorted: suspense, uncategorized (or uncategorised) or
 * "ask my accountant". The chart templates mark no such account by type or code, so its name tells.
 */
export const isSuspenseAccountName = (name: string): boolean => /suspense|uncategori|ask my accountant/i.test(name);
