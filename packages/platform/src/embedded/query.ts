import { DomainError, isUuid } from '@firm/core';
import { type Executor, rowsOf } from '@firm/db';
import { type SQL, sql } from 'drizzle-orm';
import { LITERAL_EXPECTED, literalOf, type QueryFieldType } from '../literals';
import type { Condition, PlatformContext, PlatformQuery, PlatformRecord, QueryResult, QueryValue } from '../types';
import type { EntityHandler } from './handler';

export type FieldType = QueryFieldType;

/** What a query reads for one entity: its rows (aliased `t`, versions `v`), tenant-scoped, and its fields as SQL. */
export interface QuerySource {
  from: SQL;
  where(organizationId: string): SQL;
  fields: Record<string, { sql: SQL; type: FieldType }>;
}

/** The fields every entity has. */
const COMMON: QuerySource['fields'] = {
  Id: { sql: sql`t.id::text`, type: 'id' },
  'MetaData.CreateTime': { sql: sql`t.created_at`, type: 'timestamp' },
  'MetaData.LastUpdatedTime': { sql: sql`coalesce(v.updated_at, t.created_at)`, type: 'timestamp' },
};

/** A table joined with its records' versions, for a query source. */
export const versioned = (table: string): SQL =>
  sql`${sql.identifier(table)} t left join record_versions v on v.organization_id = t.organization_id and v.record_id = t.id`;

const bad = (field: string, value: QueryValue, expected: string) =>
  new DomainError('QUERY_INVALID', `${field} compares with ${expected}, not ${JSON.stringify(value)}`, [
    { field: 'query', message: `${field} compares with ${expected}` },
  ]);

/** The SQL type a field's literals are bound as. */
const SQL_TYPES: Record<FieldType, string> = {
  id: 'text',
  text: 'text',
  number: 'numeric',
  boolean: 'boolean',
  date: 'date',
  timestamp: 'timestamptz',
};

/** A literal as the field's column compares with it; one Postgres could not read never reaches it. */
function literal(field: string, type: FieldType, value: QueryValue): QueryValue {
  const checked = literalOf(type, value);
  if (checked === undefined) throw bad(field, value, LITERAL_EXPECTED[type]);
  return checked;
}

/** Literals are always parameters, never query text. */
function condition(source: QuerySource, c: Condition): SQL {
  const field = source.fields[c.field];
  if (!field) throw new DomainError('QUERY_INVALID', `no queryable field ${c.field}`);
  const cast = sql.raw(SQL_TYPES[field.type]);
  if (c.op === 'IN') {
    // One array parameter however long the list, so no list can outgrow the protocol's 65,535 parameters.
    const values = c.values.map((v) => literal(c.field, field.type, v));
    return sql`${field.sql} = any(${sql.param(values)}::${cast}[])`;
  }
  if (c.op === 'LIKE') {
    if (field.type !== 'text') throw bad(c.field, c.value, 'a value, not a LIKE pattern');
    return sql`${field.sql} like ${c.value}`;
  }
  const value = literal(c.field, field.type, c.value);
  return sql`${field.sql} ${sql.raw(c.op === '!=' ? '<>' : c.op)} ${value}::${cast}`;
}

/** Keeps the selected fields of a record (and its Id), following dotted names into nested objects. */
function project(record: PlatformRecord, fields: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = { Id: record.Id };
  for (const name of fields) {
    const [head, ...rest] = name.split('.');
    if (!head) continue;
    if (rest.length === 0) {
      if (record[head] !== undefined) out[head] = record[head];
      continue;
    }
    const nested = record[head] as Record<string, unknown> | undefined;
    const leaf = rest.join('.');
    if (nested && nested[leaf] !== undefined) {
      out[head] = { ...((out[head] as object | undefined) ?? {}), [leaf]: nested[leaf] };
    }
  }
  return out;
}

/**
 * Runs a checked query as one parameterized statement over the entity's tenant-scoped rows: every literal is a
 * parameter and every field an expression from the entity's own table, so no query text reaches SQL. The records
 * are then read as the entity's reads present them.
 */
export async function runQuery(
  db: Executor,
  ctx: PlatformContext,
  handler: EntityHandler,
  query: PlatformQuery,
): Promise<QueryResult> {
  const source = handler.query;
  if (!source) throw new DomainError('QUERY_INVALID', `${query.entity} cannot be queried`);
  const fields = { ...COMMON, ...source.fields };
  const full: QuerySource = { ...source, fields };
  // Ids of these books are UUIDs; another id can match nothing, and must not reach a uuid comparison.
  const where = sql.join([source.where(ctx.organizationId), ...query.where.map((c) => condition(full, c))], sql` and `);
  const [counted] = rowsOf<{ n: number }>(
    await db.execute(sql`select count(*)::int as n from ${source.from} where ${where}`),
  );
  const totalCount = counted?.n ?? 0;
  if (query.select === 'count') return { QueryResponse: { totalCount } };
  const order = [
    ...query.orderBy.map((o) => {
      const f = fields[o.field];
      if (!f) throw new DomainError('QUERY_INVALID', `no queryable field ${o.field}`);
      return sql`${f.sql} ${sql.raw(o.direction === 'DESC' ? 'desc' : 'asc')}`;
    }),
    sql`t.created_at asc`,
    sql`t.id asc`,
  ];
  const ids = rowsOf<{ id: string }>(
    await db.execute(sql`
      select t.id::text as id from ${source.from} where ${where}
      order by ${sql.join(order, sql`, `)}
      offset ${query.startPosition - 1} limit ${query.maxResults}`),
  ).map((r) => r.id);
  const wanted = ids.filter(isUuid);
  const records = handler.getMany
    ? inOrder(wanted, await handler.getMany(db, ctx, wanted))
    : await Promise.all(wanted.map((id) => handler.get(db, ctx, id)));
  const select = query.select;
  return {
    QueryResponse: {
      [query.entity]: select === '*' ? records : records.map((r) => project(r, select)),
      startPosition: query.startPosition,
      maxResults: records.length,
      totalCount,
    },
  };
}

/** Records in the order of `ids` (a query's order), whatever order they were read in. */
function inOrder(ids: readonly string[], records: PlatformRecord[]): PlatformRecord[] {
  const byId = new Map(records.map((r) => [String(r.Id), r]));
  return ids.flatMap((id) => byId.get(id) ?? []);
}

/** The fields a query may name on an entity, the common ones and the entity's own, with how each compares. */
export const queryFieldTypesOf = (handler: EntityHandler): Record<string, FieldType> =>
  handler.query
    ? Object.fromEntries(Object.entries({ ...COMMON, ...handler.query.fields }).map(([name, f]) => [name, f.type]))
    : {};

/** The fields a query may name on an entity: the common ones and the entity's own. */
export const queryFieldsOf = (handler: EntityHandler): string[] => Object.keys(queryFieldTypesOf(handler));
