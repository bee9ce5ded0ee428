import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createLedgerFixture } from '@firm/ledger/testing';
import { createScheduledEntry, listEntries } from '@firm/ledger';
import { DEVELOPMENT_SECRET_KEYS, parseSecretKeys } from '@firm/webhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiProcessJobs, type JobLog, startBackgroundJobs, WORKER_JOBS } from './background';
import { testConfig } from './config';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

const quiet = (): JobLog & { lines: string[] } => {
  const lines: string[] = [];
  const say = (obj: object, msg: string) => void lines.push(`${msg} ${JSON.stringify(obj)}`);
  return { lines, error: say, warn: say, info: say };
};

describe('the background jobs', () => {
  it('are chosen for the API process by where the worker runs and which database it has', () => {
    const api = (WEBHOOK_WORKER: boolean, embedded: boolean) =>
      apiProcessJobs(testConfig({ WEBHOOK_WORKER }), embedded).sort();
    expect(api(true, false)).toEqual(
      [
        'idempotency-purge',
        'imports',
        'proposal-expiry',
        'requested-feed-syncs',
        'scheduled-entries',
        'webhook-delivery',
      ].sort(),
    );
    // Separate workers deliver webhooks and run the rest; the API keeps the purge, expiry and requested syncs.
    expect(api(false, false)).toEqual(['idempotency-purge', 'proposal-expiry', 'requested-feed-syncs']);
    // On the embedded database no worker can run beside the API process.
    expect(api(false, true)).toEqual([
      'idempotency-purge',
      'imports',
      'proposal-expiry',
      'requested-feed-syncs',
      'scheduled-entries',
    ]);
    expect([...WORKER_JOBS].sort()).toEqual(api(true, false));
  });

  it('run as one, do their work, and stop together; feed syncs only where bank feeds are configured', async () => {
    const f = await createLedgerFixture(database.db);
    const today = new Date().toISOString().slice(0, 10);
    await createScheduledEntry(database.db, f.ctx, f.orgId, {
      name: 'Monthly sweep',
      lines: [
        { accountId: f.account('6100'), debitCents: 500 },
        { accountId: f.account('1000'), creditCents: 500 },
      ],
      schedule: { frequency: 'monthly', dayOfMonth: Number(today.slice(8)), startDate: today },
    });
    const log = quiet();
    const jobs = startBackgroundJobs(
      {
        db: database.db,
        config: testConfig({ SCHEDULED_ENTRIES_INTERVAL_SECONDS: 1 }),
        log,
        onConnectionLost: (err) => log.error({ err }, 'lost'),
        webhookSecretKeys: parseSecretKeys(DEVELOPMENT_SECRET_KEYS),
        banking: null,
      },
      WORKER_JOBS,
    );
    expect(jobs.running.sort()).toEqual(WORKER_JOBS.filter((j) => j !== 'requested-feed-syncs').sort());
    // The scheduled-entry runner posts today's occurrence on its first round.
    let posted = 0;
    for (let i = 0; i < 50 && posted === 0; i++) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      posted = (await listEntries(database.db, f.orgId, { limit: 10 })).data.length;
    }
    await jobs.stop();
    expect(posted).toBe(1);
    expect(log.lines).toEqual([expect.stringMatching(/^scheduled journal entries ran/)]);
  });
});
