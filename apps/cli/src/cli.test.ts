import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { accounts, agentAuditEvents, apiKeys, firms, organizations, users } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { authenticateApiKey } from '@firm/identity';
import { appendAuditEvent } from '@firm/gateway';
import { and, count, eq } from 'drizzle-orm';
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

describe('audit verify', () => {
  it('passes on an intact chain and names the first edited, deleted or inserted event', async () => {
    const [firm] = await database.db.insert(firms).values({ slug: 'audited', name: 'Audited' }).returning();
    const firmId = firm?.id as string;
    const event = (operation: string) =>
      appendAuditEvent(database.db, {
        firmId,
        organizationId: null,
        actorKind: 'oauth_token',
        actorId: 'family-1',
        actorName: null,
        operation,
        entityType: 'Invoice',
        entityId: null,
        outcome: 'succeeded',
        statusCode: 200,
        errorCode: null,
        requestId: null,
        dryRun: false,
        syncTokenBefore: null,
        syncTokenAfter: null,
      });
    for (const op of ['clients.list', 'transactions.create', 'transactions.update', 'transactions.read'])
      await event(op);
    const ok = await cli('audit', 'verify', '--firm', firmId);
    expect(ok.code).toBe(0);
    expect(ok.out).toContain('audit trail intact: 4 agent audit events');

    const at = (seq: number) => and(eq(agentAuditEvents.firmId, firmId), eq(agentAuditEvents.seq, seq));
    await database.db.update(agentAuditEvents).set({ outcome: 'refused' }).where(at(2));
    const edited = await cli('audit', 'verify', '--firm', firmId);
    expect(edited.code).toBe(1);
    expect(edited.err).toMatch(/event 2 \(.+\) its content does not match its hash/);
    const json = await cli('audit', 'verify', '--firm', firmId, '--json');
    expect(JSON.parse(json.out).breaks[0]).toMatchObject({ firmId, seq: 2 });
    await database.db.update(agentAuditEvents).set({ outcome: 'succeeded' }).where(at(2));
    expect((await cli('audit', 'verify', '--firm', firmId)).code).toBe(0);

    await database.db.delete(agentAuditEvents).where(at(3));
    const deleted = await cli('audit', 'verify');
    expect(deleted.code).toBe(1);
    expect(deleted.err).toMatch(/event 4 \(.+\) sequence jumps from 2 to 4/);
  });
});
