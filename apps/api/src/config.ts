import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BANK_FEEDS_MODES, type BankFeedsConfig, bankFeedsConfigFrom, type TokenKeys } from '@firm/banking';
import { type AuditTrail, openAuditTrail } from '@firm/gateway';
import { type DatabaseOptions, POOL_MODES } from '@firm/db';
import { DEFAULT_GENERAL_LEDGER_MAX_LINES } from '@firm/ledger';
import { type QboConfig, qboConfigFrom } from '@firm/qbo';
import { DEVELOPMENT_SECRET_KEYS, parseSecretKeys, type SecretKeys } from '@firm/webhooks';
import { type Static, Type } from 'typebox';
import { Value } from 'typebox/value';

/** Every environment variable the service reads, validated once at start-up. */
/** `id:<32 bytes base64>[,id:<key>...]`: sealing keys, the first one current, the others still readable. */
const SEALING_KEYS = '^[A-Za-z0-9_-]+:[A-Za-z0-9+/=]{43,44}(,[A-Za-z0-9_-]+:[A-Za-z0-9+/=]{43,44})*$';

const ConfigSchema = Type.Object({
  DATABASE_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  /**
   * How DATABASE_URL reaches Postgres: `session` (directly, or a pooler in session mode) or `transaction` (a
   * transaction pooler such as PgBouncer in transaction mode: statements run unnamed, locks are transaction-level).
   */
  DATABASE_POOL_MODE: Type.Enum(POOL_MODES, { default: 'session' }),
  /**
   * A direct connection to the same database, past the pooler, that migrations run on. Unset: migrations run on
   * DATABASE_URL (through a transaction pooler, in one transaction under a transaction-level lock).
   */
  DATABASE_MIGRATION_URL: Type.Optional(Type.String({ pattern: '^postgres(ql)?://' })),
  DATA_DIR: Type.String({ default: './.data', minLength: 1 }),
  PORT: Type.Integer({ default: 3000, minimum: 0, maximum: 65535 }),
  HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  NODE_ENV: Type.Enum(['development', 'production', 'test'], { default: 'development' }),
  LOG_LEVEL: Type.Enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], { default: 'info' }),
  /** Public origin used in the OpenAPI document and OAuth metadata, e.g. https://books.example.com. */
  PUBLIC_ORIGIN: Type.Optional(Type.String({ pattern: '^https?://[^/]+$' })),
  /**
   * Further origins whose pages may post to the browser-facing routes and call /mcp (comma-separated, e.g. a
   * browser-based MCP client at http://localhost:6274). The service's own origin is always allowed.
   */
  ALLOWED_ORIGINS: Type.Optional(Type.String({ pattern: '^https?://[^/,]+(,https?://[^/,]+)*$' })),
  /** Largest accepted request body, in bytes. */
  BODY_LIMIT_BYTES: Type.Integer({ default: 1_048_576, minimum: 1024 }),
  /** How long idempotency records are kept, in hours. */
  IDEMPOTENCY_RETENTION_HOURS: Type.Integer({ default: 24, minimum: 1 }),
  /** How often the server deletes expired idempotency records, in minutes. */
  IDEMPOTENCY_PURGE_INTERVAL_MINUTES: Type.Integer({ default: 60, minimum: 1 }),
  /** How often the server expires agent proposals nobody decided on before their expiry, in seconds. */
  PROPOSAL_EXPIRY_INTERVAL_SECONDS: Type.Integer({ default: 60, minimum: 1, maximum: 3600 }),
  DB_POOL_MAX: Type.Integer({ default: 20, minimum: 1, maximum: 500 }),
  /** How long a new Postgres connection may take before the database counts as unreachable (503). */
  DB_CONNECT_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 600_000 }),
  /**
   * How long a process keeps an API key it looked up (with the organization the request named), in milliseconds;
   * 0 looks the key up on every request. Changes made through this process apply at once; a key revoked from
   * elsewhere (the CLI, another process) stops working within this time.
   */
  AUTH_CACHE_TTL_MS: Type.Integer({ default: 1000, minimum: 0, maximum: 60_000 }),
  /** Key that signs session cookies; unset: a random one per process (sessions end on restart). */
  SESSION_SECRET: Type.Optional(Type.String({ minLength: 32 })),
  SESSION_TTL_HOURS: Type.Integer({ default: 12, minimum: 1, maximum: 720 }),
  /** How long an invitation link (POST /api/v1/users, `cli user invite`) works, in hours; each works once. */
  INVITATION_TTL_HOURS: Type.Integer({ default: 168, minimum: 1, maximum: 720 }),
  /** Rate-limit counters live in Redis when set, else in process memory. */
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://' })),
  REDIS_KEY_PREFIX: Type.String({ default: 'firm-ledger:rate-limit:', minLength: 1 }),
  /** Requests per window for each credential (API key, OAuth token family, session user). */
  RATE_LIMIT_MAX: Type.Integer({ default: 600, minimum: 1 }),
  /** Requests per window for each IP address on routes called without a credential. */
  RATE_LIMIT_ANONYMOUS_MAX: Type.Integer({ default: 120, minimum: 1 }),
  RATE_LIMIT_WINDOW_SECONDS: Type.Integer({ default: 60, minimum: 1 }),
  /**
   * Writes each agent credential (OAuth token family, API key) may make through the agent gateway per window, on top
   * of its overall rate limit: a runaway agent is stopped after this many changes to the books.
   */
  AGENT_WRITE_BUDGET: Type.Integer({ default: 120, minimum: 1 }),
  AGENT_WRITE_WINDOW_SECONDS: Type.Integer({ default: 60, minimum: 1 }),
  /** Reads each agent credential may make through the agent gateway per minute; a firm may set its own. */
  AGENT_READ_LIMIT: Type.Integer({ default: 600, minimum: 1 }),
  /**
   * How long one statement of an agent's read through the gateway (a query, a list, a record, a report) may run on
   * this service's database before it is cancelled (422 QUERY_TIMEOUT), in milliseconds. Set per read transaction
   * (SET LOCAL), so it also holds behind a transaction pooler. The embedded database (PGlite) takes the setting but
   * has no timer to enforce it.
   */
  GATEWAY_STATEMENT_TIMEOUT_MS: Type.Integer({ default: 5000, minimum: 1, maximum: 600_000 }),
  /** How long a process keeps a firm's own agent limits before reading them again. */
  AGENT_LIMITS_CACHE_MS: Type.Integer({ default: 5000, minimum: 0 }),
  /**
   * The most lines one general ledger may list, as JSON (partner API and agent gateway) or exported; a range with
   * more is refused (422 REPORT_TOO_LARGE) before any line is read.
   */
  GENERAL_LEDGER_MAX_LINES: Type.Integer({ default: DEFAULT_GENERAL_LEDGER_MAX_LINES, minimum: 1 }),
  /**
   * Report exports and general ledgers (which hold a database connection and the event loop's time while they are
   * sent) each credential may run at once in a process, and the process as a whole; beyond either, 429 RATE_LIMITED
   * with Retry-After.
   */
  EXPORTS_PER_CREDENTIAL: Type.Integer({ default: 2, minimum: 1 }),
  EXPORTS_PER_PROCESS: Type.Integer({ default: 4, minimum: 1 }),
  /** Sign-in attempts per IP address, and per account, per login window. */
  LOGIN_RATE_LIMIT_IP_MAX: Type.Integer({ default: 30, minimum: 1 }),
  LOGIN_RATE_LIMIT_ACCOUNT_MAX: Type.Integer({ default: 10, minimum: 1 }),
  LOGIN_RATE_LIMIT_ACCOUNT_ANY_IP_MAX: Type.Integer({ default: 200, minimum: 1 }),
  LOGIN_RATE_LIMIT_WINDOW_SECONDS: Type.Integer({ default: 900, minimum: 1 }),
  /** Requests to /api/oauth/token and to /api/oauth/register per IP address per rate-limit window. */
  OAUTH_TOKEN_RATE_LIMIT_MAX: Type.Integer({ default: 60, minimum: 1 }),
  OAUTH_REGISTER_RATE_LIMIT_MAX: Type.Integer({ default: 10, minimum: 1 }),
  OAUTH_ACCESS_TOKEN_TTL_SECONDS: Type.Integer({ default: 3600, minimum: 60, maximum: 86_400 }),
  OAUTH_REFRESH_TOKEN_TTL_DAYS: Type.Integer({ default: 30, minimum: 1, maximum: 365 }),
  OAUTH_CODE_TTL_SECONDS: Type.Integer({ default: 60, minimum: 10, maximum: 600 }),
  /** Run the webhook worker inside the API process; false when it runs as `npm run worker` instead. */
  /** Bearer token that `GET /metrics` on the API's port requires; unset: not served there. */
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 16 })),
  /** A port of its own for `GET /metrics`, without a token (bind it where only Prometheus reaches). */
  METRICS_PORT: Type.Optional(Type.Integer({ minimum: 0, maximum: 65535 })),
  METRICS_HOST: Type.String({ default: '127.0.0.1', minLength: 1 }),
  WEBHOOK_WORKER: Type.Boolean({ default: true }),
  SCHEDULED_ENTRIES_INTERVAL_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 60 }),
  /** The largest file an import takes (POST .../imports), in bytes; larger is 413 PAYLOAD_TOO_LARGE. */
  IMPORT_MAX_BYTES: Type.Integer({ default: 200 * 1024 * 1024, minimum: 1024 }),
  /** Imports of at most this many journal rows are posted while the request waits; larger ones run in the background. */
  IMPORT_INLINE_MAX_ROWS: Type.Integer({ default: 5000, minimum: 0 }),
  /** Rows a background import posts per transaction. */
  IMPORT_BATCH_ROWS: Type.Integer({ default: 5000, minimum: 1 }),
  /** How often the background runner looks for queued imports, in seconds. */
  IMPORT_RUNNER_INTERVAL_SECONDS: Type.Integer({ minimum: 1, maximum: 3600, default: 2 }),
  /**
   * Where new attachments are stored: `postgres` (the default: in the database, content-addressed) or `s3` (an
   * S3-compatible bucket, ATTACHMENTS_S3_*). Files already stored stay readable from the store that holds them while
   * it is configured; `cli attachments move` moves a company's files between stores.
   */
  ATTACHMENTS_STORE: Type.Enum(['postgres', 's3'], { default: 'postgres' }),
  /** The largest attachment taken (POST /api/v1/attachments), in bytes; larger is 413 PAYLOAD_TOO_LARGE. */
  ATTACHMENTS_MAX_BYTES: Type.Integer({ default: 25 * 1024 * 1024, minimum: 1024 }),
  /** The S3 store: bucket, endpoint (an S3-compatible server; unset: AWS), region, credentials (unset: the SDK's chain). */
  ATTACHMENTS_S3_BUCKET: Type.Optional(Type.String({ minLength: 3 })),
  ATTACHMENTS_S3_ENDPOINT: Type.Optional(Type.String({ pattern: '^https?://' })),
  ATTACHMENTS_S3_REGION: Type.String({ default: 'us-east-1', minLength: 1 }),
  ATTACHMENTS_S3_ACCESS_KEY_ID: Type.Optional(Type.String({ minLength: 1 })),
  ATTACHMENTS_S3_SECRET_ACCESS_KEY: Type.Optional(Type.String({ minLength: 1 })),
  /** Path-style URLs (`endpoint/bucket/key`), as most S3-compatible servers want; default: on with an endpoint. */
  ATTACHMENTS_S3_FORCE_PATH_STYLE: Type.Optional(Type.Boolean()),
  /** A prefix of every object key, e.g. `attachments/`. */
  ATTACHMENTS_S3_PREFIX: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * On Postgres, apply pending migrations before listening (under an advisory lock, so instances starting together
   * take turns). The embedded database is always migrated on start.
   */
  MIGRATE_ON_START: Type.Boolean({ default: false }),
  /** How long a webhook receiver has to answer, in milliseconds. */
  WEBHOOK_TIMEOUT_MS: Type.Integer({ default: 10_000, minimum: 100, maximum: 60_000 }),
  /** Allow http and loopback webhook URLs (local development and tests only). */
  WEBHOOKS_ALLOW_INSECURE_LOCALHOST: Type.Boolean({ default: false }),
  /**
   * Behind a reverse proxy: `true` (trust X-Forwarded-For from any hop) or a comma-separated list of the proxies'
   * addresses or CIDRs. Unset: the socket's address is the client's (X-Forwarded-For is ignored).
   */
  TRUST_PROXY: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * Bank feeds: `on` (the default), `sandbox` or `off`. On in production, PLAID_CLIENT_ID, PLAID_SECRET, PLAID_BASE_URL
   * and BANK_TOKEN_KEYS must be set and none may be a sandbox's, or the server refuses to start; `sandbox` allows the
   * sandbox aggregator's defaults or Plaid's sandbox there (a demonstration); `off` turns bank feeds off (connecting a
   * feed answers 503, the aggregator webhook is not served, no sync runs).
   */
  BANK_FEEDS: Type.Enum(BANK_FEEDS_MODES, { default: 'on' }),
  /**
   * On the embedded database, an empty database is seeded with the demo firm; with its year of books unless false
   * (a quicker first start, empty books: what `cli seed --empty` gives).
   */
  DEMO_HISTORY: Type.Boolean({ default: true }),
  /** Bank-data aggregator (Plaid) credentials. Unset outside production: those the sandbox aggregator accepts. */
  PLAID_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  PLAID_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  /**
   * Where the Plaid client sends requests: https://production.plaid.com or https://sandbox.plaid.com for Plaid, or
   * the sandbox aggregator this project ships (`npm run sandbox:aggregator`, the default outside production).
   */
  PLAID_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  /**
   * On the embedded database with PLAID_BASE_URL at its default, `npm start` also serves the sandbox aggregator
   * there (unless something already listens), so the demo's feed and new sandbox feeds work with one command.
   */
  SANDBOX_AGGREGATOR: Type.Boolean({ default: true }),
  /**
   * Keys that seal aggregator access tokens at rest (AES-256-GCM): `id:<32 bytes base64>[,id:<key>...]`, the first
   * one current, the others still readable. Required in production unless BANK_FEEDS=off; elsewhere, unset, a fixed
   * development key is used.
   */
  BANK_TOKEN_KEYS: Type.Optional(Type.String({ pattern: SEALING_KEYS })),
  /**
   * Keys that seal webhook signing secrets at rest (AES-256-GCM), in the same form. Required in production; elsewhere
   * a fixed development key is used. Put a new key first to rotate: the next start re-seals every secret under it.
   */
  WEBHOOK_SECRET_KEYS: Type.Optional(Type.String({ pattern: SEALING_KEYS })),
  /**
   * QuickBooks Online: the app's OAuth client id and secret, and the redirect URI registered with Intuit (its path
   * is this service's callback route, `/api/qbo/callback`). Unset QBO_CLIENT_ID: clients stay on the embedded
   * platform. QBO_ENVIRONMENT picks Intuit's default URLs; each URL can be overridden, so any QBO-compatible server
   * can stand in.
   */
  QBO_CLIENT_ID: Type.Optional(Type.String({ minLength: 1 })),
  QBO_CLIENT_SECRET: Type.Optional(Type.String({ minLength: 1 })),
  QBO_REDIRECT_URI: Type.Optional(Type.String({ pattern: '^https?://' })),
  QBO_ENVIRONMENT: Type.Union([Type.Literal('sandbox'), Type.Literal('production')], { default: 'sandbox' }),
  QBO_AUTHORIZE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  QBO_TOKEN_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  QBO_REVOKE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  /** The part before `/v3/company/{realmId}`. */
  QBO_API_BASE_URL: Type.Optional(Type.String({ pattern: '^https?://' })),
  /**
   * Keys that seal QBO access and refresh tokens at rest (AES-256-GCM), in the same form as BANK_TOKEN_KEYS; the
   * first seals, every one listed still opens. Required in production when QBO_CLIENT_ID is set.
   */
  QBO_TOKEN_ENCRYPTION_KEY: Type.Optional(Type.String({ pattern: SEALING_KEYS })),
  /**
   * Keys of the agent audit chain's HMACs, in the same form: the first signs new events, every one listed still
   * verifies the events signed with it (each event stores its key id). Required in production. Elsewhere, unset: a
   * key generated on first start into DATA_DIR/audit-hmac-keys, outside the database. Attachments' download links are
   * signed with keys derived (HKDF) from these.
   */
  AUDIT_HMAC_KEYS: Type.Optional(Type.String({ pattern: SEALING_KEYS })),
  /**
   * Where each firm's audit chain head is anchored (signed files), out of reach of whoever can write to the database,
   * so that deleting the chain's last events shows. Default DATA_DIR/audit-anchors; with several API hosts, a volume
   * they all mount.
   */
  AUDIT_ANCHOR_DIR: Type.Optional(Type.String({ minLength: 1 })),
});

export type Config = Static<typeof ConfigSchema>;

export class ConfigError extends Error {}

/** Variables that may instead be given as the path of a file holding them, in `<NAME>_FILE`. */
const SECRET_FILE_KEYS = [
  'SESSION_SECRET',
  'METRICS_TOKEN',
  'DATABASE_URL',
  'DATABASE_MIGRATION_URL',
  'PLAID_SECRET',
  'BANK_TOKEN_KEYS',
  'WEBHOOK_SECRET_KEYS',
  'QBO_CLIENT_SECRET',
  'QBO_TOKEN_ENCRYPTION_KEY',
  'AUDIT_HMAC_KEYS',
  'ATTACHMENTS_S3_SECRET_ACCESS_KEY',
] as const;

export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(ConfigSchema.properties)) {
    const value = env[key];
    if (value !== undefined && value !== '') raw[key] = value;
  }
  // Secrets may come from files (Docker and Kubernetes secrets): X_FILE names a file whose content is X.
  for (const key of SECRET_FILE_KEYS) {
    const file = env[`${key}_FILE`];
    if (raw[key] !== undefined || !file) continue;
    try {
      raw[key] = readFileSync(file, 'utf8').trim();
    } catch (err) {
      throw new ConfigError(
        `invalid configuration: ${key}_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code})`,
      );
    }
  }
  const withDefaults = Value.Default(ConfigSchema, raw);
  const converted = Value.Convert(ConfigSchema, withDefaults);
  if (!Value.Check(ConfigSchema, converted)) {
    const problems = [...Value.Errors(ConfigSchema, converted)].map((e) => {
      const name =
        e.instancePath.replace(/^\//, '') ||
        String((e.params as { requiredProperties?: string[] }).requiredProperties ?? '');
      return `${name}: ${e.message}`;
    });
    throw new ConfigError(`invalid configuration: ${problems.join('; ')}`);
  }
  const config = converted as Config;
  // The OAuth issuer, the metadata documents and WWW-Authenticate are built from it; taken from the Host header
  // instead, a forged Host could put another site in cacheable discovery documents.
  if (config.NODE_ENV === 'production' && !config.PUBLIC_ORIGIN) {
    throw new ConfigError(
      'invalid configuration: PUBLIC_ORIGIN: required when NODE_ENV=production (https://api.example.com)',
    );
  }
  if (config.NODE_ENV === 'production' && !config.WEBHOOK_SECRET_KEYS) {
    throw new ConfigError(
      'invalid configuration: WEBHOOK_SECRET_KEYS: required when NODE_ENV=production (k1:<32 random bytes in base64>)',
    );
  }
  if (config.NODE_ENV === 'production' && !config.AUDIT_HMAC_KEYS) {
    throw new ConfigError(
      'invalid configuration: AUDIT_HMAC_KEYS: required when NODE_ENV=production (k1:<32 random bytes in base64>)',
    );
  }
  try {
    qboConfigOf(config);
    bankFeedsOf(config);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return config;
}

/** How the database is opened: Postgres from DATABASE_URL and its pooler settings, else the embedded one in DATA_DIR. */
export const databaseOptionsOf = (config: Config): DatabaseOptions => ({
  url: config.DATABASE_URL,
  dataDir: config.DATA_DIR,
  poolMax: config.DB_POOL_MAX,
  connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
  poolMode: config.DATABASE_POOL_MODE,
  migrationUrl: config.DATABASE_MIGRATION_URL,
});

/** The QuickBooks Online configuration, or null when QBO_CLIENT_ID is not set. */
export const qboConfigOf = (config: Config): QboConfig | null =>
  qboConfigFrom(config, { production: config.NODE_ENV === 'production' });

/** The aggregator's settings and the keys sealing its tokens; null when BANK_FEEDS=off. */
export const bankFeedsOf = (config: Config): BankFeedsConfig | null =>
  bankFeedsConfigFrom(config, { production: config.NODE_ENV === 'production' });

/** The keys sealing aggregator tokens; null when bank feeds are off. */
export const bankTokenKeysOf = (config: Config): TokenKeys | null => bankFeedsOf(config)?.tokenKeys ?? null;

/** The keys sealing webhook signing secrets: WEBHOOK_SECRET_KEYS, or outside production a fixed development key. */
export const webhookSecretKeysOf = (config: Config): SecretKeys =>
  parseSecretKeys(config.WEBHOOK_SECRET_KEYS ?? DEVELOPMENT_SECRET_KEYS);

/** The agent audit trail: its keys (AUDIT_HMAC_KEYS, or outside production the generated local key) and anchors. */
export async function auditTrailOf(config: Config): Promise<AuditTrail> {
  try {
    return await openAuditTrail({
      keys: config.AUDIT_HMAC_KEYS,
      dataDir: config.DATA_DIR,
      anchorDir: config.AUDIT_ANCHOR_DIR,
      production: config.NODE_ENV === 'production',
    });
  } catch (err) {
    throw new ConfigError(`invalid configuration: ${(err as Error).message}`);
  }
}

/** The audit key of tests: a fixed, public value. */
export const TEST_AUDIT_HMAC_KEYS = `test:${Buffer.alloc(32, 5).toString('base64')}`;

let testAnchorDir: string | undefined;

function makeTestAnchorDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'audit-anchors-'));
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Defaults for tests and embedding: everything a real start-up would have, without the environment. */
export const testConfig = (overrides: Partial<Config> = {}): Config => ({
  // Tests fire many requests with one key; the rate-limit tests set their own limits.
  ...loadConfig({
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    RATE_LIMIT_MAX: '1000000',
    RATE_LIMIT_ANONYMOUS_MAX: '1000000',
    AGENT_WRITE_BUDGET: '1000000',
    AGENT_READ_LIMIT: '1000000',
    AUDIT_HMAC_KEYS: TEST_AUDIT_HMAC_KEYS,
    // Never in the working directory's data directory: the test run's own (test/global-setup.ts), else this process's.
    AUDIT_ANCHOR_DIR: process.env.TEST_AUDIT_ANCHOR_DIR ?? (testAnchorDir ??= makeTestAnchorDir()),
  }),
  ...overrides,
});

/** Fastify's trustProxy option from TRUST_PROXY. */
export function trustProxyOf(value: string | undefined): boolean | string {
  if (value === undefined || value === 'false') return false;
  return value === 'true' ? true : value;
}
