/**
 * npm run bench:banking: bank feed sync against plain SQL inserts of the same rows, listing unreviewed rows, and the
 * bank-reconciliation-status report over 100 bank accounts, measured in one run on a fresh database.
 * Needs DATABASE_URL (a Postgres server; a fresh database is created beside it and dropped after).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import {
  connectBankFeed,
  createBankAccount,
  listBankTransactions,
  parseTokenKeys,
  reconciliationStatus,
  syncFeed,
} from '@firm/banking';
import { InProcessSandboxAggregator } from '@firm/banking/sandbox/in-process';
import { rowsOf } from '@firm/db';
import { seedDemo } from '@firm/demo';
import { sql } from 'drizzle-orm';
import { benchOnFreshDatabase, median } from './fresh-database';

const ROWS = Number(process.env.BENCH_BANK_ROWS ?? 10_000);
const REGISTERS = 100;
async function timeMany(n: number, work: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await work();
    times.push(performance.now() - t0);
  }
  return median(times);
}

benchOnFreshDatabase('bank', 4, async (database) => {
  const db = database.db;
  const demo = await seedDemo(db);
  const orgId = (demo.organizations[0] as { id: string }).id;
  const ctx = { firmId: demo.firmId, actor: { kind: 'system', id: 'bench' } };
  const code = async (c: string) =>
    rowsOf<{ id: string }>(
      await db.execute(sql`select id from accounts where organization_id = ${orgId} and code = ${c}`),
    )[0]?.id as string;
  const keys = parseTokenKeys(`bench:${Buffer.alloc(32, 1).toString('base64')}`);

  // Plain SQL: the same number of rows into a register of their own, 500 a statement, one transaction each.
  const plainAccount = await db.transaction(async (tx) =>
    createBankAccount(tx, ctx, orgId, {
      accountId: rowsOf<{ id: string }>(
        await tx.execute(sql`insert into accounts (id, organization_id, code, name, type, subtype)
            values (${randomUUID()}, ${orgId}, '1020', 'Plain SQL register', 'asset', 'bank') returning id`),
      )[0]?.id as string,
    }),
  );
  const t0 = performance.now();
  for (let done = 0; done < ROWS; done += 500) {
    const n = Math.min(500, ROWS - done);
    const ids = Array.from({ length: n }, () => randomUUID());
    await db.transaction((tx) =>
      tx.execute(sql`
          insert into bank_transactions (id, organization_id, bank_account_id, txn_date, amount_cents, description,
            counterparty, source_type, external_id)
          select v.id, ${orgId}, ${plainAccount.id}, date '2026-10-01' + (v.i % 28)::int, -(100 + v.i), 'MERCHANT', 'Merchant',
                 'aggregator_bank_feed', 'plain-' || v.id
          from unnest(${sql.param(ids)}::uuid[]) with ordinality as v(id, i)`),
    );
  }
  const plainRate = ROWS / ((performance.now() - t0) / 1000);

  // The feed sync: the sandbox's month plus ROWS card rows, 500 a page, through connect and syncFeed.
  const aggregator = new InProcessSandboxAggregator('2026-10-01', ROWS);
  const feed = await connectBankFeed(db, ctx, aggregator, keys, orgId, {
    publicToken: 'public-bench',
    institutionName: 'Bench Bank',
    accounts: [{ mask: '3333', accountId: await code('2100') }],
  });
  const t1 = performance.now();
  await syncFeed(db, ctx, aggregator, keys, orgId, feed.id, { count: 500 });
  const syncSeconds = (performance.now() - t1) / 1000;
  const synced = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from bank_transactions
        where organization_id = ${orgId} and bank_account_id <> ${plainAccount.id}`),
  )[0]?.n as number;
  const syncRate = synced / syncSeconds;
  const card = feed.accounts[0]?.bankAccountId as string;
  const listMs = await timeMany(30, () =>
    listBankTransactions(db, orgId, { limit: 100, bankAccountId: card, status: 'unreviewed' }),
  );

  // 100 registers with 100 rows each, half of each reconciled into a finished session.
  await db.execute(sql`analyze`);
  for (let i = 0; i < REGISTERS; i++) {
    await db.transaction(async (tx) => {
      const [account] = rowsOf<{ id: string }>(
        await tx.execute(sql`insert into accounts (id, organization_id, code, name, type, subtype)
            values (${randomUUID()}, ${orgId}, ${`11${String(i).padStart(2, '0')}`}, ${`Register ${i}`}, 'asset', 'bank')
            returning id`),
      );
      const bank = await createBankAccount(tx, ctx, orgId, { accountId: account?.id as string });
      await tx.execute(sql`
          insert into bank_transactions (id, organization_id, bank_account_id, txn_date, amount_cents, description,
            source_type, status)
          select gen_random_uuid(), ${orgId}, ${bank.id}, date '2026-10-01' + (g % 28), 100 + g, 'ROW', 'manual',
                 (case when g % 2 = 0 then 'categorized' else 'unreviewed' end)::bank_transaction_status
          from generate_series(1, 100) g`);
    });
  }
  await db.execute(sql`analyze`);
  const reportMs = await timeMany(20, () => reconciliationStatus(db, orgId, '2026-12-31'));

  const lines = [
    `bank feed sync: ${synced} rows in ${syncSeconds.toFixed(2)} s = ${syncRate.toFixed(0)} rows/s`,
    `plain SQL insert of ${ROWS} rows (500 a statement): ${plainRate.toFixed(0)} rows/s`,
    `sync / plain SQL: ${(syncRate / plainRate).toFixed(2)} (at least 0.33 wanted)`,
    `list 100 unreviewed of ${synced} rows of one account: p50 ${listMs.toFixed(1)} ms`,
    `bank-reconciliation-status over ${REGISTERS + 3} bank accounts: p50 ${reportMs.toFixed(1)} ms`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
});
