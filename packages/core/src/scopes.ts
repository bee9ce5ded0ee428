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
  'attachments:read': 'List and download the files attached to records (receipts, invoices, statements)',
  'attachments:write': 'Upload files, attach them to records and take them off, and delete them',
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
  'acct:closes:read': "Agent gateway: read clients' month-end closes and their checklists",
  'acct:closes:write': "Agent gateway: open clients' month-end closes and comment on them (never sign off or finish)",
  'users:read': "See the firm's users, their roles and the companies each member may see",
  'users:write': 'Invite users, change their roles and companies, and deactivate them',
  'keys:read': "List the firm's API keys (never their secrets) and when each was last used",
  'keys:write': 'Issue and revoke API keys',
} as const;

export type Scope = keyof typeof SCOPES;

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

export const isScope = (value: string): value is Scope => Object.hasOwn(SCOPES, value);

/**
 * Scopes only owners and admins hold: managing connected apps, agent access, closing books, and the firm's people and
 * keys. A member's session, and a key whose maker is now a member, go without them.
 */
export const MANAGER_SCOPES: ReadonlySet<Scope> = new Set<Scope>([
  'companies:write',
  'connections:read',
  'connections:write',
  'books:close',
  'acct:clients:write',
  'users:read',
  'users:write',
  'keys:read',
  'keys:write',
]);

/**
 * Scopes no OAuth client can be granted: who works for the firm and which keys exist are the firm's own business, and
 * a partner app or agent acting with a user's approval must not be able to add people or mint credentials.
 */
export const NOT_FOR_OAUTH: ReadonlySet<Scope> = new Set<Scope>([
  'users:read',
  'users:write',
  'keys:read',
  'keys:write',
]);

/** What an OAuth client may ask for. */
export const OAUTH_SCOPES: Scope[] = ALL_SCOPES.filter((s) => !NOT_FOR_OAUTH.has(s));
