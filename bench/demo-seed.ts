/**
 * Demo seed: seconds to seed the demo firm with its year of history, on the embedded database (PGlite in a fresh data
 * directory, as `npm start` does) and on Postgres (a fresh database beside DATABASE_URL, default
 * postgres://postgres@127.0.0.1:5432/postgres, dropped after). The baseline, measured in the same run on the same
 * database: as many journal lines as the seed wrote, inserted by plain SQL one row a statement in one transaction into
 * a table shaped like journal_lines without its rules. Prints each time and the ratio seed / baseline.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { claimDataDir, type Database, openDatabase, rowsOf } from '@firm/db';
import { adminQuery, withDatabase } from '@firm/db/testing';
import { seedDemo } from '@firm/demo';
import { sql } from 'drizzle-orm';

const NOW = new Date('2026-11-27T10:00:00Z');

interface Measured {
  label: string;
  seedSeconds: number;
  lines: number;
  baselineSeconds: number;
}

async function measure(label: string, database: Database): Promise<Measured> {
  await database.migrate();
  const t0 = performance.now();
  await seedDemo(database.db, { history: true, now: NOW });
  const seedSeconds = (performance.now() - t0) / 1000;
  const [count] = rowsOf<{ n: number }>(await database.db.execute(sql`select count(*)::int as n from journal_lines`));
  const lines = count?.n ?? 0;

  await database.db.execute(sql`create table bench_lines (like journal_lines)`);
  const [sample] = rowsOf<{ organization_id: string; entry_id: string; account_id: string }>(
    await database.db.execute(sql`select organization_id, entry_id, account_id from journal_lines limit 1`),
  );
  const t1 = performance.now();
  await database.db.transaction(async (tx) => {
    for (let i = 0; i < lines; i++) {
      await tx.execute(sql`insert into bench_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
        values (gen_random_uuid(), ${sample?.organization_id}, ${sample?.entry_id}, ${i + 1}, ${sample?.account_id},
                ${i % 2 === 0 ? 1000 : -1000})`);
    }
  });
  const baselineSeconds = (performance.now() - t1) / 1000;
  await database.db.execute(sql`drop table bench_lines`);
  return { label, seedSeconds, lines, baselineSeconds };
}

async function onPglite(): Promise<Measured> {
  const dataDir = await mkdtemp(join(tmpdir(), 'bench-demo-'));
  const owner = await claimDataDir(dataDir);
  const database = openDatabase({ dataDir });
  try {
    return await measure('pglite', database);
  } finally {
    await database.close();
    await owner.release();
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function onPostgres(): Promise<Measured> {
  const baseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `bench_demo_seed_${Date.now()}`;
  await adminQuery(baseUrl, `create database ${name}`);
  const database = openDatabase({ url: withDatabase(baseUrl, name), poolMax: 4 });
  try {
    return await measure('postgres', database);
  } finally {
    await database.close();
    await adminQuery(baseUrl, `drop database if exists ${name} with (force)`);
  }
}

async function main() {
  const results = [await onPglite(), await onPostgres()];
  for (const r of results) {
    process.stdout.write(
      `demo seed (${r.label}): ${r.seedSeconds.toFixed(2)} s for ${r.lines} journal lines; ` +
        `baseline (${r.lines} plain inserts): ${r.baselineSeconds.toFixed(2)} s; ` +
        `ratio ${(r.seedSeconds / r.baselineSeconds).toFixed(1)}x\n`,
    );
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
