import { type Executor, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';

export type Json = Record<string, unknown>;

export interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; schema: Json; required?: boolean }[];
  body: Json | null;
  /** Documented responses by status code, each with its JSON schema when it has one. */
  responses: Record<string, Json | null>;
}

/** The node with every local `$ref` replaced by what it points at. */
export function deref(doc: Json, node: unknown, seen: string[] = []): unknown {
  if (Array.isArray(node)) return node.map((n) => deref(doc, n, seen));
  if (!node || typeof node !== 'object') return node;
  const ref = (node as { $ref?: string }).$ref;
  if (ref?.startsWith('#/')) {
    if (seen.includes(ref)) return {};
    const target = ref
      .slice(2)
      .split('/')
      .reduce<unknown>((o, k) => (o as Json)[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    return deref(doc, target, [...seen, ref]);
  }
  return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, deref(doc, v, seen)]));
}

/** Every operation of an OpenAPI document, references resolved. */
export function operationsOf(doc: Json): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, raw] of Object.entries(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const op = deref(doc, raw) as Json;
      const content = (op.requestBody as { content?: Record<string, { schema: Json }> } | undefined)?.content;
      const responses = Object.fromEntries(
        Object.entries((op.responses as Record<string, Json> | undefined) ?? {}).map(([status, r]) => [
          status,
          (r.content as Record<string, { schema?: Json }> | undefined)?.['application/json']?.schema ?? null,
        ]),
      );
      ops.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters as Operation['params'] | undefined) ?? [],
        body: content?.['application/json']?.schema ?? null,
        responses,
      });
    }
  }
  return ops;
}

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
