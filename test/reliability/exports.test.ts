/**
 * Large general ledgers against the compiled server with the image's heap cap (192 MB): a company with 100,000 posted
 * lines, four concurrent PDF exports of its whole general ledger beside concurrent JSON general ledgers and agent
 * gateway ones, while `/api/health` is polled. Every request is answered (200, or the documented 422 and 429: never a
 * dropped connection or a 5xx), the process lives on, and health answers in under a second throughout. Once with the
 * default GENERAL_LEDGER_MAX_LINES (50,000: the whole ledger is refused), once with it raised to 100,000, so that the
 * exports that get a slot are drawn whole, and with ledgers of just under the default limit: as PDF, JSON and through
 * the gateway together, then four through the gateway.
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { seedDemo } from '@firm/demo';
import { createApiKey } from '@firm/identity';
import { postBulkEntries } from '@firm/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root, type RunningServer, shippedNodeArgs, startServer } from './server';

/** The image's heap cap, from the flags it runs the server with. */
const HEAP_MB = Number(
  shippedNodeArgs()
    .find((f) => f.startsWith('--max-old-space-size='))
    ?.split('=')[1],
);
const LINES = 100_000;
const HEALTH_BOUND_MS = 1000;
const WHOLE = 'startDate=1900-01-01&endDate=2030-12-31';

const measurable = existsSync('/proc/self/status') && Boolean(process.env.DATABASE_URL);

let database: TestDatabase;
let keys: string[];
let organizationId: string;

beforeAll(async () => {
  if (!measurable) return;
  await promisify(execFile)(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root });
  database = await createTestDatabase();
  const seeded = await seedDemo(database.db, {});
  organizationId = seeded.organizations[0]?.id as string;
  const second = await createApiKey(database.db, { firmId: seeded.firmId });
  keys = [seeded.apiKey, second.key];
  const accounts = new Map(
    rowsOf<{ id: string; code: string }>(
      await database.db.execute(sql`select id, code from accounts where organization_id = ${organizationId}`),
    ).map((a) => [a.code, a.id]),
  );
  const id = (code: string) => accounts.get(code) as string;
  // 50,000 two-line entries over two years: 100,000 lines, half of them on checking.
  await postBulkEntries(database.db, organizationId, {
    debitAccountIds: [id('6000'), id('6100'), id('6400'), id('5000')],
    creditAccountId: id('1000'),
    entries: LINES / 2,
    from: '2024-01-01',
    days: 730,
  });
  // As autovacuum would after such a load: the planner needs to know the tables' new size.
  await database.db.execute(sql`analyze`);
}, 600_000);

afterAll(async () => {
  await database?.close();
});

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

interface Answer {
  label: string;
  status: number | 'dropped';
  body: Buffer;
  contentType: string;
}

/** A request read to its end; a connection that breaks or a body cut short is `dropped`. */
async function call(base: string, label: string, path: string, key: string, init: RequestInit = {}): Promise<Answer> {
  try {
    const res = await fetch(`${base}${path}`, {
      ...init,
      headers: {
        authorization: `Bearer ${key}`,
        'x-organization-id': organizationId,
        ...(init.body ? { 'content-type': 'application/json' } : {}),
      },
    });
    const body = Buffer.from(await res.arrayBuffer());
    return { label, status: res.status, body, contentType: res.headers.get('content-type') ?? '' };
  } catch {
    return { label, status: 'dropped', body: Buffer.alloc(0), contentType: '' };
  }
}

/**
 * Polls /api/health one request after another from a process of its own (this one is busy receiving the reports),
 * answered once a first poll has warmed it up; `stop` gives the slowest answer after that and any failure.
 */
async function watchHealth(base: string) {
  const watcher = spawn(process.execPath, ['-e', HEALTH_WATCHER, base], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  const exited = new Promise((resolve) => watcher.once('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    watcher.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.startsWith('ready\n')) resolve();
    });
    void exited.then(() => reject(new Error(`the health watcher stopped: ${out}`)));
  });
  return {
    async stop() {
      watcher.stdin.end();
      await exited;
      return JSON.parse(out.slice('ready\n'.length)) as { slowest: number; polls: number; failures: string[] };
    },
  };
}

const HEALTH_WATCHER = `
const base = process.argv[1];
let stop = false;
process.stdin.resume();
process.stdin.on('end', () => { stop = true; });
(async () => {
  await (await fetch(base + '/api/health')).arrayBuffer();
  process.stdout.write('ready\\n');
  let slowest = 0, polls = 0;
  const failures = [];
  while (!stop) {
    const t0 = performance.now();
    try {
      const res = await fetch(base + '/api/health', { signal: AbortSignal.timeout(10000) });
      await res.arrayBuffer();
      if (res.status !== 200) failures.push('status ' + res.status);
    } catch (err) {
      failures.push(String(err));
    }
    slowest = Math.max(slowest, performance.now() - t0);
    polls++;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  process.stdout.write(JSON.stringify({ slowest, polls, failures }));
})();
`;

const METRICS_TOKEN = 'reliability-metrics-token';

/** The longest the server's event loop was held since the last call (prom-client's lag metric, reset on each read). */
async function loopLagMs(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return Number(/^nodejs_eventloop_lag_max_seconds (\S+)$/m.exec(text)?.[1] ?? Number.NaN) * 1000;
}

/** A first export and general ledger, so that what a process loads once (pdfkit, compiled queries) is loaded. */
async function warmUp(base: string) {
  const key = keys[0] as string;
  const small = 'startDate=2024-01-01&endDate=2024-01-05';
  for (const path of [
    `/api/v1/reports/export?report=general-ledger&format=pdf&${small}`,
    `/api/v1/reports/general-ledger?${small}`,
  ]) {
    const res = await call(base, 'warm-up', path, key);
    if (res.status !== 200) throw new Error(`warm-up ${path}: ${res.status}`);
  }
}

/** Runs the requests together against a server with the heap cap, watching its health and memory. */
async function underLoad(env: Record<string, string>, requests: (base: string) => Promise<Answer>[]) {
  const server: RunningServer = await startServer(database.url as string, {
    args: [...shippedNodeArgs(), join(root, 'dist', 'server.js')],
    env: { LOG_LEVEL: 'error', METRICS_TOKEN, ...env },
  });
  await warmUp(server.base);
  await loopLagMs(server.base);
  const pid = server.child.pid as number;
  let exited: string | null = null;
  server.child.once('exit', (code, signal) => {
    exited = `exit ${code ?? signal}`;
  });
  let peak = rssMb(pid);
  const sampler = setInterval(() => {
    if (!exited) peak = Math.max(peak, rssMb(pid));
  }, 100);
  try {
    const watcher = await watchHealth(server.base);
    const t0 = performance.now();
    const answers = await Promise.all(requests(server.base));
    const seconds = (performance.now() - t0) / 1000;
    const health = await watcher.stop();
    const after = exited ? null : await fetch(`${server.base}/api/health`).then((r) => r.status);
    const lag = exited ? null : await loopLagMs(server.base);
    process.stdout.write(
      `${answers.map((a) => `${a.label} ${a.status}`).join(', ')}; ${seconds.toFixed(1)} s; health: ` +
        `${health.polls} polls, slowest ${health.slowest.toFixed(0)} ms, ${health.failures.length} failed; ` +
        `server event loop delay at most ${lag?.toFixed(0)} ms; peak RSS ${peak.toFixed(0)} MB; ${exited ?? 'alive'}\n`,
    );
    return { answers, health, exited: exited as string | null, after };
  } finally {
    clearInterval(sampler);
    await server.stop();
  }
}

const pdf =
  (key: string, label: string, range = WHOLE) =>
  (base: string) =>
    call(base, label, `/api/v1/reports/export?report=general-ledger&format=pdf&${range}`, key);
const json =
  (key: string, label: string, range = WHOLE) =>
  (base: string) =>
    call(base, label, `/api/v1/reports/general-ledger?${range}`, key);
const gateway =
  (key: string, label: string, range = 'start_date=1900-01-01&end_date=2030-12-31') =>
  (base: string) =>
    call(base, label, `/agent/v1/acct/clients/${organizationId}/reports/general-ledger?${range}`, key);

/** Every answer documented: 200, or 422 REPORT_TOO_LARGE, or 429 RATE_LIMITED with Retry-After. */
function expectAnswered(answers: Answer[]) {
  for (const a of answers) {
    expect([200, 422, 429], `${a.label}: ${a.status} ${a.body.subarray(0, 300).toString()}`).toContain(a.status);
    if (a.status === 422) expect(JSON.parse(a.body.toString()).error.code, a.label).toBe('REPORT_TOO_LARGE');
    if (a.status === 429) expect(JSON.parse(a.body.toString()).error.code, a.label).toBe('RATE_LIMITED');
  }
}

/** A whole PDF: its header, and the end-of-file marker after its last page. */
const wholePdf = (a: Answer) =>
  a.body.subarray(0, 5).toString() === '%PDF-' && a.body.subarray(-8).toString().includes('%%EOF');

describe.runIf(measurable)(`general ledgers of ${LINES.toLocaleString('en-US')} lines, ${HEAP_MB} MB heap`, () => {
  it('refuses the whole ledger (over the default limit) to four PDF exports and the JSON reports at once', async () => {
    const [a, b] = keys as [string, string];
    const run = await underLoad({}, (base) =>
      [
        pdf(a, 'pdf1'),
        pdf(a, 'pdf2'),
        pdf(b, 'pdf3'),
        pdf(b, 'pdf4'),
        json(a, 'json1'),
        json(b, 'json2'),
        json(b, 'json3'),
        gateway(a, 'gateway'),
      ].map((r) => r(base)),
    );
    expect(run.exited).toBeNull();
    expect(run.after).toBe(200);
    expectAnswered(run.answers);
    expect(run.answers.filter((x) => x.status === 422).length).toBeGreaterThanOrEqual(4);
    const refused = JSON.parse(run.answers.find((x) => x.status === 422)?.body.toString() ?? '{}').error;
    expect(refused.details[0]).toMatchObject({ lineCount: LINES, maxLines: 50_000 });
    expect(run.health.failures).toEqual([]);
    expect(run.health.slowest).toBeLessThan(HEALTH_BOUND_MS);
  }, 300_000);

  it('draws whole-ledger PDFs and JSON for the exports that get a slot when the limit allows 100,000 lines', async () => {
    const [a, b] = keys as [string, string];
    // Sent in this order, the slots mostly go to PDFs and JSON alike, so that both are drawn whole under the heap cap.
    const run = await underLoad({ GENERAL_LEDGER_MAX_LINES: String(LINES) }, (base) =>
      [
        pdf(a, 'pdf1'),
        json(a, 'json1'),
        pdf(b, 'pdf2'),
        json(b, 'json2'),
        pdf(a, 'pdf3'),
        json(b, 'json3'),
        pdf(b, 'pdf4'),
      ].map((r) => r(base)),
    );
    expect(run.exited).toBeNull();
    expect(run.after).toBe(200);
    expectAnswered(run.answers);
    const drawn = run.answers.filter((x) => x.status === 200);
    // EXPORTS_PER_PROCESS (4) run; the others are told to come back.
    expect(drawn.length).toBe(4);
    for (const x of drawn) {
      if (x.label.startsWith('pdf')) expect(wholePdf(x), x.label).toBe(true);
      else {
        const gl = JSON.parse(x.body.toString()).data as { accounts: { lines: unknown[] }[] };
        expect(gl.accounts.reduce((n, acc) => n + acc.lines.length, 0)).toBe(LINES);
      }
    }
    expect(run.health.failures).toEqual([]);
    expect(run.health.slowest).toBeLessThan(HEALTH_BOUND_MS);
  }, 600_000);

  it('answers general ledgers just under the default limit as PDF, JSON and through the gateway at once', async () => {
    const [a, b] = keys as [string, string];
    // 2024-01-01 to 2024-12-20: 355 of the 730 days, just under 50,000 lines.
    const year = 'startDate=2024-01-01&endDate=2024-12-20';
    const run = await underLoad({}, (base) =>
      [
        pdf(a, 'pdf1', year),
        json(a, 'json1', year),
        gateway(b, 'gateway1', 'start_date=2024-01-01&end_date=2024-12-20'),
        gateway(b, 'gateway2', 'start_date=2024-01-01&end_date=2024-12-20'),
        json(b, 'json2', year),
      ].map((r) => r(base)),
    );
    expect(run.exited).toBeNull();
    expect(run.after).toBe(200);
    expectAnswered(run.answers);
    expect(run.answers.filter((x) => x.status === 200).length).toBeGreaterThanOrEqual(4);
    expect(run.health.failures).toEqual([]);
    expect(run.health.slowest).toBeLessThan(HEALTH_BOUND_MS);
  }, 600_000);

  it('answers four agent-gateway general ledgers just under the default limit at once', async () => {
    const [a, b] = keys as [string, string];
    const range = 'start_date=2024-01-01&end_date=2024-12-20';
    const run = await underLoad({}, (base) =>
      [
        gateway(a, 'gateway1', range),
        gateway(a, 'gateway2', range),
        gateway(b, 'gateway3', range),
        gateway(b, 'gateway4', range),
      ].map((r) => r(base)),
    );
    expect(run.exited).toBeNull();
    expect(run.after).toBe(200);
    expectAnswered(run.answers);
    expect(run.answers.filter((x) => x.status === 200).length).toBe(4);
    expect(run.health.failures).toEqual([]);
    expect(run.health.slowest).toBeLessThan(HEALTH_BOUND_MS);
  }, 600_000);
});
