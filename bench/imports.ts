/**
 * History import: 100,000 journal lines (50,000 two-line entries) imported through the import path (streamed CSV,
 * parsed by csv-parse, checked, staged, then posted set-wise by the background runner in batches of 5,000 rows with
 * the daily, monthly and yearly rollups), beside a plain SQL INSERT of the same lines into journal_entries and
 * journal_lines (the baseline, measured in the same run, on a company of its own). Prints rows/s for both and their
 * ratio (the import's target: at least 0.3 of the baseline). Needs DATABASE_URL (a Postgres server; a fresh database
 * is created beside it and dropped after).
 */
import { performance } from 'node:perf_hooks';
import { Readable } from 'node:stream';
import { rowsOf } from '@firm/db';
import { seedDemo } from '@firm/demo';
import { receiveImport, runNextImport, settleImport } from '@firm/imports';
import { createCompany } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { benchOnFreshDatabase } from './fresh-database';

const ENTRIES = 50_000;
const LINES = ENTRIES * 2;

/** Day i of 2025 (wrapping in the year), as the CSV and the baseline both date entry i. */
const dayOf = (i: number) => new Date(Date.UTC(2025, 0, 1 + (i % 365))).toISOString().slice(0, 10);

function* csvChunks(): Generator<string> {
  yield 'date,reference,memo,account,debit,credit\n';
  let chunk = '';
  for (let i = 0; i < ENTRIES; i++) {
    const amount = `${(i % 997) + 1}.${String(i % 100).padStart(2, '0')}`;
    const day = dayOf(i);
    chunk += `${day},BENCH-${i},Entry ${i},6400,${amount},\n${day},BENCH-${i},Entry ${i},1000,,${amount}\n`;
    if (i % 1000 === 999) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk) yield chunk;
}

benchOnFreshDatabase('imports', 4, async (database) => {
  const db = database.db;
  const demo = await seedDemo(db);
  const ctx = { firmId: demo.firmId, actor: { kind: 'cli', id: 'bench' } };
  const company = async (name: string) =>
    (await db.transaction((tx) => createCompany(tx, ctx, { name, chartTemplate: 'standard' }))).id;
  const imported = await company('Bench Import Co');
  const plain = await company('Bench Baseline Co');
  await db.execute(sql`analyze`);

  // The baseline: the same 50,000 entries and 100,000 lines, one INSERT ... SELECT each, in one transaction (the
  // ledger's triggers check each line and each entry's balance at commit, as for the import).
  const account = async (org: string, code: string) =>
    rowsOf<{ id: string }>(
      await db.execute(sql`select id from accounts where organization_id = ${org} and code = ${code}`),
    )[0]?.id as string;
  const rent = await account(plain, '6400');
  const checking = await account(plain, '1000');
  const t0 = performance.now();
  await db.transaction(async (tx) => {
    await tx.execute(sql`
      insert into journal_entries (id, organization_id, status, source, entry_date, memo, reference, created_at,
                                   posted_at, created_by_kind, created_by_id)
      select gen_random_uuid(), ${plain}, 'posted', 'journal_entry', date '2025-01-01' + (g % 365), 'Entry ' || g,
             'BENCH-' || g, now(), now(), 'cli', 'bench'
      from generate_series(0, ${ENTRIES - 1}) g`);
    await tx.execute(sql`
      insert into journal_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
      select gen_random_uuid(), e.organization_id, e.id, s.line_no,
             case s.line_no when 1 then ${rent}::uuid else ${checking}::uuid end,
             case s.line_no when 1 then 1 else -1 end * (((n % 997) + 1) * 100 + n % 100)
      from (select id, organization_id, substr(reference, 7)::int as n from journal_entries
            where organization_id = ${plain}) e
      cross join (values (1), (2)) as s(line_no)`);
  });
  const baselineMs = performance.now() - t0;

  // The import path, from the first byte of the file to the last batch posted.
  const t1 = performance.now();
  const received = await receiveImport(
    db,
    ctx,
    imported,
    { kind: 'journal', format: 'csv', atomicity: 'file', maxBytes: 200 * 1024 * 1024 },
    Readable.from(csvChunks()),
  );
  if (received.errorCount > 0) throw new Error(`the bench file has errors: ${received.errors[0]?.message}`);
  const receivedMs = performance.now() - t1;
  const settled = await db.transaction((tx) => settleImport(tx, ctx, received, { inlineMaxRows: 5000 }));
  if (settled.status !== 202) throw new Error(`expected the import to be queued, got ${settled.status}`);
  await runNextImport(db, { workerId: 'bench', batchRows: 5000 });
  const importMs = performance.now() - t1;

  const [check] = rowsOf<{ imported: string; plain: string; lines: number }>(
    await db.execute(sql`select
      (select sum(amount_cents) from account_yearly_balances y join accounts a on a.id = y.account_id
        where y.organization_id = ${imported} and a.code = '6400')::text as imported,
      (select sum(amount_cents) from journal_lines where organization_id = ${plain} and account_id = ${rent})::text as plain,
      (select count(*)::int from journal_lines where organization_id = ${imported}) as lines`),
  );
  if (check?.lines !== LINES || check.imported !== check.plain) {
    throw new Error(`the two paths disagree: ${JSON.stringify(check)}`);
  }
  const rate = (ms: number) => Math.round(LINES / (ms / 1000));
  const ratio = rate(importMs) / rate(baselineMs);
  process.stdout.write(
    [
      `plain SQL INSERT of ${LINES} journal lines (${ENTRIES} entries): ${baselineMs.toFixed(0)} ms, ${rate(baselineMs)} rows/s (baseline)`,
      `import of the same lines as a CSV file: ${importMs.toFixed(0)} ms (read, checked and staged in ` +
        `${receivedMs.toFixed(0)} ms), ${rate(importMs)} rows/s = ${ratio.toFixed(2)}x the baseline ` +
        `(target >= 0.3)${ratio >= 0.3 ? '' : ' BELOW TARGET'}`,
    ].join('\n') + '\n',
  );
});
