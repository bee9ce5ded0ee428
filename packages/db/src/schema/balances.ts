import { bigint, date, foreignKey, index, pgTable, primaryKey, uuid } from 'drizzle-orm/pg-core';
import { accounts } from './accounts';

/**
 * Per account and day, the signed (debit-positive) sum of the lines of posted entries dated that day.
 * The posting path adds an entry's lines when it is posted and subtracts them when it is voided, in the
 * same transaction, so reports read one row per account and day instead of every line.
 */
export const accountDailyBalances = pgTable(
  'account_daily_balances',
  {
    organizationId: uuid('organization_id').notNull(),
    accountId: uuid('account_id').notNull(),
    day: date('day', { mode: 'string' }).notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'account_daily_balances_pkey', columns: [t.organizationId, t.accountId, t.day] }),
    foreignKey({
      name: 'account_daily_balances_account_fk',
      columns: [t.organizationId, t.accountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    // Period reports (a month's P&L, a year's trial balance) read a date range across all accounts.
    index('account_daily_balances_org_day_idx').on(t.organizationId, t.day),
  ],
);

/**
 * Per account and calendar month (`month` is its first day), the sum of that month's daily rows. A trigger on
 * account_daily_balances keeps it in the same transaction as every write to the daily rollup (migration 0013), so
 * reports read whole months here and only the days of the partial months at the edges of a range there.
 */
export const accountMonthlyBalances = pgTable(
  'account_monthly_balances',
  {
    organizationId: uuid('organization_id').notNull(),
    accountId: uuid('account_id').notNull(),
    month: date('month', { mode: 'string' }).notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'account_monthly_balances_pkey', columns: [t.organizationId, t.accountId, t.month] }),
    foreignKey({
      name: 'account_monthly_balances_account_fk',
      columns: [t.organizationId, t.accountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    index('account_monthly_balances_org_month_idx').on(t.organizationId, t.month),
  ],
);

/** Per account and calendar year (`year` is 1 January), the sum of that year's monthly rows, kept by a trigger on them. */
export const accountYearlyBalances = pgTable(
  'account_yearly_balances',
  {
    organizationId: uuid('organization_id').notNull(),
    accountId: uuid('account_id').notNull(),
    year: date('year', { mode: 'string' }).notNull(),
    amountCents: bigint('amount_cents', { mode: 'number' }).notNull(),
  },
  (t) => [
    primaryKey({ name: 'account_yearly_balances_pkey', columns: [t.organizationId, t.accountId, t.year] }),
    foreignKey({
      name: 'account_yearly_balances_account_fk',
      columns: [t.organizationId, t.accountId],
      foreignColumns: [accounts.organizationId, accounts.id],
    }),
    index('account_yearly_balances_org_year_idx').on(t.organizationId, t.year),
  ],
);
