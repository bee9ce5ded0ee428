import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { accounts, apiKeys, firms, organizations, users } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { authenticateApiKey } from '@firm/identity';
import { count, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './main';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

async function cli(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, database, { out: (t) => out.push(t), err: (t) => err.push(t) });
  return { code, out: out.join('\n'), err: err.join('\n') };
}

async function counts() {
  const n = async (table: typeof firms | typeof users | typeof organizations | typeof accounts | typeof apiKeys) =>
    (await database.db.select({ n: count() }).from(table))[0]?.n;
  return {
    firms: await n(firms),
    users: await n(users),
    organizations: await n(organizations),
    accounts: await n(accounts),
    apiKeys: await n(apiKeys),
  };
}

describe('seed', () => {
  it('creates the demo firm once, then only issues a fresh key', async () => {
    const first = await cli('seed', '--json');
    expect(first.code).toBe(0);
    const seeded = JSON.parse(first.out);
    expect(seeded).toMatchObject({
      created: true,
      firmId: expect.any(String),
      apiKey: expect.stringMatching(/^dk_live_/),
      user: { email: expect.any(String), password: expect.any(String) },
    });
    expect(seeded.organizations).toHaveLength(2);
    const after1 = await counts();
    expect(after1).toMatchObject({ firms: 1, users: 1, organizations: 2, apiKeys: 1 });

    const second = JSON.parse((await cli('seed', '--json')).out);
    expect(second.created).toBe(false);
    expect(second.firmId).toBe(seeded.firmId);
    expect(second.apiKey).not.toBe(seeded.apiKey);
    expect(second.user.password).toBeNull();
    expect(await counts()).toEqual({ ...after1, apiKeys: 2 });
    expect(await authenticateApiKey(database.db, second.apiKey)).not.toBeNull();
    expect(await authenticateApiKey(database.db, seeded.apiKey)).not.toBeNull();
  });
});

describe('api-key', () => {
  it('creates a narrowed key and revokes it', async () => {
    const seeded = JSON.parse((await cli('seed', '--json')).out);
    const org = seeded.organizations[0].id;
    const created = await cli(
      'api-key',
      'create',
      '--firm',
      seeded.firmId,
      '--org',
      org,
      '--scope',
      'accounts:read',
      '--json',
    );
    expect(created.code).toBe(0);
    const key = JSON.parse(created.out);
    expect(key).toMatchObject({ scopes: ['accounts:read'], organizationIds: [org] });
    const credential = await authenticateApiKey(database.db, key.apiKey);
    expect([...(credential?.scopes ?? [])]).toEqual(['accounts:read']);

    const revoked = await cli('api-key', 'revoke', key.id);
    expect(revoked.code).toBe(0);
    expect(await authenticateApiKey(database.db, key.apiKey)).toBeNull();
  });

  it('refuses unknown scopes, foreign organizations and missing arguments without writing', async () => {
    const seeded = JSON.parse((await cli('seed', '--json')).out);
    const before = await counts();
    const badScope = await cli('api-key', 'create', '--firm', seeded.firmId, '--scope', 'everything:all');
    expect(badScope.code).toBe(1);
    expect(badScope.err).toMatch(/unknown scope/);
    const badOrg = await cli(
      'api-key',
      'create',
      '--firm',
      seeded.firmId,
      '--org',
      '00000000-0000-4000-8000-000000000000',
    );
    expect(badOrg.code).toBe(1);
    expect((await cli('api-key', 'create')).code).toBe(2);
    expect((await cli('api-key', 'revoke', 'nope')).code).toBe(2);
    expect((await cli('api-key', 'revoke', '00000000-0000-4000-8000-000000000000')).code).toBe(1);
    expect((await cli('frobnicate')).code).toBe(2);
    expect(await counts()).toEqual(before);
  });
});

describe('the real command', () => {
  it('prints only JSON on stdout with --json', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cli-seed-'));
    try {
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ['--import', 'tsx', join(import.meta.dirname, 'bin.ts'), 'seed', '--json'],
        { env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir } },
      );
      const parsed = JSON.parse(stdout);
      expect(parsed.apiKey).toMatch(/^dk_live_/);
      expect(parsed.organizations.map((o: { name: string }) => o.name)).toHaveLength(2);
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('bank-feed', () => {
  it('connects a feed through the sandbox aggregator and syncs it', async () => {
    const { startSandboxAggregator } = await import('@firm/banking/sandbox/server');
    const { PlaidAggregator, parseTokenKeys } = await import('@firm/banking');
    const client = { clientId: 'cli-client', secret: 'cli-secret' };
    const sandbox = await startSandboxAggregator(client);
    try {
      const banking = {
        aggregator: new PlaidAggregator({ ...client, basePath: sandbox.url }),
        tokenKeys: parseTokenKeys(`k:${Buffer.alloc(32, 3).toString('base64')}`),
      };
      const seeded = JSON.parse((await cli('seed', '--json')).out);
      const org = seeded.organizations[0].id;
      const [checking] = (
        (await database.db.execute(
          sql`select id from accounts where organization_id = ${org} and code = '1000'`,
        )) as unknown as { rows: { id: string }[] }
      ).rows;
      const token = (await (
        await fetch(`${sandbox.url}/sandbox/public_token/create`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ client_id: client.clientId, secret: client.secret }),
        })
      ).json()) as { public_token: string };
      const out: string[] = [];
      const code = await runCli(
        [
          'bank-feed',
          'connect',
          '--org',
          org,
          '--public-token',
          token.public_token,
          '--institution',
          'First Platypus Bank',
          '--account',
          `0000=${checking?.id}`,
          '--json',
        ],
        database,
        { out: (t) => out.push(t), err: (t) => out.push(t) },
        banking,
      );
      expect(code, out.join('\n')).toBe(0);
      const result = JSON.parse(out.join(''));
      expect(result.added).toBeGreaterThan(0);
      const rows = (await database.db.execute(
        sql`select count(*)::int as n from bank_transactions where organization_id = ${org}`,
      )) as unknown as { rows: { n: number }[] };
      expect(rows.rows[0]?.n).toBe(12);
      const again = await runCli(
        ['bank-feed', 'sync', '--org', org, '--feed', result.feedId, '--json'],
        database,
        { out: () => undefined, err: () => undefined },
        banking,
      );
      expect(again).toBe(0);
      const after = (await database.db.execute(
        sql`select count(*)::int as n from bank_transactions where organization_id = ${org}`,
      )) as unknown as { rows: { n: number }[] };
      expect(after.rows[0]?.n).toBe(12);
    } finally {
      await sandbox.close();
    }
  });
});
