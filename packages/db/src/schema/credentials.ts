import { newId } from '@firm/core';
import { index, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import { firms, users } from './firms';

/**
 * API keys for server-to-server use. Only a SHA-256 of the key is stored: the key carries 192 bits of
 * randomness, so a fast hash is as strong as a slow one and lets us find the key by an index lookup.
 */
export const apiKeys = pgTable(
  'api_keys',
  {
    id: uuid('id').primaryKey().$defaultFn(newId),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    name: text('name').notNull(),
    /** The first characters of the key, safe to show so people can tell keys apart. */
    displayPrefix: text('display_prefix').notNull(),
    keyHash: text('key_hash').notNull().unique(),
    scopes: text('scopes').array().notNull(),
    /** Null means every organization of the firm. */
    organizationIds: uuid('organization_ids').array(),
    createdByUserId: uuid('created_by_user_id').references(() => users.id),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    lastUsedAt: timestamp('last_used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('api_keys_firm_idx').on(t.firmId)],
);
