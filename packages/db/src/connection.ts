import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { is, type Query, type SQL, sql } from 'drizzle-orm';
import { drizzle as drizzlePg, NodePgDatabase } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import { drizzle as drizzlePglite } from 'drizzle-orm/pglite';
import { migrate as migratePglite } from 'drizzle-orm/pglite/migrator';
import pg from 'pg';
import { ownsDataDir } from './owner';
import * as schema from './schema/index';

export type Schema = typeof schema;
/** The Drizzle database, whichever driver is under it. Transactions have the same surface. */
export type Db = PgDatabase<PgQueryResultHKT, Schema>;
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** Anything queries can run on: the database or an open transaction. */
export type Executor = Db | Tx;

/**
 * The SQL migrations: `MIGRATIONS_DIR` when set, else the nearest `migrations/` above this module, which finds the
 * repository's from the sources (packages/db/src) and from the compiled build (dist/).
 */
export const MIGRATIONS_DIR = process.env.MIGRATIONS_DIR || findMigrations(dirname(fileURLToPath(import.meta.url)));

function findMigrations(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'migrations');
    if (existsSync(join(candidate, 'meta', '_journal.json'))) return candidate;
    if (dirname(dir) === dir) throw new Error(`no migrations/ folder above ${from}; set MIGRATIONS_DIR`);
  }
}

/**
 * How the Postgres server is reached. `session`: each pooled connection is one server session (directly, or a
 * pooler in session mode). `transaction`: through a transaction pooler (PgBouncer in transaction mode), where
 * consecutive transactions of one connection may run on different server sessions, so nothing may outlive a
 * transaction: statements run unnamed and locks are transaction-level.
 */
export const POOL_MODES = ['session', 'transaction'] as const;
export type PoolMode = (typeof POOL_MODES)[number];

export interface Database {
  db: Db;
  kind: 'postgres' | 'embedded';
  /** How the server is reached (always `session` on the embedded database). */
  poolMode: PoolMode;
  /** Applies pending migrations (idempotent). */
  migrate(): Promise<void>;
  /** True when a trivial query answers. */
  ping(): Promise<boolean>;
  /** How many migrations of this build the database has not applied (all of them on an empty database). */
  pendingMigrations(): Promise<number>;
  /** The Postgres pool's connections now; null on the embedded database, which has one connection. */
  poolStats(): PoolStats | null;
  close(): Promise<void>;
}

export interface PoolStats {
  max: number;
  /** Connections open, in use or idle. */
  total: number;
  idle: number;
  /** Queries waiting for a connection. */
  waiting: number;
}

export interface DatabaseOptions {
  /** A postgres:// URL. Without it an embedded PGlite database is used. */
  url?: string | undefined;
  /** Where the embedded database keeps its files; `memory://` keeps it in memory. */
  dataDir?: string | undefined;
  /** Pool size for the pg driver. */
  poolMax?: number | undefined;
  /**
   * How long the pg driver waits for a new connection (default 10 s): a database that accepts connections but never
   * answers (a network that drops packets) is then reported unreachable instead of holding requests forever.
   */
  connectTimeoutMs?: number | undefined;
  /** How `url` reaches the server (default `session`). */
  poolMode?: PoolMode | undefined;
  /** A direct connection to the same database that migrations run on (the pooler's server, not the pooler). */
  migrationUrl?: string | undefined;
}

// pg returns int8 as strings by default; our money columns are bigint cents well inside 2^53.
pg.types.setTypeParser(pg.types.builtins.INT8, (v) => Number(v));
// `date` columns stay plain YYYY-MM-DD strings rather than local-time Date objects.
pg.types.setTypeParser(pg.types.builtins.DATE, (v) => v);

export function openDatabase(options: DatabaseOptions): Database {
  return options.url
    ? openPostgres(options.url, {
        max: options.poolMax ?? 20,
        connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
        poolMode: options.poolMode ?? 'session',
        migrationUrl: options.migrationUrl,
      })
    : openEmbedded(options.dataDir ?? './.data');
}

/** Advisory lock key under which migrations run, so that processes starting at once migrate in turn. */
const MIGRATION_LOCK = 7264310001;

/**
 * A pg client that runs every statement unnamed. Behind a transaction pooler a statement prepared under a name on one
 * server session is missing on the next (`prepared statement ... does not exist`) or already there for another
 * client (`... already exists`). Unnamed, its values are still bound as parameters; only its parse is not kept.
 * Covers every named statement, ours (`preparedStatement`) and Drizzle's (`.prepare(name)`).
 */
class UnnamedStatementClient extends pg.Client {
  constructor(config?: pg.ClientConfig) {
    super(config);
    const query = this.query.bind(this) as (...args: unknown[]) => unknown;
    this.query = ((...args: unknown[]) => query(...withoutName(args))) as pg.Client['query'];
  }
}

function withoutName(args: unknown[]): unknown[] {
  const [config, ...rest] = args;
  // A submittable (a cursor, a stream) is passed through as it is.
  if (!config || typeof config !== 'object' || 'submit' in config || !('name' in config)) return args;
  const { name: _name, ...unnamed } = config as { name?: string };
  return [unnamed, ...rest];
}

interface PostgresOptions {
  max: number;
  connectTimeoutMs: number;
  poolMode: PoolMode;
  migrationUrl: string | undefined;
}

function openPostgres(url: string, { max, connectTimeoutMs, poolMode, migrationUrl }: PostgresOptions): Database {
  // TCP keepalive lets the kernel notice a connection whose peer vanished without a reset.
  const pool = new pg.Pool({
    connectionString: url,
    max,
    connectionTimeoutMillis: connectTimeoutMs,
    keepAlive: true,
    ...(poolMode === 'transaction' ? { Client: UnnamedStatementClient } : {}),
  });
  // A dropped connection must not crash the process. Idle ones: the pool replaces them. One in use (an
  // administrator or failover killed it mid-transaction): its query fails, the request answers 5xx, and the
  // broken client is discarded when released; without a listener its 'error' event would be uncaught.
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  return {
    db,
    kind: 'postgres',
    poolMode,
    migrate: () => migratePostgres(migrationUrl ?? url, migrationUrl ? 'session' : poolMode),
    ping: () => ping(db),
    pendingMigrations: () => pendingMigrations(db),
    poolStats: () => ({ max, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    close: () => pool.end(),
  };
}

/**
 * Applies pending migrations, one process at a time. On a session (a direct connection) a session advisory lock is
 * held for the whole run. Through a transaction pooler a session lock could be released on a server session other
 * than the one that took it, so the run is one transaction holding a transaction-level lock: Drizzle's migrator reads
 * what is applied and then opens its own transaction, whose `begin` is then a no-op (a warning) and whose `commit`
 * ends ours, releasing the lock once the migrations are committed.
 */
async function migratePostgres(url: string, mode: PoolMode): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    if (mode === 'session') {
      await client.query(`select pg_advisory_lock(${MIGRATION_LOCK})`);
      await migratePg(drizzlePg(client), { migrationsFolder: MIGRATIONS_DIR });
      return;
    }
    await client.query('begin');
    try {
      await client.query(`select pg_advisory_xact_lock(${MIGRATION_LOCK})`);
      await migratePg(drizzlePg(client), { migrationsFolder: MIGRATIONS_DIR });
    } catch (err) {
      await client.query('rollback');
      throw err;
    }
  } finally {
    await client.end();
  }
}

function openEmbedded(dataDir: string): Database {
  if (!dataDir.startsWith('memory://') && !ownsDataDir(dataDir)) {
    throw new Error(`the embedded database in ${dataDir} is opened only by the process that claimed it (claimDataDir)`);
  }
  const client = new PGlite(dataDir);
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  return {
    db,
    kind: 'embedded',
    poolMode: 'session',
    async migrate() {
      await migratePglite(drizzlePglite(client), { migrationsFolder: MIGRATIONS_DIR });
    },
    ping: () => ping(db),
    pendingMigrations: () => pendingMigrations(db),
    poolStats: () => null,
    close: () => client.close(),
  };
}

/** The `when` of each migration this build ships, from drizzle-kit's journal. */
function shippedMigrations(): number[] {
  const journal = JSON.parse(readFileSync(join(MIGRATIONS_DIR, 'meta', '_journal.json'), 'utf8')) as {
    entries: { when: number }[];
  };
  return journal.entries.map((e) => e.when);
}

async function pendingMigrations(db: Db): Promise<number> {
  const shipped = shippedMigrations();
  // Drizzle's migrator records each applied migration with its journal `when` and applies only later ones.
  const exists = rowsOf<{ t: string | null }>(
    await db.execute(sql`select to_regclass('drizzle.__drizzle_migrations')::text as t`),
  );
  if (!exists[0]?.t) return shipped.length;
  const last = rowsOf<{ at: number | string | null }>(
    await db.execute(sql`select max(created_at) as at from drizzle.__drizzle_migrations`),
  );
  const applied = Number(last[0]?.at ?? 0);
  return shipped.filter((when) => when > applied).length;
}

async function ping(db: Db): Promise<boolean> {
  try {
    await db.execute(sql`select 1`);
    return true;
  } catch {
    return false;
  }
}

/** What a prepared statement is run with: a value for each `sql.placeholder` name. */
export type StatementValues = Record<string, unknown>;

interface DrizzleInternals {
  dialect: { sqlToQuery(query: SQL): Query };
  session: {
    prepareQuery(
      query: Query,
      fields: undefined,
      name: string,
      arrayMode: false,
    ): { execute(v: StatementValues): unknown };
  };
}

/**
 * A raw SQL statement whose values are all `sql.placeholder`s, so its text never changes: it is turned into SQL
 * text once, and on Postgres it is a named prepared statement, parsed and planned once per connection; each run
 * sends only the statement's name and its values. Runs on the database or in a transaction (either driver). On a
 * database opened in `transaction` pool mode it runs unnamed (see UnnamedStatementClient), parsed on each run.
 */
export function preparedStatement<T>(
  name: string,
  query: SQL,
): (db: Executor, values: StatementValues) => Promise<T[]> {
  let built: Query | undefined;
  // Drizzle's prepared query for each session (the pool's, a transaction's) it has run on: made once, not per call.
  const prepared = new WeakMap<object, ReturnType<DrizzleInternals['session']['prepareQuery']>>();
  return async (db, values) => {
    const { dialect, session } = db as unknown as DrizzleInternals;
    built ??= dialect.sqlToQuery(query);
    let statement = prepared.get(session);
    if (!statement) {
      statement = session.prepareQuery(built, undefined, name, false);
      prepared.set(session, statement);
    }
    return rowsOf<T>(await statement.execute(values));
  };
}

/** A view of the database held open for a series of reads; `release` must be called once they are done. */
export interface Snapshot {
  db: Executor;
  release(): Promise<void>;
}

/**
 * Opens a consistent view for reads spread over time (a report read in pages while it is sent). On Postgres: a
 * read-only repeatable-read transaction on one pooled connection, held until `release`, so every read sees the books
 * as of its first one. Inside a transaction: that transaction. On the embedded database each read runs on its own:
 * its one connection, held by an open transaction, would make every other request wait for the slowest reader.
 */
export async function openSnapshot(db: Executor): Promise<Snapshot> {
  if (!is(db, NodePgDatabase)) return { db, release: async () => {} };
  let release!: () => void;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  let opened!: (tx: Tx) => void;
  const ready = new Promise<Tx>((resolve) => {
    opened = resolve;
  });
  const done = db.transaction(
    async (tx) => {
      opened(tx as unknown as Tx);
      await released;
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  );
  // A transaction that cannot begin (no connection) rejects `done` before `ready` resolves.
  const tx = await Promise.race([ready, done.then(() => ready)]);
  return {
    db: tx,
    release: async () => {
      release();
      await done;
    },
  };
}

/** Rows of a raw `db.execute`, whichever driver ran it. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

export interface PgErrorInfo {
  code: string;
  constraint?: string;
  message: string;
}

/** The Postgres error under Drizzle's wrapper (both drivers), or null when it is not one. */
export function pgErrorOf(err: unknown): PgErrorInfo | null {
  let current: unknown = err;
  for (let depth = 0; current && depth < 5; depth++) {
    const e = current as { code?: unknown; constraint?: unknown; message?: unknown; cause?: unknown };
    if (typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) {
      return {
        code: e.code,
        constraint: typeof e.constraint === 'string' ? e.constraint : undefined,
        message: String(e.message),
      };
    }
    current = e.cause;
  }
  return null;
}

/** Socket errors that mean the database server cannot be reached (down, restarting, unresolvable, unreachable). */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EPIPE',
]);

/**
 * True when the error (or one it wraps) says the database cannot serve: the connection was lost or cannot be
 * made, the server is starting or shutting down, or it has no connection slot left; in either driver.
 */
export function isConnectionLost(err: unknown): boolean {
  const code = pgErrorOf(err)?.code;
  if (code && (code.startsWith('08') || code.startsWith('57P') || code === '53300')) return true;
  let current: unknown = err;
  for (let depth = 0; current && depth < 5; depth++) {
    const e = current as { message?: unknown; code?: unknown; errors?: unknown; cause?: unknown };
    if (typeof e.code === 'string' && UNREACHABLE.has(e.code)) return true;
    // A connection attempt to every address of a host fails as one AggregateError.
    if (Array.isArray(e.errors) && e.errors.some((inner) => isConnectionLost(inner))) return true;
    const message = String(e.message ?? '');
    if (/Connection terminated|connection error|not queryable|timeout exceeded when trying to connect/i.test(message))
      return true;
    current = e.cause;
  }
  return false;
}
