/**
 * General-ledger export: a company with 100,000 posted lines, its whole general ledger exported as PDF, XLSX and CSV
 * by the compiled server (`dist/server.js`, with the image's 192 MB heap cap and GENERAL_LEDGER_MAX_LINES raised to
 * 100,000), each timed (median of 3) with the server's peak resident memory while it runs, beside the same general
 * ledger as JSON (the baseline, measured in the same run). Needs DATABASE_URL (a Postgres server; a fresh database is
 * created beside it and dropped after).
 */
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { rowsOf } from '@firm/db';
import { seedDemo } from '@firm/demo';
import { postBulkEntries } from '@firm/ledger/testing';
import { sql } from 'drizzle-orm';
import { benchOnFreshDatabase, median } from './fresh-database';
import { startCompiledServer } from './server';

const LINES = 100_000;
const RUNS = 3;
const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;

benchOnFreshDatabase('general_ledger', 4, async (database, url) => {
  const demo = await seedDemo(database.db);
  const orgId = (demo.organizations[0] as { id: string }).id;
  const accounts = new Map(
    rowsOf<{ id: string; code: string }>(
      await database.db.execute(sql`select id, code from accounts where organization_id = ${orgId}`),
    ).map((a) => [a.code, a.id]),
  );
  const id = (code: string) => accounts.get(code) as string;
  const t0 = performance.now();
  await postBulkEntries(database.db, orgId, {
    debitAccountIds: [id('6000'), id('6100'), id('6400'), id('5000')],
    creditAccountId: id('1000'),
    entries: LINES / 2,
    from: '2024-01-01',
    days: 730,
  });
  await database.db.execute(sql`vacuum analyze`);
  process.stdout.write(`posted ${LINES} lines in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);

  const server = await startCompiledServer(url, {
    GENERAL_LEDGER_MAX_LINES: String(LINES),
    WEBHOOK_WORKER: 'false',
  });
  const pid = server.child.pid as number;
  const headers = { authorization: `Bearer ${demo.apiKey}`, 'x-organization-id': orgId };
  const range = 'startDate=2024-01-01&endDate=2025-12-31';

  /** Median time of RUNS requests read to their end, and the server's highest RSS while they ran. */
  async function measure(path: string) {
    let peak = rssMb(pid);
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid));
    }, 20);
    const times: number[] = [];
    let bytes = 0;
    try {
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        const res = await fetch(`${server.base}${path}`, { headers });
        bytes = (await res.arrayBuffer()).byteLength;
        if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
        times.push(performance.now() - t);
      }
    } finally {
      clearInterval(sampler);
    }
    return { ms: median(times), peak, bytes };
  }

  try {
    const start = rssMb(pid);
    const json = await measure(`/api/v1/reports/general-ledger?${range}`);
    const mb = (n: number) => n.toFixed(0);
    const lines = [
      `general ledger of ${LINES} lines, compiled server (192 MB heap), server RSS at start ${mb(start)} MB`,
      `  as JSON (${(json.bytes / 1e6).toFixed(1)} MB): p50 ${json.ms.toFixed(0)} ms (baseline); peak RSS ${mb(json.peak)} MB`,
    ];
    for (const format of ['pdf', 'xlsx', 'csv']) {
      const m = await measure(`/api/v1/reports/export?report=general-ledger&format=${format}&${range}`);
      lines.push(
        `  as ${format.toUpperCase()} (${(m.bytes / 1e6).toFixed(1)} MB): p50 ${m.ms.toFixed(0)} ms = ` +
          `${(m.ms / json.ms).toFixed(1)}x the JSON report; peak RSS ${mb(m.peak)} MB`,
      );
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await server.stop();
  }
});
