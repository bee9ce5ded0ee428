import { auditEvents, pgErrorOf, userInvitations, users } from '@firm/db';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { and, count, eq, inArray, sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loggedUrl } from '../../app';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import {
  bearer,
  connect,
  CookieJar,
  FORM,
  form,
  hiddenFields,
  registerClient,
  signIn,
  tokenRequest,
} from '../oauth/fixtures';

const PASSWORD = 'a long password of mine';

let t: TestApp;
let org1: string;
let org2: string;
beforeAll(async () => {
  t = await createTestApp({ config: { LOGIN_RATE_LIMIT_IP_MAX: 1000 } });
  [org1, org2] = t.demo.organizations.map((o) => o.id) as [string, string];
});
afterAll(() => t.close());

type Headers = Record<string, string>;

const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Headers, payload?: unknown) =>
  t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });

/** The headers of a signed-in browser making JSON requests: its cookie and its CSRF token. */
async function sessionHeaders(jar: CookieJar): Promise<Headers> {
  const session = await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() });
  return { ...jar.header(), 'x-csrf-token': session.json().csrfToken };
}

const invite = (body: Record<string, unknown>, headers: Headers = t.auth) =>
  api('POST', '/api/v1/users', headers, body);

/** The path of an invitation URL. */
const pathOf = (url: string) => new URL(url).pathname;

/** Opens the invitation page and posts its form with this password; returns the page and the answer. */
async function takeInvitation(url: string, password = PASSWORD, confirmation = password) {
  const jar = new CookieJar();
  const page = await t.app.inject({ method: 'GET', url: pathOf(url) });
  jar.store(page);
  // A page that shows no form still gets a post with a valid form token (the one /login hands out, as a browser
  // that opened the form before the link was spent would send), so that it is the link that is refused.
  const formPage = page.statusCode === 200 ? page : await t.app.inject({ method: 'GET', url: '/login' });
  jar.store(formPage);
  const { csrf_token } = hiddenFields(formPage.body);
  const res = await t.app.inject({
    method: 'POST',
    url: pathOf(url),
    headers: { ...FORM, ...jar.header() },
    payload: form({ csrf_token, password, password_confirmation: confirmation }),
  });
  jar.store(res);
  return { page, res, jar };
}

async function invitedMember(email: string, organizationIds: string[] | null = [org1]) {
  const res = await invite({ email, name: 'Mia Member', role: 'member', organizationIds });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; invitation: { url: string; expiresAt: string } };
}

/** Invites, takes the invitation and returns the signed-in browser. */
async function joined(email: string, role: 'admin' | 'member' | 'owner', organizationIds?: string[]) {
  const res = await invite({ email, role, ...(organizationIds ? { organizationIds } : {}) });
  expect(res.statusCode, res.body).toBe(201);
  const { jar, res: taken } = await takeInvitation(res.json().data.invitation.url);
  expect(taken.statusCode, taken.body).toBe(303);
  return { id: res.json().data.id as string, jar };
}

const auditOf = async (resourceId: string) =>
  (
    await t.database.db
      .select()
      .from(auditEvents)
      .where(eq(auditEvents.resourceId, resourceId))
      .orderBy(auditEvents.createdAt)
  ).map((e) => ({ action: e.action, actorKind: e.actorKind, organizationId: e.organizationId }));

const codeOf = (res: LightMyRequestResponse) => res.json().error.code;

describe('inviting a member limited to one company', () => {
  it('returns the link once; it signs the member in once, and they see only that company', async () => {
    const res = await invite({ email: 'Mia@Demo.test', name: 'Mia Member', role: 'member', organizationIds: [org1] });
    expect(res.statusCode, res.body).toBe(201);
    const { data } = res.json();
    expect(data).toMatchObject({
      email: 'mia@demo.test',
      name: 'Mia Member',
      role: 'member',
      status: 'invited',
      organizationIds: [org1],
      deactivatedAt: null,
    });
    expect(data.invitation.url).toMatch(/^http:\/\/localhost(:80)?\/invite\/inv_[0-9A-Za-z]{38}$/);
    expect(Date.parse(data.invitation.expiresAt) - Date.now()).toBeGreaterThan(167 * 3_600_000);
    // Only a hash of the link is kept; the listing never shows it.
    const [stored] = await t.database.db.select().from(userInvitations).where(eq(userInvitations.userId, data.id));
    expect(stored?.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    const listed = (await api('GET', '/api/v1/users', t.auth)).json().data;
    expect(listed.find((u: { id: string }) => u.id === data.id)).toEqual({
      id: data.id,
      email: 'mia@demo.test',
      name: 'Mia Member',
      role: 'member',
      status: 'invited',
      organizationIds: [org1],
      createdAt: expect.any(String),
      deactivatedAt: null,
    });

    // Without a password, signing in is refused like a wrong password.
    const refused = signIn(t.app, 'mia@demo.test', PASSWORD);
    await expect(refused).rejects.toThrow(/401/);

    const { page, res: taken, jar } = await takeInvitation(data.invitation.url);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('Demo Accounting Firm');
    expect(page.body).toContain('mia@demo.test');
    expect(taken.statusCode, taken.body).toBe(303);
    expect(taken.headers.location).toBe('/login');
    expect(jar.cookies.get('__Host-session')).toBeTruthy();

    // The link works once.
    const again = await takeInvitation(data.invitation.url, 'another long password');
    expect(again.page.statusCode).toBe(410);
    expect(again.res.statusCode).toBe(410);
    expect(again.jar.cookies.get('__Host-session')).toBeUndefined();
    await expect(signIn(t.app, 'mia@demo.test', 'another long password')).rejects.toThrow(/401/);
    const byPassword = await signIn(t.app, 'mia@demo.test', PASSWORD);

    for (const browser of [jar, byPassword]) {
      const headers = await sessionHeaders(browser);
      // Listings show only the member's company.
      for (const path of ['/api/v1/companies', '/api/v1/organizations']) {
        const list = await api('GET', path, headers);
        expect(list.statusCode, list.body).toBe(200);
        expect(list.json().data.map((o: { id: string }) => o.id)).toEqual([org1]);
      }
      // The only company they see is the default one.
      expect((await api('GET', '/api/v1/accounts', headers)).statusCode).toBe(200);
      expect((await api('GET', `/api/v1/companies/${org1}/accounts`, headers)).statusCode).toBe(200);
      // The other one does not exist for them, on either route form and on writes.
      const other = await api('GET', `/api/v1/companies/${org2}/accounts`, headers);
      expect(other.statusCode).toBe(404);
      expect(codeOf(other)).toBe('ORGANIZATION_NOT_FOUND');
      expect((await api('GET', '/api/v1/accounts', { ...headers, 'x-organization-id': org2 })).statusCode).toBe(404);
      const write = await api(
        'POST',
        `/api/v1/companies/${org2}/journal-entries`,
        { ...headers, 'content-type': 'application/json', 'idempotency-key': 'member-other-company' },
        { date: '2026-01-15', lines: [] },
      );
      expect(write.statusCode).toBe(404);
      // The agent gateway too.
      const clients = await api('GET', '/agent/v1/acct/clients', headers);
      expect(clients.statusCode, clients.body).toBe(200);
      expect(clients.json().data.map((c: { id: string }) => c.id)).toEqual([org1]);
      const client = await api('GET', `/agent/v1/acct/clients/${org2}`, headers);
      expect(client.statusCode).toBe(404);
      expect(codeOf(client)).toBe('CLIENT_NOT_FOUND');
      expect((await api('GET', `/agent/v1/acct/clients/${org1}`, headers)).statusCode).toBe(200);
      // And members manage neither people nor keys.
      for (const path of ['/api/v1/users', '/api/v1/api-keys']) {
        const res = await api('GET', path, headers);
        expect(res.statusCode).toBe(403);
        expect(codeOf(res)).toBe('INSUFFICIENT_SCOPE');
      }
      const inviting = await invite({ email: 'x@demo.test', role: 'member' }, headers);
      expect(inviting.statusCode).toBe(403);
    }

    expect(await auditOf(data.id)).toEqual([
      { action: 'user.invited', actorKind: 'api_key', organizationId: null },
      { action: 'user.joined', actorKind: 'invitation', organizationId: null },
    ]);
  });

  it('refuses an expired link, and a new link replaces it', async () => {
    const { id, invitation } = await invitedMember('late@demo.test');
    await t.database.db
      .update(userInvitations)
      .set({ expiresAt: sql`now() - interval '1 second'` })
      .where(eq(userInvitations.userId, id));
    const expired = await takeInvitation(invitation.url);
    expect(expired.page.statusCode).toBe(410);
    expect(expired.page.body).toContain('expired');
    expect(expired.res.statusCode).toBe(410);
    const [row] = await t.database.db.select().from(users).where(eq(users.id, id));
    expect(row?.passwordHash).toBeNull();

    const renewed = await api('POST', `/api/v1/users/${id}/invitation`, t.auth);
    expect(renewed.statusCode, renewed.body).toBe(201);
    const fresh = renewed.json().data.invitation.url;
    expect(fresh).not.toBe(invitation.url);
    expect((await takeInvitation(fresh)).res.statusCode).toBe(303);
    // Once they joined there is nothing left to renew.
    const joinedAlready = await api('POST', `/api/v1/users/${id}/invitation`, t.auth);
    expect(joinedAlready.statusCode).toBe(409);
    expect(codeOf(joinedAlready)).toBe('INVALID_STATE');
  });

  it('a renewed link replaces the earlier one, and an unknown or forged link is 404', async () => {
    const { id, invitation } = await invitedMember('twice@demo.test');
    const renewed = (await api('POST', `/api/v1/users/${id}/invitation`, t.auth)).json().data.invitation.url;
    const old = await takeInvitation(invitation.url);
    expect(old.page.statusCode).toBe(410);
    expect(old.res.statusCode).toBe(410);
    expect((await t.app.inject({ method: 'GET', url: '/invite/inv_nothing' })).statusCode).toBe(404);
    expect((await takeInvitation(renewed)).res.statusCode).toBe(303);
  });

  it('keeps the link while the passwords differ or are short, and refuses a form without its token', async () => {
    const { invitation } = await invitedMember('careful@demo.test');
    expect((await takeInvitation(invitation.url, PASSWORD, `${PASSWORD}!`)).res.statusCode).toBe(400);
    expect((await takeInvitation(invitation.url, 'short')).res.statusCode).toBe(400);
    const noToken = await t.app.inject({
      method: 'POST',
      url: pathOf(invitation.url),
      headers: FORM,
      payload: form({ password: PASSWORD, password_confirmation: PASSWORD }),
    });
    expect(noToken.statusCode).toBe(403);
    const foreignOrigin = await t.app.inject({
      method: 'POST',
      url: pathOf(invitation.url),
      headers: { ...FORM, origin: 'https://evil.example' },
      payload: form({ password: PASSWORD, password_confirmation: PASSWORD }),
    });
    expect(foreignOrigin.statusCode).toBe(403);
    expect((await takeInvitation(invitation.url)).res.statusCode).toBe(303);
  });
});

describe('validation', () => {
  it('refuses a bad email, an unknown role, companies for an admin, unknown companies and a taken email, writing nothing', async () => {
    const before = (await t.database.db.select({ n: count() }).from(users))[0]?.n;
    const other = await createOtherFirm(t.database.db, 'users-validation');
    const cases: [Record<string, unknown>, number, string][] = [
      [{ email: 'not an email', role: 'member' }, 400, 'VALIDATION_ERROR'],
      [{ email: 'a@b.test', role: 'boss' }, 400, 'VALIDATION_ERROR'],
      [{ email: 'a@b.test' }, 400, 'VALIDATION_ERROR'],
      [{ email: 'a@b.test', role: 'member', extra: 1 }, 400, 'VALIDATION_ERROR'],
      [{ email: 'a@b.test', role: 'admin', organizationIds: [org1] }, 400, 'VALIDATION_ERROR'],
      [{ email: 'a@b.test', role: 'member', organizationIds: [] }, 400, 'VALIDATION_ERROR'],
      [
        { email: 'a@b.test', role: 'member', organizationIds: ['0190aaaa-0000-7000-8000-000000000000'] },
        422,
        'INVALID_ORGANIZATION',
      ],
      [{ email: 'a@b.test', role: 'member', organizationIds: [org1, other.orgId] }, 422, 'INVALID_ORGANIZATION'],
      [{ email: DEMO_OWNER_EMAIL.toUpperCase(), role: 'member' }, 409, 'EMAIL_TAKEN'],
    ];
    for (const [body, status, code] of cases) {
      const res = await invite(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(status);
      expect(codeOf(res), JSON.stringify(body)).toBe(code);
    }
    expect((await t.database.db.select({ n: count() }).from(users))[0]?.n).toBe(before);
  });

  it('answers 404 USER_NOT_FOUND for an unknown user and another firm’s', async () => {
    const other = await createOtherFirm(t.database.db, 'users-404');
    const theirs = await invite({ email: 'theirs@other.test', role: 'member' }, { authorization: other.authorization });
    expect(theirs.statusCode).toBe(201);
    const id = theirs.json().data.id;
    for (const [method, payload] of [
      ['GET', undefined],
      ['PATCH', { name: 'Hacked' }],
      ['DELETE', undefined],
    ] as const) {
      const res = await api(method, `/api/v1/users/${id}`, t.auth, payload);
      expect(res.statusCode, method).toBe(404);
      expect(codeOf(res)).toBe('USER_NOT_FOUND');
    }
    expect((await api('POST', `/api/v1/users/${id}/invitation`, t.auth)).statusCode).toBe(404);
    expect((await api('GET', `/api/v1/users/${id}`, { authorization: other.authorization })).json().data.name).toBe(
      'theirs@other.test',
    );
  });
});

describe('roles', () => {
  it('an admin manages members and admins but cannot make, change or deactivate an owner', async () => {
    const admin = await joined('ada@demo.test', 'admin');
    const headers = await sessionHeaders(admin.jar);
    const owner = (await api('GET', '/api/v1/users', t.auth))
      .json()
      .data.find((u: { email: string }) => u.email === DEMO_OWNER_EMAIL);
    const refused = [
      await invite({ email: 'boss@demo.test', role: 'owner' }, headers),
      await api('PATCH', `/api/v1/users/${owner.id}`, headers, { name: 'Renamed' }),
      await api('DELETE', `/api/v1/users/${owner.id}`, headers),
    ];
    const member = await invitedMember('promote@demo.test');
    refused.push(await api('PATCH', `/api/v1/users/${member.id}`, headers, { role: 'owner' }));
    for (const res of refused) {
      expect(res.statusCode, res.body).toBe(403);
      expect(codeOf(res)).toBe('FORBIDDEN');
    }
    // What an admin may do.
    const changed = await api('PATCH', `/api/v1/users/${member.id}`, headers, { organizationIds: [org1, org2] });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data.organizationIds).toEqual([org1, org2]);
    const promoted = await api('PATCH', `/api/v1/users/${member.id}`, headers, { role: 'admin' });
    expect(promoted.json().data).toMatchObject({ role: 'admin', organizationIds: null });
    expect(await auditOf(member.id)).toEqual([
      { action: 'user.invited', actorKind: 'api_key', organizationId: null },
      { action: 'user.updated', actorKind: 'session', organizationId: null },
      { action: 'user.updated', actorKind: 'session', organizationId: null },
    ]);
    const [event] = await t.database.db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.resourceId, member.id), eq(auditEvents.action, 'user.updated')))
      .limit(1);
    expect(event?.actorId).toBe(admin.id);
    expect(event?.data).toMatchObject({
      before: { organizationIds: [org1] },
      after: { organizationIds: [org1, org2] },
    });
  });

  it('keeps the last active owner: 409 LAST_OWNER to demote or deactivate them, until another owner exists', async () => {
    const owner = await signIn(t.app, DEMO_OWNER_EMAIL);
    const headers = await sessionHeaders(owner);
    const me = (await api('GET', '/api/session', owner.header())).json().user.id;
    for (const res of [
      await api('PATCH', `/api/v1/users/${me}`, headers, { role: 'admin' }),
      await api('DELETE', `/api/v1/users/${me}`, headers),
    ]) {
      expect(res.statusCode, res.body).toBe(409);
      expect(codeOf(res)).toBe('LAST_OWNER');
    }
    // An invited owner is no owner yet.
    const invited = await invite({ email: 'next-owner@demo.test', role: 'owner' }, headers);
    expect(invited.statusCode, invited.body).toBe(201);
    expect((await api('PATCH', `/api/v1/users/${me}`, headers, { role: 'admin' })).statusCode).toBe(409);
    // The database refuses it too, whoever writes.
    const raw = await t.database.db
      .update(users)
      .set({ role: 'admin' })
      .where(eq(users.id, me))
      .catch((err: unknown) => err);
    expect(pgErrorOf(raw)?.message).toMatch(/^LAST_OWNER: /);

    const { jar } = await takeInvitation(invited.json().data.invitation.url);
    const demoted = await api('PATCH', `/api/v1/users/${me}`, headers, { role: 'admin' });
    expect(demoted.statusCode, demoted.body).toBe(200);
    // Now an admin: the new owner is the last one, and the old one cannot touch them.
    const newOwner = invited.json().data.id;
    expect(codeOf(await api('DELETE', `/api/v1/users/${newOwner}`, headers))).toBe('FORBIDDEN');
    const ownerHeaders = await sessionHeaders(jar);
    expect(codeOf(await api('DELETE', `/api/v1/users/${newOwner}`, ownerHeaders))).toBe('LAST_OWNER');
    // Restore the demo owner for the other tests.
    expect((await api('PATCH', `/api/v1/users/${me}`, ownerHeaders, { role: 'owner' })).statusCode).toBe(200);
    expect((await api('DELETE', `/api/v1/users/${newOwner}`, headers)).statusCode).toBe(204);
  });
});

describe('two owners at once', () => {
  it('demoting each other concurrently: one change wins, the other is refused, and one active owner remains', async () => {
    const owner = await signIn(t.app, DEMO_OWNER_EMAIL);
    const first = await sessionHeaders(owner);
    const me = (await api('GET', '/api/session', owner.header())).json().user.id;
    const second = await joined('co-owner@demo.test', 'owner');
    const other = await sessionHeaders(second.jar);
    const answers = await Promise.all([
      api('PATCH', `/api/v1/users/${second.id}`, first, { role: 'admin' }),
      api('PATCH', `/api/v1/users/${me}`, other, { role: 'admin' }),
    ]);
    const statuses = answers.map((r) => r.statusCode).sort();
    expect(statuses[0]).toBe(200);
    expect([403, 409]).toContain(statuses[1]);
    const owners = await t.database.db
      .select({ id: users.id })
      .from(users)
      .where(and(inArray(users.id, [me, second.id]), eq(users.role, 'owner')));
    expect(owners).toHaveLength(1);
    // Back to the demo owner, for the tests after this one.
    if (owners[0]?.id !== me) {
      expect((await api('PATCH', `/api/v1/users/${me}`, other, { role: 'owner' })).statusCode).toBe(200);
    }
    expect((await api('DELETE', `/api/v1/users/${second.id}`, first)).statusCode).toBe(204);
  });
});

describe('deactivating', () => {
  it("ends a member's session on the very next request, and they cannot sign in again", async () => {
    const member = await joined('leaver@demo.test', 'member', [org1]);
    const headers = await sessionHeaders(member.jar);
    expect((await api('GET', '/api/v1/companies', headers)).statusCode).toBe(200);
    const res = await api('DELETE', `/api/v1/users/${member.id}`, t.auth);
    expect(res.statusCode, res.body).toBe(204);
    const after = await api('GET', '/api/v1/companies', headers);
    expect(after.statusCode).toBe(401);
    expect((await t.app.inject({ method: 'GET', url: '/api/session', headers: member.jar.header() })).statusCode).toBe(
      401,
    );
    await expect(signIn(t.app, 'leaver@demo.test', PASSWORD)).rejects.toThrow(/401/);
    const listed = (await api('GET', `/api/v1/users/${member.id}`, t.auth)).json().data;
    expect(listed).toMatchObject({ status: 'deactivated', deactivatedAt: expect.any(String) });
    // Again: nothing changes, nothing more is recorded; a deactivated user cannot be changed.
    expect((await api('DELETE', `/api/v1/users/${member.id}`, t.auth)).statusCode).toBe(204);
    expect(codeOf(await api('PATCH', `/api/v1/users/${member.id}`, t.auth, { name: 'Back' }))).toBe('INVALID_STATE');
    expect((await auditOf(member.id)).map((e) => e.action)).toEqual([
      'user.invited',
      'user.joined',
      'user.deactivated',
    ]);
  });

  it('revokes the OAuth connections an admin approved and the keys they made, at once', async () => {
    const admin = await joined('departing-admin@demo.test', 'admin');
    const registered = await registerClient(t.database.db);
    const tokens = await connect(t.app, admin.jar, registered);
    const headers = await sessionHeaders(admin.jar);
    const made = await api(
      'POST',
      '/api/v1/api-keys',
      { ...headers, 'content-type': 'application/json' },
      { name: 'integration' },
    );
    expect(made.statusCode, made.body).toBe(201);
    const key = { authorization: `Bearer ${made.json().data.key}` };
    for (const h of [bearer(tokens.access_token), key, headers]) {
      expect((await api('GET', '/api/v1/companies', h)).statusCode).toBe(200);
    }

    expect((await api('DELETE', `/api/v1/users/${admin.id}`, t.auth)).statusCode).toBe(204);
    for (const h of [bearer(tokens.access_token), key, headers]) {
      const res = await api('GET', '/api/v1/companies', h);
      expect(res.statusCode).toBe(401);
    }
    const refreshed = await tokenRequest(
      t.app,
      { grant_type: 'refresh_token', refresh_token: tokens.refresh_token },
      { clientId: registered.client.clientId, secret: registered.secret as string },
    );
    expect(refreshed.statusCode).toBe(400);
    expect(refreshed.json().error).toBe('invalid_grant');
    const keys = (await api('GET', '/api/v1/api-keys?includeRevoked=true', t.auth)).json().data;
    expect(keys.find((k: { id: string }) => k.id === made.json().data.id).revokedAt).not.toBeNull();
    const [event] = await t.database.db
      .select()
      .from(auditEvents)
      .where(and(eq(auditEvents.resourceId, admin.id), eq(auditEvents.action, 'user.deactivated')));
    expect(event?.data).toMatchObject({
      sessionsEnded: 1,
      apiKeysRevoked: [made.json().data.id],
      oauthGrantsRevoked: [expect.any(String)],
    });
  });
});

describe('a member’s reach follows every credential acting for them', () => {
  it('keys an admin made are narrowed to their companies, without management scopes, once they are a member', async () => {
    const admin = await joined('narrowed@demo.test', 'admin');
    const headers = { ...(await sessionHeaders(admin.jar)), 'content-type': 'application/json' };
    const made = await api('POST', '/api/v1/api-keys', headers, { name: 'books sync' });
    const key = { authorization: `Bearer ${made.json().data.key}` };
    expect((await api('GET', '/api/v1/companies', key)).json().data).toHaveLength(2);
    expect((await api('GET', '/api/v1/users', key)).statusCode).toBe(200);

    const demoted = await api('PATCH', `/api/v1/users/${admin.id}`, t.auth, {
      role: 'member',
      organizationIds: [org1],
    });
    expect(demoted.statusCode, demoted.body).toBe(200);
    // At once (this process's key cache is cleared by the change).
    expect((await api('GET', '/api/v1/companies', key)).json().data.map((o: { id: string }) => o.id)).toEqual([org1]);
    expect((await api('GET', `/api/v1/companies/${org2}/accounts`, key)).statusCode).toBe(404);
    expect(codeOf(await api('GET', '/api/v1/users', key))).toBe('INSUFFICIENT_SCOPE');
    // The session too.
    expect(
      (await api('GET', '/api/v1/companies', await sessionHeaders(admin.jar)))
        .json()
        .data.map((o: { id: string }) => o.id),
    ).toEqual([org1]);
  });
});

describe('OAuth tokens', () => {
  it('can never manage users or keys, and cannot ask for the scopes', async () => {
    const owner = await signIn(t.app, DEMO_OWNER_EMAIL);
    const registered = await registerClient(t.database.db);
    const tokens = await connect(t.app, owner, registered);
    for (const path of ['/api/v1/users', '/api/v1/api-keys']) {
      const res = await api('GET', path, bearer(tokens.access_token));
      expect(res.statusCode).toBe(403);
      expect(codeOf(res)).toBe('INSUFFICIENT_SCOPE');
    }
    await expect(connect(t.app, owner, registered, { scope: 'users:read' })).rejects.toThrow(
      /consent page: 302|no code/,
    );
    const metadata = (await t.app.inject({ method: 'GET', url: '/.well-known/oauth-authorization-server' })).json();
    expect(metadata.scopes_supported).not.toContain('users:write');
    expect(metadata.scopes_supported).not.toContain('keys:write');
  });
});

describe('logs', () => {
  it('keep only the first characters of an invitation link', () => {
    expect(loggedUrl('/invite/inv_0123456789abcdefghijklmnopqrstuvwxyzABCD')).toBe('/invite/inv_0123…');
    expect(loggedUrl('/invite/inv_0123456789?x=1')).toBe('/invite/inv_0123…?x=1');
    expect(loggedUrl('/api/v1/users/invite/x')).toBe('/api/v1/users/invite/x');
  });
});
