import { isDomainError } from '@firm/core';
import { type Db, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { todayUtc } from './dates';
import { setCompanyArchived } from './companies';
import { setBooksClosedThrough } from './periods';
import {
  createScheduledEntry,
  getScheduledEntry,
  pauseScheduledEntry,
  resumeScheduledEntry,
  runDueScheduledEntries,
  type ScheduledEntryInput,
  updateScheduledEntry,
} from './scheduled-entries';
import { checkSchedule, entryDateOf, occurrenceAfter, occurrenceOnOrAfter, type Schedule } from './schedules';
import { createLedgerFixture, type LedgerFixture } from './testing';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const at = (date: string) => new Date(`${date}T06:00:00Z`);

/** A fixture whose clock is fixed, so the start dates it may use do not move with the calendar. */
const fixture = async (options: { fiscalYearStartMonth?: number } = {}): Promise<LedgerFixture> => {
  const f = await createLedgerFixture(db, options);
  return { ...f, ctx: { ...f.ctx, now: at('2026-06-15') } };
};

const rent = (f: LedgerFixture, schedule: Partial<Schedule>): ScheduledEntryInput => ({
  name: 'Office rent',
  memo: 'Monthly rent',
  lines: [
    { accountId: f.account('6100'), debitCents: 150_000 },
    { accountId: f.account('1000'), creditCents: 150_000 },
  ],
  schedule: { frequency: 'monthly', dayOfMonth: 1, startDate: '2026-01-01', ...schedule },
});

/** The entries a template posted, by date, with their lines' total. */
async function postedBy(scheduleId: string) {
  return rowsOf<{ entry_date: string; occurrence: string; total: number; n: number }>(
    await db.execute(sql`
      select e.entry_date::text, r.occurrence::text, sum(l.amount_cents) filter (where l.amount_cents > 0)::int as total,
             count(*)::int as n
      from scheduled_entry_runs r
      join journal_entries e on e.id = r.journal_entry_id
      join journal_lines l on l.entry_id = e.id
      where r.schedule_id = ${scheduleId} and r.status = 'posted'
      group by e.entry_date, r.occurrence order by r.occurrence`),
  );
}

async function entriesOf(orgId: string): Promise<number> {
  const [row] = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from journal_entries where organization_id = ${orgId}`),
  );
  return row?.n ?? 0;
}

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: unknown) => (isDomainError(e) ? e.code : String(e)),
  );

describe('schedules', () => {
  const arbitrarySchedule = fc
    .record({
      frequency: fc.constantFrom('weekly', 'monthly', 'quarterly', 'yearly'),
      interval: fc.integer({ min: 1, max: 4 }),
      dayOfMonth: fc.integer({ min: 0, max: 31 }),
      dayOfWeek: fc.integer({ min: 1, max: 7 }),
      start: fc.integer({ min: 0, max: 3000 }),
      length: fc.option(fc.integer({ min: 0, max: 2000 }), { nil: null }),
    })
    .map((r): Schedule => {
      const startDate = new Date(Date.UTC(2024, 0, 1) + r.start * 86_400_000).toISOString().slice(0, 10);
      const endDate =
        r.length === null
          ? null
          : new Date(Date.parse(`${startDate}T00:00:00Z`) + r.length * 86_400_000).toISOString().slice(0, 10);
      const weekly = r.frequency === 'weekly';
      return checkSchedule({
        frequency: r.frequency,
        interval: r.interval,
        dayOfMonth: weekly ? null : r.dayOfMonth,
        dayOfWeek: weekly ? r.dayOfWeek : null,
        weekendRule: 'none',
        startDate,
        endDate,
      });
    });

  it('gives occurrences in order, inside the range, on the day asked for', () => {
    fc.assert(
      fc.property(arbitrarySchedule, (s) => {
        let previous: string | null = null;
        let next = occurrenceOnOrAfter(s, s.startDate);
        for (let i = 0; i < 30 && next; i++) {
          expect(next >= s.startDate).toBe(true);
          if (s.endDate) expect(next <= s.endDate).toBe(true);
          if (previous) expect(next > previous).toBe(true);
          const d = new Date(`${next}T00:00:00Z`);
          if (s.frequency === 'weekly') {
            expect(((d.getUTCDay() + 6) % 7) + 1).toBe(s.dayOfWeek);
            if (previous) expect((Date.parse(next) - Date.parse(previous)) / 86_400_000).toBe(7 * s.interval);
          } else {
            const last = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate();
            const wanted = s.dayOfMonth === 0 ? last : Math.min(s.dayOfMonth as number, last);
            expect(d.getUTCDate()).toBe(wanted);
          }
          // Nothing is skipped: the day after the previous occurrence leads to this one.
          if (previous) expect(occurrenceAfter(s, previous)).toBe(next);
          previous = next;
          next = occurrenceAfter(s, next);
        }
      }),
      { numRuns: 300, seed: 17 },
    );
  });

  it('runs on the last day of short months, and moves weekend entries by the rule', () => {
    const s = checkSchedule({ frequency: 'monthly', dayOfMonth: 31, startDate: '2026-01-15' });
    const dates = [occurrenceOnOrAfter(s, s.startDate) as string];
    for (let i = 0; i < 3; i++) dates.push(occurrenceAfter(s, dates[i] as string) as string);
    expect(dates).toEqual(['2026-01-31', '2026-02-28', '2026-03-31', '2026-04-30']);
    expect(entryDateOf('2026-02-28', 'previous_business_day')).toBe('2026-02-27');
    expect(entryDateOf('2026-03-01', 'previous_business_day')).toBe('2026-02-27');
    expect(entryDateOf('2026-02-28', 'next_business_day')).toBe('2026-03-02');
    expect(entryDateOf('2026-02-28', 'none')).toBe('2026-02-28');
    expect(entryDateOf('2026-03-02', 'next_business_day')).toBe('2026-03-02');
  });

  it('refuses impossible schedules, naming each field', () => {
    const fields = (input: object) => {
      try {
        checkSchedule(input);
        return [];
      } catch (e) {
        return isDomainError(e) ? (e.details ?? []).map((d) => d.field) : [String(e)];
      }
    };
    expect(fields({ frequency: 'weekly', dayOfMonth: 31, startDate: '2026-01-01' })).toEqual([
      'schedule.dayOfMonth',
      'schedule.dayOfWeek',
    ]);
    expect(fields({ frequency: 'monthly', dayOfMonth: 1, startDate: '2026-02-01', endDate: '2026-01-31' })).toEqual([
      'schedule.endDate',
    ]);
    expect(fields({ frequency: 'monthly', dayOfWeek: 2, startDate: '2026-02-30' })).toEqual([
      'schedule.dayOfWeek',
      'schedule.dayOfMonth',
      'schedule.startDate',
    ]);
    expect(fields({ frequency: 'daily', startDate: '2026-01-01', interval: 0 })).toEqual([
      'schedule.frequency',
      'schedule.interval',
    ]);
  });
});

describe('scheduled journal entries', () => {
  it('catch up three missed months with exactly three entries, in order, and never post one twice', async () => {
    const f = await fixture();
    const t = await createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2026-01-01' }));
    expect(t.nextRun).toMatchObject({ occurrence: '2026-01-01', entryDate: '2026-01-01' });
    // The worker was down from January to late March: one round catches up, oldest first.
    expect(await runDueScheduledEntries(db, { now: at('2026-03-20'), organizationId: f.orgId })).toEqual({
      posted: 3,
      failed: 0,
    });
    expect((await postedBy(t.id)).map((r) => [r.occurrence, r.total, r.n])).toEqual([
      ['2026-01-01', 150_000, 2],
      ['2026-02-01', 150_000, 2],
      ['2026-03-01', 150_000, 2],
    ]);
    // Again, and later the same day: nothing more.
    expect(await runDueScheduledEntries(db, { now: at('2026-03-20'), organizationId: f.orgId })).toEqual({
      posted: 0,
      failed: 0,
    });
    const after = await getScheduledEntry(db, f.orgId, t.id);
    expect(after.nextRun?.occurrence).toBe('2026-04-01');
    expect(after.history.map((h) => h.occurrence)).toEqual(['2026-03-01', '2026-02-01', '2026-01-01']);
    // Each run is under the key <template>:<occurrence> of the posting path.
    const [keys] = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from idempotency_keys
        where route = 'scheduled-journal-entries' and key like ${`${t.id}:%`}`),
    );
    expect(keys?.n).toBe(3);
  });

  it('wait while their company is archived, and catch up in order once it is unarchived', async () => {
    const f = await fixture();
    const t = await createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2026-01-01' }));
    await db.transaction((tx) => setCompanyArchived(tx, f.ctx, f.orgId, true));
    expect(await runDueScheduledEntries(db, { now: at('2026-03-20'), organizationId: f.orgId })).toEqual({
      posted: 0,
      failed: 0,
    });
    expect(await postedBy(t.id)).toEqual([]);
    expect((await getScheduledEntry(db, f.orgId, t.id)).history).toEqual([]);
    await db.transaction((tx) => setCompanyArchived(tx, f.ctx, f.orgId, false));
    expect(await runDueScheduledEntries(db, { now: at('2026-03-20'), organizationId: f.orgId })).toEqual({
      posted: 3,
      failed: 0,
    });
    expect((await postedBy(t.id)).map((r) => r.occurrence)).toEqual(['2026-01-01', '2026-02-01', '2026-03-01']);
  });

  it('never posts one occurrence twice with workers racing', async () => {
    const f = await fixture();
    const templates = await Promise.all(
      ['a', 'b', 'c'].map((n) =>
        createScheduledEntry(db, f.ctx, f.orgId, {
          ...rent(f, { frequency: 'weekly', dayOfWeek: 1, dayOfMonth: null, startDate: '2026-01-01' }),
          name: n,
        }),
      ),
    );
    const before = await entriesOf(f.orgId);
    const now = at('2026-03-01');
    const rounds = await Promise.all(
      Array.from({ length: 4 }, () => runDueScheduledEntries(db, { now, organizationId: f.orgId })),
    );
    // Mondays from 2026-01-05 to 2026-02-23: 8 per template.
    expect(rounds.reduce((n, r) => n + r.posted, 0)).toBe(24);
    expect(await entriesOf(f.orgId)).toBe(before + 24);
    for (const t of templates) {
      const runs = await postedBy(t.id);
      expect(runs).toHaveLength(8);
      expect(new Set(runs.map((r) => r.occurrence)).size).toBe(8);
    }
  });

  it('records a run into a closed period with its reason, retries it later, and posts it once the books reopen', async () => {
    const f = await fixture();
    const t = await createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2026-05-01' }));
    await db.transaction((tx) => setBooksClosedThrough(tx, f.ctx, f.orgId, '2026-05-31'));
    const before = await entriesOf(f.orgId);
    expect(await runDueScheduledEntries(db, { now: at('2026-06-10'), organizationId: f.orgId })).toEqual({
      posted: 0,
      failed: 1,
    });
    const failed = await getScheduledEntry(db, f.orgId, t.id);
    expect(failed.lastError).toMatchObject({ code: 'PERIOD_CLOSED', occurrence: '2026-05-01' });
    expect(failed.history[0]).toMatchObject({ occurrence: '2026-05-01', status: 'failed', attempts: 1 });
    // The June occurrence waits behind May's, and the retry waits its delay.
    expect(failed.nextRun).toMatchObject({ occurrence: '2026-05-01' });
    expect(await runDueScheduledEntries(db, { now: at('2026-06-10'), organizationId: f.orgId })).toEqual({
      posted: 0,
      failed: 0,
    });
    expect(await entriesOf(f.orgId)).toBe(before);

    await db.transaction((tx) => setBooksClosedThrough(tx, f.ctx, f.orgId, null));
    expect(
      await runDueScheduledEntries(db, {
        now: new Date(at('2026-06-10').getTime() + 20 * 60_000),
        organizationId: f.orgId,
      }),
    ).toEqual({
      posted: 2,
      failed: 0,
    });
    const done = await getScheduledEntry(db, f.orgId, t.id);
    expect(done.lastError).toBeNull();
    expect(done.history.map((h) => [h.occurrence, h.status, h.attempts])).toEqual([
      ['2026-06-01', 'posted', 1],
      ['2026-05-01', 'posted', 2],
    ]);
  });

  it('refuses templates that do not balance, name an archived or another firm’s account, writing nothing', async () => {
    const f = await fixture();
    const other = await fixture();
    const count = async () =>
      rowsOf<{ n: number }>(
        await db.execute(
          sql`select count(*)::int as n from scheduled_journal_entries where organization_id = ${f.orgId}`,
        ),
      )[0]?.n;
    await db.execute(sql`update accounts set archived = true where id = ${f.account('6200')}`);
    const cases: [ScheduledEntryInput, string][] = [
      [
        {
          ...rent(f, {}),
          lines: [
            { accountId: f.account('6100'), debitCents: 100 },
            { accountId: f.account('1000'), creditCents: 90 },
          ],
        },
        'UNBALANCED_ENTRY',
      ],
      [
        {
          ...rent(f, {}),
          lines: [
            { accountId: f.account('6200'), debitCents: 100 },
            { accountId: f.account('1000'), creditCents: 100 },
          ],
        },
        'INVALID_ACCOUNT',
      ],
      [
        {
          ...rent(f, {}),
          lines: [
            { accountId: other.account('6100'), debitCents: 100 },
            { accountId: f.account('1000'), creditCents: 100 },
          ],
        },
        'INVALID_ACCOUNT',
      ],
      [rent(f, { frequency: 'weekly', dayOfMonth: 31 }), 'VALIDATION_ERROR'],
      [rent(f, { startDate: '2026-03-01', endDate: '2026-02-01' }), 'VALIDATION_ERROR'],
    ];
    for (const [input, code] of cases) {
      expect(await codeOf(createScheduledEntry(db, f.ctx, f.orgId, input))).toBe(code);
    }
    expect(await count()).toBe(0);
  });

  it('fails a run whose account was archived since; resuming tries it again, and a pause skips what it covered', async () => {
    const f = await fixture();
    const t = await createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2026-07-01' }));
    await db.execute(sql`update accounts set archived = true where id = ${f.account('6100')}`);
    expect(await runDueScheduledEntries(db, { now: at('2026-07-02'), organizationId: f.orgId })).toEqual({
      posted: 0,
      failed: 1,
    });
    expect((await getScheduledEntry(db, f.orgId, t.id)).lastError?.code).toBe('INVALID_ACCOUNT');
    await db.execute(sql`update accounts set archived = false where id = ${f.account('6100')}`);
    // Changing the template keeps what ran; pausing and resuming skips what fell in between.
    await updateScheduledEntry(db, f.ctx, f.orgId, t.id, { memo: 'Rent, new landlord' });
    expect((await pauseScheduledEntry(db, f.orgId, t.id)).status).toBe('paused');
    expect(await runDueScheduledEntries(db, { now: at('2026-09-15'), organizationId: f.orgId })).toEqual({
      posted: 0,
      failed: 0,
    });
    const resumed = await resumeScheduledEntry(db, f.orgId, t.id);
    expect(resumed.nextRun).toMatchObject({ occurrence: '2026-07-01', notBefore: null });
    expect(await runDueScheduledEntries(db, { now: at('2026-07-02'), organizationId: f.orgId })).toEqual({
      posted: 1,
      failed: 0,
    });

    // Paused with occurrences waiting, then resumed: those that fell before today are skipped.
    const old = await createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2025-01-01' }));
    await pauseScheduledEntry(db, f.orgId, old.id);
    const back = await resumeScheduledEntry(db, f.orgId, old.id);
    expect(back.nextRun?.occurrence).toBe(occurrenceOnOrAfter(back.schedule, todayUtc()));
  });

  it('refuses a start before the previous fiscal year, or a first entry in the closed books, naming schedule.startDate', async () => {
    // Fiscal years from July: on 2026-06-15 the current one began 2025-07-01, the previous one 2024-07-01.
    const f = await fixture({ fiscalYearStartMonth: 7 });
    const refusal = (p: Promise<unknown>) =>
      p.then(
        () => 'accepted',
        (e: unknown) =>
          isDomainError(e) ? { code: e.code, fields: (e.details ?? []).map((d) => d.field) } : String(e),
      );
    const startDate = { code: 'VALIDATION_ERROR', fields: ['schedule.startDate'] };
    expect(await refusal(createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '1900-01-01' })))).toEqual(
      startDate,
    );
    expect(await refusal(createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2024-06-30' })))).toEqual(
      startDate,
    );
    const earliest = await createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2024-07-01' }));
    expect(earliest.nextRun?.occurrence).toBe('2024-07-01');

    // The first entry must fall after the books-closed date, wherever the weekend rule moves it.
    await db.transaction((tx) => setBooksClosedThrough(tx, f.ctx, f.orgId, '2026-01-30'));
    const closed = { code: 'PERIOD_CLOSED', fields: ['schedule.startDate'] };
    expect(await refusal(createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2026-01-01' })))).toEqual(
      closed,
    );
    // 2026-02-01 is a Sunday: the Friday before is 2026-01-30, inside the closed books; as itself it is after them.
    expect(
      await refusal(
        createScheduledEntry(
          db,
          f.ctx,
          f.orgId,
          rent(f, { startDate: '2026-01-31', weekendRule: 'previous_business_day' }),
        ),
      ),
    ).toEqual(closed);
    expect(await refusal(createScheduledEntry(db, f.ctx, f.orgId, rent(f, { startDate: '2026-01-31' })))).toBe(
      'accepted',
    );

    // A template changes whatever its stored start, while a new start is held to the bound of the day of the change.
    const later = { ...f.ctx, now: at('2027-08-01') };
    expect((await updateScheduledEntry(db, later, f.orgId, earliest.id, { memo: 'Rent, renewed' })).memo).toBe(
      'Rent, renewed',
    );
    expect(
      await refusal(updateScheduledEntry(db, later, f.orgId, earliest.id, { schedule: { startDate: '2026-06-30' } })),
    ).toEqual(startDate);
    expect(
      await refusal(updateScheduledEntry(db, later, f.orgId, earliest.id, { schedule: { startDate: '2026-07-01' } })),
    ).toBe('accepted');
  });
});
