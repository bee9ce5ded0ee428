import { PlaidAggregator } from '@firm/banking';
import { DatabaseStatus, openDatabase } from '@firm/db';
import closeWithGrace from 'close-with-grace';
import { startBackgroundJobs, WORKER_JOBS } from './background';
import { bankFeedsOf, databaseOptionsOf, webhookSecretKeysOf, ConfigError, loadConfig } from './config';

/**
 * The background jobs on their own (`npm run worker`: webhook delivery, scheduled entries, imports, requested bank
 * feed syncs, the idempotency purge), for deployments that scale them apart from the API: start as many as needed
 * against the same Postgres database (each job claims its work) and set WEBHOOK_WORKER=false on the API processes.
 */
async function main() {
  const config = loadConfig();
  if (!config.DATABASE_URL) {
    throw new ConfigError(
      'DATABASE_URL: required by a separate worker; the embedded database belongs to one process, whose API runs the worker itself',
    );
  }
  const database = openDatabase(databaseOptionsOf(config));
  const say = (level: string) => (obj: object, msg: string) => {
    // An error keeps its message and stack in the line (JSON would write it as {}).
    const { err, ...rest } = obj as { err?: unknown };
    const error = err instanceof Error ? { err: { message: err.message, stack: err.stack } } : {};
    process.stderr.write(`${JSON.stringify({ level, time: Date.now(), ...rest, ...error, msg })}\n`);
  };
  // An outage is two lines (when it starts, when it ends), not a stack trace per round.
  const status = new DatabaseStatus(database, { warn: say('warn'), info: say('info') });
  const log = { error: say('error'), warn: say('warn'), info: say('info') };
  const banking = bankFeedsOf(config);
  const jobs = startBackgroundJobs(
    {
      db: database.db,
      config,
      log,
      onConnectionLost: (err) => status.reportUnavailable(err),
      webhookSecretKeys: webhookSecretKeysOf(config),
      banking: banking ? { aggregator: new PlaidAggregator(banking), tokenKeys: banking.tokenKeys } : null,
    },
    WORKER_JOBS,
  );
  process.stdout.write(`worker started: ${jobs.running.join(', ')}\n`);

  closeWithGrace({ delay: config.WEBHOOK_TIMEOUT_MS + 5000 }, async ({ err }) => {
    if (err) log.error({ err }, 'shutting down after an error');
    await jobs.stop();
    status.stop();
    await database.close();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : (err as Error).stack}\n`);
  process.exit(1);
});
