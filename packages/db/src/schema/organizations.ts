import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import { check, date, index, pgTable, smallint, text, timestamp, unique, uuid } from 'drizzle-orm/pg-core';
import { firms } from './firms';

/** A client company whose books the firm keeps. "Organization" and "company" are the same record. */
export const organizations = pgTable(
  'organizations',
  {
    id: uuid('id').primaryKey().$defaultFn(newId),
    firmId: uuid('firm_id')
      .notNull()
      .references(() => firms.id),
    name: text('name').notNull(),
    legalName: text('legal_name'),
    /** The company's tax identification number (EIN, VAT number...), as given. */
    taxId: text('tax_id'),
    currency: text('currency').notNull().default('USD'),
    /** Month (1-12) the fiscal year starts in; the balance sheet rolls earnings into retained earnings from here. */
    fiscalYearStartMonth: smallint('fiscal_year_start_month').notNull().default(1),
    /** Nothing may be posted or voided on or before this date. */
    booksClosedThrough: date('books_closed_through', { mode: 'string' }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /**
     * Set while the company is archived: its books stay readable and nothing may be written to them
     * (migrations/0024_company_lifecycle.sql refuses postings and voids).
     */
    archivedAt: timestamp('archived_at', { withTimezone: true }),
  },
  (t) => [
    index('organizations_firm_idx').on(t.firmId),
    unique('organizations_firm_name_key').on(t.firmId, t.name),
    check('organizations_fiscal_month', sql`${t.fiscalYearStartMonth} between 1 and 12`),
    check('organizations_currency', sql`${t.currency} ~ '^[A-Z]{3}$'`),
  ],
);
