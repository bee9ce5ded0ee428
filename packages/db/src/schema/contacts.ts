import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import { boolean, jsonb, pgEnum, pgTable, primaryKey, text, timestamp, uniqueIndex, uuid } from 'drizzle-orm/pg-core';
import { organizations } from './organizations';

/** Who a contact is to the organization: someone it sells to, buys from, or both. */
export const contactKind = pgEnum('contact_kind', ['customer', 'vendor', 'both']);

/** A postal address as callers write it; every part optional. */
export interface Address {
  line1?: string | undefined;
  line2?: string | undefined;
  city?: string | undefined;
  region?: string | undefined;
  postalCode?: string | undefined;
  country?: string | undefined;
}

/** Customers and vendors of an organization. */
export const contacts = pgTable(
  'contacts',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    kind: contactKind('kind').notNull(),
    name: text('name').notNull(),
    email: text('email'),
    phone: text('phone'),
    billingAddress: jsonb('billing_address').$type<Address>(),
    shippingAddress: jsonb('shipping_address').$type<Address>(),
    taxId: text('tax_id'),
    archived: boolean('archived').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'contacts_pkey', columns: [t.organizationId, t.id] }),
    // Users pick contacts by name, so two contacts differing only in case would be indistinguishable.
    uniqueIndex('contacts_org_name_key').on(t.organizationId, sql`lower(${t.name})`),
  ],
);
