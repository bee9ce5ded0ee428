import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uuid,
} from 'drizzle-orm/pg-core';
import { firms } from './firms';
import { organizations } from './organizations';

export const CLIENT_STATUSES = ['connected', 'needs_reauth', 'disconnected', 'error'] as const;
export const AGENT_ACCESS = ['none', 'read', 'read_write'] as const;

/**
 * Each organization as the agent gateway presents it: a client company on an accounting platform. A trigger
 * (migrations/0006_gateway.sql) gives every organization its row, with agent access `none`, when it is created.
 */
export const acctClients = pgTable(
  'acct_clients',
  {
    organizationId: uuid('organization_id')
      .primaryKey()
      .references(() => organizations.id),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    /** `embedded`: this service's own books; `qbo`: a QuickBooks Online company. */
    platform: text('platform', { enum: ['embedded', 'qbo'] })
      .notNull()
      .default('embedded'),
    /** The company id on the platform (QBO's realm id); the organization id on the embedded platform. */
    acctCompanyId: text('acct_company_id').notNull(),
    status: text('status', { enum: CLIENT_STATUSES }).notNull().default('connected'),
    /** What agents may do with the client: nothing (invisible), read, or read and write. */
    agentAccess: text('agent_access', { enum: AGENT_ACCESS }).notNull().default('none'),
    lastSyncAt: timestamp('last_sync_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('acct_clients_firm_idx').on(t.firmId),
    unique('acct_clients_company_key').on(t.platform, t.acctCompanyId),
    check('acct_clients_platform', sql`${t.platform} in ('embedded', 'qbo')`),
    check('acct_clients_status', sql`${t.status} in ('connected', 'needs_reauth', 'disconnected', 'error')`),
    check('acct_clients_agent_access', sql`${t.agentAccess} in ('none', 'read', 'read_write')`),
  ],
);

/**
 * How many times a record has changed: the platform's SyncToken. Kept by triggers on every table the gateway
 * presents (migrations/0006_gateway.sql); a record never updated has no row and version 0.
 */
export const recordVersions = pgTable(
  'record_versions',
  {
    organizationId: uuid('organization_id').notNull(),
    recordId: uuid('record_id').notNull(),
    version: integer('version').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull(),
  },
  (t) => [primaryKey({ name: 'record_versions_pkey', columns: [t.organizationId, t.recordId] })],
);

/**
 * What agents did through the gateway, one chain per firm: `hash` covers the event's fields and `prev_hash`, the hash
 * of the firm's event `seq - 1`. With a `key_id` it is an HMAC-SHA256 under that audit key (kept outside the
 * database); without one (events written before the chain was keyed) a plain SHA-256.
 */
export const agentAuditEvents = pgTable(
  'agent_audit_events',
  {
    id: uuid('id').notNull(),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    organizationId: uuid('organization_id').references(() => organizations.id),
    actorKind: text('actor_kind').notNull(),
    actorId: text('actor_id').notNull(),
    /** The OAuth client's or API key's name, when known. */
    actorName: text('actor_name'),
    /** e.g. `transactions.create`, `entities.read`, `clients.list`. */
    operation: text('operation').notNull(),
    entityType: text('entity_type'),
    entityId: text('entity_id'),
    outcome: text('outcome', { enum: ['succeeded', 'refused', 'failed'] }).notNull(),
    statusCode: integer('status_code').notNull(),
    errorCode: text('error_code'),
    requestId: text('request_id'),
    dryRun: boolean('dry_run').notNull().default(false),
    syncTokenBefore: text('sync_token_before'),
    syncTokenAfter: text('sync_token_after'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull(),
    prevHash: text('prev_hash').notNull(),
    hash: text('hash').notNull(),
    /** The audit key `hash` is an HMAC under; null for a plain SHA-256 event written before the chain was keyed. */
    keyId: text('key_id'),
    /** A person's note on the event (an approver's on a decision), hashed with the rest; null when none. */
    note: text('note'),
    /** The SHA-256 of evidence the event vouches for (a finished close's), hashed with the rest; null when none. */
    evidenceSha256: text('evidence_sha256'),
  },
  (t) => [
    primaryKey({ name: 'agent_audit_events_pkey', columns: [t.firmId, t.id] }),
    unique('agent_audit_events_firm_seq_key').on(t.firmId, t.seq),
    index('agent_audit_events_org_idx').on(t.organizationId, t.seq),
    check('agent_audit_events_outcome', sql`${t.outcome} in ('succeeded', 'refused', 'failed')`),
  ],
);

/**
 * A firm's own limits for agents, per credential: writes per write window and reads per minute. Null keeps the
 * deployment's default (AGENT_WRITE_BUDGET, AGENT_READ_LIMIT).
 */
export const agentLimits = pgTable(
  'agent_limits',
  {
    firmId: uuid('firm_id')
      .primaryKey()
      .references(() => firms.id),
    writeBudget: integer('write_budget'),
    readLimit: integer('read_limit'),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    check('agent_limits_write_budget', sql`${t.writeBudget} is null or ${t.writeBudget} between 1 and 1000000`),
    check('agent_limits_read_limit', sql`${t.readLimit} is null or ${t.readLimit} between 1 and 1000000`),
  ],
);

export const APPROVAL_POLICY_SCOPES = ['firm', 'client', 'agent'] as const;

/**
 * Which of an agent's writes wait for a person (migrations/0029_agent_approvals.sql): the firm's default (subject
 * ''), a client's (the organization id) and an agent's (the OAuth client id or the API key id). The most specific
 * one in force applies; without any, writes run (`auto`).
 */
export const approvalPolicies = pgTable(
  'approval_policies',
  {
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    scope: text('scope', { enum: APPROVAL_POLICY_SCOPES }).notNull(),
    subjectId: text('subject_id').notNull().default(''),
    policy: jsonb('policy').notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ name: 'approval_policies_pkey', columns: [t.firmId, t.scope, t.subjectId] })],
);

export const PROPOSAL_STATUSES = ['pending', 'approved', 'rejected', 'executed', 'failed', 'expired'] as const;

/**
 * An agent's write that the approval policy held: the request as sent, its dry-run preview, and what became of it
 * (its status moves only forward; a trigger keeps it so).
 */
export const agentProposals = pgTable(
  'agent_proposals',
  {
    id: uuid('id').notNull(),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    /** The credential that proposed: `api_key` or `oauth_token` (the grant id), and the scopes it had. */
    actorKind: text('actor_kind').notNull(),
    actorId: text('actor_id').notNull(),
    /** The agent the credential belongs to: the OAuth client id, or the API key id. */
    agentClientId: text('agent_client_id').notNull(),
    scopes: text('scopes').array().notNull(),
    entity: text('entity').notNull(),
    transactionType: text('transaction_type'),
    operation: text('operation', { enum: ['create', 'update', 'delete'] }).notNull(),
    targetId: text('target_id'),
    request: jsonb('request').notNull(),
    idempotencyKey: text('idempotency_key'),
    reason: text('reason'),
    matchedRules: text('matched_rules').array().notNull(),
    preview: jsonb('preview').notNull(),
    status: text('status', { enum: PROPOSAL_STATUSES }).notNull().default('pending'),
    decidedByKind: text('decided_by_kind'),
    decidedById: text('decided_by_id'),
    decisionNote: text('decision_note'),
    decidedAt: timestamp('decided_at', { withTimezone: true }),
    resultStatus: integer('result_status'),
    resultBody: jsonb('result_body'),
    failureCode: text('failure_code'),
    failureReason: text('failure_reason'),
    executedAt: timestamp('executed_at', { withTimezone: true }),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'agent_proposals_pkey', columns: [t.organizationId, t.id] }),
    // The expiry job expires a claimed proposal by its id and firm.
    index('agent_proposals_id_idx').on(t.id),
  ],
);
