import { PgTransaction } from 'drizzle-orm/pg-core';
import type { Executor } from './connection';

/**
 * Runs independent reads at once on a pool, each on a connection of its own, and one after another in a transaction
 * (a close renders its evidence in one), whose single connection takes one query at a time.
 */
export async function readAll<T extends unknown[]>(
  db: Executor,
  reads: { [K in keyof T]: () => Promise<T[K]> | T[K] },
): Promise<T> {
  if (!(db instanceof PgTransaction)) return (await Promise.all(reads.map((read) => read()))) as T;
  const results: unknown[] = [];
  for (const read of reads) results.push(await read());
  return results as T;
}
