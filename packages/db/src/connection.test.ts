import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgErrorOf, preparedStatement, rowsOf } from './connection';
import { createTestDatabase, type TestDatabase } from './testing';

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
        // Named on the connection: the next run sends only its values.
        const named = rowsOf<{ n: number }>(
          await tx.execute(sql`select count(*)::int as n from pg_prepared_statements where name = 'test_sum_of'`),
        );
        expect(named[0]?.n).toBe(1);
      }
    });
  });
});
