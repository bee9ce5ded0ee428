import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SANDBOX_PLAID } from '@firm/banking';
import type { SandboxAggregatorServer } from '@firm/banking/sandbox/server';
import { type DataDirOwner, DataDirInUseError, claimDataDir, openDatabase } from '@firm/db';
import { hasFirms } from '@firm/identity';
import closeWithGrace from 'close-with-grace';
import { buildApp } from './app';
import { apiProcessJobs, startBackgroundJobs } from './background';
import { bankFeedsOf, bankTokenKeysOf, type Config, ConfigError, databaseOptionsOf, loadConfig } from './config';

/**
 * Reads config, opens the database, listens, and shuts down gracefully: on SIGTERM/SIGINT the
 * server stops accepting connections, drains in-flight requests, then closes the database.
 */
async function main() {
  const config = loadConfig();
  // The embedded data directory belongs to one process; a second server stops here with a message.
  const owner: DataDirOwner | null = config.DATABASE_URL ? null : await claimDataDir(config.DATA_DIR);
  const database = openDatabase(databaseOptionsOf(config));
  let demoKey: string | null = null;
  if (database.kind === 'postgres' && config.MIGRATE_ON_START) await database.migrate();
  if (database.kind === 'embedded') {
    await database.migrate();
    demoKey = await demoCredentials(database, config);
  }
  const app = await buildApp({ config, database });
  app.addHook('onClose', async () => database.close());
  if (owner) {
    // `npm run cli` against this data directory runs its commands here, on this process's database.
    const banking =
      app.aggregator && app.bankTokenKeys ? { aggregator: app.aggregator, tokenKeys: app.bankTokenKeys } : undefined;
    const audit = async () => app.auditTrail;
    const settings = { publicOrigin: config.PUBLIC_ORIGIN, invitationTtlHours: config.INVITATION_TTL_HOURS };
    // The CLI, the demo seed and the sandbox bank are loaded only where they run: a server on Postgres holds none.
    const { runCli } = await import('@firm/cli/main');
    owner.serve((argv, io) => runCli(argv, database, io, banking, app.qbo?.config ?? null, audit, settings));
    app.addHook('preClose', async () => owner.stopServing());
  }

  // The background jobs this process owns (apiProcessJobs says which); preClose runs before the database is closed,
  // so in-flight webhook deliveries and import batches finish and are recorded.
  const { aggregator, bankTokenKeys } = app;
  const jobs = startBackgroundJobs(
    {
      db: database.db,
      config,
      log: app.log,
      onConnectionLost: (err) => app.databaseStatus.reportUnavailable(err),
      webhookSecretKeys: app.webhookSecretKeys,
      banking: aggregator && bankTokenKeys ? { aggregator, tokenKeys: bankTokenKeys } : null,
      onWebhookAttempt: (outcome) => app.metrics.webhookAttempt(outcome),
    },
    apiProcessJobs(config, database.kind === 'embedded'),
  );
  app.addHook('preClose', async () => jobs.stop());

  const sandbox = await sandboxAggregatorFor(config, database.kind, app.log);
  if (sandbox) app.addHook('onClose', async () => sandbox.close());

  closeWithGrace({ delay: 10_000 }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'shutting down after an error');
    else app.log.info({ signal }, 'shutting down');
    await app.close();
    // Only once the database is closed may another process open its files.
    await owner?.release();
  });

  await app.listen({ port: config.PORT, host: config.HOST });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  const base = `http://${config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST}:${port}`;
  const lines = [
    '',
    `  API:      ${base}/api/v1`,
    `  Agents:   ${base}/agent/v1  (MCP: ${base}/mcp)`,
    `  OpenAPI:  ${base}/api/openapi.json`,
    `  Health:   ${base}/api/health  (readiness: ${base}/api/ready)`,
    `  Database: ${database.kind === 'embedded' ? `embedded (${config.DATA_DIR})` : 'postgres (DATABASE_URL)'}`,
  ];
  if (sandbox) lines.push(`  Sandbox aggregator: ${sandbox.url}  (bank feeds; PLAID_BASE_URL)`);
  if (demoKey)
    lines.push(`  Demo API key: ${demoKey}`, `  (also in ${join(config.DATA_DIR, 'demo-credentials.json')})`);
  process.stdout.write(`${lines.join('\n')}\n\n`);
}

/**
 * Local development's bank: on the embedded database, with the aggregator at its default address, the sandbox
 * aggregator is served by this process there. Something already listening (`npm run sandbox:aggregator`, another
 * server) is left to answer; its items are the same, since a sandbox access token names its item.
 */
async function sandboxAggregatorFor(
  config: Config,
  kind: 'embedded' | 'postgres',
  log: { info(obj: object, msg: string): void },
): Promise<SandboxAggregatorServer | null> {
  const feeds = bankFeedsOf(config);
  if (kind !== 'embedded' || !config.SANDBOX_AGGREGATOR || feeds?.basePath !== SANDBOX_PLAID.basePath) return null;
  const url = new URL(feeds.basePath);
  try {
    const { startSandboxAggregator } = await import('@firm/banking/sandbox/server');
    return await startSandboxAggregator(
      { clientId: feeds.clientId, secret: feeds.secret },
      Number(url.port),
      url.hostname,
    );
  } catch (err) {
    log.info({ err }, `the sandbox aggregator is not started here: ${url.host} is taken`);
    return null;
  }
}

/**
 * On the embedded database, an empty database is seeded (the demo firm with a year of history) and the demo
 * credentials are kept in
 * DATA_DIR/demo-credentials.json (local development only), so every start can print the key.
 */
async function demoCredentials(database: ReturnType<typeof openDatabase>, config: Config): Promise<string | null> {
  const file = join(config.DATA_DIR, 'demo-credentials.json');
  if (!(await hasFirms(database.db))) {
    const keys = bankTokenKeysOf(config);
    const { seedDemo } = await import('@firm/demo');
    const seeded = await seedDemo(database.db, {
      history: config.DEMO_HISTORY,
      ...(keys ? { bankTokenKeys: keys } : {}),
    });
    await writeFile(file, `${JSON.stringify(seeded, null, 2)}\n`, { mode: 0o600 });
    return seeded.apiKey;
  }
  try {
    return (JSON.parse(await readFile(file, 'utf8')) as { apiKey: string }).apiKey;
  } catch {
    return null;
  }
}

main().catch((err: unknown) => {
  const known = err instanceof ConfigError || err instanceof DataDirInUseError;
  process.stderr.write(`${known ? (err as Error).message : (err as Error).stack}\n`);
  process.exit(1);
});
