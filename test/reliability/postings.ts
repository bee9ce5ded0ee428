import { randomUUID } from 'node:crypto';
import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';

/** One posting a client wants made, retried with its key until it is answered. */
export interface PostingJob {
  key: string;
  body: string;
  cents: number;
  memo: string;
  receipt: { journalEntryId: string } | null;
  attempts: number;
  failures: number;
}

export function postingJob(i: number, tag: string, accounts: { debit: string; credit: string }): PostingJob {
  const cents = 1_000 + i;
  const memo = `${tag} ${i}`;
  return {
    key: randomUUID(),
    cents,
    memo,
    body: JSON.stringify({
      txnDate: '2026-06-15',
      memo,
      lines: [
        { accountId: accounts.debit, postingType: 'debit', amount: cents },
        { accountId: accounts.credit, postingType: 'credit', amount: cents },
      ],
    }),
    receipt: null,
    attempts: 0,
    failures: 0,
  };
}

export interface PostingEntryRow {
  id: string;
  memo: string;
  lines: number;
  debits: number;
  credits: number;
  outbox: number;
}

/** The organization's entries whose memo starts with `tag`, with their lines' totals and entry.posted outbox rows. */
export async function postedEntries(db: Executor, organizationId: string, tag: string): Promise<PostingEntryRow[]> {
  return rowsOf<PostingEntryRow>(
    await db.execute(sql`
      select e.id, e.memo,
             (select count(*)::int from journal_lines l where l.entry_id = e.id) as lines,
             (select coalesce(sum(greatest(l.amount_cents, 0)), 0)::float8 from journal_lines l where l.entry_id = e.id)
               as debits,
             (select coalesce(sum(greatest(-l.amount_cents, 0)), 0)::float8 from journal_lines l where l.entry_id = e.id)
               as credits,
             (select count(*)::int from outbox_events o
              where o.organization_id = e.organization_id and o.type = 'entry.posted'
                and o.payload->>'id' = e.id::text) as outbox
      from journal_entries e
      where e.organization_id = ${organizationId} and e.memo like ${`${tag} %`}`),
  );
}

/** Every job posted exactly once: one entry per job, under its receipt, balanced, with its outbox row. */
export function exactlyOnceProblems(jobs: PostingJob[], entries: PostingEntryRow[]): string[] {
  const problems: string[] = [];
  if (entries.length !== jobs.length) problems.push(`${entries.length} entries for ${jobs.length} postings`);
  const byId = new Map(entries.map((e) => [e.id, e]));
  const memos = new Set(entries.map((e) => e.memo));
  if (memos.size !== entries.length) problems.push('a posting was written twice');
  for (const job of jobs) {
    const entry = byId.get(job.receipt?.journalEntryId ?? '');
    if (!entry) problems.push(`${job.memo}: its receipt names no entry`);
    else if (entry.memo !== job.memo || entry.lines !== 2 || entry.debits !== job.cents || entry.credits !== job.cents)
      problems.push(`${job.memo}: entry ${JSON.stringify(entry)}`);
    else if (entry.outbox !== 1) problems.push(`${job.memo}: ${entry.outbox} entry.posted outbox rows`);
  }
  return problems;
}
