import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import { check, index, pgEnum, pgTable, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';

export const firms = pgTable('firms', {
  id: uuid('id').primaryKey().$defaultFn(newId),
  /** Stable handle used by the seed to find the demo firm again. */
  slug: text('slug').notNull().unique(),
  name: text('name').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

export const userRole = pgEnum('user_role', ['owner', 'admin', 'member']);

export const users = pgTable(
  'users',
  {
    id: uuid('id').primaryKey().$defaultFn(newId),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    /** Stored lower-cased; unique across the deployment because sign-in is by email alone. */
    email: text('email').notNull(),
    name: text('name').notNull(),
    /** Null while the user is invited: they choose a password with their invitation link. */
    passwordHash: text('password_hash'),
    role: userRole('role').notNull(),
    /** Members only: the companies they may see; null means every organization of the firm. */
    organizationIds: uuid('organization_ids').array(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** Set when the user was taken off the firm: they cannot sign in, and nothing acting for them works. */
    deactivatedAt: timestamp('deactivated_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('users_email_key').on(t.email),
    index('users_firm_idx').on(t.firmId),
    check('users_email_lower', sql`${t.email} = lower(${t.email})`),
    check('users_organizations_of_members', sql`${t.role} = 'member' or ${t.organizationIds} is null`),
    check('users_organizations_not_empty', sql`cardinality(${t.organizationIds}) > 0`),
  ],
);

/**
 * Single-use sign-in links of invited users. Only a SHA-256 of the token is stored, as for every secret we only
 * verify; the link works once, until it expires or a newer one for the same user replaces it.
 */
export const userInvitations = pgTable(
  'user_invitations',
  {
    id: uuid('id').primaryKey().$defaultFn(newId),
    /** Its user's firm (see distribution.ts). */
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    userId: uuid('user_id')
      .notNull()
      .references(() => users.id),
    tokenHash: text('token_hash').notNull().unique(),
    /** Who invited: a user of the firm, or null for the CLI. */
    createdByUserId: uuid('created_by_user_id').references(() => users.id),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    usedAt: timestamp('used_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
  },
  (t) => [index('user_invitations_user_idx').on(t.userId)],
);
