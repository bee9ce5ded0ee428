/**
 * Opening balances: 1,000 accounts that do not exist yet (createMissingAccounts) and their balances, posted through
 * POST /api/v1/companies/{companyId}/opening-balances on the compiled server, each run on a new company with an empty
 * chart (median of 5), as JSON and as CSV. The baseline, measured in the same run on the same database: plain SQL
 * from this process inserting the 1,000 accounts and one posted 1,000-line entry, in one transaction. Needs
 * DATABASE_URL (a Postgres server; a fresh database is created beside it and dropped after).
 */
import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { seedDemo } from '@firm/demo';
import { sql } from 'drizzle-orm';
import { benchOnFreshDatabase, median } from './fresh-database';
import { startCompiledServer } from './server';

const ACCOUNTS = 1_000;
const RUNS = 5;

/** Account i: its code (first digit 1-9, so every type comes from the code range) and its balance. */
const rows = Array.from({ length: ACCOUNTS }, (_, i) => {
  const first = (i % 9) + 1;
  const cents = 10_000 + ((i * 7919) % 1_000_000);
  const credit = first === 2 || first === 3 || first === 4;
  return { code: `${first}${String(i).padStart(4, '0')}`, cents, credit };
});
/** A Postgres array literal of plain codes or numbers (no quoting needed), sent as one parameter. */
const pgArray = (values: readonly (string | number)[]) => `{${values.join(',')}}`;
const amount = (cents: number) => (cents / 100).toFixed(2);

benchOnFreshDatabase('opening_balances', 4, async (database, url) => {
  const db = database.db;
  const demo = await seedDemo(db);
  const server = await startCompiledServer(url, { WEBHOOK_WORKER: 'false' });
  const auth = { authorization: `Bearer ${demo.apiKey}` };

  const newCompany = async (): Promise<string> => {
    const res = await fetch(`${server.base}/api/v1/companies`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({ name: `Bench ${randomUUID()}`, chartTemplate: 'empty' }),
    });
    if (res.status !== 201) throw new Error(`company: ${res.status} ${await res.text()}`);
    return ((await res.json()) as { data: { id: string } }).data.id;
  };

  const json = JSON.stringify({
    date: '2026-01-01',
    createMissingAccounts: true,
    lines: rows.map((r) => ({ accountCode: r.code, [r.credit ? 'credit' : 'debit']: amount(r.cents) })),
  });
  const csv = `code,debit,credit\n${rows.map((r) => `${r.code},${r.credit ? '' : amount(r.cents)},${r.credit ? amount(r.cents) : ''}`).join('\n')}\n`;

  /** Median time of RUNS opening-balances requests, each on a new company. */
  async function route(contentType: string, body: string, query: string): Promise<number> {
    const times: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const companyId = await newCompany();
      const t0 = performance.now();
      const res = await fetch(`${server.base}/api/v1/companies/${companyId}/opening-balances${query}`, {
        method: 'POST',
        headers: { ...auth, 'content-type': contentType, 'idempotency-key': randomUUID() },
        body,
      });
      const text = await res.text();
      times.push(performance.now() - t0);
      if (res.status !== 201) throw new Error(`opening balances: ${res.status} ${text.slice(0, 500)}`);
    }
    return median(times);
  }

  /** Median time of RUNS plain-SQL inserts of the accounts and one posted entry of their lines, each on a new company. */
  async function baseline(): Promise<number> {
    const times: number[] = [];
    const codes = rows.map((r) => r.code);
    const signed = rows.map((r) => (r.credit ? -r.cents : r.cents));
    const difference = -signed.reduce((a, b) => a + b, 0);
    for (let i = 0; i < RUNS; i++) {
      const companyId = await newCompany();
      const t0 = performance.now();
      await db.transaction(async (tx) => {
        await tx.execute(sql`
          insert into accounts (id, organization_id, code, name, type, subtype)
          select gen_random_uuid(), ${companyId}::uuid, c, 'Account ' || c,
                 (case left(c, 1) when '1' then 'asset' when '2' then 'liability' when '3' then 'equity'
                  when '4' then 'income' else 'expense' end)::account_type,
                 (case left(c, 1) when '1' then 'other_current_asset' when '2' then 'other_current_liability'
                  when '3' then 'equity' when '4' then 'income' when '5' then 'cost_of_sales'
                  else 'expense' end)::account_subtype
          from unnest(${pgArray(codes)}::text[]) as c
          union all
          select gen_random_uuid(), ${companyId}::uuid, '3050', 'Opening balance equity', 'equity', 'equity'`);
        const entryId = randomUUID();
        await tx.execute(sql`
          insert into journal_entries
            (id, organization_id, status, source, entry_date, created_by_kind, created_by_id)
          values (${entryId}, ${companyId}, 'draft', 'opening_balance', '2026-01-01', 'bench', 'bench')`);
        await tx.execute(sql`
          insert into journal_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
          select gen_random_uuid(), ${companyId}::uuid, ${entryId}::uuid, v.n::int, a.id, v.amount
          from unnest(${pgArray([...codes, '3050'])}::text[], ${pgArray([...signed, difference])}::bigint[])
            with ordinality as v(code, amount, n)
          join accounts a on a.organization_id = ${companyId} and a.code = v.code`);
        await tx.execute(sql`
          update journal_entries set status = 'posted', posted_at = now()
          where organization_id = ${companyId} and id = ${entryId}`);
      });
      times.push(performance.now() - t0);
    }
    return median(times);
  }

  try {
    // One request first, so that the server's first-use costs (compiling, connecting) are not in the timings.
    await route('application/json', json, '');
    const base = await baseline();
    const viaJson = await route('application/json', json, '');
    const viaCsv = await route('text/csv', csv, '?date=2026-01-01&createMissingAccounts=true');
    const lines = [
      `opening balances of ${ACCOUNTS} new accounts (createMissingAccounts), compiled server, median of ${RUNS}`,
      `  plain SQL insert of the accounts and a posted ${ACCOUNTS + 1}-line entry: ${base.toFixed(0)} ms (baseline)`,
      `  POST opening-balances, JSON: ${viaJson.toFixed(0)} ms = ${(viaJson / base).toFixed(1)}x the baseline`,
      `  POST opening-balances, CSV:  ${viaCsv.toFixed(0)} ms = ${(viaCsv / base).toFixed(1)}x the baseline`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await server.stop();
  }
});
