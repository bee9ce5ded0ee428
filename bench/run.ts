/**
 * npm run bench: posting throughput and latency over HTTP against two baselines measured in the same run (the same
 * entry written with plain SQL, and the route's own posting statement called from this process), report latency over
 * a ledger of 1,000,000 posted lines, and the server's peak RSS. Every HTTP figure is the compiled server's, run as
 * `start:prod` runs it. Needs DATABASE_URL (a Postgres server; a fresh database is created beside it and dropped
 * after).
 */
import { createHash, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { sql } from 'drizzle-orm';
import pg from 'pg';
import { API_KEYS, type Database, openDatabase } from '@firm/db';
import { adminQuery, withDatabase } from '@firm/db/testing';
import { seedDemo } from '@firm/demo';
import { postOnce } from '@firm/ledger';
import { headerJournalEntry } from '../apps/api/src/routes/posting/requests';
import type { RunningServer } from '../test/reliability/server';
import { startCompiledServer } from './server';

const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 8);
const LINES = Number(process.env.BENCH_LINES ?? 1_000_000);
/** The second size the reports are timed at (0: only LINES). */
const LARGE_LINES = Number(process.env.BENCH_LARGE_LINES ?? 10_000_000);
const ACCOUNTS = 1000;
const YEARS = 3;
/** The server's connection pool (DB_POOL_MAX), and the pool the route's own statement is run through here. */
const POOL_MAX = 20;
/** The goal for the compiled server's peak RSS under the posting load, in MB. */
const RSS_GOAL_MB = 200;
/** The goal for the posting route's requests/s over its own statement's at the same concurrency. */
const STATEMENT_RATIO_GOAL = 0.6;
const POSTING_PATH = '/api/v1/journal-entries';

const baseUrl = process.env.DATABASE_URL;
if (!baseUrl) {
  process.stderr.write('npm run bench needs DATABASE_URL (a Postgres server)\n');
  process.exit(2);
}

const fmt = (n: number, digits = 1) => n.toFixed(digits);
const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;

/** Peak resident set size of a process, from the kernel's high-water mark. */
function peakRssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? 0);
  return kb / 1024;
}

/** CPU seconds used so far by the whole machine (every process, user and system) and by one process. */
function cpuSeconds(pid: number): { machine: number; process: number } {
  const ticks = 100; // USER_HZ, 100 on Linux
  const [, ...fields] = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
  const busy = fields.slice(0, 8).reduce((sum, v, i) => (i === 3 || i === 4 ? sum : sum + Number(v)), 0);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const [utime, stime] = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .slice(11, 13)
    .map(Number);
  return { machine: busy / ticks, process: ((utime ?? 0) + (stime ?? 0)) / ticks };
}

/** Runs `load` and adds the CPU milliseconds per operation it cost the machine and the process `pid`. */
async function withCpu(
  pid: number,
  load: () => Promise<LoadResult>,
): Promise<LoadResult & { cpu: { machine: number; process: number } }> {
  const before = cpuSeconds(pid);
  const result = await load();
  const after = cpuSeconds(pid);
  const ops = result.rps * DURATION_S;
  const perOp = (s: number) => (ops > 0 ? (s * 1000) / ops : 0);
  return {
    ...result,
    cpu: { machine: perOp(after.machine - before.machine), process: perOp(after.process - before.process) },
  };
}

interface LoadResult {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function httpLoad(
  base: string,
  headers: Record<string, string>,
  body: string,
  connections: number,
): Promise<LoadResult> {
  const result = await autocannon({
    url: `${base}/api/v1/journal-entries`,
    connections,
    duration: DURATION_S,
    requests: [
      {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
        setupRequest: (req) => ({ ...req, headers: { ...req.headers, 'idempotency-key': randomUUID() } }),
      },
    ],
  });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.non2xx + result.errors,
  };
}

/**
 * Runs `workers` loops of `once(worker)` back to back for DURATION_S seconds, as autocannon drives the route: the rate
 * and latencies of the calls that succeeded, and how many failed.
 */
async function closedLoop(workers: number, once: (worker: number) => Promise<void>): Promise<LoadResult> {
  const latencies: number[] = [];
  let errors = 0;
  const deadline = performance.now() + DURATION_S * 1000;
  const worker = async (n: number) => {
    while (performance.now() < deadline) {
      const t0 = performance.now();
      try {
        await once(n);
        latencies.push(performance.now() - t0);
      } catch {
        errors++;
      }
    }
  };
  await Promise.all(Array.from({ length: workers }, (_, n) => worker(n)));
  latencies.sort((a, b) => a - b);
  return { rps: latencies.length / DURATION_S, p50: percentile(latencies, 50), p99: percentile(latencies, 99), errors };
}

/** The same balanced entry written with plain SQL: entry, two lines and the daily rollup, in one transaction. */
async function sqlLoad(
  url: string,
  orgId: string,
  debit: string,
  credit: string,
  connections: number,
): Promise<LoadResult> {
  const pool = new pg.Pool({ connectionString: url, max: connections });
  pool.on('error', () => {});
  const clients = await Promise.all(Array.from({ length: connections }, () => pool.connect()));
  try {
    return await closedLoop(connections, async (n) => {
      const client = clients[n] as pg.PoolClient;
      try {
        await client.query('begin');
        const entryId = randomUUID();
        await client.query(
          `insert into journal_entries (id, organization_id, status, source, entry_date, memo, posted_at, created_by_kind, created_by_id)
           values ($1, $2, 'posted', 'journal_entry', '2026-06-15', 'bench', now(), 'bench', 'bench')`,
          [entryId, orgId],
        );
        await client.query(
          `insert into journal_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
           values ($1, $3, $4, 1, $5, 1250), ($2, $3, $4, 2, $6, -1250)`,
          [randomUUID(), randomUUID(), orgId, entryId, debit, credit],
        );
        await client.query(
          `insert into account_daily_balances (organization_id, account_id, day, amount_cents)
           values ($1, $2, '2026-06-15', 1250), ($1, $3, '2026-06-15', -1250)
           on conflict (organization_id, account_id, day) do update set amount_cents = account_daily_balances.amount_cents + excluded.amount_cents`,
          [orgId, debit, credit].sort((a, b) => (a === orgId ? -1 : b === orgId ? 1 : a < b ? -1 : 1)),
        );
        await client.query('commit');
      } catch (err) {
        await client.query('rollback').catch(() => {});
        throw err;
      }
    });
  } finally {
    for (const client of clients) client.release();
    await pool.end();
  }
}

/**
 * What the posting route ends up executing, without HTTP: `postOnce` with a fresh key per call (planning, then the
 * one prepared posting statement), called from this process through a pool as large as the server's, for the same
 * body the route is sent. The request hash stands in for the route's (any hash does for a fresh key).
 */
async function statementLoad(
  database: Database,
  firmId: string,
  orgId: string,
  body: string,
  connections: number,
): Promise<LoadResult> {
  const input = headerJournalEntry(JSON.parse(body));
  const requestHash = createHash('sha256').update(body).digest('hex');
  const ctx = { firmId, actor: { kind: 'api_key', id: 'bench' } };
  const receiptOf = (r: { journalEntryId: string; status: string; postedAt: Date }) => ({
    journalEntryId: r.journalEntryId,
    status: r.status,
    postedAt: r.postedAt.toISOString(),
  });
  return closedLoop(connections, async () => {
    const outcome = await postOnce(database.db, { ...ctx, requestId: randomUUID() }, orgId, input, {
      key: {
        key: randomUUID(),
        firmId,
        organizationId: orgId,
        route: API_KEYS,
        formerRoute: `POST ${POSTING_PATH}`,
        target: `POST ${POSTING_PATH}`,
        requestHash,
        retentionHours: 24,
      },
      receiptOf,
    });
    if (outcome.status !== 201) throw new Error(`posting answered ${outcome.status}`);
  });
}

/** Each account's net over [$2, $3] summed from the posted lines, for the account types $4: the plain-SQL report. */
const PLAIN_NETS = `
  select a.id, a.code, a.name, a.type, a.subtype, s.net
  from (
    select l.account_id, sum(l.amount_cents) as net
    from journal_lines l join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
    where l.organization_id = $1 and e.status = 'posted' and e.entry_date between $2::date and $3::date
    group by l.account_id
  ) s
  join accounts a on a.organization_id = $1 and a.id = s.account_id
  where s.net <> 0 and a.type::text = any($4::text[])
  order by a.code`;

/** The balance sheet as of $2 summed from the posted lines: each account's balance, and earnings before and from $3. */
const PLAIN_BALANCE_SHEET = `
  select a.id, a.code, a.name, a.type, a.subtype, s.net, s.before_year
  from (
    select l.account_id, sum(l.amount_cents) as net,
           sum(l.amount_cents) filter (where e.entry_date < $3::date) as before_year
    from journal_lines l join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
    where l.organization_id = $1 and e.status = 'posted' and e.entry_date <= $2::date
    group by l.account_id
  ) s
  join accounts a on a.organization_id = $1 and a.id = s.account_id
  where s.net <> 0
  order by a.code`;

async function main() {
  const name = `bench_${Date.now()}`;
  await adminQuery(baseUrl as string, `create database ${name}`);
  const url = withDatabase(baseUrl as string, name);
  const database = openDatabase({ url, poolMax: 4 });
  const statementPool = openDatabase({ url, poolMax: POOL_MAX });
  let server: RunningServer | undefined;
  try {
    await database.migrate();
    const demo = await seedDemo(database.db);
    const [orgA, orgB] = demo.organizations as unknown as [{ id: string }, { id: string }];
    const accounts = (await database.db.execute(
      `select id, code from accounts where organization_id = '${orgA.id}' and code in ('6300', '1000')`,
    )) as unknown as { rows: { id: string; code: string }[] };
    const debit = accounts.rows.find((a) => a.code === '6300')?.id as string;
    const credit = accounts.rows.find((a) => a.code === '1000')?.id as string;

    const started = await startCompiledServer(url, {
      DB_POOL_MAX: String(POOL_MAX),
      // Delivery runs in its own process here, as when scaled out; the posting still writes its outbox rows.
      WEBHOOK_WORKER: 'false',
    });
    server = started;
    const headers = { authorization: `Bearer ${demo.apiKey}`, 'x-organization-id': orgA.id };
    const body = JSON.stringify({
      txnDate: '2026-06-15',
      memo: 'bench',
      lines: [
        { accountId: debit, postingType: 'debit', amount: 1250 },
        { accountId: credit, postingType: 'credit', amount: 1250 },
      ],
    });

    for (const c of [10, 50]) {
      await httpLoad(started.base, headers, body, c); // warm-up
      // Each side starts from a vacuumed database with current planner statistics, as autovacuum keeps a live one
      // (a run is shorter than its naptime): none inherits another's dead rollup row versions.
      await database.db.execute(sql`vacuum analyze`);
      const serverPid = started.child.pid as number;
      const http = await withCpu(serverPid, () => httpLoad(started.base, headers, body, c));
      await database.db.execute(sql`vacuum analyze`);
      const plain = await withCpu(serverPid, () => sqlLoad(url, orgA.id, debit, credit, c));
      await statementLoad(statementPool, demo.firmId, orgA.id, body, c); // warm-up
      await database.db.execute(sql`vacuum analyze`);
      const statement = await statementLoad(statementPool, demo.firmId, orgA.id, body, c);
      process.stdout.write(
        `posting c=${c}: route ${fmt(http.rps)} req/s p50 ${fmt(http.p50)} ms p99 ${fmt(http.p99)} ms (errors ${http.errors}) | ` +
          `plain SQL ${fmt(plain.rps)} tx/s p50 ${fmt(plain.p50)} ms p99 ${fmt(plain.p99)} ms | ratio ${fmt(http.rps / plain.rps, 2)}\n` +
          `posting c=${c}: its own statement (postOnce from this process, pool of ${POOL_MAX}) ${fmt(statement.rps)} /s ` +
          `p50 ${fmt(statement.p50)} ms p99 ${fmt(statement.p99)} ms (errors ${statement.errors}) | ` +
          `route ÷ statement ${fmt(http.rps / statement.rps, 2)} (goal at least ${STATEMENT_RATIO_GOAL})\n` +
          `posting c=${c}: CPU per posting, whole machine (server, Postgres, load): route ${fmt(http.cpu.machine, 2)} ms ` +
          `(of which the server ${fmt(http.cpu.process, 2)} ms) | plain SQL ${fmt(plain.cpu.machine, 2)} ms\n`,
      );
      // The kernel's high-water mark: the peak through this level and those before it.
      process.stdout.write(
        `compiled server peak RSS under the posting load through c=${c}: ` +
          `${fmt(peakRssMb(started.child.pid as number))} MB (goal under ${RSS_GOAL_MB} MB)\n`,
      );
    }

    // A large ledger in the second organization: LINES posted lines over ACCOUNTS accounts and YEARS years, then
    // LARGE_LINES. Each report is timed over HTTP and beside the same figures summed by plain SQL over the lines.
    const reportHeaders = { authorization: `Bearer ${demo.apiKey}`, 'x-organization-id': orgB.id };
    const timeGet = async (path: string) => {
      const samples: number[] = [];
      for (let i = 0; i < 7; i++) {
        const s = performance.now();
        const res = await fetch(`${started.base}${path}`, { headers: reportHeaders });
        if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
        await res.arrayBuffer();
        samples.push(performance.now() - s);
      }
      samples.sort((a, b) => a - b);
      return percentile(samples, 50);
    };
    const plain = new pg.Client({ connectionString: url });
    await plain.connect();
    const timeSql = async (text: string, values: unknown[]) => {
      const samples: number[] = [];
      for (let i = 0; i < 3; i++) {
        const s = performance.now();
        await plain.query(text, values);
        samples.push(performance.now() - s);
      }
      samples.sort((a, b) => a - b);
      return percentile(samples, 50);
    };
    try {
      let lines = 0;
      for (const size of [LINES, LARGE_LINES].filter((n, i, all) => n > 0 && (i === 0 || n > (all[0] ?? 0)))) {
        const t0 = performance.now();
        lines = await bulkLedger(url, orgB.id, size - lines, lines / 2 + 1);
        process.stdout.write(`built a ledger of ${lines} posted lines in ${fmt((performance.now() - t0) / 1000)} s\n`);
        const busy = (await database.db.execute(
          `select account_id from account_daily_balances where organization_id = '${orgB.id}' group by account_id order by count(*) desc limit 1`,
        )) as unknown as { rows: { account_id: string }[] };
        const reports: [string, string, string | null, unknown[]][] = [
          [
            'trial balance',
            '/api/v1/reports/trial-balance?startDate=2024-01-01&endDate=2026-12-31',
            PLAIN_NETS,
            [orgB.id, '2024-01-01', '2026-12-31', ['asset', 'liability', 'equity', 'income', 'expense']],
          ],
          [
            'balance sheet',
            '/api/v1/reports/balance-sheet?endDate=2026-12-31',
            PLAIN_BALANCE_SHEET,
            [orgB.id, '2026-12-31', '2026-01-01'],
          ],
          [
            'profit and loss',
            '/api/v1/reports/profit-and-loss?startDate=2026-01-01&endDate=2026-12-31',
            PLAIN_NETS,
            [orgB.id, '2026-01-01', '2026-12-31', ['income', 'expense']],
          ],
          [
            'general ledger, busiest account, one month',
            `/api/v1/reports/general-ledger?startDate=2026-03-01&endDate=2026-03-31&accountId=${busy.rows[0]?.account_id}`,
            null,
            [],
          ],
        ];
        for (const [report, path, plainSql, values] of reports) {
          const ms = await timeGet(path);
          const baseline = plainSql === null ? null : await timeSql(plainSql, values);
          process.stdout.write(
            `report ${report} over ${lines} lines: median ${fmt(ms)} ms` +
              (baseline === null ? '' : ` | plain SQL sum ${fmt(baseline)} ms | ratio ${fmt(ms / baseline, 3)}`) +
              '\n',
          );
        }
      }
    } finally {
      await plain.end();
    }
    if (LINES > 0) {
      process.stdout.write(
        `compiled server peak RSS after the reports: ${fmt(peakRssMb(started.child.pid as number))} MB\n`,
      );
    }
  } finally {
    await server?.stop();
    await statementPool.close();
    await database.close();
    await new Promise((r) => setTimeout(r, 500));
    await adminQuery(baseUrl as string, `drop database if exists ${name} with (force)`);
  }
}

/**
 * Adds `lines` posted lines to the large ledger straight in SQL (the accounts too, the first time): balanced two-line
 * entries numbered from `firstEntry`, and both rollups (daily and monthly) added from the new lines, the same way the
 * posting path and its trigger keep them. Returns the number of lines the organization then has.
 */
async function bulkLedger(url: string, orgId: string, lines: number, firstEntry: number): Promise<number> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const days = YEARS * 365;
  try {
    if (firstEntry === 1) {
      await client.query(
        `insert into accounts (id, organization_id, code, name, type, subtype)
        select gen_random_uuid(), $1, 'B' || g, 'Bench ' || g,
          (array['asset','liability','equity','income','expense'])[1 + g % 5]::account_type,
          (array['other_current_asset','other_current_liability','equity','income','expense'])[1 + g % 5]::account_subtype
        from generate_series(1, ${ACCOUNTS}) g`,
        [orgId],
      );
    }
    // Trigger-checked inserts would check every one of these lines again; the bulk load is built balanced by
    // construction, so it runs with triggers off (replica role), writes the rollups the triggers would, and is
    // verified after.
    await client.query('begin');
    await client.query('set local session_replication_role = replica');
    await client.query(
      `create temp table bench_accounts on commit drop as
      select row_number() over (order by id) as n, id from accounts where organization_id = $1 and code like 'B%'`,
      [orgId],
    );
    await client.query(`create temp table bench_entries on commit drop as
      select gen_random_uuid() as id, g as n, date '2024-01-01' + (g % ${days}) as day
      from generate_series(${firstEntry}, ${firstEntry + lines / 2 - 1}) g`);
    await client.query(`create temp table bench_lines on commit drop as
      select gen_random_uuid() as id, e.id as entry_id, s.line_no, a.id as account_id, e.day,
             case s.line_no when 1 then 100 + e.n % 9000 else -(100 + e.n % 9000) end as amount_cents
      from bench_entries e
      cross join (values (1), (2)) s(line_no)
      join bench_accounts a on a.n = 1 + ((e.n * 7 + s.line_no * 13 + (e.n % 3) * 101) % ${ACCOUNTS})`);
    await client.query(
      `insert into journal_entries (id, organization_id, status, source, entry_date, memo, posted_at, created_by_kind, created_by_id)
      select id, $1, 'posted', 'journal_entry', day, 'bulk', now(), 'bench', 'bench' from bench_entries`,
      [orgId],
    );
    await client.query(
      `insert into journal_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
      select id, $1, entry_id, line_no, account_id, amount_cents from bench_lines`,
      [orgId],
    );
    await client.query(
      `insert into account_daily_balances (organization_id, account_id, day, amount_cents)
      select $1, account_id, day, sum(amount_cents) from bench_lines group by 2, 3
      on conflict (organization_id, account_id, day) do update set amount_cents = account_daily_balances.amount_cents + excluded.amount_cents`,
      [orgId],
    );
    await client.query(
      `insert into account_monthly_balances (organization_id, account_id, month, amount_cents)
      select $1, account_id, date_trunc('month', day)::date, sum(amount_cents) from bench_lines group by 2, 3
      on conflict (organization_id, account_id, month) do update set amount_cents = account_monthly_balances.amount_cents + excluded.amount_cents`,
      [orgId],
    );
    await client.query(
      `insert into account_yearly_balances (organization_id, account_id, year, amount_cents)
      select $1, account_id, date_trunc('year', day)::date, sum(amount_cents) from bench_lines group by 2, 3
      on conflict (organization_id, account_id, year) do update set amount_cents = account_yearly_balances.amount_cents + excluded.amount_cents`,
      [orgId],
    );
    await client.query('commit');
    await client.query(
      'vacuum analyze journal_entries, journal_lines, account_daily_balances, account_monthly_balances, account_yearly_balances',
    );
    const { rows } = await client.query(
      `select count(*)::int as lines, coalesce(sum(amount_cents), 0)::bigint as total from journal_lines where organization_id = $1`,
      [orgId],
    );
    if (Number(rows[0].total) !== 0) throw new Error('bulk ledger is not balanced');
    return rows[0].lines as number;
  } finally {
    await client.end();
  }
}

await main();
