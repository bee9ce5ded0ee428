import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { text } from 'node:stream/consumers';
import {
  type Database,
  DataDirInUseError,
  claimDataDir,
  openDatabase,
  POOL_MODES,
  type PoolMode,
  runInOwner,
} from '@firm/db';
import { bankFeedsConfigFrom, PlaidAggregator } from '@firm/banking';
import { openAuditTrail } from '@firm/gateway';
import { qboConfigFrom } from '@firm/qbo';
import {
  type BankingDeps,
  type CliSettings,
  DEFAULT_CLI_SETTINGS,
  type Io,
  describeFailure,
  parseCommand,
  readsStdin,
  runCli,
  withAbsoluteFiles,
} from './main';

// A --file path names a file where the command was typed, even when the command runs in the process that owns the
// embedded database (another working directory).
const argv = withAbsoluteFiles(process.argv.slice(2), process.cwd());

/**
 * The aggregator and token keys from the environment, as the API reads them: none with BANK_FEEDS=off, and why not
 * (naming the variable) when the settings are incomplete, which the bank-feed commands then say.
 */
function bankingFromEnv(env = process.env): BankingDeps | string | undefined {
  try {
    const feeds = bankFeedsConfigFrom(env, { production: env.NODE_ENV === 'production' });
    return feeds ? { aggregator: new PlaidAggregator(feeds), tokenKeys: feeds.tokenKeys } : undefined;
  } catch (err) {
    return (err as Error).message;
  }
}
/** QuickBooks Online from the environment, as the API reads it; null when QBO_CLIENT_ID is not set. */
const qboFromEnv = (env = process.env) => qboConfigFrom(env, { production: env.NODE_ENV === 'production' });

/** The audit trail from the environment, as the API reads it; opened only by the command that verifies it. */
const auditFromEnv =
  (env = process.env) =>
  async () => {
    const file = env.AUDIT_HMAC_KEYS_FILE;
    const keys = env.AUDIT_HMAC_KEYS || (file ? (await readFile(file, 'utf8')).trim() : undefined);
    return openAuditTrail({
      keys,
      dataDir: env.DATA_DIR || './.data',
      anchorDir: env.AUDIT_ANCHOR_DIR || undefined,
      production: env.NODE_ENV === 'production',
    });
  };

/** Where invitation links point and how long they work, as the API reads them. */
/** DATABASE_POOL_MODE, as the server reads it: `session` unless set. */
function poolModeFromEnv(env = process.env): PoolMode {
  const mode = env.DATABASE_POOL_MODE || 'session';
  if (!(POOL_MODES as readonly string[]).includes(mode)) {
    throw new Error(`DATABASE_POOL_MODE: must be one of ${POOL_MODES.join(', ')} (got ${mode})`);
  }
  return mode as PoolMode;
}

function settingsFromEnv(env = process.env): CliSettings {
  const hours = Number(env.INVITATION_TTL_HOURS);
  return {
    publicOrigin: env.PUBLIC_ORIGIN || undefined,
    invitationTtlHours:
      Number.isInteger(hours) && hours >= 1 && hours <= 720 ? hours : DEFAULT_CLI_SETTINGS.invitationTtlHours,
    attachments: {
      ATTACHMENTS_STORE: env.ATTACHMENTS_STORE === 's3' ? 's3' : 'postgres',
      ATTACHMENTS_S3_BUCKET: env.ATTACHMENTS_S3_BUCKET || undefined,
      ATTACHMENTS_S3_ENDPOINT: env.ATTACHMENTS_S3_ENDPOINT || undefined,
      ATTACHMENTS_S3_REGION: env.ATTACHMENTS_S3_REGION || undefined,
      ATTACHMENTS_S3_ACCESS_KEY_ID: env.ATTACHMENTS_S3_ACCESS_KEY_ID || undefined,
      ATTACHMENTS_S3_SECRET_ACCESS_KEY:
        env.ATTACHMENTS_S3_SECRET_ACCESS_KEY ||
        (env.ATTACHMENTS_S3_SECRET_ACCESS_KEY_FILE
          ? readFileSync(env.ATTACHMENTS_S3_SECRET_ACCESS_KEY_FILE, 'utf8').trim()
          : undefined),
      ATTACHMENTS_S3_FORCE_PATH_STYLE:
        env.ATTACHMENTS_S3_FORCE_PATH_STYLE === undefined ? undefined : env.ATTACHMENTS_S3_FORCE_PATH_STYLE === 'true',
      ATTACHMENTS_S3_PREFIX: env.ATTACHMENTS_S3_PREFIX || undefined,
    },
  };
}

const io: Io = {
  out: (t) => process.stdout.write(`${t}\n`),
  err: (t) => process.stderr.write(`${t}\n`),
  ...(process.stdout.isTTY ? { progress: process.stdout } : {}),
};

/**
 * On the embedded database the command runs in the process that owns the data directory when there is one
 * (the server, say), so its writes are the server's; otherwise this process claims the directory for the
 * command's duration, answering commands forwarded to it meanwhile.
 */
async function runEmbedded(dataDir: string, stdin: string | undefined): Promise<number> {
  for (let attempt = 0; ; attempt++) {
    const forwarded = await runInOwner(dataDir, argv, io, stdin);
    if (forwarded !== null) return forwarded;
    try {
      const owner = await claimDataDir(dataDir);
      const database = openDatabase({ dataDir });
      const banking = bankingFromEnv();
      owner.serve((forwardedArgv, forwardedIo) =>
        runCli(forwardedArgv, database, forwardedIo, banking, qboFromEnv(), auditFromEnv(), settingsFromEnv()),
      );
      try {
        return await runCli(argv, database, io, banking, qboFromEnv(), auditFromEnv(), settingsFromEnv());
      } finally {
        await owner.stopServing();
        await database.close();
        await owner.release();
      }
    } catch (err) {
      // The owner stopped between the two steps, or another process claimed the directory first.
      if (!(err instanceof DataDirInUseError) || attempt >= 2) throw err;
    }
  }
}

async function runOnPostgres(url: string): Promise<number> {
  let database: Database | null = null;
  try {
    return await runCli(
      argv,
      () =>
        (database = openDatabase({
          url,
          poolMax: 2,
          poolMode: poolModeFromEnv(),
          migrationUrl: process.env.DATABASE_MIGRATION_URL || undefined,
        })),
      io,
      bankingFromEnv(),
      qboFromEnv(),
      auditFromEnv(),
      settingsFromEnv(),
    );
  } finally {
    await (database as Database | null)?.close();
  }
}

async function main(): Promise<number> {
  const parsed = parseCommand(argv);
  // Help and usage errors touch nothing: no database is opened or created.
  if (parsed.kind !== 'run') return runCli(argv, () => undefined as never, io);
  const url = process.env.DATABASE_URL || undefined;
  if (url && !/^postgres(ql)?:\/\/[^/]/.test(url)) {
    io.err('error: DATABASE_URL is not a postgres:// URL');
    return 1;
  }
  const stdin = readsStdin(parsed) ? await text(process.stdin) : undefined;
  if (stdin !== undefined) io.stdin = async () => stdin;
  if (url) return runOnPostgres(url);
  return runEmbedded(process.env.DATA_DIR || './.data', stdin);
}

try {
  process.exitCode = await main();
} catch (err) {
  io.err(`error: ${err instanceof DataDirInUseError ? err.message : describeFailure(err)}`);
  process.exitCode = 1;
}
