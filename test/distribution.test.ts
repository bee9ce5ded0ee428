import * as schema from '@firm/db';
import { DISTRIBUTION, type Executor, type Placement, rowsOf } from '@firm/db';
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

interface Catalog {
  tables: string[];
  columns: Column[];
  constraints: Constraint[];
  uniqueIndexes: UniqueIndex[];
}

type PlacementMap = Readonly<Record<string, Placement>>;

/** The tables of the public schema, their columns, keys, foreign keys and unique indexes, as the catalog has them. */
async function readCatalog(db: Executor): Promise<Catalog> {
  const tables = rowsOf<{ name: string }>(
    await db.execute(sql`select c.relname as name from pg_class c
      where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
      order by 1`),
  ).map((r) => r.name);
  const columns = rowsOf<{ table: string; column: string; nullable: string }>(
    await db.execute(sql`select table_name as table, column_name as column, is_nullable as nullable
      from information_schema.columns where table_schema = 'public'`),
  ).map((r) => ({ ...r, nullable: r.nullable === 'YES' }));
  // Column names in key order: unnest ... with ordinality keeps a composite key's order.
  const constraints = rowsOf<Constraint>(
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
  const uniqueIndexes = rowsOf<UniqueIndex>(
    await db.execute(sql`select t.relname as table, i.relname as name,
        (select array_agg(a.attname::text order by k.n) from unnest(x.indkey::int2[]) with ordinality k(attnum, n)
          left join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum
          where k.n <= x.indnkeyatts) as columns
      from pg_index x join pg_class i on i.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
      where t.relnamespace = 'public'::regnamespace and x.indisunique
        and not exists (select 1 from pg_constraint c where c.conindid = x.indexrelid and c.contype in ('p', 'u'))`),
  );
  return { tables, columns, constraints, uniqueIndexes };
}

const isDistributed = (p: Placement | undefined): p is Extract<Placement, { column: string }> =>
  p?.kind === 'organization' || p?.kind === 'firm';

/** Tables without a place in the map. */
function unplaced({ tables }: Catalog, map: PlacementMap): string[] {
  return tables
    .filter((t) => !map[t])
    .map(
      (t) =>
        `${t}: not in DISTRIBUTION (packages/db/src/distribution.ts): say whether it is distributed by ` +
        'organization_id or firm_id, a reference table or a global one',
    );
}

/** Places of tables the schema does not have, or by columns they do not have. */
function unknown({ tables, columns }: Catalog, map: PlacementMap): string[] {
  const problems: string[] = [];
  for (const [table, placement] of Object.entries(map)) {
    if (!tables.includes(table)) problems.push(`${table}: in DISTRIBUTION but not a table of the schema`);
    else if (isDistributed(placement) && !columns.some((c) => c.table === table && c.column === placement.column))
      problems.push(`${table}: has no column ${placement.column} to be distributed by`);
  }
  return problems;
}

/** Distribution columns that may be null. */
function nullable({ tables, columns }: Catalog, map: PlacementMap): string[] {
  const problems: string[] = [];
  for (const table of tables) {
    const placement = map[table];
    if (!isDistributed(placement)) continue;
    const column = columns.find((c) => c.table === table && c.column === placement.column);
    if (column?.nullable) problems.push(`${table}.${placement.column}: nullable, and it is the distribution column`);
  }
  return problems;
}

/** Distributed tables without a primary key, and keys or unique indexes without the distribution column. */
function keys({ tables, constraints, uniqueIndexes }: Catalog, map: PlacementMap): string[] {
  const problems: string[] = [];
  for (const table of tables) {
    const placement = map[table];
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
  return problems;
}

/** Foreign keys of distributed tables that Citus could not keep. */
function distributedForeignKeys({ constraints }: Catalog, map: PlacementMap): string[] {
  const problems: string[] = [];
  for (const fk of constraints.filter((c) => c.type === 'f')) {
    const from = map[fk.table];
    const to = map[fk.target as string];
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
  return problems;
}

/** Foreign keys from reference or global tables to distributed ones. */
function undistributedForeignKeys({ constraints }: Catalog, map: PlacementMap): string[] {
  return constraints
    .filter((c) => c.type === 'f')
    .filter((fk) => map[fk.table] && !isDistributed(map[fk.table]) && isDistributed(map[fk.target as string]))
    .map(
      (fk) =>
        `${fk.table}: foreign key ${fk.name} to ${fk.target}: a ${map[fk.table]?.kind} table cannot refer to a ` +
        'distributed one',
    );
}

/**
 * Lookups in the database's own functions (the triggers that check every write) on a distributed table whose WHERE
 * does not name its distribution column: such a lookup reads the whole table, since every key leads with that column.
 */
function untenantedLookups(functions: { name: string; body: string }[], map: PlacementMap): string[] {
  const problems: string[] = [];
  for (const { name, body } of functions) {
    for (const [, table, where] of body.matchAll(/\bFROM\s+(\w+)\s+WHERE\s+([^;]*)/gi)) {
      const placement = map[(table as string).toLowerCase()];
      if (placement && isDistributed(placement) && !new RegExp(`\\b${placement.column}\\b`).test(where as string))
        problems.push(`${name}: a lookup in ${table} without ${placement.column}: WHERE ${(where as string).trim()}`);
    }
  }
  return problems;
}

async function readFunctions(db: Executor): Promise<{ name: string; body: string }[]> {
  return rowsOf<{ name: string; body: string }>(
    await db.execute(sql`select p.proname as name, p.prosrc as body from pg_proc p
      where p.pronamespace = 'public'::regnamespace and p.prolang = (select oid from pg_language where lanname = 'plpgsql')`),
  );
}

let database: TestDatabase;
let catalog: Catalog;
let functions: { name: string; body: string }[];

beforeAll(async () => {
  database = await createTestDatabase();
  catalog = await readCatalog(database.db);
  functions = await readFunctions(database.db);
});

afterAll(async () => {
  await database?.close();
});

describe('the distribution map', () => {
  it('places every table of the schema', () => {
    expect(unplaced(catalog, DISTRIBUTION)).toEqual([]);
  });

  it('names only tables the schema has, and columns they have', () => {
    expect(unknown(catalog, DISTRIBUTION)).toEqual([]);
  });

  it('keeps each global or reference table’s reason', () => {
    for (const [table, placement] of Object.entries(DISTRIBUTION))
      if (!isDistributed(placement)) expect(placement.reason.length, table).toBeGreaterThan(20);
  });
});

describe('a distributed table', () => {
  it('has its distribution column NOT NULL', () => {
    expect(nullable(catalog, DISTRIBUTION)).toEqual([]);
  });

  it('has a primary key, and it and every unique constraint and unique index include the distribution column', () => {
    expect(keys(catalog, DISTRIBUTION)).toEqual([]);
  });

  it('refers to its own group through its distribution column, and to no other group but reference tables', () => {
    expect(distributedForeignKeys(catalog, DISTRIBUTION)).toEqual([]);
  });
});

describe('the database’s own checks', () => {
  it('look rows of a distributed table up by its distribution column', () => {
    expect(functions.length).toBeGreaterThan(10);
    expect(untenantedLookups(functions, DISTRIBUTION)).toEqual([]);
  });

  it('name a lookup by id alone', () => {
    const body = 'SELECT status INTO v FROM journal_entries WHERE id = NEW.entry_id FOR SHARE;';
    expect(untenantedLookups([{ name: 'f', body }], DISTRIBUTION)).toEqual([
      'f: a lookup in journal_entries without organization_id: WHERE id = NEW.entry_id FOR SHARE',
    ]);
  });
});

describe('a reference or global table', () => {
  it('has no foreign key to a distributed table', () => {
    expect(undistributedForeignKeys(catalog, DISTRIBUTION)).toEqual([]);
  });
});

describe('the checks, given a schema that breaks each rule', () => {
  /** The catalog with the tables `ddl` (one statement each) creates, which are dropped again (the transaction is rolled back). */
  async function catalogWith(...ddl: string[]): Promise<Catalog> {
    let seen: Catalog | undefined;
    await database.db
      .transaction(async (tx) => {
        for (const statement of ddl) await tx.execute(sql.raw(statement));
        seen = await readCatalog(tx);
        tx.rollback();
      })
      .catch((err: unknown) => {
        if (!seen) throw err;
      });
    return seen as Catalog;
  }

  const byOrganization = { kind: 'organization', column: 'organization_id' } as const;

  it('names a table that has no place, and a place whose table or column is missing', async () => {
    const bad = await catalogWith('create table widgets (id uuid primary key)');
    expect(unplaced(bad, DISTRIBUTION)).toEqual([expect.stringMatching(/^widgets: not in DISTRIBUTION/)]);
    expect(
      unknown(bad, { ...DISTRIBUTION, widgets: byOrganization, gadgets: { kind: 'reference', reason: 'none' } }),
    ).toEqual([
      'widgets: has no column organization_id to be distributed by',
      'gadgets: in DISTRIBUTION but not a table of the schema',
    ]);
  });

  it('names a nullable distribution column, and a key or unique index without it', async () => {
    const bad = await catalogWith(
      `create table widgets (id uuid primary key, organization_id uuid, code text, name text,
        constraint widgets_code_key unique (code))`,
      `create unique index widgets_name_key on widgets (lower(name))`,
      `create unique index widgets_org_name_key on widgets (organization_id, lower(name))`,
      `create table gadgets (organization_id uuid not null, code text)`,
    );
    const map = { ...DISTRIBUTION, widgets: byOrganization, gadgets: byOrganization };
    expect(nullable(bad, map)).toEqual(['widgets.organization_id: nullable, and it is the distribution column']);
    expect(keys(bad, map).sort()).toEqual([
      'gadgets: no primary key',
      'widgets: primary key widgets_pkey (id) lacks organization_id',
      'widgets: unique constraint widgets_code_key (code) lacks organization_id',
      'widgets: unique index widgets_name_key (<expression>) lacks organization_id',
    ]);
  });

  it('names a foreign key that leaves its group, reaches a global table, or pairs the wrong columns', async () => {
    const bad = await catalogWith(
      `create table widgets (organization_id uuid not null, id uuid not null, account_id uuid, firm_id uuid,
        subscription_id uuid, api_key_id uuid, primary key (organization_id, id),
        constraint widgets_swapped_fk foreign key (account_id, organization_id)
          references accounts (organization_id, id),
        constraint widgets_account_fk foreign key (organization_id, account_id)
          references accounts (organization_id, id),
        constraint widgets_subscription_fk foreign key (firm_id, subscription_id)
          references webhook_subscriptions (firm_id, id),
        constraint widgets_api_key_fk foreign key (api_key_id) references api_keys (id),
        constraint widgets_firm_fk foreign key (firm_id) references firms (id))`,
      `create table gizmos (id uuid primary key, organization_id uuid, account_id uuid,
        constraint gizmos_account_fk foreign key (organization_id, account_id)
          references accounts (organization_id, id))`,
    );
    const map: PlacementMap = {
      ...DISTRIBUTION,
      widgets: byOrganization,
      gizmos: { kind: 'reference', reason: 'none' },
    };
    expect(distributedForeignKeys(bad, map).sort()).toEqual([
      'widgets: foreign key widgets_api_key_fk to api_keys: a global table, which a distributed table cannot refer to',
      'widgets: foreign key widgets_subscription_fk to webhook_subscriptions: distributed by another group (firm), ' +
        'not co-located with organization',
      'widgets: foreign key widgets_swapped_fk to accounts: (account_id, organization_id) -> (organization_id, id) ' +
        'must pair organization_id with organization_id at the same position',
    ]);
    expect(undistributedForeignKeys(bad, map)).toEqual([
      'gizmos: foreign key gizmos_account_fk to accounts: a reference table cannot refer to a distributed one',
    ]);
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
      const actual = catalog.constraints.find((k) => k.table === c.name && k.type === 'p')?.columns ?? [];
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
        const found = catalog.constraints.some(
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
        const actual = catalog.constraints.find((k) => k.table === c.name && k.type === 'u' && k.name === name);
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
