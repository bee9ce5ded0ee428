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
    passwordHash: text('password_hash').notNull(),
    role: userRole('role').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('users_email_key').on(t.email),
    index('users_firm_idx').on(t.firmId),
    check('users_email_lower', sql`${t.email} = lower(${t.email})`),
  ],
);
