/**
 * Database faults, on a Postgres cluster of the suite's own (initdb and pg_ctl in a temporary directory; the shared
 * server is never touched), reached by the service through a TCP proxy that can drop or stall connections. While
 * clients keep posting with idempotency keys: every backend is terminated (pg_terminate_backend), the cluster has a
 * fast restart, the proxy resets every connection and refuses new ones, then holds them open with nothing flowing.
 * While the database is away the service answers 503 SERVICE_UNAVAILABLE (retryable), it recovers by itself without a
 * restart, and every posting it acknowledged is in the books, once, with its lines and outbox row.
 */
import { seedDemo } from '@firm/demo';
import { type Database, openDatabase, rowsOf } from '@firm/db';
import { adminQuery } from '@firm/db/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Cluster, type FaultProxy, postgresBin, startCluster, startFaultProxy } from './cluster';
import { exactlyOnceProblems, type PostingJob, postedEntries, postingJob } from './postings';
import { type RunningServer, startServer } from './server';

const runnable = postgresBin() !== null && process.platform === 'linux';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let cluster: Cluster;
let proxy: FaultProxy;
let database: Database;
let server: RunningServer;
let headers: Record<string, string>;
let accounts: { debit: string; credit: string };

beforeAll(async () => {
  if (!runnable) return;
  cluster = await startCluster();
  proxy = await startFaultProxy(cluster.port);
  await adminQuery(cluster.url('postgres'), 'create database faults');
  database = openDatabase({ url: cluster.url('faults'), poolMax: 4 });
  await database.migrate();
  const seeded = await seedDemo(database.db, {});
  const organizationId = seeded.organizations[0]?.id as string;
  headers = {
    authorization: `Bearer ${seeded.apiKey}`,
    'x-organization-id': organizationId,
    'content-type': 'application/json',
  };
  const chart = rowsOf<{ id: string; code: string }>(
    await database.db.execute(sql`select id, code from accounts where organization_id = ${organizationId}`),
  );
  const code = (c: string) => chart.find((a) => a.code === c)?.id as string;
  accounts = { debit: code('6000'), credit: code('1000') };
  server = await startServer(`postgres://postgres@127.0.0.1:${proxy.port}/faults`, {
    env: { DB_CONNECT_TIMEOUT_MS: '1500', DB_POOL_MAX: '8' },
  });
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await database?.close();
  await proxy?.close();
  await cluster?.stop();
});

interface Answer {
  status: number;
  code: string | null;
  retryable: boolean | null;
}

async function call(path: string, init: RequestInit = {}): Promise<Answer | null> {
  try {
    const res = await fetch(`${server.base}${path}`, { ...init, signal: AbortSignal.timeout(20_000) });
    const body = (await res.json().catch(() => ({}))) as { error?: { code?: string; retryable?: boolean } };
    return { status: res.status, code: body.error?.code ?? null, retryable: body.error?.retryable ?? null };
  } catch {
    return null;
  }
}

describe.runIf(runnable)('the database goes away and comes back', () => {
  it('answers 503 while it is away, recovers by itself, and loses no acknowledged posting', async () => {
    const jobs: PostingJob[] = [];
    const refusals = new Map<string, number>();
    const unexpected: string[] = [];
    let running = true;

    const send = async (job: PostingJob) => {
      for (;;) {
        job.attempts++;
        const answer = await call('/api/v1/journal-entries', {
          method: 'POST',
          headers: { ...headers, 'idempotency-key': job.key },
          body: job.body,
        });
        if (answer?.status === 201) return;
        const kind = answer ? `${answer.status} ${answer.code}` : 'no answer';
        refusals.set(kind, (refusals.get(kind) ?? 0) + 1);
        if (answer && !(answer.retryable === true && (answer.status === 503 || answer.status === 409))) {
          unexpected.push(`${job.memo}: ${kind} retryable=${answer.retryable}`);
          return;
        }
        job.failures++;
        await sleep(50);
      }
    };
    const clients = Array.from({ length: 6 }, async () => {
      while (running) {
        const job = postingJob(jobs.length, 'db fault', accounts);
        jobs.push(job);
        await send(job);
      }
    });

    const away: Answer[] = [];
    const probe = async () => {
      const answer = await call('/api/v1/accounts', { headers });
      if (answer) away.push(answer);
      return answer;
    };
    await sleep(1500);
    const admin = (text: string) => adminQuery(cluster.url('postgres'), text);
    await admin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = 'faults'`);
    await sleep(1500);
    await Promise.all([cluster.restart('fast'), sleep(200).then(probe)]);
    await sleep(1500);
    proxy.set('drop');
    await sleep(300);
    const dropped = await probe();
    await sleep(2500);
    proxy.set('pass');
    await sleep(1500);
    proxy.set('stall');
    const stalled = probe();
    await sleep(4000);
    proxy.set('pass');
    await stalled;
    // Recovers by itself: ready again, without a restart of the service.
    let ready = 0;
    for (let i = 0; i < 100 && ready !== 200; i++) {
      ready = (await call('/api/ready'))?.status ?? 0;
      if (ready !== 200) await sleep(200);
    }
    await sleep(1000);
    running = false;
    await Promise.all(clients);

    // The receipts, read back by replaying each key: an answered request replays the entry it made.
    for (const job of jobs) {
      const res = await fetch(`${server.base}/api/v1/journal-entries`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': job.key },
        body: job.body,
      });
      expect(res.status).toBe(201);
      job.receipt = (await res.json()) as { journalEntryId: string };
    }
    const entries = await postedEntries(database.db, headers['x-organization-id'] as string, 'db fault');
    process.stdout.write(
      `database faults: ${jobs.length} postings, ${jobs.reduce((s, j) => s + j.attempts, 0)} requests; faults: ` +
        `terminate all backends, fast restart, proxy drop 2.8 s, proxy stall 4 s; refusals seen: ` +
        `${JSON.stringify(Object.fromEntries(refusals))}; probes while away: ${JSON.stringify(away)}\n`,
    );
    expect(unexpected).toEqual([]);
    expect(ready).toBe(200);
    expect(dropped).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', retryable: true });
    expect(await stalled).toMatchObject({ status: 503, code: 'SERVICE_UNAVAILABLE', retryable: true });
    expect(jobs.some((j) => j.failures > 0)).toBe(true);
    expect(exactlyOnceProblems(jobs, entries)).toEqual([]);
    expect(server.child.exitCode).toBeNull();
  });
});
