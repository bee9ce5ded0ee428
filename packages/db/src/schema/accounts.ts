import { ACCOUNT_SUBTYPE_LIST, ACCOUNT_SUBTYPES, ACCOUNT_TYPES, type AccountSubtype, newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import type { AnyPgColumn } from 'drizzle-orm/pg-core';
import { boolean, check, pgEnum, pgTable, primaryKey, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { organizations } from './organizations';

export const accountType = pgEnum('account_type', ['asset', 'liability', 'equity', 'income', 'expense']);

export const accountSubtype = pgEnum('account_subtype', ACCOUNT_SUBTYPE_LIST as [AccountSubtype, ...AccountSubtype[]]);

/** A subtype belongs to exactly one type (a credit card is a liability, never an asset). */
function subtypeCheck(type: AnyPgColumn, subtype: AnyPgColumn) {
  const arms = ACCOUNT_TYPES.flatMap((t) => ACCOUNT_SUBTYPES[t].map((s) => `('${t}', '${s}')`)).join(', ');
  return sql`(${type}::text, ${subtype}::text) in (${sql.raw(arms)})`;
}

export const accounts = pgTable(
  'accounts',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    code: text('code').notNull(),
    name: text('name').notNull(),
    type: accountType('type').notNull(),
    subtype: accountSubtype('subtype').notNull(),
    description: text('description'),
    archived: boolean('archived').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    unique('accounts_org_code_key').on(t.organizationId, t.code),
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'accounts_pkey', columns: [t.organizationId, t.id] }),
    check('accounts_subtype_matches_type', subtypeCheck(t.type, t.subtype)),
    check('accounts_code_format', sql`${t.code} ~ '^[A-Za-z0-9][A-Za-z0-9._-]{0,19}$'`),
  ],
);
