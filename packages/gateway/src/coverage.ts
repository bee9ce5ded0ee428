import type { Scope } from '@firm/core';
import type { PlatformOperation, QueryFieldType } from '@firm/platform';

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
  /** The fields a query may filter, sort and select by; none: the entity cannot be queried. */
  fields: readonly string[];
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

/**
 * How each queryable field compares, whatever the entity (the platform's names mean one thing everywhere): the
 * query checker holds literals to it before any platform runs the query.
 */
export const QUERY_FIELD_TYPES: Readonly<Record<string, QueryFieldType>> = {
  Id: 'id',
  'MetaData.CreateTime': 'timestamp',
  'MetaData.LastUpdatedTime': 'timestamp',
  DocNumber: 'text',
  TxnDate: 'date',
  DueDate: 'date',
  TotalAmt: 'number',
  Balance: 'number',
  UnappliedAmt: 'number',
  CustomerRef: 'id',
  VendorRef: 'id',
  Name: 'text',
  AcctNum: 'text',
  Active: 'boolean',
  Description: 'text',
  DisplayName: 'text',
  PrimaryEmailAddr: 'text',
  UnitPrice: 'number',
  RateValue: 'number',
};

const COMMON_FIELDS = ['Id', 'MetaData.CreateTime', 'MetaData.LastUpdatedTime'];
const DOCUMENT_FIELDS = [...COMMON_FIELDS, 'DocNumber', 'TxnDate', 'DueDate', 'TotalAmt', 'Balance'];
const ENTRY_FIELDS = [...COMMON_FIELDS, 'DocNumber', 'TxnDate', 'TotalAmt'];
const SALES = [...DOCUMENT_FIELDS, 'CustomerRef'];
const PAYMENT_FIELDS = [...COMMON_FIELDS, 'TxnDate', 'TotalAmt', 'UnappliedAmt'];
const PURCHASES = [...DOCUMENT_FIELDS, 'VendorRef'];

function entry(
  entity: string,
  operations: readonly PlatformOperation[],
  fields: readonly string[],
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
    fields,
  };
}

/**
 * The one table of what the gateway exposes: it drives the routes (which entity names they accept), the scope each
 * call needs, the `/acct/coverage` answer, the OpenAPI document's enums and the shortcut lists. Posted history is
 * never edited, so journal entries, purchases, deposits, transfers and payments have no update: delete (void) and
 * create.
 * Deleting a document or entry voids it; it then leaves every list, as a deleted record does on the platform.
 */
export const COVERAGE: readonly CoverageEntry[] = [
  entry('Account', ['read', 'create', 'update'], [...COMMON_FIELDS, 'Name', 'AcctNum', 'Active', 'Description'], {
    shortcut: 'chart-accounts',
  }),
  entry('Customer', ['read', 'create', 'update'], [...COMMON_FIELDS, 'DisplayName', 'Active', 'PrimaryEmailAddr'], {
    shortcut: 'customers',
  }),
  entry('Vendor', ['read', 'create', 'update'], [...COMMON_FIELDS, 'DisplayName', 'Active', 'PrimaryEmailAddr'], {
    shortcut: 'vendors',
  }),
  entry('Item', ['read', 'create', 'update'], [...COMMON_FIELDS, 'Name', 'Active', 'UnitPrice']),
  entry('TaxRate', ['read'], [...COMMON_FIELDS, 'Name', 'Active', 'RateValue']),
  entry('TaxCode', ['read'], [...COMMON_FIELDS, 'Name', 'Active']),
  entry('CompanyInfo', ['read'], []),
  entry('Invoice', ALL, SALES, { transactionType: 'invoice' }),
  entry('SalesReceipt', ALL, SALES, { transactionType: 'sales-receipt' }),
  entry('CreditMemo', ALL, SALES, { transactionType: 'credit-memo' }),
  entry('RefundReceipt', ALL, SALES, { transactionType: 'refund-receipt' }),
  entry('Estimate', ALL, SALES, { transactionType: 'estimate' }),
  entry('Bill', ALL, PURCHASES, { transactionType: 'bill' }),
  entry('VendorCredit', ALL, PURCHASES, { transactionType: 'vendor-credit' }),
  entry('Payment', ['read', 'create', 'delete'], PAYMENT_FIELDS.concat('CustomerRef'), { transactionType: 'payment' }),
  entry('BillPayment', ['read', 'create', 'delete'], PAYMENT_FIELDS.concat('VendorRef'), {
    transactionType: 'bill-payment',
  }),
  entry('JournalEntry', ['read', 'create', 'delete'], ENTRY_FIELDS, { transactionType: 'journal-entry' }),
  entry('Purchase', ['read', 'create', 'delete'], ENTRY_FIELDS, { transactionType: 'purchase' }),
  entry('Deposit', ['read', 'create', 'delete'], ENTRY_FIELDS, { transactionType: 'deposit' }),
  entry('Transfer', ['read', 'create', 'delete'], ENTRY_FIELDS, { transactionType: 'transfer' }),
  entry('Attachable', ['read', 'create'], []),
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
