import { users } from '@firm/db';
import { createApiKey, type OAuthClient } from '@firm/identity';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import { addUser, bearer, type CookieJar, connect, registerClient, signIn } from './fixtures';

let t: TestApp;
let owner: CookieJar;
let member: CookieJar;
let registered: { client: OAuthClient; secret: string | null };

beforeAll(async () => {
  t = await createTestApp();
  await addUser(t.database.db, t.demo.firmId, 'member', 'member@demo-firm.test');
  owner = await signIn(t.app, 'owner@demo-firm.test');
  member = await signIn(t.app, 'member@demo-firm.test');
  registered = await registerClient(t.database.db, { name: 'Partner Books' });
});
afterAll(() => t.close());

const csrfOf = async (jar: CookieJar) =>
  (await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() })).json().csrfToken as string;
const list = (headers: Record<string, string>) =>
  t.app.inject({ method: 'GET', url: '/api/v1/oauth-connections', headers });
const remove = (id: string, headers: Record<string, string>) =>
  t.app.inject({ method: 'DELETE', url: `/api/v1/oauth-connections/${id}`, headers });

describe('GET /api/v1/oauth-connections', () => {
  it('lists connected apps with the app, scopes, organizations and approver', async () => {
    await connect(t.app, owner, registered);
    const res = await list(t.auth);
    expect(res.statusCode).toBe(200);
    const [connection] = res.json().data;
    expect(connection).toMatchObject({
      client: { clientId: registered.client.clientId, name: 'Partner Books' },
      scopes: ['organizations:read', 'accounts:read'],
      organizationIds: null,
      approvedBy: { email: 'owner@demo-firm.test' },
    });
    expect(res.json().nextCursor).toBeNull();
  });

  it('pages with limit and cursor', async () => {
    await connect(t.app, owner, registered);
    const page1 = (await list(t.auth)).json();
    const first = await t.app.inject({ method: 'GET', url: '/api/v1/oauth-connections?limit=1', headers: t.auth });
    expect(first.json().data).toHaveLength(1);
    const next = await t.app.inject({
      method: 'GET',
      url: `/api/v1/oauth-connections?limit=1&cursor=${first.json().nextCursor}`,
      headers: t.auth,
    });
    expect(next.json().data[0].id).toBe(page1.data[1].id);
  });

  it('works with an owner session, refuses a member session (its session lacks the scope)', async () => {
    expect((await list(owner.header())).statusCode).toBe(200);
    const res = await list(member.header());
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
  });

  it('refuses a key a member made, whatever its scopes: it acts for a member, who holds no connections:* (403)', async () => {
    const [row] = await t.database.db.select().from(users).where(eq(users.email, 'member@demo-firm.test'));
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, createdByUserId: row?.id });
    const res = await list({ authorization: `Bearer ${key}` });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
  });

  it('refuses a token or key without the scope (403 INSUFFICIENT_SCOPE)', async () => {
    const tokens = await connect(t.app, owner, registered);
    const res = await list(bearer(tokens.access_token));
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['accounts:read'] });
    expect((await list({ authorization: `Bearer ${key}` })).statusCode).toBe(403);
  });

  it('lets an app that was granted connections:read list them', async () => {
    const tokens = await connect(t.app, owner, registered, { scope: 'connections:read' });
    expect((await list(bearer(tokens.access_token))).statusCode).toBe(200);
  });

  it('does not show another firm’s connections', async () => {
    const other = await createOtherFirm(t.database.db, 'connections');
    const res = await list({ authorization: other.authorization });
    expect(res.json().data).toEqual([]);
  });
});

describe('DELETE /api/v1/oauth-connections/:id', () => {
  it('disconnects: the tokens stop at once, and the connection is gone', async () => {
    const tokens = await connect(t.app, owner, registered);
    const before = (await list(t.auth)).json().data.length;
    const { data } = (await list(t.auth)).json();
    const id = data[data.length - 1].id;
    const res = await remove(id, t.auth);
    expect(res.statusCode).toBe(204);
    expect(
      (await t.app.inject({ method: 'GET', url: '/api/v1/companies', headers: bearer(tokens.access_token) }))
        .statusCode,
    ).toBe(401);
    expect((await list(t.auth)).json().data).toHaveLength(before - 1);
    expect((await remove(id, t.auth)).statusCode).toBe(404);
  });

  it('needs the session CSRF header when made with a session', async () => {
    await connect(t.app, owner, registered);
    const { data } = (await list(t.auth)).json();
    const id = data[0].id;
    const without = await remove(id, owner.header());
    expect(without.statusCode).toBe(403);
    expect(without.json().error.code).toBe('FORBIDDEN');
    const withCsrf = await remove(id, { ...owner.header(), 'x-csrf-token': await csrfOf(owner) });
    expect(withCsrf.statusCode).toBe(204);
  });

  it('answers 404 for another firm’s connection and for malformed ids', async () => {
    await connect(t.app, owner, registered);
    const id = (await list(t.auth)).json().data[0].id;
    const other = await createOtherFirm(t.database.db, 'disconnect');
    expect((await remove(id, { authorization: other.authorization })).statusCode).toBe(404);
    expect((await remove('not-a-uuid', t.auth)).statusCode).toBe(404);
    expect((await list(t.auth)).json().data.map((c: { id: string }) => c.id)).toContain(id);
  });

  it('refuses a member', async () => {
    const res = await remove('01900000-0000-7000-8000-000000000000', {
      ...member.header(),
      'x-csrf-token': await csrfOf(member),
    });
    expect(res.statusCode).toBe(403);
  });
});

describe('a credential limited to some organizations', () => {
  it('can neither list the firm’s connections nor disconnect one (403 FORBIDDEN), with every scope', async () => {
    const [first, second] = t.demo.organizations;
    const forSecond = await connect(
      t.app,
      owner,
      registered,
      {},
      { decision: 'approve', organizations: 'selected', organization_ids: [second?.id as string] },
    );
    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      organizationIds: [first?.id as string],
    });
    const narrowed = { authorization: `Bearer ${key}` };
    const listed = await list(narrowed);
    expect(listed.statusCode).toBe(403);
    expect(listed.json().error.code).toBe('FORBIDDEN');
    expect(listed.body).not.toContain('owner@demo-firm.test');
    const id = (await list(t.auth)).json().data[0].id as string;
    const removed = await remove(id, narrowed);
    expect(removed.statusCode).toBe(403);
    // nothing was disconnected: the app approved for the other organization still works
    expect((await list(t.auth)).json().data.map((c: { id: string }) => c.id)).toContain(id);
    const stillWorks = await t.app.inject({
      method: 'GET',
      url: '/api/v1/companies',
      headers: bearer(forSecond.access_token),
    });
    expect(stillWorks.statusCode).toBe(200);
  });
});

describe('a token of firm A on an organization of firm B', () => {
  it('is 404 in both route forms', async () => {
    const tokens = await connect(t.app, owner, registered, { scope: 'organizations:read accounts:read' });
    const other = await createOtherFirm(t.database.db, 'tenant-b');
    const header = await t.app.inject({
      method: 'GET',
      url: '/api/v1/accounts',
      headers: { ...bearer(tokens.access_token), 'x-organization-id': other.orgId },
    });
    expect(header.statusCode).toBe(404);
    expect(header.json().error.code).toBe('ORGANIZATION_NOT_FOUND');
    const path = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${other.orgId}/accounts`,
      headers: bearer(tokens.access_token),
    });
    expect(path.statusCode).toBe(404);
    const mine = await t.app.inject({
      method: 'GET',
      url: '/api/v1/accounts',
      headers: { ...bearer(tokens.access_token), 'x-organization-id': t.orgId },
    });
    expect(mine.statusCode).toBe(200);
  });
});
