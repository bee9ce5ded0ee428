import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { type Database, openDatabase } from './connection';

/**
 * Test databases. With DATABASE_URL each test file gets its own Postgres database cloned from a
 * template migrated once per run (see test/global-setup.ts); without it, an in-memory PGlite.
 */
export function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

export async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: withDatabase(url, 'postgres') });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

export interface TestDatabase extends Database {
  /** The database's own URL (Postgres only), for tests that need a second connection. */
  url?: string;
}

export async function createTestDatabase(): Promise<TestDatabase> {
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) {
    const database = openDatabase({ dataDir: 'memory://' });
    await database.migrate();
    return database;
  }
  const template = inject('templateDatabase');
  const name = `test_${randomBytes(6).toString('hex')}`;
  await adminQuery(baseUrl, template ? `create database ${name} template ${template}` : `create database ${name}`);
  const url = withDatabase(baseUrl, name);
  const database = openDatabase({ url, poolMax: 10 });
  if (!template) await database.migrate();
  return {
    ...database,
    url,
    async close() {
      await database.close();
      await adminQuery(baseUrl, `drop database if exists ${name} with (force)`);
    },
  };
}
