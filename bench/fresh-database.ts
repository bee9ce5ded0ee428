import { type Database, openDatabase } from '@firm/db';
import { adminQuery, withDatabase } from '@firm/db/testing';

/** The median of some timings. */
export const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

/**
 * Runs one bench on a database of its own (given with its URL), created beside DATABASE_URL's, migrated, and dropped
 * afterwards whatever happens. Without DATABASE_URL it says so and exits 2; a failure prints its stack and exits 1.
 */
export function benchOnFreshDatabase(
  label: string,
  poolMax: number,
  work: (database: Database, url: string) => Promise<void>,
): void {
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) {
    process.stderr.write(`the ${label} bench needs DATABASE_URL (a Postgres server)\n`);
    process.exit(2);
  }
  const run = async () => {
    const name = `bench_${label}_${Date.now()}`;
    await adminQuery(baseUrl, `create database ${name}`);
    const url = withDatabase(baseUrl, name);
    const database = openDatabase({ url, poolMax });
    try {
      await database.migrate();
      await work(database, url);
    } finally {
      await database.close();
      await adminQuery(baseUrl, `drop database if exists ${name} with (force)`);
    }
  };
  run().catch((err: unknown) => {
    process.stderr.write(`${(err as Error).stack}\n`);
    process.exit(1);
  });
}
