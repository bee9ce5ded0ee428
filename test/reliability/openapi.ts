import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';

export { deref, type Json, type Operation, operationsOf } from '../../apps/api/src/openapi-operations';

/**
 * A checksum of a firm's rows: per table with an organization or firm column, the count and an md5 of its rows
 * belonging to the firm or its organizations. `except` leaves out tables that record refusals by design.
 */
export async function firmChecksum(
  db: Executor,
  firmId: string,
  organizationIds: string[],
  except: string[] = [],
): Promise<Record<string, string>> {
  const tables = rowsOf<{ table_name: string; column_name: string }>(
    await db.execute(sql`
      select table_name, column_name from information_schema.columns
      where table_schema = 'public' and column_name in ('organization_id', 'firm_id')
      order by table_name, column_name`),
  );
  const sums: Record<string, string> = {};
  for (const { table_name: table, column_name: column } of tables) {
    if (except.includes(table)) continue;
    const owned =
      column === 'firm_id'
        ? sql`${sql.identifier(column)} = ${firmId}`
        : sql`${sql.identifier(column)} in (${sql.join(
            organizationIds.map((o) => sql`${o}::uuid`),
            sql`, `,
          )})`;
    const [row] = rowsOf<{ n: number; sum: string | null }>(
      await db.execute(sql`
        select count(*)::int as n, md5(string_agg(x::text, '|' order by x::text)) as sum
        from ${sql.identifier(table)} x where ${owned}`),
    );
    sums[`${table}.${column}`] = `${row?.n}:${row?.sum}`;
  }
  return sums;
}

/**
 * The ids of the rows of a firm (or of some of its organizations) in every table with a uuid `id` and an organization
 * or firm column, by table: at most `limit` per table, in id order.
 */
export async function idsByTable(
  db: Executor,
  firmId: string,
  organizationIds: string[],
  limit = 1_000_000,
): Promise<Map<string, string[]>> {
  const tables = rowsOf<{ table_name: string; column_name: string }>(
    await db.execute(sql`
      select c.table_name, o.column_name from information_schema.columns c
      join information_schema.columns o on o.table_schema = c.table_schema and o.table_name = c.table_name
        and o.column_name in ('organization_id', 'firm_id')
      where c.table_schema = 'public' and c.column_name = 'id' and c.data_type = 'uuid'
      order by c.table_name`),
  );
  const ids = new Map<string, string[]>();
  for (const { table_name: table, column_name: column } of tables) {
    const owned =
      column === 'firm_id'
        ? sql`firm_id = ${firmId}`
        : sql`organization_id in (${sql.join(
            organizationIds.map((o) => sql`${o}::uuid`),
            sql`, `,
          )})`;
    const rows = rowsOf<{ id: string }>(
      await db.execute(
        sql`select id::text as id from ${sql.identifier(table)} where ${owned} order by id limit ${limit}`,
      ),
    );
    if (rows.length > 0) ids.set(table, [...new Set([...(ids.get(table) ?? []), ...rows.map((r) => r.id)])]);
  }
  return ids;
}
