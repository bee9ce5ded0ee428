import { firms, oauthClients } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseScopes } from './oauth-authorize';
import {
  authenticateOAuthClient,
  createOAuthClient,
  findOAuthClient,
  redirectUriProblem,
  revokeOAuthClient,
} from './oauth-clients';

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

describe('redirectUriProblem', () => {
  it.each([
    'https://app.example/callback',
    'https://app.example:8443/cb?tenant=1',
    'http://localhost:3000/cb',
    'http://127.0.0.1:49152/callback',
    'http://[::1]:8080/cb',
    'com.example.app:/oauth2redirect',
  ])('accepts %s', (uri) => {
    expect(redirectUriProblem(uri)).toBeNull();
  });

  it.each([
    ['http://app.example/cb', 'https'],
    ['https://app.example/cb#frag', 'fragment'],
    ['https://u:p@app.example/cb', 'user information'],
    ['javascript:alert(1)', 'javascript'],
    ['data:text/html,x', 'data'],
    ['myapp:/cb', 'reverse-domain'],
    ['/relative', 'absolute'],
    [`https://app.example/${'x'.repeat(2100)}`, 'longer'],
  ])('refuses %s', (uri, why) => {
    expect(redirectUriProblem(uri)).toContain(why);
  });
});

describe('clients', () => {
  it('give confidential clients a secret once, stored as a hash', async () => {
    const { client, clientSecret } = await createOAuthClient(database.db, {
      name: ' Books Sync ',
      redirectUris: ['https://app.example/cb', 'https://app.example/cb'],
      isPublic: false,
    });
    expect(client).toMatchObject({ name: 'Books Sync', redirectUris: ['https://app.example/cb'], isPublic: false });
    expect(client.clientId).toMatch(/^oc_/);
    expect(clientSecret).toMatch(/^mcp_cs_/);
    const [row] = await database.db.select().from(oauthClients).where(eq(oauthClients.id, client.id));
    expect(row?.secretHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(clientSecret);

    expect(await authenticateOAuthClient(database.db, client.clientId, clientSecret)).toMatchObject({ id: client.id });
    expect(await authenticateOAuthClient(database.db, client.clientId, null)).toBeNull();
    expect(await authenticateOAuthClient(database.db, client.clientId, `${clientSecret}x`)).toBeNull();
    expect(await authenticateOAuthClient(database.db, 'oc_nobody', clientSecret)).toBeNull();
  });

  it('authenticate public clients by id alone, and refuse them a secret', async () => {
    const { client, clientSecret } = await createOAuthClient(database.db, {
      name: 'CLI',
      redirectUris: ['http://127.0.0.1:9/cb'],
      isPublic: true,
    });
    expect(clientSecret).toBeNull();
    expect(await authenticateOAuthClient(database.db, client.clientId, undefined)).not.toBeNull();
    expect(await authenticateOAuthClient(database.db, client.clientId, 'mcp_cs_x')).toBeNull();
  });

  it('refuse bad input: no name, no or bad redirect URIs, unknown firm', async () => {
    const base = { name: 'X', redirectUris: ['https://a.example/cb'], isPublic: true };
    await expect(createOAuthClient(database.db, { ...base, name: '  ' })).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
    });
    await expect(createOAuthClient(database.db, { ...base, redirectUris: [] })).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
    });
    await expect(
      createOAuthClient(database.db, { ...base, redirectUris: ['http://a.example/cb'] }),
    ).rejects.toMatchObject({
      code: 'VALIDATION_ERROR',
    });
    await expect(
      createOAuthClient(database.db, { ...base, firmId: '01900000-0000-7000-8000-000000000000' }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const [firm] = await database.db.insert(firms).values({ slug: 'clients', name: 'F' }).returning();
    const { client } = await createOAuthClient(database.db, { ...base, firmId: firm?.id });
    expect(client.firmId).toBe(firm?.id);
  });

  it('stop being found once revoked', async () => {
    const { client } = await createOAuthClient(database.db, {
      name: 'Gone',
      redirectUris: ['https://g.example/cb'],
      isPublic: true,
    });
    expect(await revokeOAuthClient(database.db, client.clientId)).toBe(true);
    expect(await findOAuthClient(database.db, client.clientId)).toBeNull();
    expect(await authenticateOAuthClient(database.db, client.clientId, null)).toBeNull();
  });
});

describe('parseScopes', () => {
  it('defaults to every scope but connections:*, refuses unknown scopes, drops repeats', () => {
    const defaults = parseScopes(undefined) ?? [];
    expect(defaults).toContain('entries:write');
    expect(defaults.some((s) => s.startsWith('connections:'))).toBe(false);
    expect(parseScopes('accounts:read  accounts:read')).toEqual(['accounts:read']);
    expect(parseScopes('accounts:read nope:nope')).toBeNull();
  });
});
