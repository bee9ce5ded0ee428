import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { type Database, openDatabase, POOL_MODES, type PoolMode } from './connection';

/**
 * Test databases. With DATABASE_URL each test file gets its own Postgres database cloned from a
 * template migrated once per run (see test/global-setup.ts); without it, an in-memory PGlite.
 * Through a transaction pooler (DATABASE_POOL_MODE=transaction), databases are created, migrated and dropped on the
 * server directly (DATABASE_MIGRATION_URL): a pooler keeps server sessions open on the template, which a database
 * cannot be cloned from while anyone is connected to it.
 */

/** Where test databases are created and dropped: the server itself, past any pooler. */
export function serverUrl(): string | undefined {
  return process.env.DATABASE_MIGRATION_URL || process.env.DATABASE_URL;
}

/** DATABASE_POOL_MODE of the test run (`session` unless set). */
export function testPoolMode(): PoolMode {
  const mode = process.env.DATABASE_POOL_MODE || 'session';
  if (!(POOL_MODES as readonly string[]).includes(mode))
    throw new Error(`DATABASE_POOL_MODE: ${mode} is not one of ${POOL_MODES.join(', ')}`);
  return mode as PoolMode;
}

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
  const admin = serverUrl() as string;
  const template = inject('templateDatabase');
  const name = `test_${randomBytes(6).toString('hex')}`;
  await adminQuery(admin, template ? `create database ${name} template ${template}` : `create database ${name}`);
  const url = withDatabase(baseUrl, name);
  const database = openDatabase({
    url,
    poolMax: 10,
    poolMode: testPoolMode(),
    migrationUrl: process.env.DATABASE_MIGRATION_URL ? withDatabase(admin, name) : undefined,
  });
  if (!template) await database.migrate();
  return {
    ...database,
    url,
    async close() {
      await database.close();
      await adminQuery(admin, `drop database if exists ${name} with (force)`);
    },
  };
}
