/**
 * How every table would be placed on a Citus cluster (see README, "Growing past one Postgres"). Nothing at run time
 * reads this map: test/distribution.test.ts holds the migrated schema to it, so that a table added without a place,
 * or a key that would stop a table from being distributed, fails there rather than on the day the data is moved.
 *
 * - `organization`: distributed by `organization_id`, all in one co-location group, so everything a request of one
 *   organization reads or writes (a posting, its lines, balances, outbox event and idempotency record) is on one shard.
 * - `firm`: distributed by `firm_id`, a second co-location group: what belongs to the firm rather than to one of its
 *   organizations (webhook subscriptions and deliveries, the audit trails, agent limits and policies).
 * - `reference`: small, read on almost every request, rarely written: replicated to every node.
 * - `global`: stays on the coordinator (a Citus local table), because it is looked up by a secret's hash or an
 *   outside system's id before the tenant is known, and must stay unique across tenants.
 *
 * The rules the test checks for a distributed table: its distribution column exists and is NOT NULL; its primary
 * key and every unique constraint or index include it; a foreign key to a table of its own group carries it on both
 * sides at the same position; it has no foreign key to a table of another distributed group or to a global table
 * (only to reference tables). A reference or global table has no foreign key to a distributed table.
 */

export type Placement =
  | { kind: 'organization'; column: 'organization_id' }
  | { kind: 'firm'; column: 'firm_id' }
  | { kind: 'reference'; reason: string }
  | { kind: 'global'; reason: string };

const byOrganization = { kind: 'organization', column: 'organization_id' } as const;
const byFirm = { kind: 'firm', column: 'firm_id' } as const;

const LOOKED_UP_BY_HASH =
  'looked up by the hash of a secret (a bearer token, a cookie, a link) before the tenant is known, which must be ' +
  'unique across firms; it carries firm_id, to become firm-distributed once its secrets name their firm';

export const DISTRIBUTION: Readonly<Record<string, Placement>> = {
  // Reference tables.
  firms: { kind: 'reference', reason: 'one row per firm; read by every request of the firm' },
  organizations: {
    kind: 'reference',
    reason:
      'one row per client company, read by every request to check that it belongs to the caller’s firm; a ' +
      'reference table, every table of either group keeps its foreign key to it',
  },
  users: {
    kind: 'reference',
    reason: 'people sign in by e-mail before their firm is known, and an e-mail address is one person across firms',
  },

  // Global tables: cross-tenant lookups.
  api_keys: { kind: 'global', reason: LOOKED_UP_BY_HASH },
  user_sessions: { kind: 'global', reason: LOOKED_UP_BY_HASH },
  user_invitations: { kind: 'global', reason: LOOKED_UP_BY_HASH },
  oauth_clients: {
    kind: 'global',
    reason: 'a client registers dynamically without a firm (firm_id is null) and is found by its public client_id',
  },
  oauth_grants: { kind: 'global', reason: 'the grant of a global client, referenced by its codes and tokens' },
  oauth_codes: { kind: 'global', reason: LOOKED_UP_BY_HASH },
  oauth_tokens: { kind: 'global', reason: LOOKED_UP_BY_HASH },
  qbo_oauth_states: { kind: 'global', reason: LOOKED_UP_BY_HASH },
  qbo_connections: {
    kind: 'global',
    reason: 'a QuickBooks company (realm) is connected to one organization across all firms, and is found by realm',
  },
  acct_clients: {
    kind: 'global',
    reason: 'an accounting platform’s company is one client across all firms, and is found by the platform’s id',
  },
  aggregator_webhook_deliveries: {
    kind: 'global',
    reason: 'a bank aggregator’s delivery is recorded by its own id before the connection it names is looked up',
  },

  // The firm's group.
  agent_limits: byFirm,
  approval_policies: byFirm,
  close_rule_settings: byFirm,
  audit_events: byFirm,
  agent_audit_events: byFirm,
  webhook_subscriptions: byFirm,
  webhook_deliveries: byFirm,
  webhook_delivery_attempts: byFirm,

  // The organization's group.
  accounts: byOrganization,
  account_daily_balances: byOrganization,
  account_monthly_balances: byOrganization,
  account_yearly_balances: byOrganization,
  journal_entries: byOrganization,
  journal_lines: byOrganization,
  outbox_events: byOrganization,
  idempotency_keys: byOrganization,
  record_versions: byOrganization,
  contacts: byOrganization,
  items: byOrganization,
  tax_rates: byOrganization,
  documents: byOrganization,
  document_lines: byOrganization,
  document_allocations: byOrganization,
  bank_feed_connections: byOrganization,
  bank_accounts: byOrganization,
  bank_transactions: byOrganization,
  bank_transaction_lines: byOrganization,
  reconciliations: byOrganization,
  attachment_blobs: byOrganization,
  attachment_chunks: byOrganization,
  attachments: byOrganization,
  attachment_links: byOrganization,
  scheduled_journal_entries: byOrganization,
  scheduled_entry_runs: byOrganization,
  imports: byOrganization,
  import_rows: byOrganization,
  import_row_errors: byOrganization,
  agent_proposals: byOrganization,
  closes: byOrganization,
  close_signoffs: byOrganization,
  close_comments: byOrganization,
  close_evidence: byOrganization,
};
