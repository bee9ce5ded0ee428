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
