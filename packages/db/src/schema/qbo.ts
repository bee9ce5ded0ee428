import { integer, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { firms, users } from './firms';
import { organizations } from './organizations';

/**
 * One QuickBooks Online company per organization, with its OAuth tokens sealed at rest (`sealed:v1:<key>:<base64>`,
 * bound to the organization and the column). `version` counts token rotations (migrations/0014_qbo_connections.sql).
 */
export const qboConnections = pgTable('qbo_connections', {
  organizationId: uuid('organization_id')
    .primaryKey()
    .references(() => organizations.id),
  firmId: uuid('firm_id')
    .notNull()
    .references(() => firms.id),
  realmId: text('realm_id').notNull().unique('qbo_connections_realm_key'),
  accessToken: text('access_token').notNull(),
  refreshToken: text('refresh_token').notNull(),
  accessExpiresAt: timestamp('access_expires_at', { withTimezone: true }).notNull(),
  refreshExpiresAt: timestamp('refresh_expires_at', { withTimezone: true }),
  status: text('status', { enum: ['connected', 'needs_reauth', 'disconnected', 'error'] })
    .notNull()
    .default('connected'),
  lastError: text('last_error'),
  version: integer('version').notNull().default(1),
  connectedBy: uuid('connected_by'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

/**
 * An authorization under way: the hash of its `state`, bound to the person who started it (only that person's browser
 * session finishes it), used once.
 */
export const qboOauthStates = pgTable('qbo_oauth_states', {
  stateHash: text('state_hash').primaryKey(),
  firmId: uuid('firm_id')
    .notNull()
    .references(() => firms.id),
  organizationId: uuid('organization_id')
    .notNull()
    .references(() => organizations.id),
  userId: uuid('user_id')
    .notNull()
    .references(() => users.id),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  usedAt: timestamp('used_at', { withTimezone: true }),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});
