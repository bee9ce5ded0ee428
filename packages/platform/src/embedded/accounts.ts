import { type AccountSubtype, type AccountType, ACCOUNT_SUBTYPES, isUuid } from '@firm/core';
import { type Executor, type Tx } from '@firm/db';
import {
  type Account,
  accountBalancesWithCurrency,
  accountsAtOffset,
  accountsByIds,
  createAccount,
  inNormalDirection,
  todayUtc,
  updateAccount,
} from '@firm/ledger';
import { sql } from 'drizzle-orm';
import type { ListOptions, PlatformContext, PlatformRecord, RecordPage, WriteResult } from '../types';
import {
  amountOf,
  booleanOf,
  checkSyncToken,
  envelope,
  invalid,
  ledgerContextOf,
  offsetOf,
  type Payload,
  pageOf,
  recordNotFound,
  textOf,
  versionsOf,
} from './common';
import type { EntityHandler } from './handler';
import { versioned } from './query';

/** The platform's account types are this ledger's subtypes, named as the platform names them. */
const ACCOUNT_TYPE_NAMES: Record<AccountSubtype, string> = {
  bank: 'Bank',
  accounts_receivable: 'Accounts Receivable',
  other_current_asset: 'Other Current Asset',
  fixed_asset: 'Fixed Asset',
  other_asset: 'Other Asset',
  credit_card: 'Credit Card',
  accounts_payable: 'Accounts Payable',
  other_current_liability: 'Other Current Liability',
  long_term_liability: 'Long Term Liability',
  equity: 'Equity',
  retained_earnings: 'Equity',
  income: 'Income',
  other_income: 'Other Income',
  cost_of_sales: 'Cost of Goods Sold',
  expense: 'Expense',
  other_expense: 'Other Expense',
};

const CLASSIFICATIONS: Record<AccountType, string> = {
  asset: 'Asset',
  liability: 'Liability',
  equity: 'Equity',
  income: 'Revenue',
  expense: 'Expense',
};

function subtypeOfName(name: string): { type: AccountType; subtype: AccountSubtype } | null {
  for (const [type, subtypes] of Object.entries(ACCOUNT_SUBTYPES) as [AccountType, readonly AccountSubtype[]][]) {
    for (const subtype of subtypes) if (ACCOUNT_TYPE_NAMES[subtype] === name) return { type, subtype };
  }
  return null;
}

function present(a: Account, balanceCents: number, version: Parameters<typeof envelope>[2], currency: string) {
  return {
    ...envelope(a.id, a.createdAt, version),
    Name: a.name,
    AcctNum: a.code,
    FullyQualifiedName: a.name,
    SubAccount: false,
    Active: !a.archived,
    Classification: CLASSIFICATIONS[a.type],
    AccountType: ACCOUNT_TYPE_NAMES[a.subtype as AccountSubtype],
    AccountSubType: a.subtype,
    ...(a.description ? { Description: a.description } : {}),
    CurrentBalance: amountOf(inNormalDirection(a.type, balanceCents)),
    CurrentBalanceWithSubAccounts: amountOf(inNormalDirection(a.type, balanceCents)),
    CurrencyRef: { value: currency },
  } satisfies PlatformRecord;
}

async function read(db: Executor, ctx: PlatformContext, rows: Account[]): Promise<PlatformRecord[]> {
  if (rows.length === 0) return [];
  const ids = rows.map((r) => r.id);
  const balances = await accountBalancesWithCurrency(db, ctx.organizationId, ids, todayUtc());
  const byId = new Map(balances.map((b) => [b.account_id, b]));
  const versions = await versionsOf(db, ctx.organizationId, ids);
  return rows.map((a) =>
    present(a, Number(byId.get(a.id)?.cents ?? 0), versions.get(a.id), byId.get(a.id)?.currency ?? 'USD'),
  );
}

async function getMany(db: Executor, ctx: PlatformContext, ids: readonly string[]): Promise<PlatformRecord[]> {
  const wanted = ids.filter(isUuid);
  if (wanted.length === 0) return [];
  return read(db, ctx, await accountsByIds(db, ctx.organizationId, wanted));
}

async function getOne(db: Executor, ctx: PlatformContext, id: string): Promise<PlatformRecord> {
  const [record] = await getMany(db, ctx, [id]);
  if (!record) throw recordNotFound('Account');
  return record;
}

function typeOf(payload: Payload): { type: AccountType; subtype: AccountSubtype } | undefined {
  const name = textOf(payload, 'AccountType');
  if (name === undefined) return undefined;
  const found = subtypeOfName(name);
  if (!found) {
    throw invalid('AccountType', `must be one of ${[...new Set(Object.values(ACCOUNT_TYPE_NAMES))].join(', ')}`);
  }
  const sub = textOf(payload, 'AccountSubType');
  if (sub === 'retained_earnings' && found.type === 'equity') return { type: 'equity', subtype: 'retained_earnings' };
  return found;
}

export const accountHandler: EntityHandler = {
  table: 'accounts',
  operations: ['read', 'create', 'update'],
  query: {
    from: versioned('accounts'),
    where: (organizationId) => sql`t.organization_id = ${organizationId}`,
    fields: {
      Name: { sql: sql`t.name`, type: 'text' },
      AcctNum: { sql: sql`t.code`, type: 'text' },
      Active: { sql: sql`not t.archived`, type: 'boolean' },
      Description: { sql: sql`t.description`, type: 'text' },
    },
  },
  async list(db, ctx, options: ListOptions): Promise<RecordPage> {
    const { rows, total } = await accountsAtOffset(db, ctx.organizationId, offsetOf(options), options.maxResults);
    return pageOf(await read(db, ctx, rows), options, total);
  },
  get: getOne,
  getMany,
  async create(tx: Tx, ctx, payload): Promise<WriteResult> {
    const name = textOf(payload, 'Name');
    if (!name) throw invalid('Name', 'is required');
    const code = textOf(payload, 'AcctNum');
    if (!code) throw invalid('AcctNum', 'is required: accounts in these books have a code');
    const kind = typeOf(payload);
    if (!kind) throw invalid('AccountType', 'is required');
    const account = await createAccount(tx, ledgerContextOf(ctx), ctx.organizationId, {
      code,
      name,
      ...kind,
      description: textOf(payload, 'Description') ?? null,
    });
    return { record: await getOne(tx, ctx, account.id), syncTokenBefore: null, journal: [] };
  },
  async update(tx: Tx, ctx, id, payload): Promise<WriteResult> {
    const before = await checkSyncToken(
      tx,
      'accounts',
      ctx.organizationId,
      id,
      payload.SyncToken,
      () => getOne(tx, ctx, id),
      'Account',
    );
    const kind = typeOf(payload);
    const active = booleanOf(payload, 'Active');
    await updateAccount(tx, ledgerContextOf(ctx), ctx.organizationId, id, {
      name: textOf(payload, 'Name'),
      code: textOf(payload, 'AcctNum'),
      ...(kind ?? {}),
      ...(payload.Description !== undefined ? { description: textOf(payload, 'Description') ?? null } : {}),
      ...(active !== undefined ? { archived: !active } : {}),
    });
    return { record: await getOne(tx, ctx, id), syncTokenBefore: before, journal: [] };
  },
};
