import { randomBytes } from 'node:crypto';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Executor, openDatabase, pgErrorOf, preparedStatement, rowsOf } from './connection';
import { firms } from './schema/index';
import { adminQuery, createTestDatabase, serverUrl, type TestDatabase, withDatabase } from './testing';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

describe('database', () => {
  it('is migrated and answers', async () => {
    expect(await database.ping()).toBe(true);
    const rows = rowsOf<{ n: number }>(await database.db.execute(sql`select count(*)::int as n from firms`));
    expect(rows[0]?.n).toBe(0);
  });

  it('migrating again is a no-op', async () => {
    await database.migrate();
    expect(await database.ping()).toBe(true);
  });

  it('refuses a subtype of another type', async () => {
    const err = await database.db
      .execute(
        sql`
        with f as (insert into firms (id, slug, name) values (gen_random_uuid(), 'f', 'F') returning id),
        o as (insert into organizations (id, firm_id, name) select gen_random_uuid(), id, 'O' from f returning id)
        insert into accounts (id, organization_id, code, name, type, subtype)
        select gen_random_uuid(), id, '1000', 'Card', 'asset', 'credit_card' from o`,
      )
      .catch((e: unknown) => e);
    expect(pgErrorOf(err)).toMatchObject({ code: '23514' });
    expect(pgErrorOf(err)?.message).toMatch(/accounts_subtype_matches_type/);
  });

  it('runs a prepared statement with arrays, on the database and in a transaction', async () => {
    const sum = preparedStatement<{ total: number; n: number }>(
      'test_sum_of',
      sql`select coalesce(sum(v), 0)::int as total, cardinality(${sql.placeholder('values')}::int[]) as n
          from unnest(${sql.placeholder('values')}::int[]) v`,
    );
    expect(await sum(database.db, { values: [1, 2, 3] })).toEqual([{ total: 6, n: 3 }]);
    expect(await sum(database.db, { values: [] })).toEqual([{ total: 0, n: 0 }]);
    await database.db.transaction(async (tx) => {
      expect(await sum(tx, { values: [40, 2] })).toEqual([{ total: 42, n: 2 }]);
      if (database.kind === 'postgres') {
        // Named on the connection: the next run sends only its values (unnamed behind a transaction pooler).
        const named = rowsOf<{ n: number }>(
          await tx.execute(sql`select count(*)::int as n from pg_prepared_statements where name = 'test_sum_of'`),
        );
        expect(named[0]?.n).toBe(database.poolMode === 'session' ? 1 : 0);
      }
    });
  });
});

/** The statements prepared under a name on the session the executor's transaction runs on. */
async function namedStatements(tx: Executor): Promise<string[]> {
  const rows = rowsOf<{ name: string }>(await tx.execute(sql`select name from pg_prepared_statements order by name`));
  return rows.map((r) => r.name);
}

describe.skipIf(!process.env.DATABASE_URL)('in transaction pool mode', () => {
  it('runs our prepared statements and Drizzle`s unnamed, with their values still bound', async () => {
    const pooled = openDatabase({ url: database.url, poolMax: 1, poolMode: 'transaction' });
    try {
      expect(pooled.poolMode).toBe('transaction');
      const echo = preparedStatement<{ v: string }>('test_pooled_echo', sql`select ${sql.placeholder('v')}::text as v`);
      await pooled.db.transaction(async (tx) => {
        const firmById = tx
          .select({ id: firms.id })
          .from(firms)
          .where(eq(firms.id, sql.placeholder('id')))
          .prepare('test_pooled_firm_by_id');
        expect(await echo(tx, { v: "it's" })).toEqual([{ v: "it's" }]);
        expect(await firmById.execute({ id: '00000000-0000-0000-0000-000000000000' })).toEqual([]);
        expect(await namedStatements(tx)).toEqual([]);
      });
      // The same statements on a database opened in session mode are named on their connection.
      const direct = openDatabase({ url: database.url, poolMax: 1 });
      try {
        await direct.db.transaction(async (tx) => {
          await echo(tx, { v: 'x' });
          expect(await namedStatements(tx)).toContain('test_pooled_echo');
        });
      } finally {
        await direct.close();
      }
    } finally {
      await pooled.close();
    }
  });

  it('migrates a new database once when two processes start at once, under a transaction-level lock', async () => {
    const admin = serverUrl() as string;
    const name = `test_migrate_${randomBytes(4).toString('hex')}`;
    await adminQuery(admin, `create database ${name}`);
    const url = withDatabase(process.env.DATABASE_URL as string, name);
    const open = () => openDatabase({ url, poolMax: 1, poolMode: 'transaction' });
    const first = open();
    const processes = [first, open()];
    try {
      await Promise.all(processes.map((p) => p.migrate()));
      for (const p of processes) expect(await p.pendingMigrations()).toBe(0);
      const applied = rowsOf<{ n: number; distinct: number }>(
        await first.db.execute(
          sql`select count(*)::int as n, count(distinct created_at)::int as distinct from drizzle.__drizzle_migrations`,
        ),
      );
      expect(applied[0]?.n).toBe(applied[0]?.distinct);
    } finally {
      await Promise.all(processes.map((p) => p.close()));
      await adminQuery(admin, `drop database if exists ${name} with (force)`);
    }
  });
});
