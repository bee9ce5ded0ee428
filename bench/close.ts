/**
 * Month-end close checklist: the checklist of one company with a year of history (the demo's) and 1,000,000 posted
 * journal lines, for last month, median of several runs, beside two baselines measured in the same run on the same
 * books (the trial balance through the period end, read from the rollups, and a plain SQL sum of the company's
 * lines by account); then the firm's board, the checklists of 50 companies computed in sequence with the firm's rule
 * settings read once, as a board would. Goals: under 100 ms and under 500 ms. Needs DATABASE_URL (a Postgres server;
 * a fresh database is created beside it and dropped after). BENCH_CLOSE_LINES, BENCH_CLOSE_COMPANIES and
 * BENCH_CLOSE_RUNS make it smaller.
 */
import { performance } from 'node:perf_hooks';
import { createBankAccount } from '@firm/banking';
import { computeChecklist, firmRuleSettings } from '@firm/close';
import { rowsOf } from '@firm/db';
import { seedDemo } from '@firm/demo';
import { accountCodes, createCompany, trialBalance } from '@firm/ledger';
import { postBulkEntries } from '@firm/ledger/testing';
import { sql } from 'drizzle-orm';
import { benchOnFreshDatabase, median } from './fresh-database';

const NOW = new Date('2026-11-27T10:00:00Z');
const PERIOD = { periodStart: '2026-10-01', periodEnd: '2026-10-31' };
const LINES = Number(process.env.BENCH_CLOSE_LINES ?? 1_000_000);
const COMPANIES = Number(process.env.BENCH_CLOSE_COMPANIES ?? 50);
const RUNS = Number(process.env.BENCH_CLOSE_RUNS ?? 9);
/** Lines of each company of the board beyond the demo's two. */
const BOARD_LINES = 10_000;
/** The bulk lines fall after the books the demo closed (through 2025-12-31), through the period end. */
const BULK = { from: '2026-01-01', days: 304 };
/** Companies a board computes at once: the pool's connections. */
const BOARD_CONCURRENCY = 4;
const BULK_BATCH = 100_000;
const EXPENSES = ['5000', '6000', '6100', '6300', '6600', '6800'];

const ms = (n: number) => `${n.toFixed(1)} ms`;

async function timed(runs: number, work: () => Promise<unknown>): Promise<number> {
  await work();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await work();
    times.push(performance.now() - t0);
  }
  return median(times);
}

benchOnFreshDatabase('close', 4, async (database) => {
  const db = database.db;
  const t0 = performance.now();
  const demo = await seedDemo(db, { history: true, now: NOW });
  const firmId = demo.firmId;
  const orgIds = demo.organizations.map((o) => o.id);
  const ctx = { firmId, actor: { kind: 'system', id: 'bench' } };
  for (let i = orgIds.length; i < COMPANIES; i++) {
    const company = await db.transaction((tx) =>
      createCompany(tx, ctx, { name: `Board Client ${String(i + 1).padStart(2, '0')}`, chartTemplate: 'standard' }),
    );
    const codes = new Map((await accountCodes(db, company.id)).map((a) => [a.code, a.id]));
    await db.transaction((tx) =>
      createBankAccount(tx, ctx, company.id, { accountId: codes.get('1000') as string, institution: 'Bench Bank' }),
    );
    orgIds.push(company.id);
  }
  for (const [i, orgId] of orgIds.entries()) {
    const codes = new Map((await accountCodes(db, orgId)).map((a) => [a.code, a.id]));
    // In batches: the bulk writer's amounts are computed in 32-bit integers from the entry's number.
    for (let left = (i === 0 ? LINES : BOARD_LINES) / 2; left > 0; left -= BULK_BATCH) {
      await postBulkEntries(db, orgId, {
        debitAccountIds: EXPENSES.map((c) => codes.get(c) as string),
        creditAccountId: codes.get('1000') as string,
        entries: Math.min(left, BULK_BATCH),
        ...BULK,
      });
    }
  }
  await db.execute(sql`vacuum analyze`);
  const [count] = rowsOf<{ lines: number; all: number }>(
    await db.execute(sql`select count(*) filter (where organization_id = ${orgIds[0]})::int as lines,
      count(*)::int as "all" from journal_lines`),
  );
  process.stdout.write(
    `books: ${count?.lines} lines in the first company, ${count?.all} in ${orgIds.length} companies, ` +
      `built in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`,
  );

  const first = orgIds[0] as string;
  const period = { firmId, organizationId: first, ...PERIOD };
  const items = await computeChecklist(db, period);
  const checklist = await timed(RUNS, () => computeChecklist(db, period));
  const tb = await timed(RUNS, () => trialBalance(db, first, { endDate: PERIOD.periodEnd }));
  const plain = await timed(RUNS, () =>
    db.execute(sql`select account_id, sum(amount_cents) from journal_lines
      where organization_id = ${first} group by account_id`),
  );
  const kinds = [...new Set(items.map((i) => i.kind))].join(', ');
  process.stdout.write(
    `checklist of one company (${count?.lines} lines, ${items.length} items: ${kinds}), p50 of ${RUNS}: ` +
      `${ms(checklist)} (goal < 100 ms)\n` +
      `  baselines on the same books: trial balance ${ms(tb)}, plain SQL sum of the lines by account ${ms(plain)}\n`,
  );

  const board = async () => {
    const settings = await firmRuleSettings(db, firmId);
    let open = 0;
    for (const organizationId of orgIds) {
      open += (await computeChecklist(db, { firmId, organizationId, ...PERIOD }, settings)).length;
    }
    return open;
  };
  /** The same board with `BOARD_CONCURRENCY` companies at a time, each on a connection of its own from the pool. */
  const concurrentBoard = async () => {
    const settings = await firmRuleSettings(db, firmId);
    const queue = [...orgIds];
    let open = 0;
    const worker = async () => {
      for (let id = queue.shift(); id; id = queue.shift()) {
        open += (await computeChecklist(db, { firmId, organizationId: id, ...PERIOD }, settings)).length;
      }
    };
    await Promise.all(Array.from({ length: BOARD_CONCURRENCY }, worker));
    return open;
  };
  const boardItems = await board();
  const boardRuns = Math.max(1, Math.floor(RUNS / 3));
  const sequential = await timed(boardRuns, board);
  const concurrent = await timed(boardRuns, concurrentBoard);
  process.stdout.write(
    `board of ${orgIds.length} companies (${boardItems} items), p50 of ${boardRuns}: in sequence ${ms(sequential)} ` +
      `(${ms(sequential / orgIds.length)} a company), ${BOARD_CONCURRENCY} at a time ${ms(concurrent)} ` +
      '(goal < 500 ms)\n',
  );
});
