/**
 * Process faults: the server is killed with SIGKILL in the middle of a burst of postings, each with its own
 * Idempotency-Key, and started again; the client retries every request that got no answer, with the same key and
 * body, until it is answered. Afterwards every request was posted exactly once: as many entries as keys, each with its
 * balanced lines and its entry.posted outbox row, every receipt naming an entry that exists, and a retry of an
 * answered request replaying the same receipt.
 */
import { rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { seedDemo } from '@firm/demo';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exactlyOnceProblems, type PostingJob, postedEntries, postingJob } from './postings';
import { type RunningServer, startServer } from './server';

const REQUESTS = Number(process.env.RELIABILITY_KILL_REQUESTS ?? 600);
const KILLS = 3;
const CONCURRENCY = 12;

let database: TestDatabase;
let server: RunningServer;
let headers: Record<string, string>;
let accountsByCode: Map<string, string>;
const runnable = Boolean(process.env.DATABASE_URL);

beforeAll(async () => {
  if (!runnable) return;
  database = await createTestDatabase();
  const seeded = await seedDemo(database.db, {});
  const organizationId = seeded.organizations[0]?.id as string;
  headers = {
    authorization: `Bearer ${seeded.apiKey}`,
    'x-organization-id': organizationId,
    'content-type': 'application/json',
  };
  accountsByCode = new Map(
    rowsOf<{ id: string; code: string }>(
      await database.db.execute(sql`select id, code from accounts where organization_id = ${organizationId}`),
    ).map((a) => [a.code, a.id]),
  );
  server = await startServer(database.url as string);
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await database?.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(runnable)('SIGKILL in the middle of a burst of postings', () => {
  it('posts every retried request exactly once, with its lines and its outbox row', async () => {
    const accounts = { debit: accountsByCode.get('6000') as string, credit: accountsByCode.get('1000') as string };
    const jobs = Array.from({ length: REQUESTS }, (_, i) => postingJob(i, 'kill test', accounts));
    let kills = 0;
    let restarting: Promise<void> | null = null;
    const answered = () => jobs.filter((j) => j.receipt).length;

    // Kills the server each time another share of the burst has been answered, and starts it again.
    const killer = (async () => {
      for (let k = 1; k <= KILLS; k++) {
        while (answered() < (REQUESTS * k) / (KILLS + 1)) await sleep(5);
        restarting = (async () => {
          await server.stop('SIGKILL');
          kills++;
          server = await startServer(database.url as string);
        })();
        await restarting;
        restarting = null;
      }
    })();

    const send = async (job: PostingJob) => {
      for (;;) {
        if (restarting) await restarting;
        job.attempts++;
        try {
          const res = await fetch(`${server.base}/api/v1/journal-entries`, {
            method: 'POST',
            headers: { ...headers, 'idempotency-key': job.key },
            body: job.body,
            signal: AbortSignal.timeout(15_000),
          });
          const text = await res.text();
          if (res.status === 201) {
            job.receipt ??= JSON.parse(text) as { journalEntryId: string };
            return;
          }
          // A request the dying server held (key in progress, database away): retried like any lost request.
          if (res.status !== 409 && res.status !== 503) throw new Error(`unexpected ${res.status}: ${text}`);
        } catch (err) {
          if ((err as Error).message.startsWith('unexpected')) throw err;
        }
        job.failures++;
        await sleep(20);
      }
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        while (next < jobs.length) await send(jobs[next++] as PostingJob);
      }),
    );
    await killer;

    // Replays of answered requests return the same receipt.
    for (const job of jobs.slice(0, 50)) {
      const res = await fetch(`${server.base}/api/v1/journal-entries`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': job.key },
        body: job.body,
      });
      expect(res.status).toBe(201);
      expect(res.headers.get('idempotent-replayed')).toBe('true');
      expect(((await res.json()) as { journalEntryId: string }).journalEntryId).toBe(job.receipt?.journalEntryId);
    }

    const entries = await postedEntries(database.db, headers['x-organization-id'] as string, 'kill test');
    const retried = jobs.filter((j) => j.failures > 0).length;
    process.stdout.write(
      `process faults: ${REQUESTS} postings, ${kills} SIGKILLs, ${jobs.reduce((s, j) => s + j.attempts, 0)} requests ` +
        `sent, ${retried} postings retried after a lost answer; ${entries.length} entries in the books\n`,
    );
    expect(kills).toBe(KILLS);
    expect(retried).toBeGreaterThan(0);
    expect(exactlyOnceProblems(jobs, entries)).toEqual([]);
  });
});
