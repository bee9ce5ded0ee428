import { Readable } from 'node:stream';
import { accounts, organizations, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createFirm } from '@firm/identity';
import { STANDARD_CHART } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runNextImport, settleImport } from './post';
import { receiveImport } from './receive';

let database: TestDatabase;
let firmId: string;
beforeAll(async () => {
  database = await createTestDatabase();
  firmId = (await createFirm(database.db, { name: 'Imports Domain Firm' })).id;
});
afterAll(() => database.close());

const ctx = () => ({ firmId, actor: { kind: 'cli', id: 'test' } });

async function company(): Promise<string> {
  const [org] = await database.db
    .insert(organizations)
    .values({ firmId, name: `Domain ${Math.random()}` })
    .returning();
  const id = org?.id as string;
  await database.db.insert(accounts).values(STANDARD_CHART.map((a) => ({ ...a, organizationId: id })));
  return id;
}

const journal = (n: number) =>
  [
    'date,reference,memo,account,debit,credit',
    ...Array.from({ length: n }, (_, i) => [`2025-06-01,D-${i},x,6400,1.00,`, `2025-06-01,D-${i},x,1000,,1.00`]).flat(),
  ].join('\n');

const count = async (org: string) =>
  rowsOf<{ entries: number; imports: number; staged: number }>(
    await database.db.execute(sql`select
      (select count(*)::int from journal_entries where organization_id = ${org}) as entries,
      (select count(*)::int from imports where organization_id = ${org}) as imports,
      (select count(*)::int from import_rows where organization_id = ${org}) as staged`),
  )[0];

const options = { kind: 'journal', format: 'csv', atomicity: 'file', maxBytes: 1_000_000 } as const;

describe('receiving a file', () => {
  it('leaves nothing behind when the stream fails half way (a client gone)', async () => {
    const org = await company();
    const text = journal(3000);
    const broken = new Readable({
      read() {
        this.push(text.slice(0, 60_000));
        this.destroy(new Error('connection reset'));
      },
    });
    await expect(receiveImport(database.db, ctx(), org, options, broken)).rejects.toThrow('connection reset');
    expect(await count(org)).toEqual({ entries: 0, imports: 0, staged: 0 });
  });

  it('refuses a company of another firm', async () => {
    const other = (await createFirm(database.db, { name: 'Another Domain Firm' })).id;
    const org = await company();
    await expect(
      receiveImport(database.db, { ...ctx(), firmId: other }, org, options, Readable.from([journal(1)])),
    ).rejects.toMatchObject({ code: 'ORGANIZATION_NOT_FOUND' });
  });
});

describe('the background runner', () => {
  it('lets one runner at a time post an import: two at once post every entry once', async () => {
    const org = await company();
    const received = await receiveImport(database.db, ctx(), org, options, Readable.from([journal(40)]));
    const settled = await database.db.transaction((tx) => settleImport(tx, ctx(), received, { inlineMaxRows: 10 }));
    expect(settled.status).toBe(202);
    const ran = await Promise.all([
      runNextImport(database.db, { workerId: 'a', batchRows: 10 }),
      runNextImport(database.db, { workerId: 'b', batchRows: 10 }),
    ]);
    expect(ran.filter((r) => r === received.id)).toHaveLength(1);
    expect(await count(org)).toEqual({ entries: 40, imports: 1, staged: 0 });
  });
});

describe('a chart of accounts', () => {
  it('is refused past 10,000 rows, nothing created', async () => {
    const org = await company();
    const rows = Array.from({ length: 10_001 }, (_, i) => `X${i},Account ${i},expense,,`);
    const csv = ['code,name,type,subtype,description', ...rows].join('\n');
    const received = await receiveImport(
      database.db,
      ctx(),
      org,
      { ...options, kind: 'accounts' },
      Readable.from([csv]),
    );
    expect(received.errors).toEqual([
      { line: 10_002, column: null, message: 'a chart of accounts has at most 10000 rows' },
    ]);
  });
});
