import { type Db, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { addDays } from './dates';
import {
  createScheduledEntry,
  deleteScheduledEntry,
  runDueScheduledEntries,
  type ScheduledEntryInput,
} from './scheduled-entries';
import type { Schedule } from './schedules';
import { createLedgerFixture, type LedgerFixture } from './testing';

// A round is global (every firm's templates), so these tests keep a database to themselves.
let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const TODAY = '2026-06-15'; // a Monday
const now = new Date(`${TODAY}T06:00:00Z`);
/** The documented catch-up per template per round. */
const PER_ROUND = 12;

const fixture = async (): Promise<LedgerFixture> => {
  const f = await createLedgerFixture(db);
  return { ...f, ctx: { ...f.ctx, now } };
};

const template = (f: LedgerFixture, name: string, schedule: Partial<Schedule>): ScheduledEntryInput => ({
  name,
  memo: name,
  lines: [
    { accountId: f.account('6100'), debitCents: 1_000 },
    { accountId: f.account('1000'), creditCents: 1_000 },
  ],
  schedule: { frequency: 'weekly', dayOfWeek: 1, startDate: TODAY, ...schedule },
});

/** The posted journal entries a template wrote, per entry date, straight from the ledger. */
async function entriesByDate(templateId: string): Promise<Map<string, number>> {
  const rows = rowsOf<{ entry_date: string; n: number }>(
    await db.execute(sql`select entry_date::text, count(*)::int as n from journal_entries
      where created_by_kind = 'schedule' and created_by_id = ${templateId} and status = 'posted'
      group by entry_date order by entry_date`),
  );
  return new Map(rows.map((r) => [r.entry_date, r.n]));
}

/** Every Monday from `first` through `last`. */
const mondays = (first: string, last: string) => {
  const dates: string[] = [];
  for (let d = first; d <= last; d = addDays(d, 7)) dates.push(d);
  return dates;
};

/** A weekly template stored as it could be before start dates were bounded: SQL, past the API's checks. */
async function insertRunaway(f: LedgerFixture, startDate: string): Promise<string> {
  const [row] = rowsOf<{ id: string }>(
    await db.execute(sql`insert into scheduled_journal_entries
        (id, organization_id, name, memo, lines, frequency, day_of_week, start_date, next_occurrence)
      values (gen_random_uuid(), ${f.orgId}, 'Runaway', 'Runaway', ${JSON.stringify(template(f, 'Runaway', {}).lines)}::jsonb,
        'weekly', 1, ${startDate}::date, ${startDate}::date)
      returning id::text`),
  );
  return row?.id as string;
}

describe('worker rounds', () => {
  it('posts the occurrences due today in every firm in the first round, beside a runaway backlog', async () => {
    const a = await fixture();
    const b = await fixture();
    const runaway = await insertRunaway(a, '1900-01-01');
    // Thousands of occurrences: it must not run on in the rounds of the tests that follow.
    onTestFinished(() => deleteScheduledEntry(db, a.orgId, runaway));
    const aToday = await createScheduledEntry(db, a.ctx, a.orgId, template(a, 'A weekly', {}));
    const bToday = await createScheduledEntry(
      db,
      b.ctx,
      b.orgId,
      template(b, 'B monthly', { frequency: 'monthly', dayOfWeek: null, dayOfMonth: 15 }),
    );

    await runDueScheduledEntries(db, { now });
    expect([...(await entriesByDate(aToday.id))]).toEqual([[TODAY, 1]]);
    expect([...(await entriesByDate(bToday.id))]).toEqual([[TODAY, 1]]);
    const all = mondays('1900-01-01', TODAY);
    expect([...(await entriesByDate(runaway))]).toEqual(all.slice(0, PER_ROUND).map((d) => [d, 1]));

    // The next round carries on where it stopped, and posts nothing twice.
    await runDueScheduledEntries(db, { now });
    expect([...(await entriesByDate(runaway))]).toEqual(all.slice(0, 2 * PER_ROUND).map((d) => [d, 1]));
    expect([...(await entriesByDate(aToday.id))]).toEqual([[TODAY, 1]]);
    expect([...(await entriesByDate(bToday.id))]).toEqual([[TODAY, 1]]);
  });

  it('catches a backlog up over later rounds, in order, each occurrence exactly once, workers racing or not', async () => {
    const c = await fixture();
    // The oldest start allowed on this day: the first day of the previous fiscal year.
    const alone = await createScheduledEntry(db, c.ctx, c.orgId, template(c, 'Alone', { startDate: '2025-01-01' }));
    const all = mondays('2025-01-06', TODAY);
    expect(all).toHaveLength(76);

    for (let round = 1; round <= Math.ceil(all.length / PER_ROUND); round++) {
      await runDueScheduledEntries(db, { now });
      const posted = await entriesByDate(alone.id);
      expect([...posted]).toEqual(all.slice(0, Math.min(round * PER_ROUND, all.length)).map((d) => [d, 1]));
    }
    expect(await runDueScheduledEntries(db, { now })).toMatchObject({ posted: 0 });

    // Three workers at once: each runs at most the cap of a template in its round.
    const raced = await createScheduledEntry(db, c.ctx, c.orgId, template(c, 'Raced', { startDate: '2025-01-01' }));
    let rounds = 0;
    for (;;) {
      const results = await Promise.all([1, 2, 3].map(() => runDueScheduledEntries(db, { now })));
      const posted = await entriesByDate(raced.id);
      // Always a prefix of the occurrences: none skipped, none twice, whichever worker ran it.
      expect([...posted]).toEqual(all.slice(0, posted.size).map((d) => [d, 1]));
      rounds++;
      if (results.every((r) => r.posted === 0)) break;
      expect(results.every((r) => r.posted <= PER_ROUND)).toBe(true);
    }
    expect((await entriesByDate(raced.id)).size).toBe(all.length);
    expect(rounds).toBeGreaterThan(2);
  });

  it('serves firms in turn, then templates in turn, when a round cannot serve everyone', async () => {
    const busy = await fixture();
    const quiet = await fixture();
    const other = await fixture();
    const backlog = [];
    for (const name of ['B1', 'B2', 'B3', 'B4']) {
      backlog.push(
        await createScheduledEntry(db, busy.ctx, busy.orgId, template(busy, name, { startDate: '2025-01-01' })),
      );
    }
    const q = await createScheduledEntry(db, quiet.ctx, quiet.orgId, template(quiet, 'Quiet', {}));
    const o = await createScheduledEntry(db, other.ctx, other.orgId, template(other, 'Other', {}));

    // Three occurrences in this round: one per firm, however old the busy firm's backlog is.
    expect(await runDueScheduledEntries(db, { now, limit: 3 })).toEqual({ posted: 3, failed: 0 });
    expect((await entriesByDate(q.id)).size).toBe(1);
    expect((await entriesByDate(o.id)).size).toBe(1);
    const served = await Promise.all(backlog.map(async (t) => (await entriesByDate(t.id)).size));
    expect(served.sort()).toEqual([0, 0, 0, 1]);

    // The next round serves the busy firm's templates that waited before the one already served.
    expect(await runDueScheduledEntries(db, { now, limit: 3 })).toEqual({ posted: 3, failed: 0 });
    const after = await Promise.all(backlog.map(async (t) => (await entriesByDate(t.id)).size));
    expect(after).toEqual([1, 1, 1, 1]);
  });
});
