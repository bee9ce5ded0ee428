import { newId } from '@firm/core';
import { sql } from 'drizzle-orm';
import {
  check,
  date,
  foreignKey,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uuid,
} from 'drizzle-orm/pg-core';
import { journalEntries } from './entries';
import { organizations } from './organizations';

/** One line of a scheduled entry's template, as the journal-entry posting route takes it (cents). */
export interface ScheduledLine {
  accountId: string;
  description?: string;
  debitCents?: number;
  creditCents?: number;
}

/**
 * A journal entry posted on a schedule (accruals, depreciation, rent). `next_occurrence` is the nominal date of the
 * next run (before the weekend rule moves the entry date); null once the schedule has ended. The worker claims due
 * templates with FOR UPDATE SKIP LOCKED and runs their occurrences in order, each exactly once.
 */
export const scheduledJournalEntries = pgTable(
  'scheduled_journal_entries',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id')
      .notNull()
      .references(() => organizations.id),
    name: text('name').notNull(),
    memo: text('memo'),
    reference: text('reference'),
    lines: jsonb('lines').$type<ScheduledLine[]>().notNull(),
    frequency: text('frequency').notNull(),
    interval: integer('interval').notNull().default(1),
    dayOfMonth: integer('day_of_month'),
    dayOfWeek: integer('day_of_week'),
    weekendRule: text('weekend_rule').notNull().default('none'),
    startDate: date('start_date', { mode: 'string' }).notNull(),
    endDate: date('end_date', { mode: 'string' }),
    status: text('status').notNull().default('active'),
    nextOccurrence: date('next_occurrence', { mode: 'string' }),
    /** A failed occurrence is tried again from this time on. */
    retryAt: timestamp('retry_at', { withTimezone: true }),
    failures: integer('failures').notNull().default(0),
    /** When a worker last ran one of its occurrences: a round serves the least recently served first. */
    lastRunAt: timestamp('last_run_at', { withTimezone: true }),
    lastError: jsonb('last_error').$type<{ code: string; message: string; occurrence: string; at: string }>(),
    version: integer('version').notNull().default(1),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    // Keyed by organization first (see distribution.ts); the composite foreign keys name it.
    primaryKey({ name: 'scheduled_journal_entries_pkey', columns: [t.organizationId, t.id] }),
    // The runner claims a due template by id, in any organization.
    index('scheduled_journal_entries_id_idx').on(t.id),
    index('scheduled_journal_entries_due_idx')
      .on(t.nextOccurrence)
      .where(sql`${t.status} = 'active'`),
    check(
      'scheduled_journal_entries_schedule',
      sql`${t.frequency} in ('weekly', 'monthly', 'quarterly', 'yearly') and ${t.interval} between 1 and 120
        and ${t.weekendRule} in ('none', 'previous_business_day', 'next_business_day')
        and ${t.status} in ('active', 'paused', 'ended', 'deleted')
        and (${t.endDate} is null or ${t.endDate} >= ${t.startDate})
        and ((${t.frequency} = 'weekly' and ${t.dayOfWeek} between 1 and 7 and ${t.dayOfMonth} is null)
          or (${t.frequency} <> 'weekly' and ${t.dayOfWeek} is null and ${t.dayOfMonth} between 0 and 31))`,
    ),
  ],
);

/** One run of a scheduled entry per occurrence (unique): posted with its entry, or failed with why. */
export const scheduledEntryRuns = pgTable(
  'scheduled_entry_runs',
  {
    id: uuid('id').notNull().$defaultFn(newId),
    organizationId: uuid('organization_id').notNull(),
    scheduleId: uuid('schedule_id').notNull(),
    occurrence: date('occurrence', { mode: 'string' }).notNull(),
    entryDate: date('entry_date', { mode: 'string' }).notNull(),
    status: text('status').notNull(),
    journalEntryId: uuid('journal_entry_id'),
    attempts: integer('attempts').notNull().default(1),
    errorCode: text('error_code'),
    errorMessage: text('error_message'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ name: 'scheduled_entry_runs_pkey', columns: [t.organizationId, t.id] }),
    // Also what a schedule's runs are read by.
    unique('scheduled_entry_runs_occurrence_key').on(t.organizationId, t.scheduleId, t.occurrence),
    check(
      'scheduled_entry_runs_status',
      sql`${t.status} in ('posted', 'failed')
      and (${t.status} <> 'posted' or ${t.journalEntryId} is not null)`,
    ),
    foreignKey({
      name: 'scheduled_entry_runs_schedule_fk',
      columns: [t.organizationId, t.scheduleId],
      foreignColumns: [scheduledJournalEntries.organizationId, scheduledJournalEntries.id],
    }),
    foreignKey({
      name: 'scheduled_entry_runs_entry_fk',
      columns: [t.organizationId, t.journalEntryId],
      foreignColumns: [journalEntries.organizationId, journalEntries.id],
    }),
  ],
);
