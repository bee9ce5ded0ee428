/**
 * The one catalogue of partner scopes. Routes declare the scope they need next to their path,
 * the auth plugin enforces it, the OpenAPI document lists it, and the CLI validates `--scope`.
 */
export const SCOPES = {
  'organizations:read': 'See the client companies the firm manages',
  'companies:write': 'Create, change, archive and unarchive client companies (owners and admins)',
  'accounts:read': 'Read charts of accounts and account balances',
  'accounts:write': 'Create, change and delete accounts',
  'entries:read': 'Read journal entries and lines',
  'entries:write': 'Create, post and void journal entries and post purchases, deposits, transfers',
  'contacts:read': 'Read customers and vendors',
  'contacts:write': 'Create, change and archive customers and vendors',
  'documents:read': 'Read items, tax rates, invoices, bills, payments, credits, receipts and estimates',
  'documents:write':
    'Create, change and void items, tax rates, invoices, bills, payments, credits, receipts and estimates',
  'reports:read': 'Run financial reports',
  'books:close': 'Close and reopen accounting periods',
  'audit:read': 'Read the audit trail',
  'bank:read': 'Read bank accounts, feeds and transactions',
  'bank:write': 'Classify, match and reconcile bank transactions',
  'webhooks:read': 'List webhook subscriptions and deliveries',
  'webhooks:write': 'Create and change webhook subscriptions',
  'connections:read': 'See which partner apps are connected to the firm',
  'connections:write': 'Disconnect partner apps from the firm',
  'platforms:read': "See which client companies' books are on QuickBooks Online, and the state of each connection",
  'platforms:write': 'Connect client companies to QuickBooks Online companies, and disconnect them',
  'acct:clients:read': "Agent gateway: see the firm's clients open to agents and what the gateway covers",
  'acct:clients:write': 'Agent gateway: open or close a client to agents (agentAccess)',
  'acct:entities:read': "Agent gateway: read clients' accounts, customers, vendors, items and company info",
  'acct:entities:write': "Agent gateway: create and change clients' accounts, customers, vendors and items",
  'acct:transactions:read': "Agent gateway: read clients' invoices, bills, journal entries and other transactions",
  'acct:transactions:create': "Agent gateway: create transactions in clients' books",
  'acct:transactions:update': "Agent gateway: change transactions in clients' books",
  'acct:transactions:delete': "Agent gateway: delete (void) transactions in clients' books",
  'acct:reports:read': "Agent gateway: run clients' financial reports",
  'acct:audit:read': 'Agent gateway: read the audit trail of what agents did',
} as const;

export type Scope = keyof typeof SCOPES;

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export const isScope = (value: string): value is Scope => Object.hasOwn(SCOPES, value);
