import * as schema from '@firm/db';
import { DISTRIBUTION, type Placement, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { sql } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * The migrated schema, read from the catalog, against the distribution map (packages/db/src/distribution.ts): every
 * table has a place, and every key of a distributed table lets Citus distribute it. Each problem is reported with the
 * table and the constraint or index that causes it.
 */

interface Column {
  table: string;
  column: string;
  nullable: boolean;
}

interface Constraint {
  table: string;
  name: string;
  type: 'p' | 'u' | 'f';
  columns: string[];
  target: string | null;
  targetColumns: string[] | null;
}

interface UniqueIndex {
  table: string;
  name: string;
  /** Its key's columns; null for an expression. */
  columns: (string | null)[];
}

let database: TestDatabase;
let tables: string[];
let columns: Column[];
let constraints: Constraint[];
let uniqueIndexes: UniqueIndex[];

beforeAll(async () => {
  database = await createTestDatabase();
  const { db } = database;
  tables = rowsOf<{ name: string }>(
    await db.execute(sql`select c.relname as name from pg_class c
      where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
      order by 1`),
  ).map((r) => r.name);
  columns = rowsOf<{ table: string; column: string; nullable: string }>(
    await db.execute(sql`select table_name as table, column_name as column, is_nullable as nullable
      from information_schema.columns where table_schema = 'public'`),
  ).map((r) => ({ ...r, nullable: r.nullable === 'YES' }));
  // Column names in key order: unnest ... with ordinality keeps a composite key's order.
  constraints = rowsOf<Constraint>(
    await db.execute(sql`select c.conrelid::regclass::text as table, c.conname as name, c.contype as type,
        (select array_agg(a.attname::text order by k.n) from unnest(c.conkey) with ordinality k(attnum, n)
          join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum) as columns,
        case when c.contype = 'f' then c.confrelid::regclass::text end as target,
        case when c.contype = 'f' then (select array_agg(a.attname::text order by k.n)
          from unnest(c.confkey) with ordinality k(attnum, n)
          join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum) end as "targetColumns"
      from pg_constraint c
      where c.connamespace = 'public'::regnamespace and c.contype in ('p', 'u', 'f')`),
  );
  // Unique indexes that no constraint owns (partial or on expressions); an expression's position is null.
  uniqueIndexes = rowsOf<UniqueIndex>(
    await db.execute(sql`select t.relname as table, i.relname as name,
        (select array_agg(a.attname::text order by k.n) from unnest(x.indkey::int2[]) with ordinality k(attnum, n)
          left join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum
          where k.n <= x.indnkeyatts) as columns
      from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
      where t.relnamespace = 'public'::regnamespace and x.indisunique
        and not exists (select 1 from pg_constraint c where c.conindid = x.indexrelid and c.contype in ('p', 'u'))`),
  );
});

afterAll(async () => {
  await database?.close();
});

const isDistributed = (p: Placement | undefined): p is Extract<Placement, { column: string }> =>
  p?.kind === 'organization' || p?.kind === 'firm';

describe('the distribution map', () => {
  it('places every table of the schema', () => {
    const unplaced = tables.filter((t) => !DISTRIBUTION[t]);
    expect(
      unplaced.map(
        (t) =>
          `${t}: not in DISTRIBUTION (packages/db/src/distribution.ts): say whether it is distributed by ` +
          'organization_id or firm_id, a reference table or a global one',
      ),
    ).toEqual([]);
  });

  it('names only tables the schema has, and columns they have', () => {
    const problems: string[] = [];
    for (const [table, placement] of Object.entries(DISTRIBUTION)) {
      if (!tables.includes(table)) problems.push(`${table}: in DISTRIBUTION but not a table of the schema`);
      else if (isDistributed(placement) && !columns.some((c) => c.table === table && c.column === placement.column))
        problems.push(`${table}: has no column ${placement.column} to be distributed by`);
    }
    expect(problems).toEqual([]);
  });

  it('keeps each global or reference table’s reason', () => {
    for (const [table, placement] of Object.entries(DISTRIBUTION))
      if (!isDistributed(placement)) expect(placement.reason.length, table).toBeGreaterThan(20);
  });
});

describe('a distributed table', () => {
  it('has its distribution column NOT NULL', () => {
    const problems: string[] = [];
    for (const table of tables) {
      const placement = DISTRIBUTION[table];
      if (!isDistributed(placement)) continue;
      const column = columns.find((c) => c.table === table && c.column === placement.column);
      if (column?.nullable) problems.push(`${table}.${placement.column}: nullable, and it is the distribution column`);
    }
    expect(problems).toEqual([]);
  });

  it('has a primary key, and it and every unique constraint and unique index include the distribution column', () => {
    const problems: string[] = [];
    for (const table of tables) {
      const placement = DISTRIBUTION[table];
      if (!isDistributed(placement)) continue;
      const column = placement.column;
      if (!constraints.some((c) => c.table === table && c.type === 'p')) problems.push(`${table}: no primary key`);
      for (const c of constraints.filter((c) => c.table === table && c.type !== 'f'))
        if (!c.columns.includes(column))
          problems.push(
            `${table}: ${c.type === 'p' ? 'primary key' : 'unique constraint'} ${c.name} (${c.columns.join(', ')}) ` +
              `lacks ${column}`,
          );
      for (const i of uniqueIndexes.filter((i) => i.table === table))
        if (!i.columns.includes(column))
          problems.push(
            `${table}: unique index ${i.name} (${i.columns.map((c) => c ?? '<expression>').join(', ')}) lacks ${column}`,
          );
    }
    expect(problems).toEqual([]);
  });

  it('refers to its own group through its distribution column, and to no other group but reference tables', () => {
    const problems: string[] = [];
    for (const fk of constraints.filter((c) => c.type === 'f')) {
      const from = DISTRIBUTION[fk.table];
      const to = DISTRIBUTION[fk.target as string];
      if (!isDistributed(from) || !to || to.kind === 'reference') continue;
      const name = `${fk.table}: foreign key ${fk.name} to ${fk.target}`;
      if (!isDistributed(to)) {
        problems.push(`${name}: a ${to.kind} table, which a distributed table cannot refer to`);
        continue;
      }
      if (to.kind !== from.kind) {
        problems.push(`${name}: distributed by another group (${to.kind}), not co-located with ${from.kind}`);
        continue;
      }
      const at = fk.columns.indexOf(from.column);
      if (at < 0 || fk.targetColumns?.[at] !== to.column)
        problems.push(
          `${name}: (${fk.columns.join(', ')}) -> (${fk.targetColumns?.join(', ')}) must pair ${from.column} with ` +
            `${to.column} at the same position`,
        );
    }
    expect(problems).toEqual([]);
  });
});

describe('a reference or global table', () => {
  it('has no foreign key to a distributed table', () => {
    const problems = constraints
      .filter((c) => c.type === 'f')
      .filter((fk) => !isDistributed(DISTRIBUTION[fk.table]) && isDistributed(DISTRIBUTION[fk.target as string]))
      .map(
        (fk) =>
          `${fk.table}: foreign key ${fk.name} to ${fk.target}: a ${DISTRIBUTION[fk.table]?.kind ?? 'unplaced'} table ` +
          'cannot refer to a distributed one',
      );
    expect(problems).toEqual([]);
  });
});

describe('the Drizzle schema', () => {
  const configs = (Object.values(schema) as unknown[])
    .filter((t: unknown): t is PgTable => t instanceof PgTable)
    .map((t) => getTableConfig(t));

  it('declares the primary keys the database has', () => {
    const problems: string[] = [];
    for (const c of configs) {
      const declared =
        c.primaryKeys[0]?.columns.map((col) => col.name) ??
        c.columns.filter((col) => col.primary).map((col) => col.name);
      const actual = constraints.find((k) => k.table === c.name && k.type === 'p')?.columns ?? [];
      if (declared.join(',') !== actual.join(','))
        problems.push(
          `${c.name}: Drizzle declares primary key (${declared.join(', ')}), the database has (${actual.join(', ')})`,
        );
    }
    expect(problems).toEqual([]);
  });

  it('declares foreign keys and unique constraints the database has, on the same columns', () => {
    const problems: string[] = [];
    for (const c of configs) {
      // By what they join rather than by name: a column's `.references()` is named by Postgres in older migrations.
      for (const fk of c.foreignKeys) {
        const ref = fk.reference();
        const columns = ref.columns.map((col) => col.name).join(', ');
        const target = `${getTableConfig(ref.foreignTable).name}(${ref.foreignColumns.map((col) => col.name).join(', ')})`;
        const found = constraints.some(
          (k) =>
            k.table === c.name &&
            k.type === 'f' &&
            k.columns.join(', ') === columns &&
            `${k.target}(${k.targetColumns?.join(', ')})` === target,
        );
        if (!found)
          problems.push(
            `${c.name}: Drizzle declares foreign key ${fk.getName()} (${columns}) -> ${target}, the database has none`,
          );
      }
      for (const u of c.uniqueConstraints) {
        const name = u.getName();
        const actual = constraints.find((k) => k.table === c.name && k.type === 'u' && k.name === name);
        const columns = u.columns.map((col) => col.name).join(', ');
        if (actual?.columns.join(', ') !== columns)
          problems.push(
            `${c.name}: unique ${name} (${columns}) in Drizzle, (${actual?.columns.join(', ') ?? 'none'}) in the database`,
          );
      }
    }
    expect(problems).toEqual([]);
  });
});
