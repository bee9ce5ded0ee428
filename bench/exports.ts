/**
 * Report export: a trial balance of 1,000 accounts written as PDF and as XLSX, each timed (median of 5) and with the
 * process's peak resident memory while it runs, beside the same report as JSON (the baseline, measured in the same
 * run). Needs DATABASE_URL (a Postgres server; a fresh database is created beside it and dropped after).
 */
import { performance } from 'node:perf_hooks';
import type { Readable } from 'node:stream';
import { seedDemo } from '@firm/demo';
import { trialBalance } from '@firm/ledger';
import { kindsOf, pdfStream, trialBalanceStatement, xlsxStream } from '@firm/reports';
import { sql } from 'drizzle-orm';
import { benchOnFreshDatabase, median } from './fresh-database';

const ACCOUNTS = 1_000;
const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(1);

/** Median time of `runs` runs and the highest RSS seen while they ran (sampled every 2 ms). */
async function measure(runs: number, work: () => Promise<unknown>) {
  let peak = process.memoryUsage().rss;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().rss);
  }, 2);
  const times: number[] = [];
  try {
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      await work();
      times.push(performance.now() - t0);
    }
  } finally {
    clearInterval(sampler);
  }
  return { ms: median(times), peak };
}

const drain = async (stream: Readable) => {
  let bytes = 0;
  for await (const chunk of stream) bytes += (chunk as Buffer).length;
  return bytes;
};

benchOnFreshDatabase('exports', 4, async (database) => {
  const db = database.db;
  const demo = await seedDemo(db);
  const orgId = (demo.organizations[0] as { id: string }).id;
  // 1,000 expense accounts, each with one posted day of activity against checking.
  await db.execute(sql`
      insert into accounts (id, organization_id, code, name, type, subtype)
      select gen_random_uuid(), ${orgId}, 'X' || lpad(g::text, 4, '0'), 'Expense account ' || g, 'expense', 'expense'
      from generate_series(1, ${ACCOUNTS}) g`);
  await db.execute(sql`
      insert into account_daily_balances (organization_id, account_id, day, amount_cents)
      select ${orgId}, a.id, date '2026-10-01', 1000 + (row_number() over (order by a.code))::int
      from accounts a where a.organization_id = ${orgId} and a.code like 'X%'`);
  await db.execute(sql`analyze`);
  const range = { endDate: '2026-12-31' };
  const json = await measure(5, async () => JSON.stringify(await trialBalance(db, orgId, range)));
  const report = await trialBalance(db, orgId, range);
  const statement = trialBalanceStatement(report, 'Bench Co');
  let pdfBytes = 0;
  let xlsxBytes = 0;
  const before = process.memoryUsage().rss;
  const pdf = await measure(5, async () => {
    pdfBytes = await drain(await pdfStream([trialBalanceStatement(await trialBalance(db, orgId, range), 'Bench Co')]));
  });
  const xlsx = await measure(5, async () => {
    xlsxBytes = await drain(
      await xlsxStream([trialBalanceStatement(await trialBalance(db, orgId, range), 'Bench Co')]),
    );
  });
  const lines = [
    `trial balance of ${report.rows.length} accounts as JSON: p50 ${json.ms.toFixed(1)} ms (baseline)`,
    `  as PDF (${[...kindsOf(statement)].length} rows, ${(pdfBytes / 1024).toFixed(0)} KB): p50 ${pdf.ms.toFixed(1)} ms = ` +
      `${(pdf.ms / json.ms).toFixed(1)}x the JSON report; peak RSS ${mb(pdf.peak)} MB (${mb(pdf.peak - before)} MB above the start)`,
    `  as XLSX (${(xlsxBytes / 1024).toFixed(0)} KB): p50 ${xlsx.ms.toFixed(1)} ms = ${(xlsx.ms / json.ms).toFixed(1)}x the ` +
      `JSON report; peak RSS ${mb(xlsx.peak)} MB (${mb(xlsx.peak - before)} MB above the start)`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
});
