import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createFirm } from '@firm/identity';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './main';

let database: TestDatabase;
let dir: string;
let firmId: string;
beforeAll(async () => {
  database = await createTestDatabase();
  dir = await mkdtemp(join(tmpdir(), 'cli-import-'));
  firmId = (await createFirm(database.db, { slug: 'import-firm', name: 'Import Firm' })).id;
});
afterAll(async () => {
  await database.close();
  await rm(dir, { recursive: true, force: true });
});

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const io = { out: (t: string) => out.push(t), err: (t: string) => err.push(t) };
  const code = await runCli(argv, database, io);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function company(name: string): Promise<string> {
  const made = await cli('company', 'create', '--firm', firmId, '--name', name, '--json');
  expect(made.code, made.err).toBe(0);
  return JSON.parse(made.out).id;
}

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

const entryCount = async (companyId: string) =>
  rowsOf<{ n: number }>(
    await database.db.execute(sql`select count(*)::int as n from journal_entries where organization_id = ${companyId}`),
  )[0]?.n;

describe('company import', () => {
  it('imports a journal CSV, and the same file again writes nothing', async () => {
    const id = await company('Import One');
    const path = await file(
      'one.csv',
      'date,reference,memo,account,debit,credit\n2025-01-02,A,Rent,6400,10.00,\n2025-01-02,A,Rent,1000,,10.00\n',
    );
    const first = await cli('company', 'import', '--company', id, '--file', path);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/^import \S+ {2}journal csv {2}completed {2}rows 2\/2 {2}entries 1$/);
    const again = await cli('company', 'import', '--company', id, '--file', path, '--json');
    expect(again.code).toBe(0);
    expect(JSON.parse(again.out)).toMatchObject({ status: 'completed', doneRows: 2 });
    expect(await entryCount(id)).toBe(1);
  });

  it('lists the bad rows of a refused file, exits 1 and writes nothing', async () => {
    const id = await company('Import Two');
    const path = await file(
      'bad.csv',
      'date,reference,memo,account,debit,credit\n2025-01-02,A,Rent,6400,10.00,\n2025-01-02,A,Rent,Nowhere,,1.001\n',
    );
    const res = await cli('company', 'import', '--company', id, '--file', path);
    expect(res.code).toBe(1);
    expect(res.out.split('\n')).toEqual([
      'IMPORT_INVALID: 2 error(s) in the file; nothing was imported',
      expect.stringMatching(/^ {2}line 3, account: no account "Nowhere"/),
      '  line 3, credit: "1.001" has more than 2 decimal places',
    ]);
    expect(await entryCount(id)).toBe(0);
  });

  it('imports a chart and an hledger journal, and posts a file past 5,000 rows in batches', async () => {
    const id = await company('Import Three');
    const chart = await file('chart.csv', 'code,name,type,subtype,description\n6450,Storage,,,\n');
    expect((await cli('company', 'import', '--company', id, '--file', chart, '--kind', 'accounts')).code).toBe(0);
    const journal = await file('j.ledger', '2025-03-01 (S-1) Storage\n    Expenses:Storage  $40\n    Assets:1000\n');
    const hl = await cli('company', 'import', '--company', id, '--file', journal, '--format', 'hledger');
    expect(hl.code, hl.out).toBe(0);
    const rows = Array.from({ length: 2600 }, (_, i) => [
      `2025-04-01,B-${i},Big,6400,1.00,`,
      `2025-04-01,B-${i},Big,1000,,1.00`,
    ]).flat();
    const big = await file('big.csv', ['date,reference,memo,account,debit,credit', ...rows].join('\n'));
    const res = await cli('company', 'import', '--company', id, '--file', big, '--json');
    expect(res.code, res.err).toBe(0);
    expect(JSON.parse(res.out)).toMatchObject({ status: 'completed', totalRows: 5200, doneRows: 5200 });
    expect(await entryCount(id)).toBe(2601);
  });

  it('refuses usage errors before opening anything', async () => {
    const res = await cli('company', 'import', '--company', 'nope', '--file', 'x');
    expect(res.code).toBe(2);
    expect(res.err).toMatch(/--company must be a UUID/);
    const kind = await cli('company', 'import', '--company', firmId, '--file', 'x', '--kind', 'other');
    expect(kind.code).toBe(2);
    const missing = await cli('company', 'import', '--company', firmId, '--file', join(dir, 'none.csv'));
    expect(missing).toMatchObject({ code: 1, err: expect.stringMatching(/cannot read/) });
  });
});
