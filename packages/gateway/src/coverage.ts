import type { Scope } from '@firm/core';
import type { PlatformOperation } from '@firm/platform';

/** The transaction types of the `/transactions` routes (the spec's allowlist), as the agent names them. */
export const TRANSACTION_TYPES = [
  'bill',
  'bill-payment',
  'credit-memo',
  'deposit',
  'estimate',
  'invoice',
  'journal-entry',
  'payment',
  'purchase',
  'refund-receipt',
  'sales-receipt',
  'transfer',
  'vendor-credit',
] as const;

export type TransactionType = (typeof TRANSACTION_TYPES)[number];

/** The shortcut lists, `GET /acct/clients/{clientId}/{entity}`. */
export const SHORTCUT_LISTS = ['chart-accounts', 'vendors', 'customers'] as const;
export type ShortcutList = (typeof SHORTCUT_LISTS)[number];

export interface CoverageEntry {
  /** The platform's name for the entity (`Invoice`), as in its JSON and its query language. */
  entity: string;
  /** The path segment of the platform's v3 API (`invoice`). */
  path: string;
  /** Set for the allowlisted transaction types. */
  transactionType: TransactionType | null;
  shortcut: ShortcutList | null;
  operations: readonly PlatformOperation[];
  /** The scope each operation needs. */
  scopes: Partial<Record<PlatformOperation, Scope>>;
}

const TXN_SCOPES: Record<PlatformOperation, Scope> = {
  read: 'acct:transactions:read',
  create: 'acct:transactions:create',
  update: 'acct:transactions:update',
  delete: 'acct:transactions:delete',
};
const ENTITY_SCOPES: Record<PlatformOperation, Scope> = {
  read: 'acct:entities:read',
  create: 'acct:entities:write',
  update: 'acct:entities:write',
  delete: 'acct:entities:write',
};

const ALL: readonly PlatformOperation[] = ['read', 'create', 'update', 'delete'];

function entry(
  entity: string,
  operations: readonly PlatformOperation[],
  extra: { transactionType?: TransactionType; shortcut?: ShortcutList } = {},
): CoverageEntry {
  const scopes = extra.transactionType ? TXN_SCOPES : ENTITY_SCOPES;
  return {
    entity,
    path: entity.toLowerCase(),
    transactionType: extra.transactionType ?? null,
    shortcut: extra.shortcut ?? null,
    operations,
    scopes: Object.fromEntries(operations.map((op) => [op, scopes[op]])),
  };
}

/**
 * The one table of what the gateway exposes: it drives the routes (which entity names they accept), the scope each
 * call needs, the `/acct/coverage` answer, the OpenAPI document's enums and the shortcut lists. Posted history is
 * never edited, so journal entries, purchases, deposits and transfers have no update: delete (void) and create.
 * Deleting a document or entry voids it; it then leaves every list, as a deleted record does on the platform.
 */
export const COVERAGE: readonly CoverageEntry[] = [
  entry('Account', ['read', 'create', 'update'], { shortcut: 'chart-accounts' }),
  entry('Customer', ['read', 'create', 'update'], { shortcut: 'customers' }),
  entry('Vendor', ['read', 'create', 'update'], { shortcut: 'vendors' }),
  entry('Item', ['read', 'create', 'update']),
  entry('CompanyInfo', ['read']),
  entry('Invoice', ALL, { transactionType: 'invoice' }),
  entry('SalesReceipt', ALL, { transactionType: 'sales-receipt' }),
  entry('CreditMemo', ALL, { transactionType: 'credit-memo' }),
  entry('RefundReceipt', ALL, { transactionType: 'refund-receipt' }),
  entry('Estimate', ALL, { transactionType: 'estimate' }),
  entry('Bill', ALL, { transactionType: 'bill' }),
  entry('VendorCredit', ALL, { transactionType: 'vendor-credit' }),
  entry('JournalEntry', ['read', 'create', 'delete'], { transactionType: 'journal-entry' }),
  entry('Purchase', ['read', 'create', 'delete'], { transactionType: 'purchase' }),
  entry('Deposit', ['read', 'create', 'delete'], { transactionType: 'deposit' }),
  entry('Transfer', ['read', 'create', 'delete'], { transactionType: 'transfer' }),
];

const byName = new Map<string, CoverageEntry>();
for (const e of COVERAGE) {
  for (const name of [e.entity.toLowerCase(), e.path, e.transactionType]) if (name) byName.set(name, e);
}

/** The entry an agent names by the platform's entity name in any case (`Invoice`, `invoice`) or its kebab form. */
export const coverageOf = (name: string): CoverageEntry | undefined => byName.get(name.toLowerCase());

export const coverageOfTransaction = (type: string): CoverageEntry | undefined =>
  COVERAGE.find((e) => e.transactionType === type);

export const coverageOfShortcut = (list: string): CoverageEntry | undefined =>
  COVERAGE.find((e) => e.shortcut === list);
