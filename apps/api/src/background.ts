import { type Aggregator, runRequestedSyncs, type TokenKeys } from '@firm/banking';
import { type Db, isConnectionLost, purgeExpiredIdempotencyKeys } from '@firm/db';
import { expireDueProposals } from '@firm/gateway';
import { importWorkerId, startImportRunner } from '@firm/imports';
import { startScheduledEntryRunner } from '@firm/ledger';
import { type AttemptOutcome, createWebhookWorker, type SecretKeys } from '@firm/webhooks';
import type { Config } from './config';

/** How often a process looks for bank feed syncs that a webhook asked for and nobody ran (the process stopped). */
export const REQUESTED_SYNC_SWEEP_MS = 10_000;

export type JobName =
  | 'webhook-delivery'
  | 'scheduled-entries'
  | 'imports'
  | 'requested-feed-syncs'
  | 'idempotency-purge'
  | 'proposal-expiry';

/** Where background work logs: pino's signature, so the API process passes its logger. */
export interface JobLog {
  error(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  info(obj: object, msg: string): void;
}

export interface BackgroundDeps {
  db: Db;
  config: Config;
  log: JobLog;
  /** A lost database connection: reported once as an outage, not logged per round. */
  onConnectionLost(err: unknown): void;
  webhookSecretKeys: SecretKeys;
  banking: { aggregator: Aggregator; tokenKeys: TokenKeys } | null;
  onWebhookAttempt?: (outcome: AttemptOutcome) => void;
}

interface Running {
  stop(): Promise<void>;
}

/** What each job does when a round fails: an outage is the database status's to report, anything else is logged. */
const failed =
  (deps: BackgroundDeps, level: 'error' | 'warn', what: string) =>
  (err: unknown): void => {
    if (isConnectionLost(err)) deps.onConnectionLost(err);
    else deps.log[level]({ err }, `${what} failed`);
  };

/** An interval that stops with the process and never holds it open. */
function every(ms: number, run: () => Promise<unknown>, onError: (err: unknown) => void): Running {
  const timer = setInterval(() => void run().catch(onError), ms);
  timer.unref();
  return { stop: async () => clearInterval(timer) };
}

/**
 * Every job a process can run in the background. Each claims its work so that any number of processes may run it
 * against one Postgres database: webhook deliveries and scheduled templates with FOR UPDATE SKIP LOCKED, imports under
 * a lease, requested feed syncs by their connection's row, due agent proposals with FOR UPDATE SKIP LOCKED; the purge
 * deletes what no one reads.
 */
export const BACKGROUND_JOBS: Record<JobName, (deps: BackgroundDeps) => Running | null> = {
  'webhook-delivery': (deps) => {
    const worker = createWebhookWorker({
      db: deps.db,
      policy: { allowInsecureLocalhost: deps.config.WEBHOOKS_ALLOW_INSECURE_LOCALHOST },
      secretKeys: deps.webhookSecretKeys,
      timeoutMs: deps.config.WEBHOOK_TIMEOUT_MS,
      ...(deps.onWebhookAttempt ? { onAttempt: deps.onWebhookAttempt } : {}),
      onError: failed(deps, 'error', 'webhook worker round'),
    });
    worker.start();
    // Stopping lets in-flight deliveries finish and be recorded.
    return { stop: () => worker.stop() };
  },
  'scheduled-entries': (deps) =>
    startScheduledEntryRunner(deps.db, {
      intervalMs: deps.config.SCHEDULED_ENTRIES_INTERVAL_SECONDS * 1000,
      onError: failed(deps, 'error', 'scheduled journal entries round'),
      onRound: (r) => {
        if (r.posted + r.failed > 0) deps.log.info(r, 'scheduled journal entries ran');
      },
    }),
  imports: (deps) =>
    startImportRunner(deps.db, {
      workerId: importWorkerId(),
      batchRows: deps.config.IMPORT_BATCH_ROWS,
      intervalMs: deps.config.IMPORT_RUNNER_INTERVAL_SECONDS * 1000,
      onError: failed(deps, 'error', 'background imports round'),
    }),
  'requested-feed-syncs': (deps) => {
    const banking = deps.banking;
    if (!banking) return null;
    return every(
      REQUESTED_SYNC_SWEEP_MS,
      () => runRequestedSyncs(deps.db, banking.aggregator, banking.tokenKeys),
      failed(deps, 'warn', 'requested bank feed syncs'),
    );
  },
  // Expired idempotency records are ignored already; purging keeps the table to about one retention window.
  'idempotency-purge': (deps) =>
    every(
      deps.config.IDEMPOTENCY_PURGE_INTERVAL_MINUTES * 60_000,
      () => purgeExpiredIdempotencyKeys(deps.db),
      failed(deps, 'warn', 'idempotency purge'),
    ),
  // A proposal past its expiry is expired when it is next read or decided too; the job makes it so, and tells the
  // webhook subscribers, without waiting for a read.
  'proposal-expiry': (deps) =>
    every(
      deps.config.PROPOSAL_EXPIRY_INTERVAL_SECONDS * 1000,
      async () => {
        const expired = await expireDueProposals(deps.db);
        if (expired > 0) deps.log.info({ expired }, 'agent proposals expired');
      },
      failed(deps, 'warn', 'agent proposal expiry'),
    ),
};

/**
 * Starts the named jobs (the API process and `npm run worker` each choose theirs) and answers what stops them all,
 * in the reverse order.
 */
export function startBackgroundJobs(
  deps: BackgroundDeps,
  names: readonly JobName[],
): { running: JobName[]; stop(): Promise<void> } {
  const started: { name: JobName; job: Running }[] = [];
  for (const name of names) {
    const job = BACKGROUND_JOBS[name](deps);
    if (job) started.push({ name, job });
  }
  return {
    running: started.map((s) => s.name),
    async stop() {
      for (const { job } of [...started].reverse()) await job.stop();
    },
  };
}

/**
 * The jobs of the API process: the purge, proposal expiry and requested feed syncs always; webhook delivery unless
 * separate workers do it (WEBHOOK_WORKER=false); scheduled entries and imports beside any worker, and always on the
 * embedded database, where no worker can run beside it.
 */
export function apiProcessJobs(config: Config, embedded: boolean): JobName[] {
  return [
    'idempotency-purge',
    'proposal-expiry',
    ...(config.WEBHOOK_WORKER ? (['webhook-delivery'] as const) : []),
    ...(config.WEBHOOK_WORKER || embedded ? (['scheduled-entries', 'imports'] as const) : []),
    'requested-feed-syncs',
  ];
}

/** The jobs of `npm run worker`: all of them. */
export const WORKER_JOBS = Object.keys(BACKGROUND_JOBS) as JobName[];
