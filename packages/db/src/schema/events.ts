import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import { index, jsonb, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { firms } from './firms';
import { organizations } from './organizations';

/**
 * The audit trail: who did what to which resource, written in the same transaction as the change,
 * so a committed change always has its audit row and a rolled-back one never does.
 */
export const auditEvents = pgTable(
  'audit_events',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    /** Null for firm-level actions that concern no single organization. */
    organizationId: uuid('organization_id').references(() => organizations.id),
    /** The credential kind (`api_key`, `oauth_token`, `session`, `cli`...) and its id. */
    actorKind: text('actor_kind').notNull(),
    actorId: text('actor_id').notNull(),
    /** `resource.verb` in the past tense, e.g. `entry.posted`, `books.closed`. */
    action: text('action').notNull(),
    resourceType: text('resource_type').notNull(),
    resourceId: text('resource_id').notNull(),
    /** The request that caused it; null for actions outside HTTP. */
    requestId: text('request_id'),
    data: jsonb('data').notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'audit_events_pkey', columns: [t.firmId, t.id] }),
    index('audit_events_firm_created_idx').on(t.firmId, t.createdAt.desc()),
    index('audit_events_resource_idx').on(t.resourceType, t.resourceId),
  ],
);

/**
 * The transactional outbox: events for the outside world (webhooks), written with the change that
 * causes them. Workers claim unprocessed rows with `FOR UPDATE SKIP LOCKED` and set `processed_at`.
 */
export const outboxEvents = pgTable(
  'outbox_events',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    /** Same vocabulary as audit actions, e.g. `entry.posted`. */
    type: text('type').notNull(),
    payload: jsonb('payload').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    processedAt: timestamp('processed_at', { withTimezone: true }),
  },
  // Workers only ever look for pending rows; the partial index stays small however long the history gets.
  (t) => [
    primaryKey({ name: 'outbox_events_pkey', columns: [t.organizationId, t.id] }),
    index('outbox_events_pending_idx')
      .on(t.createdAt, t.id)
      .where(sql`${t.processedAt} is null`),
  ],
);
