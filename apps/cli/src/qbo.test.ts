import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createUser } from '@firm/identity';
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
  it('connect prints the authorization URL last, for one person; the callback completes it; status and disconnect follow', async () => {
    const f = await createLedgerFixture(database.db);
    const admin = await createUser(database.db, {
      firmId: f.firmId,
      email: 'Admin@Connect.test',
      role: 'admin',
      password: 'a long enough password',
    });
    const started = await cli(config, 'qbo', 'connect', '--organization', f.orgId, '--user', 'admin@connect.test');
    expect(started.code).toBe(0);
    expect(started.out).toContain('signed in as admin@connect.test');
    const url = new URL(started.out.split('\n').at(-1) as string);
    expect(url.origin + url.pathname).toBe(`${fake.base}/connect/oauth2`);
    const state = url.searchParams.get('state') as string;
    // The state is the admin's: nobody else finishes it.
    const other = await createUser(database.db, {
      firmId: f.firmId,
      email: 'other-owner@connect.test',
      role: 'owner',
      password: 'a long enough password',
    });
    await expect(
      completeAuthorization(database.db, config, inProcessLimiter(), {
        state,
        code: fake.issueCode(),
        realmId: fake.realmId,
        userId: other.id,
      }),
    ).rejects.toMatchObject({ code: 'VALIDATION_ERROR' });
    await completeAuthorization(database.db, config, inProcessLimiter(), {
      state,
      code: fake.issueCode(),
      realmId: fake.realmId,
      userId: admin.id,
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
    expect((await cli(config, 'qbo', 'connect', '--organization', 'nope', '--user', 'a@b.test')).code).toBe(2);
    const unknown = await cli(
      config,
      'qbo',
      'connect',
      '--organization',
      '00000000-0000-4000-8000-000000000009',
      '--user',
      'a@b.test',
    );
    expect(unknown.code).toBe(1);
    // A browser connection is bound to a person: an owner or admin of the organization's firm.
    const nobody = await cli(config, 'qbo', 'connect', '--organization', f.orgId);
    expect([nobody.code, nobody.err]).toEqual([2, expect.stringMatching(/--user EMAIL/)]);
    await createUser(database.db, {
      firmId: f.firmId,
      email: 'member@refused.test',
      role: 'member',
      password: 'a long enough password',
    });
    const member = await cli(config, 'qbo', 'connect', '--organization', f.orgId, '--user', 'member@refused.test');
    expect([member.code, member.err]).toEqual([1, expect.stringMatching(/not an owner or admin/)]);
    const stranger = await cli(config, 'qbo', 'connect', '--organization', f.orgId, '--user', 'admin@connect.test');
    expect([stranger.code, stranger.err]).toEqual([1, expect.stringMatching(/no user admin@connect.test/)]);
    const notConnected = await cli(config, 'qbo', 'disconnect', '--organization', f.orgId);
    expect([notConnected.code, notConnected.err]).toEqual([1, expect.stringMatching(/CLIENT_NOT_FOUND/)]);
  });
});
