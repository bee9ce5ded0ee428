import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createLedgerFixture } from '@firm/ledger/testing';
import { completeAuthorization, inProcessLimiter, type QboConfig, qboConfigFrom } from '@firm/qbo';
import { FakeQbo } from '@firm/qbo/testing/fake-qbo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './main';

let database: TestDatabase;
let fake: FakeQbo;
let config: QboConfig;

beforeAll(async () => {
  database = await createTestDatabase();
  fake = new FakeQbo();
  await fake.start();
  config = qboConfigFrom(fake.env()) as QboConfig;
});
afterAll(async () => {
  await fake.stop();
  await database.close();
});

async function cli(qbo: QboConfig | null, ...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, database, { out: (t) => out.push(t), err: (t) => err.push(t) }, undefined, qbo);
  return { code, out: out.join('\n'), err: err.join('\n') };
}

describe('qbo commands', () => {
  it('connect prints the authorization URL last; the callback completes it; status and disconnect follow', async () => {
    const f = await createLedgerFixture(database.db);
    const started = await cli(config, 'qbo', 'connect', '--organization', f.orgId);
    expect(started.code).toBe(0);
    const url = new URL(started.out.split('\n').at(-1) as string);
    expect(url.origin + url.pathname).toBe(`${fake.base}/connect/oauth2`);
    const state = url.searchParams.get('state') as string;
    await completeAuthorization(database.db, config, inProcessLimiter(), {
      state,
      code: fake.issueCode(),
      realmId: fake.realmId,
      userId: null,
    });

    const status = await cli(config, 'qbo', 'status', '--json');
    expect(JSON.parse(status.out)).toEqual([
      expect.objectContaining({ organizationId: f.orgId, realmId: fake.realmId, status: 'connected' }),
    ]);
    const human = await cli(config, 'qbo', 'status');
    expect(human.out).toContain(`${f.orgId}  realm ${fake.realmId}  connected`);

    const gone = await cli(config, 'qbo', 'disconnect', '--organization', f.orgId);
    expect([gone.code, gone.out]).toEqual([0, `disconnected ${f.orgId}`]);
    expect((await cli(config, 'qbo', 'status')).out).toContain('disconnected');
  });

  it('refuses without configuration, a bad organization id, and an unknown organization', async () => {
    const f = await createLedgerFixture(database.db);
    const unconfigured = await cli(null, 'qbo', 'connect', '--organization', f.orgId);
    expect(unconfigured.code).toBe(1);
    expect(unconfigured.err).toMatch(/QBO_CLIENT_ID/);
    expect((await cli(config, 'qbo', 'connect', '--organization', 'nope')).code).toBe(2);
    const unknown = await cli(config, 'qbo', 'connect', '--organization', '00000000-0000-4000-8000-000000000009');
    expect(unknown.code).toBe(1);
    const notConnected = await cli(config, 'qbo', 'disconnect', '--organization', f.orgId);
    expect([notConnected.code, notConnected.err]).toEqual([1, expect.stringMatching(/CLIENT_NOT_FOUND/)]);
  });
});
