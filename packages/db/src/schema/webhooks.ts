import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  foreignKey,
  index,
  integer,
  jsonb,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uuid,
} from 'drizzle-orm/pg-core';
import { firms } from './firms';
import { organizations } from './organizations';

/**
 * A partner app's webhook endpoint: the URL, the event types and organizations it wants, and the
 * signing secret. The secret cannot be hashed like credential secrets, because signing an HMAC needs the key
 * itself: it is sealed under WEBHOOK_SECRET_KEYS (see @firm/webhooks' secrets) and shown to the caller only at
 * creation and rotation.
 */
export const webhookSubscriptions = pgTable(
  'webhook_subscriptions',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    url: text('url').notNull(),
    description: text('description'),
    /** Event types from the catalogue, or `{*}` for all of them. */
    eventTypes: text('event_types').array().notNull(),
    /** Null means every organization of the firm, including ones added later. */
    organizationIds: uuid('organization_ids').array(),
    enabled: boolean('enabled').notNull().default(true),
    /** Why the subscription was disabled (by its owner, after failing for days, or on 410 Gone). */
    disabledReason: text('disabled_reason'),
    disabledAt: timestamp('disabled_at', { withTimezone: true }),
    secret: text('secret').notNull(),
    /** After a rotation the old secret signs in parallel until it expires. */
    previousSecret: text('previous_secret'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
    /** The sequence number given to the latest delivery of this subscription. */
    lastSequence: bigint('last_sequence', { mode: 'number' }).notNull().default(0),
    /** Start of the current run of failed attempts; null after a success. */
    failingSince: timestamp('failing_since', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'webhook_subscriptions_pkey', columns: [t.firmId, t.id] }),
    index('webhook_subscriptions_firm_idx').on(t.firmId, t.id),
    // The delivery worker updates a subscription it delivered for by id.
    index('webhook_subscriptions_id_idx').on(t.id),
    check('webhook_subscriptions_event_types_present', sql`cardinality(${t.eventTypes}) > 0`),
    check('webhook_subscriptions_secret_format', sql`${t.secret} like 'whsec\\_%' or ${t.secret} like 'sealed:v1:%'`),
    check(
      'webhook_subscriptions_previous_secret_format',
      sql`${t.previousSecret} is null or ${t.previousSecret} like 'whsec\\_%' or ${t.previousSecret} like 'sealed:v1:%'`,
    ),
    check('webhook_subscriptions_disabled_consistent', sql`${t.enabled} = (${t.disabledAt} is null)`),
    check(
      'webhook_subscriptions_previous_secret_consistent',
      sql`(${t.previousSecret} is null) = (${t.previousSecretExpiresAt} is null)`,
    ),
  ],
);

export const webhookDeliveryStatus = pgEnum('webhook_delivery_status', ['pending', 'succeeded', 'failed']);

/**
 * One event for one subscription, with its per-subscription sequence number and the outcome of its
 * latest attempt. The event is copied in, so deliveries outlive pruned outbox rows. A worker leases a
 * delivery (`locked_until`, `lease_token`) for the length of one attempt; a worker that dies leaves
 * the lease to expire and the delivery is attempted again.
 */
export const webhookDeliveries = pgTable(
  'webhook_deliveries',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    subscriptionId: uuid('subscription_id').notNull(),
    /** The event id: the outbox row's id, the envelope `id` and the `webhook-id` header. */
    eventId: uuid('event_id').notNull(),
    eventType: text('event_type').notNull(),
    /** Null for events that concern no single organization (the test ping). */
    organizationId: uuid('organization_id').references(() => organizations.id),
    payload: jsonb('payload').notNull(),
    eventCreatedAt: timestamp('event_created_at', { withTimezone: true }).notNull(),
    sequence: bigint('sequence', { mode: 'number' }).notNull(),
    status: webhookDeliveryStatus('status').notNull().default('pending'),
    attemptCount: integer('attempt_count').notNull().default(0),
    /** When the next attempt is due; set exactly while pending. */
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    lockedUntil: timestamp('locked_until', { withTimezone: true }),
    leaseToken: uuid('lease_token'),
    firstAttemptedAt: timestamp('first_attempted_at', { withTimezone: true }),
    lastAttemptedAt: timestamp('last_attempted_at', { withTimezone: true }),
    lastStatusCode: integer('last_status_code'),
    lastLatencyMs: integer('last_latency_ms'),
    /** The first 1 KB of the latest response body. */
    lastResponseBody: text('last_response_body'),
    /** Why the latest attempt failed without an HTTP status (timeout, refused address, connection error). */
    lastError: text('last_error'),
    completedAt: timestamp('completed_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'webhook_deliveries_pkey', columns: [t.firmId, t.id] }),
    foreignKey({
      name: 'webhook_deliveries_subscription_fk',
      columns: [t.firmId, t.subscriptionId],
      foreignColumns: [webhookSubscriptions.firmId, webhookSubscriptions.id],
    }).onDelete('cascade'),
    unique('webhook_deliveries_subscription_sequence_key').on(t.firmId, t.subscriptionId, t.sequence),
    unique('webhook_deliveries_subscription_event_key').on(t.firmId, t.subscriptionId, t.eventId),
    // The delivery worker claims deliveries by id, across firms.
    index('webhook_deliveries_id_idx').on(t.id),
    index('webhook_deliveries_subscription_idx').on(t.subscriptionId, t.id),
    index('webhook_deliveries_pending_idx')
      .on(t.subscriptionId, t.sequence)
      .where(sql`${t.status} = 'pending'`),
    check('webhook_deliveries_pending_scheduled', sql`(${t.status} = 'pending') = (${t.nextAttemptAt} is not null)`),
    check('webhook_deliveries_response_excerpt', sql`char_length(${t.lastResponseBody}) <= 1024`),
    check('webhook_deliveries_sequence_positive', sql`${t.sequence} > 0`),
  ],
);

/** Every attempt of a delivery, for the delivery log: what was answered, how fast, or why nothing was. */
export const webhookDeliveryAttempts = pgTable(
  'webhook_delivery_attempts',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    /** The delivery's firm. */
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    deliveryId: uuid('delivery_id').notNull(),
    /** Counted from 1 since the delivery was queued or last redelivered. */
    attemptNumber: integer('attempt_number').notNull(),
    attemptedAt: timestamp('attempted_at', { withTimezone: true }).notNull(),
    /** `succeeded`, `retrying`, `failed` (no attempts left) or `gone` (410: the subscription was disabled). */
    outcome: text('outcome').notNull(),
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    responseBody: text('response_body'),
    error: text('error'),
  },
  (t) => [
    primaryKey({ name: 'webhook_delivery_attempts_pkey', columns: [t.firmId, t.id] }),
    foreignKey({
      name: 'webhook_delivery_attempts_delivery_fk',
      columns: [t.firmId, t.deliveryId],
      foreignColumns: [webhookDeliveries.firmId, webhookDeliveries.id],
    }).onDelete('cascade'),
    index('webhook_delivery_attempts_delivery_idx').on(t.deliveryId, t.id),
    check('webhook_delivery_attempts_outcome', sql`${t.outcome} in ('succeeded', 'retrying', 'failed', 'gone')`),
    check('webhook_delivery_attempts_response_excerpt', sql`char_length(${t.responseBody}) <= 1024`),
  ],
);
