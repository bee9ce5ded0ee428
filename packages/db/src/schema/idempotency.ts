import { sql } from 'drizzle-orm';
import { check, index, integer, jsonb, pgEnum, pgTable, primaryKey, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { firms } from './firms';
import { organizations } from './organizations';

/**
 * `completed` is the default because the posting path writes the record in the same transaction as the
 * posting, once the response is known; `in_progress` is for a flow that reserves the key first.
 */
export const idempotencyStatus = pgEnum('idempotency_status', ['in_progress', 'completed']);

/**
 * One record per (firm, organization, key, route): the request it names and the response to replay.
 * The key is scoped to the caller's firm and organization so one tenant's keys never collide with another's.
 */
export const idempotencyKeys = pgTable(
  'idempotency_keys',
  {
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    /**
     * The key space: `api` for requests to the API (one key, one request of the organization, whatever its path),
     * `firm` for requests of the firm that create an organization (the record kept under the one created),
     * `scheduled-journal-entries` for scheduled runs. Records written before 0015 hold their route pattern here.
     */
    route: text('route').notNull(),
    key: text('key').notNull(),
    /** Method and path of the request the key was first used for, e.g. `POST /api/v1/bank-transactions/<id>/match`. */
    target: text('target'),
    /** SHA-256 of the canonical request body: the same key with another body is refused. */
    requestHash: text('request_hash').notNull(),
    status: idempotencyStatus('status').notNull().default('completed'),
    responseStatus: integer('response_status'),
    responseBody: jsonb('response_body'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'idempotency_keys_pkey', columns: [t.firmId, t.organizationId, t.key, t.route] }),
    // The purge deletes by expiry.
    index('idempotency_keys_expires_idx').on(t.expiresAt),
    // A firm's key names one request of the firm, whichever organization it created: found by firm and key, and kept
    // to one record by the key's advisory lock, which every writer under it takes (a unique index here could not name
    // organization_id, the column the table is distributed by).
    index('idempotency_keys_firm_key_idx')
      .on(t.firmId, t.key)
      .where(sql`${t.route} = 'firm'`),
    check('idempotency_keys_response', sql`(${t.status} = 'completed') = (${t.responseStatus} is not null)`),
    check('idempotency_keys_api_target', sql`${t.route} <> 'api' or ${t.target} is not null`),
  ],
);
