import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import {
  bigint,
  boolean,
  check,
  foreignKey,
  integer,
  pgEnum,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from 'drizzle-orm/pg-core';
import { accounts } from './accounts';
import { organizations } from './organizations';

export const itemKind = pgEnum('item_kind', ['service', 'product']);

/**
 * Products and services an organization sells or buys. A sales line by item posts to the item's income
 * account, a purchase line to its expense account.
 */
export const items = pgTable(
  'items',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    kind: itemKind('kind').notNull().default('service'),
    name: text('name').notNull(),
    description: text('description'),
    /** Default unit price of a line by this item. */
    unitPriceCents: bigint('unit_price_cents', { mode: 'number' }).notNull().default(0),
    incomeAccountId: uuid('income_account_id'),
    expenseAccountId: uuid('expense_account_id'),
    archived: boolean('archived').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'items_pkey', columns: [t.organizationId, t.id] }),
    uniqueIndex('items_org_name_key').on(t.organizationId, sql`lower(${t.name})`),
    foreignKey({
      name: 'items_income_account_fk',
      columns: [t.organizationId, t.incomeAccountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    foreignKey({
      name: 'items_expense_account_fk',
      columns: [t.organizationId, t.expenseAccountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    check('items_unit_price', sql`${t.unitPriceCents} >= 0`),
    check('items_has_account', sql`${t.incomeAccountId} is not null or ${t.expenseAccountId} is not null`),
  ],
);

/** A sales tax rate: basis points of a line's amount, owed to (or reclaimed from) its liability account. */
export const taxRates = pgTable(
  'tax_rates',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name').notNull(),
    /** 1 basis point = 0.01 %; 825 is 8.25 %. */
    rateBps: integer('rate_bps').notNull(),
    liabilityAccountId: uuid('liability_account_id').notNull(),
    archived: boolean('archived').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'tax_rates_pkey', columns: [t.organizationId, t.id] }),
    uniqueIndex('tax_rates_org_name_key').on(t.organizationId, sql`lower(${t.name})`),
    foreignKey({
      name: 'tax_rates_liability_account_fk',
      columns: [t.organizationId, t.liabilityAccountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    check('tax_rates_rate', sql`${t.rateBps} between 0 and 10000`),
  ],
);
