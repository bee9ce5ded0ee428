import { firms } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { authenticateOAuthClient, findOAuthClient } from '@firm/identity';
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

describe('oauth-client', () => {
  it('creates a confidential client and prints its secret once', async () => {
    const res = await cli(
      'oauth-client',
      'create',
      '--name',
      'Books Sync',
      '--redirect-uri',
      'https://sync.example/cb',
      '--redirect-uri',
      'http://127.0.0.1:8080/cb',
      '--json',
    );
    expect(res.code).toBe(0);
    const created = JSON.parse(res.out);
    expect(created).toMatchObject({
      clientId: expect.stringMatching(/^oc_/),
      clientSecret: expect.stringMatching(/^mcp_cs_/),
      name: 'Books Sync',
      redirectUris: ['https://sync.example/cb', 'http://127.0.0.1:8080/cb'],
      public: false,
      firmId: null,
    });
    expect(await authenticateOAuthClient(database.db, created.clientId, created.clientSecret)).not.toBeNull();
  });

  it('creates a public client restricted to a firm, and prints it for people', async () => {
    const [firm] = await database.db.insert(firms).values({ slug: 'cli-oauth', name: 'F' }).returning();
    const res = await cli(
      'oauth-client',
      'create',
      '--name',
      'Desktop',
      '--redirect-uri',
      'com.example.desktop:/cb',
      '--public',
      '--firm',
      firm?.id as string,
    );
    expect(res.code).toBe(0);
    expect(res.out).toContain('public client: no secret');
    const clientId = /client_id:\s+(\S+)/.exec(res.out)?.[1] as string;
    expect(await findOAuthClient(database.db, clientId)).toMatchObject({ isPublic: true, firmId: firm?.id });
    expect((await cli('oauth-client', 'revoke', clientId)).code).toBe(0);
    expect(await findOAuthClient(database.db, clientId)).toBeNull();
    expect((await cli('oauth-client', 'revoke', 'oc_nobody')).code).toBe(1);
  });

  it('refuses bad arguments', async () => {
    expect((await cli('oauth-client', 'create', '--redirect-uri', 'https://a.example/cb')).code).toBe(2);
    expect((await cli('oauth-client', 'create', '--name', 'X')).code).toBe(2);
    expect(
      (await cli('oauth-client', 'create', '--name', 'X', '--redirect-uri', 'https://a.example/cb', '--firm', 'nope'))
        .code,
    ).toBe(2);
    const insecure = await cli('oauth-client', 'create', '--name', 'X', '--redirect-uri', 'http://a.example/cb');
    expect(insecure.code).toBe(1);
    expect(insecure.err).toContain('VALIDATION_ERROR');
    expect((await cli('oauth-client', 'list')).code).toBe(2);
  });
});
