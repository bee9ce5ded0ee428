import { PlaidAggregator, runRequestedSyncs } from '@firm/banking';
import { DatabaseStatus, isConnectionLost, openDatabase } from '@firm/db';
import { importWorkerId, startImportRunner } from '@firm/imports';
import { startScheduledEntryRunner } from '@firm/ledger';
import { createWebhookWorker } from '@firm/webhooks';
import closeWithGrace from 'close-with-grace';
import { bankFeedsOf, webhookSecretKeysOf, ConfigError, loadConfig } from './config';

/**
 * The webhook worker on its own (`npm run worker`), for deployments that scale delivery apart from
 * the API: start as many as needed against the same Postgres database (they claim work with
 * FOR UPDATE SKIP LOCKED) and set WEBHOOK_WORKER=false on the API processes. It also runs the bank
 * feed syncs that aggregator webhooks requested.
 */
async function main() {
  const config = loadConfig();
  if (!config.DATABASE_URL) {
    throw new ConfigError(
      'DATABASE_URL: required by a separate worker; the embedded database belongs to one process, whose API runs the worker itself',
    );
  }
  const database = openDatabase({
    url: config.DATABASE_URL,
    poolMax: config.DB_POOL_MAX,
    connectTimeoutMs: config.DB_CONNECT_TIMEOUT_MS,
  });
  const say = (level: string) => (obj: object, msg: string) =>
    process.stderr.write(`${JSON.stringify({ level, time: Date.now(), ...obj, msg })}\n`);
  // An outage is two lines (when it starts, when it ends), not a stack trace per round.
  const status = new DatabaseStatus(database, { warn: say('warn'), info: say('info') });
  const worker = createWebhookWorker({
    db: database.db,
    policy: { allowInsecureLocalhost: config.WEBHOOKS_ALLOW_INSECURE_LOCALHOST },
    secretKeys: webhookSecretKeysOf(config),
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    onError: (err) =>
      isConnectionLost(err)
        ? status.reportUnavailable(err)
        : process.stderr.write(`webhook worker round failed: ${(err as Error).stack}\n`),
  });
  worker.start();
  process.stdout.write('webhook worker started\n');

  // Scheduled journal entries: every worker runs them; templates are claimed with FOR UPDATE SKIP LOCKED.
  const schedules = startScheduledEntryRunner(database.db, {
    intervalMs: config.SCHEDULED_ENTRIES_INTERVAL_SECONDS * 1000,
    onError: (err) =>
      isConnectionLost(err)
        ? status.reportUnavailable(err)
        : process.stderr.write(`scheduled journal entries round failed: ${(err as Error).stack}\n`),
  });

  // Large imports, posted in batches; every worker runs them, each import claimed by one with FOR UPDATE SKIP LOCKED.
  const imports = startImportRunner(database.db, {
    workerId: importWorkerId(),
    batchRows: config.IMPORT_BATCH_ROWS,
    intervalMs: config.IMPORT_RUNNER_INTERVAL_SECONDS * 1000,
    onError: (err) =>
      isConnectionLost(err)
        ? status.reportUnavailable(err)
        : process.stderr.write(`background imports round failed: ${(err as Error).stack}\n`),
  });

  // Bank feed syncs that aggregator webhooks requested, claimed with FOR UPDATE SKIP LOCKED beside other workers.
  const banking = bankFeedsOf(config);
  const aggregator = banking && new PlaidAggregator(banking);
  const feeds =
    banking && aggregator
      ? setInterval(() => {
          runRequestedSyncs(database.db, aggregator, banking.tokenKeys).catch((err: unknown) =>
            isConnectionLost(err)
              ? status.reportUnavailable(err)
              : process.stderr.write(`requested bank feed syncs failed: ${(err as Error).stack}\n`),
          );
        }, 10_000)
      : null;

  closeWithGrace({ delay: config.WEBHOOK_TIMEOUT_MS + 5000 }, async ({ err }) => {
    if (err) process.stderr.write(`shutting down after an error: ${err.stack}\n`);
    if (feeds) clearInterval(feeds);
    await worker.stop();
    await schedules.stop();
    await imports.stop();
    status.stop();
    await database.close();
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof ConfigError ? err.message : (err as Error).stack}\n`);
  process.exit(1);
});
