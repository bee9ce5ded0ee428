/**
 * Several processes on one database: three compiled API processes and two workers against one Postgres database and
 * one Redis, under a mixed load spread across the three. Each posting's Idempotency-Key is sent to all three at once;
 * three agents write and read through the gateway, one of them past the firm's write budget, and a fourth reads past
 * the firm's read limit; two webhook subscriptions receive what is posted; a scheduled template with past occurrences
 * is due while every process runs the scheduled runner. Afterwards: every key posted once, the over-budget agent got
 * exactly its budget through and the over-limit reader exactly its limit (the counters live in Redis), the others all
 * theirs; every event arrived at least once and in sequence order per subscription, every occurrence posted once, the
 * agent audit chains verify, and the trial balance equals a plain sum of the lines.
 *
 * Then bank feeds, against the local Plaid-compatible sandbox aggregator every process is configured with: two feeds
 * connected, and in several rounds new rows appended to their items while signed webhooks (a fresh token each) reach
 * every API process at once, so the requested syncs race across processes. Afterwards: every appended row is stored
 * once, each connection's cursor is at the end of its item's log, the pages applied (each one's `bank_feed.synced`
 * audit row) add up to the log exactly, so none was applied twice, and each register lists what the bank sent.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { decodeSandboxCursor, type SandboxTransaction, sandboxActivity } from '@firm/banking/sandbox/activity';
import { type SandboxAggregatorServer, startSandboxAggregator } from '@firm/banking/sandbox/server';
import { CLOSE_EVIDENCE_HASHERS } from '@firm/close';
import { redisReachable } from '@firm/core/redis-probe';
import { rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { seedDemo } from '@firm/demo';
import { openAuditTrail, verifyAuditChains } from '@firm/gateway';
import { createApiKey } from '@firm/identity';
import { type Envelope } from '@firm/webhooks';
import { type Receiver, startReceiver, verifyDelivery } from '@firm/webhooks/testing';
import { sql } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { TEST_AUDIT_HMAC_KEYS } from '../../apps/api/src/config';
import { exactlyOnceProblems, type PostingJob, postedEntries, postingJob } from './postings';
import { root, type RunningServer, startServer, startWorker } from './server';

/** The Redis the processes share (TEST_REDIS_URL: CI's is a service of its own, not on this host). */
const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const KEYS = 60;
const WRITE_BUDGET = 20;
/** Writes of the agent that goes past the budget, and of each agent that stays within it. */
const OVER_BUDGET_WRITES = 36;
const WITHIN_BUDGET_WRITES = 12;
const READS_PER_AGENT = 30;
/** The firm's read limit (per credential per minute): the agents above read within it, the reader past it. */
const READ_LIMIT = 40;
const OVER_LIMIT_READS = 60;
/** Weekly occurrences of the scheduled template, all past or today when the test starts. */
const SCHEDULED_WEEKS = 12;
const SETTLE_MS = 30_000;
/** The sandbox aggregator's credentials, and the first day of each item's month of activity. */
const PLAID = { clientId: 'multi-process-client', secret: 'multi-process-secret' };
const SANDBOX_START = '2026-10-01';
/** Rounds of bank activity, rows appended to each item per round; each round's webhooks go to every process. */
const SYNC_ROUNDS = 4;
const ROWS_PER_ROUND = 5;
const WEBHOOK_PATH = '/api/aggregator/webhook';

const redis = await redisReachable(REDIS_URL);
// Under CI=true a missing Redis fails the run rather than skipping the suite unseen.
if (process.env.CI === 'true' && process.env.DATABASE_URL && !redis) throw new Error(`no Redis at ${REDIS_URL}`);
const runnable = Boolean(process.env.DATABASE_URL) && redis;

let database: TestDatabase;
let anchorDir: string;
let apis: RunningServer[] = [];
let workers: RunningServer[] = [];
let receivers: Receiver[] = [];
let sandbox: SandboxAggregatorServer | undefined;
let seeded: Awaited<ReturnType<typeof seedDemo>>;
let organizationId: string;
let accounts: { debit: string; credit: string };
let ledgerAccounts: Map<string, string>;
const requests = new Map<string, number>();
/** Postings answered with the receipt of the posting another request with the key made. */
let replays = 0;

beforeAll(async () => {
  if (!runnable) return;
  await promisify(execFile)(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root });
  database = await createTestDatabase();
  seeded = await seedDemo(database.db, {});
  organizationId = seeded.organizations[0]?.id as string;
  const byCode = new Map(
    rowsOf<{ id: string; code: string }>(
      await database.db.execute(sql`select id, code from accounts where organization_id = ${organizationId}`),
    ).map((a) => [a.code, a.id]),
  );
  accounts = { debit: byCode.get('6000') as string, credit: byCode.get('1000') as string };
  ledgerAccounts = byCode;
  sandbox = await startSandboxAggregator({ ...PLAID, start: SANDBOX_START });
  anchorDir = await mkdtemp(join(tmpdir(), 'multi-process-anchors-'));
  // What every process shares: the database, Redis (under a prefix of this run's), the audit key and anchors.
  const env = {
    REDIS_URL,
    REDIS_KEY_PREFIX: `multi-process-${randomUUID()}:`,
    AUDIT_HMAC_KEYS: TEST_AUDIT_HMAC_KEYS,
    AUDIT_ANCHOR_DIR: anchorDir,
    WEBHOOKS_ALLOW_INSECURE_LOCALHOST: 'true',
    SCHEDULED_ENTRIES_INTERVAL_SECONDS: '1',
    // Bank feeds through the sandbox aggregator (tokens sealed under the development key every process shares).
    BANK_FEEDS: 'on',
    PLAID_CLIENT_ID: PLAID.clientId,
    PLAID_SECRET: PLAID.secret,
    PLAID_BASE_URL: sandbox.url,
    SANDBOX_AGGREGATOR: 'false',
    // Five processes share the server's connections (100 by default) with the test and whatever else runs.
    DB_POOL_MAX: '8',
  };
  const url = database.url as string;
  apis = await Promise.all(
    [0, 1, 2].map(() => startServer(url, { args: [join(root, 'dist', 'server.js')], env, quiet: true })),
  );
  workers = await Promise.all(
    [0, 1].map(() => startWorker(url, [join(root, 'dist', 'worker.js')], { env, quiet: true })),
  );
  receivers = await Promise.all(['/first', '/second'].map((path) => startReceiver(path)));
}, 180_000);

afterEach((context) => {
  if (context.task.result?.state !== 'fail') return;
  for (const [name, p] of [
    ...apis.map((p, i) => [`api ${i}`, p] as const),
    ...workers.map((p, i) => [`worker ${i}`, p] as const),
  ]) {
    process.stdout.write(`--- ${name} (last output) ---\n${p.output().slice(-4000)}\n`);
  }
});

afterAll(async () => {
  await Promise.all([...apis, ...workers].map((p) => p.stop()));
  await Promise.all(receivers.map((r) => r.close()));
  await sandbox?.close();
  await database?.close();
  if (anchorDir) await rm(anchorDir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One request to one process, counted against it. */
async function call(
  api: RunningServer,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: unknown,
): Promise<{ status: number; json: unknown; replayed: boolean; retryAfter: string | null; requestId: string | null }> {
  requests.set(api.base, (requests.get(api.base) ?? 0) + 1);
  const res = await fetch(`${api.base}${path}`, {
    method,
    headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return {
    status: res.status,
    json: text ? (JSON.parse(text) as unknown) : null,
    replayed: res.headers.get('idempotent-replayed') === 'true',
    retryAfter: res.headers.get('retry-after'),
    requestId: res.headers.get('x-request-id'),
  };
}

const apiAt = (i: number) => apis[i % apis.length] as RunningServer;
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });

/** Sends the job's key to every process at once, each retrying while another holds the key, until all answer. */
async function postEverywhere(job: PostingJob, headers: Record<string, string>): Promise<string[]> {
  return Promise.all(
    apis.map(async (api) => {
      for (;;) {
        job.attempts++;
        const res = await call(
          api,
          'POST',
          '/api/v1/journal-entries',
          { ...headers, 'idempotency-key': job.key },
          job.body,
        );
        if (res.status === 201) {
          const receipt = res.json as { journalEntryId: string };
          job.receipt ??= receipt;
          if (res.replayed) replays++;
          return receipt.journalEntryId;
        }
        if (res.status !== 409) throw new Error(`posting answered ${res.status}: ${JSON.stringify(res.json)}`);
        job.failures++;
        await sleep(10);
      }
    }),
  );
}

/** An agent's gateway writes (each to the next process) and reads; what each write was answered. */
async function agentLoad(
  key: string,
  name: string,
  writes: number,
): Promise<{ written: number; refused: number; reads: number[] }> {
  const headers = bearer(key);
  const base = `/agent/v1/acct/clients/${organizationId}`;
  const answers = await Promise.all(
    Array.from({ length: writes }, (_, i) =>
      call(
        apiAt(i),
        'POST',
        `${base}/entities/Customer`,
        { ...headers, 'idempotency-key': randomUUID() },
        {
          DisplayName: `${name} ${i}`,
        },
      ),
    ),
  );
  const reads = await Promise.all(
    Array.from(
      { length: READS_PER_AGENT },
      async (_, i) => (await call(apiAt(i), 'GET', `${base}/customers`, headers)).status,
    ),
  );
  for (const a of answers) if (a.status !== 201 && a.status !== 429) throw new Error(`write answered ${a.status}`);
  return {
    written: answers.filter((a) => a.status === 201).length,
    refused: answers.filter((a) => a.status === 429).length,
    reads,
  };
}

/** An agent that only reads, all at once and each read to the next process: what each read was answered. */
async function readPastLimit(key: string, reads: number) {
  const path = `/agent/v1/acct/clients/${organizationId}/customers`;
  return Promise.all(Array.from({ length: reads }, (_, i) => call(apiAt(i), 'GET', path, bearer(key))));
}

const count = async (query: ReturnType<typeof sql>) =>
  rowsOf<{ n: number }>(await database.db.execute(query))[0]?.n ?? 0;

/** Polls until `done` holds or SETTLE_MS passes. */
async function settle(done: () => Promise<boolean>): Promise<void> {
  const until = Date.now() + SETTLE_MS;
  while (!(await done()) && Date.now() < until) await sleep(250);
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

describe.runIf(runnable)('three API processes and two workers on one database', () => {
  it('posts each key once, holds the write budget and the read limit, delivers in order, runs each occurrence once', async () => {
    const admin = bearer(seeded.apiKey);
    const orgHeaders = { ...admin, 'x-organization-id': organizationId };
    const budget = await call(apiAt(0), 'PATCH', '/agent/v1/limits', admin, {
      writeBudget: WRITE_BUDGET,
      readLimit: READ_LIMIT,
    });
    expect(budget.status, JSON.stringify(budget.json)).toBe(200);
    const subscriptions = await Promise.all(
      receivers.map(async (r, i) => {
        const res = await call(apiAt(i), 'POST', '/api/v1/webhooks', admin, {
          url: r.url,
          eventTypes: ['entry.posted'],
        });
        expect(res.status, JSON.stringify(res.json)).toBe(201);
        return (res.json as { data: { id: string; secret: string } }).data;
      }),
    );
    const [readerKey, ...agentKeys] = await Promise.all(
      [0, 1, 2, 3].map(async () => (await createApiKey(database.db, { firmId: seeded.firmId })).key),
    );

    const today = Date.now();
    const jobs = Array.from({ length: KEYS }, (_, i) => postingJob(i, 'multi-process', accounts));
    const [receipts, agents, reader, template] = await Promise.all([
      Promise.all(jobs.map((job) => postEverywhere(job, orgHeaders))),
      Promise.all(
        agentKeys.map((key, i) => agentLoad(key, `agent ${i}`, i === 0 ? OVER_BUDGET_WRITES : WITHIN_BUDGET_WRITES)),
      ),
      readPastLimit(readerKey as string, OVER_LIMIT_READS),
      call(
        apiAt(2),
        'POST',
        '/api/v1/scheduled-journal-entries',
        { ...orgHeaders, 'idempotency-key': randomUUID() },
        {
          name: 'Weekly accrual',
          memo: 'weekly accrual, several processes',
          lines: [
            { accountId: accounts.debit, debitCents: 700 },
            { accountId: accounts.credit, creditCents: 700 },
          ],
          schedule: {
            frequency: 'weekly',
            dayOfWeek: ((new Date(today).getUTCDay() + 6) % 7) + 1,
            startDate: isoDay(today - (SCHEDULED_WEEKS - 1) * 7 * 86_400_000),
            endDate: isoDay(today),
          },
        },
      ),
    ]);
    expect(template.status, JSON.stringify(template.json)).toBe(201);
    const templateId = (template.json as { data: { id: string } }).data.id;

    // Every process answered each key with the same entry, and the books hold each once.
    for (const [i, ids] of receipts.entries())
      expect(new Set(ids), jobs[i]?.memo).toEqual(new Set([jobs[i]?.receipt?.journalEntryId]));
    expect(replays).toBe(KEYS * (apis.length - 1));
    expect(exactlyOnceProblems(jobs, await postedEntries(database.db, organizationId, 'multi-process'))).toEqual([]);

    // The over-budget agent got exactly its budget through, whichever process it reached; the others all theirs.
    const [over, ...within] = agents as [(typeof agents)[0], ...typeof agents];
    expect(over).toMatchObject({ written: WRITE_BUDGET, refused: OVER_BUDGET_WRITES - WRITE_BUDGET });
    for (const a of within) expect(a).toMatchObject({ written: WITHIN_BUDGET_WRITES, refused: 0 });
    for (const a of agents) expect(a.reads.every((s) => s === 200)).toBe(true);
    // The reader got exactly the read limit through (a counter of its own, exact across processes in Redis), the rest
    // answered 429 RATE_LIMITED with Retry-After; the agents above, reading within the limit, were all answered.
    const readsThrough = reader.filter((r) => r.status === 200).length;
    expect(readsThrough).toBe(READ_LIMIT);
    const limited = reader.filter((r) => r.status !== 200);
    expect(limited).toHaveLength(OVER_LIMIT_READS - READ_LIMIT);
    for (const r of limited) {
      expect(r.status).toBe(429);
      expect(r.json).toEqual({
        error: {
          code: 'RATE_LIMITED',
          message: expect.stringContaining('retry in') as unknown,
          retryable: true,
          requestId: r.requestId,
        },
      });
      expect(Number(r.retryAfter)).toBeGreaterThan(0);
    }
    for (const [i, a] of agents.entries()) {
      const stored = await count(sql`select count(*)::int as n from contacts
        where organization_id = ${organizationId} and name like ${`agent ${i} %`}`);
      expect(stored).toBe(a.written);
    }

    // Every occurrence posted once, by whichever process claimed it.
    const runs = () =>
      count(sql`select count(*)::int as n from scheduled_entry_runs
        where organization_id = ${organizationId} and schedule_id = ${templateId} and status = 'posted'`);
    await settle(async () => (await runs()) === SCHEDULED_WEEKS);
    expect(await runs()).toBe(SCHEDULED_WEEKS);
    const scheduledEntries = await count(sql`select count(*)::int as n from journal_entries
      where organization_id = ${organizationId} and memo = 'weekly accrual, several processes'`);
    expect(scheduledEntries).toBe(SCHEDULED_WEEKS);

    // Every entry.posted event reached both receivers at least once, first seen in sequence order.
    const events = KEYS + SCHEDULED_WEEKS;
    const undelivered = () =>
      count(sql`select count(*)::int as n from webhook_deliveries
        where subscription_id in (${subscriptions[0]?.id}::uuid, ${subscriptions[1]?.id}::uuid)
          and status <> 'succeeded'`);
    await settle(async () => receivers.every((r) => r.received.length >= events) && (await undelivered()) === 0);
    expect(await undelivered()).toBe(0);
    let delivered = 0;
    for (const [i, r] of receivers.entries()) {
      const envelopes: Envelope[] = r.received.map((q) => verifyDelivery(subscriptions[i]?.secret as string, q));
      const firstSeen: number[] = [];
      for (const e of envelopes) if (!firstSeen.includes(e.sequence)) firstSeen.push(e.sequence);
      expect(firstSeen).toEqual(Array.from({ length: events }, (_, n) => n + 1));
      delivered += firstSeen.length;
    }

    // The agents' audit chains verify, as `cli audit verify` checks them.
    const trail = await openAuditTrail({
      keys: TEST_AUDIT_HMAC_KEYS,
      dataDir: anchorDir,
      anchorDir,
      production: false,
    });
    const audit = await verifyAuditChains(database.db, trail, { evidence: CLOSE_EVIDENCE_HASHERS });
    expect(audit.breaks).toEqual([]);
    expect(audit.ok).toBe(true);

    // The trial balance, per account, is the plain sum of the posted lines.
    const endDate = isoDay(today);
    const tb = await call(apiAt(1), 'GET', `/api/v1/reports/trial-balance?endDate=${endDate}`, orgHeaders);
    expect(tb.status).toBe(200);
    const report = (tb.json as { data: { rows: { accountId: string; debitCents: number; creditCents: number }[] } })
      .data;
    const sums = rowsOf<{ account_id: string; net: number }>(
      await database.db.execute(sql`select l.account_id, sum(l.amount_cents)::float8 as net
        from journal_lines l join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
        where l.organization_id = ${organizationId} and e.status = 'posted' and e.entry_date <= ${endDate}::date
        group by l.account_id having sum(l.amount_cents) <> 0`),
    );
    const fromReport = Object.fromEntries(report.rows.map((r) => [r.accountId, r.debitCents - r.creditCents]));
    expect(fromReport).toEqual(Object.fromEntries(sums.map((s) => [s.account_id, s.net])));

    const perProcess = apis.map((api, i) => `api ${i}: ${requests.get(api.base) ?? 0}`).join(', ');
    const retried = jobs.filter((j) => j.failures > 0).length;
    console.log(
      `multi-process: requests per process (${perProcess}); ${KEYS} keys each sent to ${apis.length} processes, ` +
        `${replays} answers replayed, ${retried} keys told to retry while another process held them; agent writes ${agents.map((a) => `${a.written}/${a.written + a.refused}`).join(', ')} ` +
        `(budget ${WRITE_BUDGET}); reader ${readsThrough}/${OVER_LIMIT_READS} reads (limit ${READ_LIMIT}), ` +
        `the other agents' ${agents.map((a) => a.reads.length).join(' + ')} reads all answered; ${delivered} events delivered (${receivers.map((r) => r.received.length).join(' + ')} requests); ` +
        `${SCHEDULED_WEEKS} scheduled occurrences posted once; ${audit.chains.length} audit chains verified (${audit.events} events)`,
    );
  });

  it('syncs each bank-feed page once while webhooks reach every process at once', async () => {
    const agg = sandbox as SandboxAggregatorServer;
    const orgHeaders = { ...bearer(seeded.apiKey), 'x-organization-id': organizationId };
    const code = (c: string) => ledgerAccounts.get(c) as string;
    // Two feeds, each connected through another process: checking and card, and a savings account on its own.
    const feeds = await Promise.all(
      [
        {
          institutionName: 'Multi-process Bank',
          accounts: [
            { mask: '0000', accountId: code('1000') },
            { mask: '3333', accountId: code('2100') },
          ],
        },
        { institutionName: 'Multi-process Savings', accounts: [{ mask: '0000', accountId: code('1010') }] },
      ].map(async (body, i) => {
        const created = await fetch(`${agg.url}/sandbox/public_token/create`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({
            client_id: PLAID.clientId,
            secret: PLAID.secret,
            institution_id: 'ins_109508',
            options: { webhook: `${apiAt(i).base}${WEBHOOK_PATH}` },
          }),
        });
        const { public_token: publicToken } = (await created.json()) as { public_token: string };
        const res = await call(
          apiAt(i),
          'POST',
          '/api/v1/bank-feeds',
          { ...orgHeaders, 'idempotency-key': randomUUID() },
          { publicToken, ...body },
        );
        expect(res.status, JSON.stringify(res.json)).toBe(201);
        const data = (res.json as { data: { id: string; accounts: { mask: string; bankAccountId: string }[] } }).data;
        const [row] = rowsOf<{ item_id: string }>(
          await database.db.execute(sql`select item_id from bank_feed_connections where id = ${data.id}`),
        );
        return {
          id: data.id,
          itemId: row?.item_id as string,
          checking: data.accounts.find((a) => a.mask === '0000')?.bankAccountId as string,
          bankAccountIds: data.accounts.map((a) => a.bankAccountId),
          appended: [] as SandboxTransaction[],
        };
      }),
    );

    // Rounds of new activity: rows appended to each item, then a signed webhook per feed to every process at once
    // (each a delivery of its own: its issue time differs), and one of them sent again, which changes nothing.
    const webhooks = new Map<string, number>();
    let issued = Math.floor(Date.now() / 1000);
    let replaysIgnored = 0;
    const deliver = async (api: RunningServer, body: string, token: string) => {
      webhooks.set(api.base, (webhooks.get(api.base) ?? 0) + 1);
      const res = await fetch(`${api.base}${WEBHOOK_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'plaid-verification': token },
        body,
        signal: AbortSignal.timeout(15_000),
      });
      return { status: res.status, json: (await res.json()) as { syncRequested: boolean; duplicate: boolean } };
    };
    for (let round = 0; round < SYNC_ROUNDS; round++) {
      for (const feed of feeds) {
        for (let k = 0; k < ROWS_PER_ROUND; k++) {
          const t = appendedRow(feed.itemId, round, k);
          feed.appended.push(t);
          agg.append(feed.itemId, { kind: 'added', transaction: t });
        }
      }
      const sent = await Promise.all(
        feeds.flatMap((feed) =>
          apis.map(async (api) => {
            const body = JSON.stringify({
              webhook_type: 'TRANSACTIONS',
              webhook_code: 'SYNC_UPDATES_AVAILABLE',
              item_id: feed.itemId,
              initial_update_complete: true,
              historical_update_complete: true,
              environment: 'sandbox',
            });
            const token = await agg.signWebhook(body, { issuedAt: issued-- });
            const res = await deliver(api, body, token);
            expect(res).toEqual({ status: 200, json: { received: true, syncRequested: true, duplicate: false } });
            return { body, token };
          }),
        ),
      );
      const again = sent[round % sent.length] as { body: string; token: string };
      const replayed = await deliver(apiAt(round + 1), again.body, again.token);
      expect(replayed).toEqual({ status: 200, json: { received: true, syncRequested: false, duplicate: true } });
      replaysIgnored++;
      await sleep(200);
    }

    // Each item's log: its month of activity and the rows appended; the connection's cursor reaches its end.
    const logOf = (feed: (typeof feeds)[number]) => [
      ...sandboxActivity(feed.itemId, SANDBOX_START),
      ...feed.appended.map((t) => ({ kind: 'added' as const, transaction: t })),
    ];
    const position = async (feed: (typeof feeds)[number]) => {
      const [row] = rowsOf<{ cursor: string | null; requested: boolean }>(
        await database.db.execute(sql`select cursor, sync_requested_at is not null as requested
          from bank_feed_connections where id = ${feed.id}`),
      );
      return { at: decodeSandboxCursor(row?.cursor), requested: row?.requested };
    };
    await settle(async () => {
      for (const feed of feeds) {
        const p = await position(feed);
        if (p.at !== logOf(feed).length || p.requested) return false;
      }
      return true;
    });

    let pagesApplied = 0;
    let rowsApplied = 0;
    for (const feed of feeds) {
      const log = logOf(feed);
      expect(await position(feed)).toEqual({ at: log.length, requested: false });
      // Every appended row stored once, by the aggregator's transaction id; no row of the feed's is there twice.
      const ids = feed.appended.map((t) => t.transaction_id);
      const stored = rowsOf<{ external_id: string; n: number }>(
        await database.db.execute(sql`select external_id, count(*)::int as n from bank_transactions
          where organization_id = ${organizationId}
            and bank_account_id = any(${sql.param(feed.bankAccountIds)}::uuid[])
          group by external_id`),
      );
      expect(stored.filter((r) => r.n !== 1)).toEqual([]);
      expect(stored.filter((r) => ids.includes(r.external_id)).length).toBe(ids.length);
      // The pages applied, each recorded by its own audit row in the transaction that moved the cursor, add up to the
      // item's log exactly: a page applied twice would count its changes twice.
      const [pages] = rowsOf<{ pages: number; added: number; modified: number; removed: number }>(
        await database.db.execute(sql`select count(*)::int as pages,
            coalesce(sum((data->>'added')::int), 0)::int as added,
            coalesce(sum((data->>'modified')::int), 0)::int as modified,
            coalesce(sum((data->>'removed')::int), 0)::int as removed
          from audit_events where action = 'bank_feed.synced' and resource_id = ${feed.id}`),
      );
      expect(pages).toMatchObject({
        added: log.filter((c) => c.kind === 'added').length,
        modified: log.filter((c) => c.kind === 'modified').length,
        removed: log.filter((c) => c.kind === 'removed').length,
      });
      pagesApplied += pages?.pages ?? 0;
      rowsApplied += ids.length;
      // The checking register, read through another process, lists the feed's rows as the bank sent them.
      const register = await call(
        apiAt(2),
        'GET',
        `/api/v1/bank-accounts/${feed.checking}/transactions?sourceType=aggregator_bank_feed&limit=1000`,
        orgHeaders,
      );
      expect(register.status).toBe(200);
      const listed = (register.json as { data: { externalId: string | null; amountCents: number }[] }).data;
      const inTable = rowsOf<{ external_id: string; amount_cents: number }>(
        await database.db.execute(sql`select external_id, amount_cents::float8 as amount_cents from bank_transactions
          where organization_id = ${organizationId} and bank_account_id = ${feed.checking}`),
      );
      const byId = (rows: { id: string | null; cents: number }[]) =>
        Object.fromEntries(rows.map((r) => [r.id, r.cents]));
      expect(byId(listed.map((r) => ({ id: r.externalId, cents: r.amountCents })))).toEqual(
        byId(inTable.map((r) => ({ id: r.external_id, cents: r.amount_cents }))),
      );
      expect(listed).toHaveLength(inTable.length);
      const fromBank = byId(feed.appended.map((t) => ({ id: t.transaction_id, cents: -Math.round(t.amount * 100) })));
      expect(
        byId(
          listed
            .filter((r) => ids.includes(r.externalId ?? ''))
            .map((r) => ({ id: r.externalId, cents: r.amountCents })),
        ),
      ).toEqual(fromBank);
    }

    const perProcess = apis.map((api, i) => `api ${i}: ${webhooks.get(api.base) ?? 0}`).join(', ');
    const fetched = agg.requestCount('/transactions/sync');
    console.log(
      `multi-process bank feeds: webhooks per process (${perProcess}), ${replaysIgnored} replays ignored; ` +
        `${fetched} sync pages fetched, ${pagesApplied} applied, ${fetched - pagesApplied} dropped as applied by ` +
        `another sync; ` +
        `${rowsApplied} appended rows stored once across ${feeds.length} feeds in ${SYNC_ROUNDS} rounds`,
    );
  });
});

/** A row the bank reports later: on the item's checking account, money out. */
function appendedRow(itemId: string, round: number, k: number): SandboxTransaction {
  return {
    transaction_id: `${itemId}-multi-process-${round}-${k}`,
    account_id: `${itemId}-checking`,
    amount: 10 + round + k / 100,
    iso_currency_code: 'USD',
    date: '2026-10-28',
    authorized_date: '2026-10-28',
    name: `MULTI PROCESS ${round}-${k}`,
    merchant_name: null,
    pending: false,
    pending_transaction_id: null,
    payment_channel: 'other',
    transaction_type: 'place',
  };
}
