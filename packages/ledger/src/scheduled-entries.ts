import { DomainError, isUuid, startRounds } from '@firm/core';
import {
  type Db,
  type Executor,
  rowsOf,
  type ScheduledLine,
  scheduledEntryRuns,
  scheduledJournalEntries,
} from '@firm/db';
import { and, desc, eq, ne, sql } from 'drizzle-orm';
import { type LedgerContext, nowOf } from './context';
import { addDays, todayUtc } from './dates';
import { loadPostableAccounts } from './lines';
import { getBookSettings } from './periods';
import { planPosting, postOnce, preparePosting } from './posting';
import { checkPostingAccounts, type PostingInput } from './posting-inputs';
import {
  checkSchedule,
  earliestStartDate,
  entryDateOf,
  occurrenceAfter,
  occurrenceOnOrAfter,
  type Schedule,
  type WeekendRule,
} from './schedules';

type Row = typeof scheduledJournalEntries.$inferSelect;
type RunRow = typeof scheduledEntryRuns.$inferSelect;

export interface ScheduledEntryInput {
  name: string;
  memo?: string | null;
  reference?: string | null;
  lines: ScheduledLine[];
  schedule: Partial<Schedule>;
}

export interface ScheduledEntryRun {
  occurrence: string;
  entryDate: string;
  status: 'posted' | 'failed';
  journalEntryId: string | null;
  attempts: number;
  error: { code: string; message: string } | null;
  at: Date;
}

export interface ScheduledEntry {
  id: string;
  organizationId: string;
  name: string;
  memo: string | null;
  reference: string | null;
  lines: ScheduledLine[];
  schedule: Schedule;
  status: 'active' | 'paused' | 'ended';
  /** The next occurrence and the date its entry will carry; null once the schedule has ended. */
  nextRun: { occurrence: string; entryDate: string; notBefore: Date | null } | null;
  lastError: { code: string; message: string; occurrence: string; at: string } | null;
  failures: number;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  /** The latest runs, newest first. */
  history: ScheduledEntryRun[];
}

/** A failed occurrence is tried again after 15 minutes, then 1, 4 and 24 hours, then every 24 hours. */
export const RETRY_DELAYS_MINUTES = [15, 60, 240, 1440];
const retryDelayMs = (failures: number) =>
  (RETRY_DELAYS_MINUTES[Math.min(failures, RETRY_DELAYS_MINUTES.length) - 1] ?? 1440) * 60_000;

const scheduleOf = (r: Row): Schedule => ({
  frequency: r.frequency as Schedule['frequency'],
  interval: r.interval,
  dayOfMonth: r.dayOfMonth,
  dayOfWeek: r.dayOfWeek,
  weekendRule: r.weekendRule as WeekendRule,
  startDate: r.startDate,
  endDate: r.endDate,
});

const presentRun = (r: RunRow): ScheduledEntryRun => ({
  occurrence: r.occurrence,
  entryDate: r.entryDate,
  status: r.status as ScheduledEntryRun['status'],
  journalEntryId: r.journalEntryId,
  attempts: r.attempts,
  error: r.errorCode ? { code: r.errorCode, message: r.errorMessage ?? '' } : null,
  at: r.updatedAt,
});

function present(r: Row, runs: RunRow[]): ScheduledEntry {
  const schedule = scheduleOf(r);
  return {
    id: r.id,
    organizationId: r.organizationId,
    name: r.name,
    memo: r.memo,
    reference: r.reference,
    lines: r.lines,
    schedule,
    status: r.status as ScheduledEntry['status'],
    nextRun:
      r.nextOccurrence === null
        ? null
        : {
            occurrence: r.nextOccurrence,
            entryDate: entryDateOf(r.nextOccurrence, schedule.weekendRule),
            notBefore: r.retryAt,
          },
    lastError: r.lastError ?? null,
    failures: r.failures,
    version: r.version,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    history: runs.map(presentRun),
  };
}

const notFound = () => new DomainError('NOT_FOUND', 'no such scheduled journal entry in this organization');

/** The posting a template makes for one occurrence. */
const postingOf = (
  t: { memo: string | null; reference: string | null; lines: ScheduledLine[] },
  date: string,
): PostingInput => ({
  kind: 'journal_entry',
  date,
  memo: t.memo ?? undefined,
  reference: t.reference ?? undefined,
  lines: t.lines.map((l) => ({
    accountId: l.accountId,
    description: l.description,
    ...(l.debitCents !== undefined ? { debitCents: l.debitCents } : { creditCents: l.creditCents }),
  })),
});

/**
 * Checks a template as its runs will post it: lines that balance, each naming an active account of the organization
 * (422 INVALID_ACCOUNT otherwise, as the posting routes say), and a schedule that can run. A start date being set is
 * held to earliestStartDate, so no template brings years of occurrences with it.
 */
async function checkTemplate(
  db: Executor,
  ctx: LedgerContext,
  organizationId: string,
  input: ScheduledEntryInput,
  startDateSet: boolean,
) {
  const books = await getBookSettings(db, organizationId);
  const today = nowOf(ctx).toISOString().slice(0, 10);
  const schedule = checkSchedule(
    input.schedule,
    startDateSet ? { earliestStart: earliestStartDate(today, books.fiscalYearStartMonth) } : {},
  );
  const plan = planPosting(postingOf({ memo: null, reference: null, lines: input.lines }, schedule.startDate));
  checkPostingAccounts(plan.input, await loadPostableAccounts(db, ctx.firmId, organizationId, plan.lines));
  preparePosting(ctx, organizationId, plan); // asserts the balance
  return { schedule, today, booksClosedThrough: books.booksClosedThrough };
}

/**
 * The first occurrence a new start leads to must post after the books-closed date: one inside the closed books would
 * fail, and every later occurrence waits behind a failed one. Entry dates only grow from one occurrence to the next
 * (they are at least a week apart, and the weekend rule moves one by two days at most), so the first decides.
 */
function checkFirstEntryOpen(next: string | null, schedule: Schedule, booksClosedThrough: string | null): void {
  if (next === null || booksClosedThrough === null) return;
  const entryDate = entryDateOf(next, schedule.weekendRule);
  if (entryDate > booksClosedThrough) return;
  throw new DomainError(
    'PERIOD_CLOSED',
    `the books are closed through ${booksClosedThrough}; the schedule's first entry would be dated ${entryDate}`,
    [
      {
        field: 'schedule.startDate',
        message: `its first occurrence (${next}) posts on ${entryDate}, on or before the books-closed date ${booksClosedThrough}`,
      },
    ],
  );
}

export async function createScheduledEntry(
  db: Executor,
  ctx: LedgerContext,
  organizationId: string,
  input: ScheduledEntryInput,
): Promise<ScheduledEntry> {
  const { schedule, booksClosedThrough } = await checkTemplate(db, ctx, organizationId, input, true);
  const next = occurrenceOnOrAfter(schedule, schedule.startDate);
  checkFirstEntryOpen(next, schedule, booksClosedThrough);
  const [row] = await db
    .insert(scheduledJournalEntries)
    .values({
      organizationId,
      name: input.name,
      memo: input.memo ?? null,
      reference: input.reference ?? null,
      lines: input.lines,
      ...schedule,
      status: next ? 'active' : 'ended',
      nextOccurrence: next,
    })
    .returning();
  return present(row as Row, []);
}

export async function getScheduledEntry(db: Executor, organizationId: string, id: string): Promise<ScheduledEntry> {
  if (!isUuid(id)) throw notFound();
  const [row] = await db
    .select()
    .from(scheduledJournalEntries)
    .where(
      and(
        eq(scheduledJournalEntries.organizationId, organizationId),
        eq(scheduledJournalEntries.id, id),
        ne(scheduledJournalEntries.status, 'deleted'),
      ),
    );
  if (!row) throw notFound();
  const runs = await db
    .select()
    .from(scheduledEntryRuns)
    .where(and(eq(scheduledEntryRuns.organizationId, organizationId), eq(scheduledEntryRuns.scheduleId, id)))
    .orderBy(desc(scheduledEntryRuns.occurrence))
    .limit(24);
  return present(row, runs);
}

export async function listScheduledEntries(db: Executor, organizationId: string): Promise<ScheduledEntry[]> {
  const rows = await db
    .select()
    .from(scheduledJournalEntries)
    .where(
      and(eq(scheduledJournalEntries.organizationId, organizationId), ne(scheduledJournalEntries.status, 'deleted')),
    )
    .orderBy(scheduledJournalEntries.name, scheduledJournalEntries.id);
  return rows.map((r) => present(r, []));
}

/** The last occurrence that was posted (or failed and is waiting), so a change never runs one twice. */
async function lastRunOccurrence(db: Executor, id: string): Promise<string | null> {
  const [row] = rowsOf<{ last: string | null }>(
    await db.execute(sql`select max(occurrence)::text as last from scheduled_entry_runs
      where schedule_id = ${id} and status = 'posted'`),
  );
  return row?.last ?? null;
}

/**
 * Changes a template. The fields given replace the ones it has (the schedule as a whole, merged over the current
 * one). Occurrences already posted are never posted again: the next one is the first after the last posted, on or
 * after today when the schedule itself changed.
 */
export async function updateScheduledEntry(
  db: Db,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  patch: Partial<ScheduledEntryInput>,
): Promise<ScheduledEntry> {
  const current = await getScheduledEntry(db, organizationId, id);
  const merged: ScheduledEntryInput = {
    name: patch.name ?? current.name,
    memo: patch.memo === undefined ? current.memo : patch.memo,
    reference: patch.reference === undefined ? current.reference : patch.reference,
    lines: patch.lines ?? current.lines,
    schedule: { ...current.schedule, ...(patch.schedule ?? {}) },
  };
  const startDateSet =
    patch.schedule?.startDate !== undefined && patch.schedule.startDate !== current.schedule.startDate;
  const { schedule, today, booksClosedThrough } = await checkTemplate(db, ctx, organizationId, merged, startDateSet);
  const last = await lastRunOccurrence(db, id);
  const from = patch.schedule ? maxDate(today, last ? addDays(last, 1) : schedule.startDate) : null;
  const next = from ? occurrenceOnOrAfter(schedule, from) : (current.nextRun?.occurrence ?? null);
  if (startDateSet) checkFirstEntryOpen(next, schedule, booksClosedThrough);
  await db
    .update(scheduledJournalEntries)
    .set({
      name: merged.name,
      memo: merged.memo ?? null,
      reference: merged.reference ?? null,
      lines: merged.lines,
      ...schedule,
      nextOccurrence: next,
      status: current.status === 'paused' ? 'paused' : next ? 'active' : 'ended',
      version: sql`${scheduledJournalEntries.version} + 1`,
      updatedAt: sql`now()`,
    })
    .where(and(eq(scheduledJournalEntries.organizationId, organizationId), eq(scheduledJournalEntries.id, id)));
  return getScheduledEntry(db, organizationId, id);
}

const maxDate = (a: string, b: string) => (a > b ? a : b);

/** Pauses a template: nothing runs until it is resumed. */
export async function pauseScheduledEntry(db: Db, organizationId: string, id: string): Promise<ScheduledEntry> {
  const current = await getScheduledEntry(db, organizationId, id);
  if (current.status === 'ended') throw new DomainError('INVALID_STATE', 'the schedule has ended; nothing to pause');
  await db
    .update(scheduledJournalEntries)
    .set({ status: 'paused', updatedAt: sql`now()` })
    .where(and(eq(scheduledJournalEntries.organizationId, organizationId), eq(scheduledJournalEntries.id, id)));
  return getScheduledEntry(db, organizationId, id);
}

/**
 * Resumes a paused template. Occurrences that fell while it was paused are skipped (a pause means "not these"): the
 * next run is the first occurrence on or after today, or the waiting one if it is later. A failed occurrence waiting
 * for its retry is tried at once.
 */
export async function resumeScheduledEntry(db: Db, organizationId: string, id: string): Promise<ScheduledEntry> {
  const current = await getScheduledEntry(db, organizationId, id);
  if (current.status === 'ended') throw new DomainError('INVALID_STATE', 'the schedule has ended; nothing to resume');
  const waiting = current.nextRun?.occurrence ?? null;
  const failedWaiting = current.lastError !== null && waiting === current.lastError.occurrence;
  const next =
    current.status === 'paused' && waiting && !failedWaiting
      ? occurrenceOnOrAfter(current.schedule, maxDate(todayUtc(), waiting))
      : waiting;
  await db
    .update(scheduledJournalEntries)
    .set({ status: next ? 'active' : 'ended', nextOccurrence: next, retryAt: null, updatedAt: sql`now()` })
    .where(and(eq(scheduledJournalEntries.organizationId, organizationId), eq(scheduledJournalEntries.id, id)));
  return getScheduledEntry(db, organizationId, id);
}

/** Deletes a template: it never runs again; its runs and the entries they posted stay. */
export async function deleteScheduledEntry(db: Db, organizationId: string, id: string): Promise<void> {
  await getScheduledEntry(db, organizationId, id);
  await db
    .update(scheduledJournalEntries)
    .set({ status: 'deleted', nextOccurrence: null, updatedAt: sql`now()` })
    .where(and(eq(scheduledJournalEntries.organizationId, organizationId), eq(scheduledJournalEntries.id, id)));
}

/** What a worker round did. */
export interface ScheduledRunResult {
  posted: number;
  failed: number;
}

/** The idempotency route the runs post under; the key is `<template id>:<occurrence>`. */
export const SCHEDULED_ROUTE = 'scheduled-journal-entries';

/** Occurrences one round runs of one template at most; a longer backlog is caught up over the next rounds. */
export const CATCH_UP_PER_ROUND = 12;

/** Occurrences one round runs in all, at most. */
export const OCCURRENCES_PER_ROUND = 500;

/**
 * Runs due occurrences (their nominal date today or earlier, UTC), each exactly once and each template's in order, in
 * passes: a pass runs one occurrence of every due template, so a round runs at most CATCH_UP_PER_ROUND of one
 * template, and what is due today in any firm runs in the round's first pass, however long another's backlog. A pass
 * takes the firms in turn (the first template of each firm, then the second...), firms and templates the worker
 * served least recently first, so when `limit` ends a round before everything ran, the next one starts with what
 * waited.
 *
 * Exactly once: each occurrence runs in a transaction of its own that claims its template with FOR UPDATE SKIP
 * LOCKED (workers never run one template at once, and one skips a template another holds) and checks it is still
 * due; the run, its entry (through the ledger's idempotent posting path, under the key `<template>:<occurrence>`)
 * and the template's next occurrence are written together, so a worker that dies leaves the occurrence to the next
 * round; and one run per occurrence is all the database allows. An occurrence that fails (a closed period, an
 * archived account) is recorded with its reason and retried after RETRY_DELAYS_MINUTES; later occurrences wait for
 * it, in order.
 */
export async function runDueScheduledEntries(
  db: Db,
  options: { now?: Date; limit?: number; perTemplate?: number; organizationId?: string } = {},
): Promise<ScheduledRunResult> {
  const now = options.now ?? new Date();
  const due = dueFilter(now, options.organizationId ?? null);
  const result: ScheduledRunResult = { posted: 0, failed: 0 };
  const limit = options.limit ?? OCCURRENCES_PER_ROUND;
  let ran = 0;
  for (let pass = 0; pass < (options.perTemplate ?? CATCH_UP_PER_ROUND) && ran < limit; pass++) {
    const ids = rowsOf<{ id: string }>(
      await db.execute(sql`
        select t.id from scheduled_journal_entries t
        join organizations o on o.id = t.organization_id
        where ${due}
        order by
          row_number() over (partition by o.firm_id order by t.last_run_at nulls first, t.next_occurrence, t.id),
          max(t.last_run_at) over (partition by o.firm_id) nulls first,
          o.firm_id
        limit ${limit - ran}`),
    );
    const before = ran;
    for (const { id } of ids) {
      const outcome = await db.transaction(async (tx) => {
        const [claimed] = rowsOf<{ id: string }>(
          await tx.execute(sql`select t.id from scheduled_journal_entries t
            where t.id = ${id} and ${due} for update skip locked`),
        );
        if (!claimed) return null;
        const [row] = await tx.select().from(scheduledJournalEntries).where(eq(scheduledJournalEntries.id, id));
        return runOccurrence(tx as unknown as Db, row as Row, now);
      });
      if (outcome === null) continue;
      result[outcome]++;
      ran++;
    }
    if (ran === before) break;
  }
  return result;
}

/**
 * A template whose next occurrence is due and not waiting for a retry (`t` is scheduled_journal_entries), of a company
 * that is not archived: an archived company's occurrences wait, and run in order once it is unarchived.
 */
const dueFilter = (now: Date, organizationId: string | null) => sql`t.status = 'active'
  and t.next_occurrence <= ${now.toISOString().slice(0, 10)}::date
  and (t.retry_at is null or t.retry_at <= ${now.toISOString()}::timestamptz)
  and (${organizationId}::uuid is null or t.organization_id = ${organizationId}::uuid)
  and t.organization_id not in (select id from organizations where archived_at is not null)`;

async function firmOf(db: Executor, organizationId: string): Promise<string> {
  const [row] = rowsOf<{ firm_id: string }>(
    await db.execute(sql`select firm_id from organizations where id = ${organizationId}`),
  );
  return row?.firm_id as string;
}

async function runOccurrence(tx: Db, t: Row, now: Date): Promise<'posted' | 'failed'> {
  const occurrence = t.nextOccurrence as string;
  const schedule = scheduleOf(t);
  const entryDate = entryDateOf(occurrence, schedule.weekendRule);
  const ctx: LedgerContext = {
    firmId: await firmOf(tx, t.organizationId),
    actor: { kind: 'schedule', id: t.id },
    requestId: null,
    now,
  };
  try {
    await tx.transaction(async (sp) => {
      const outcome = await postOnce(sp, ctx, t.organizationId, postingOf(t, entryDate), {
        key: {
          firmId: ctx.firmId,
          organizationId: t.organizationId,
          route: SCHEDULED_ROUTE,
          key: `${t.id}:${occurrence}`,
          requestHash: `${t.id}:${t.version}`,
          retentionHours: 24 * 366 * 10,
        },
        receiptOf: (r) => ({ journalEntryId: r.journalEntryId, occurrence }),
        checkFirst: true,
        busy: () => new DomainError('CONFLICT', 'the occurrence is being posted by another worker'),
      });
      const journalEntryId = (outcome.body as { journalEntryId: string }).journalEntryId;
      await sp
        .insert(scheduledEntryRuns)
        .values({
          organizationId: t.organizationId,
          scheduleId: t.id,
          occurrence,
          entryDate,
          status: 'posted',
          journalEntryId,
        })
        .onConflictDoUpdate({
          target: [scheduledEntryRuns.organizationId, scheduledEntryRuns.scheduleId, scheduledEntryRuns.occurrence],
          set: {
            status: 'posted',
            journalEntryId,
            entryDate,
            attempts: sql`${scheduledEntryRuns.attempts} + 1`,
            errorCode: null,
            errorMessage: null,
            updatedAt: sql`now()`,
          },
        });
    });
    const next = occurrenceAfter(schedule, occurrence);
    await tx
      .update(scheduledJournalEntries)
      .set({
        nextOccurrence: next,
        status: next ? 'active' : 'ended',
        retryAt: null,
        failures: 0,
        lastError: null,
        lastRunAt: now,
        updatedAt: sql`now()`,
      })
      .where(eq(scheduledJournalEntries.id, t.id));
    return 'posted';
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    const failures = t.failures + 1;
    await tx
      .insert(scheduledEntryRuns)
      .values({
        organizationId: t.organizationId,
        scheduleId: t.id,
        occurrence,
        entryDate,
        status: 'failed',
        errorCode: err.code,
        errorMessage: err.message,
      })
      .onConflictDoUpdate({
        target: [scheduledEntryRuns.organizationId, scheduledEntryRuns.scheduleId, scheduledEntryRuns.occurrence],
        set: {
          attempts: sql`${scheduledEntryRuns.attempts} + 1`,
          errorCode: err.code,
          errorMessage: err.message,
          updatedAt: sql`now()`,
        },
      });
    await tx
      .update(scheduledJournalEntries)
      .set({
        failures,
        retryAt: new Date(now.getTime() + retryDelayMs(failures)),
        lastError: { code: err.code, message: err.message, occurrence, at: now.toISOString() },
        lastRunAt: now,
        updatedAt: sql`now()`,
      })
      .where(eq(scheduledJournalEntries.id, t.id));
    return 'failed';
  }
}

/**
 * Runs due occurrences now (catching up what fell while nothing ran) and then every `intervalMs`, one round at a
 * time. `stop` waits for the round in progress.
 */
export function startScheduledEntryRunner(
  db: Db,
  options: { intervalMs: number; onError: (err: unknown) => void; onRound?: (result: ScheduledRunResult) => void },
): { stop(): Promise<void> } {
  return startRounds(async () => options.onRound?.(await runDueScheduledEntries(db)), options);
}
