import { apiKeys, auditEvents } from '@firm/db';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { createApiKey } from '@firm/identity';
import { count, eq } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import { addUser, bearer, connect, registerClient, signIn } from '../oauth/fixtures';

let t: TestApp;
let org1: string;
let org2: string;
beforeAll(async () => {
  // The key cache on, as in production: a revocation must still be seen on the next request.
  t = await createTestApp({ config: { AUTH_CACHE_TTL_MS: 60_000 } });
  [org1, org2] = t.demo.organizations.map((o) => o.id) as [string, string];
});
afterAll(() => t.close());

type Headers = Record<string, string>;
const api = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, headers: Headers, payload?: unknown) =>
  t.app.inject({ method, url, headers, ...(payload === undefined ? {} : { payload: payload as object }) });
const create = (body: Record<string, unknown>, headers: Headers = t.auth) =>
  api('POST', '/api/v1/api-keys', headers, body);
const codeOf = (res: LightMyRequestResponse) => res.json().error.code;

async function sessionOf(email: string): Promise<Headers> {
  const jar = await signIn(t.app, email);
  const csrf = (await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() })).json().csrfToken;
  return { ...jar.header(), 'x-csrf-token': csrf };
}

describe('API keys through the API', () => {
  it('shows the key once, lists it with its last use, and a revoked key is refused on the next request', async () => {
    const session = await sessionOf(DEMO_OWNER_EMAIL);
    const res = await create(
      { name: 'Payroll sync', scopes: ['accounts:read', 'entries:write'], organizationIds: [org1] },
      session,
    );
    expect(res.statusCode, res.body).toBe(201);
    const { data } = res.json();
    expect(data.key).toMatch(/^dk_live_/);
    expect(data).toMatchObject({
      name: 'Payroll sync',
      prefix: data.key.slice(0, 12),
      scopes: ['accounts:read', 'entries:write'],
      organizationIds: [org1],
      createdBy: { email: DEMO_OWNER_EMAIL },
      lastUsedAt: null,
      revokedAt: null,
    });
    const [stored] = await t.database.db.select().from(apiKeys).where(eq(apiKeys.id, data.id));
    expect(stored?.keyHash).not.toContain(data.key);

    const listed = () => api('GET', '/api/v1/api-keys', t.auth);
    const entry = async () => (await listed()).json().data.find((k: { id: string }) => k.id === data.id);
    expect(await entry()).not.toHaveProperty('key');
    expect((await entry()).lastUsedAt).toBeNull();

    const key = { authorization: `Bearer ${data.key}` };
    const used = await api('GET', `/api/v1/companies/${org1}/accounts`, key);
    expect(used.statusCode).toBe(200);
    expect(Date.parse((await entry()).lastUsedAt)).toBeGreaterThan(Date.now() - 60_000);
    // Narrowed as asked: the other company does not exist for it, and it has no other scope.
    expect((await api('GET', `/api/v1/companies/${org2}/accounts`, key)).statusCode).toBe(404);
    expect(codeOf(await api('GET', '/api/v1/contacts', { ...key, 'x-organization-id': org1 }))).toBe(
      'INSUFFICIENT_SCOPE',
    );

    const revoked = await api('DELETE', `/api/v1/api-keys/${data.id}`, session);
    expect(revoked.statusCode, revoked.body).toBe(204);
    const after = await api('GET', `/api/v1/companies/${org1}/accounts`, key);
    expect(after.statusCode).toBe(401);
    expect(await entry()).toBeUndefined();
    const withRevoked = (await api('GET', '/api/v1/api-keys?includeRevoked=true', t.auth)).json().data;
    expect(withRevoked.find((k: { id: string }) => k.id === data.id).revokedAt).toEqual(expect.any(String));
    // Revoking again changes nothing and records nothing more.
    expect((await api('DELETE', `/api/v1/api-keys/${data.id}`, t.auth)).statusCode).toBe(204);
    const events = await t.database.db.select().from(auditEvents).where(eq(auditEvents.resourceId, data.id));
    expect(events.map((e) => [e.action, e.actorKind, e.organizationId])).toEqual([
      ['api_key.created', 'session', null],
      ['api_key.revoked', 'session', null],
    ]);
    expect(events[0]?.data).not.toHaveProperty('key');
  });

  it('gives a key no scope and no company its maker lacks, and writes nothing when refused', async () => {
    const { key: limited } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['keys:write', 'keys:read', 'reports:read'],
    });
    const headers = { authorization: `Bearer ${limited}` };
    const other = await createOtherFirm(t.database.db, 'api-keys-validation');
    const before = (await t.database.db.select({ n: count() }).from(apiKeys))[0]?.n;
    const cases: [Record<string, unknown>, number, string][] = [
      [{ name: 'more', scopes: ['reports:read', 'accounts:write'] }, 403, 'SCOPE_NOT_GRANTABLE'],
      [{ name: 'unknown', scopes: ['everything:all'] }, 400, 'VALIDATION_ERROR'],
      [{ name: 'foreign', organizationIds: [other.orgId] }, 422, 'INVALID_ORGANIZATION'],
      [{ name: 'nameless-scopes', scopes: [] }, 400, 'VALIDATION_ERROR'],
      [{ scopes: ['reports:read'] }, 400, 'VALIDATION_ERROR'],
    ];
    for (const [body, status, code] of cases) {
      const res = await create(body, headers);
      expect(res.statusCode, JSON.stringify(body)).toBe(status);
      expect(codeOf(res), JSON.stringify(body)).toBe(code);
    }
    expect((await t.database.db.select({ n: count() }).from(apiKeys))[0]?.n).toBe(before);
    // Without scopes: all the maker holds, no more.
    const made = await create({ name: 'defaults' }, headers);
    expect(made.statusCode, made.body).toBe(201);
    expect(made.json().data.scopes.sort()).toEqual(['keys:read', 'keys:write', 'reports:read']);
    expect(made.json().data.createdBy).toBeNull();
  });

  it('answers 404 API_KEY_NOT_FOUND for an unknown key and another firm’s, which keeps working', async () => {
    const other = await createOtherFirm(t.database.db, 'api-keys-404');
    const [theirs] = await t.database.db.select().from(apiKeys).where(eq(apiKeys.firmId, other.firmId));
    for (const id of [theirs?.id, '0190aaaa-0000-7000-8000-000000000000']) {
      const res = await api('DELETE', `/api/v1/api-keys/${id}`, t.auth);
      expect(res.statusCode).toBe(404);
      expect(codeOf(res)).toBe('API_KEY_NOT_FOUND');
      expect(codeOf(await api('GET', `/api/v1/api-keys/${id}`, t.auth))).toBe('API_KEY_NOT_FOUND');
    }
    expect((await api('GET', '/api/v1/companies', { authorization: other.authorization })).statusCode).toBe(200);
    expect((await api('GET', '/api/v1/api-keys', t.auth)).json().data.map((k: { id: string }) => k.id)).not.toContain(
      theirs?.id,
    );
  });

  it('refuses members, OAuth tokens and keys limited to some companies', async () => {
    await addUser(t.database.db, t.demo.firmId, 'member', 'keys-member@demo-firm.test');
    const member = await sessionOf('keys-member@demo-firm.test');
    const owner = await signIn(t.app, DEMO_OWNER_EMAIL);
    const tokens = await connect(t.app, owner, await registerClient(t.database.db));
    const { key: narrowed } = await createApiKey(t.database.db, { firmId: t.demo.firmId, organizationIds: [org1] });
    const refusals: [Headers, string][] = [
      [member, 'INSUFFICIENT_SCOPE'],
      [bearer(tokens.access_token), 'INSUFFICIENT_SCOPE'],
      [{ authorization: `Bearer ${narrowed}` }, 'FORBIDDEN'],
    ];
    for (const [headers, code] of refusals) {
      for (const res of [await api('GET', '/api/v1/api-keys', headers), await create({ name: 'x' }, headers)]) {
        expect(res.statusCode).toBe(403);
        expect(codeOf(res)).toBe(code);
      }
    }
  });

  it('issues a key to a member that acts for them: their companies, no management scope, gone when they go', async () => {
    const member = await addUser(t.database.db, t.demo.firmId, 'member', 'script-member@demo-firm.test');
    await api('PATCH', `/api/v1/users/${member.id}`, t.auth, { organizationIds: [org1] });
    const before = (await t.database.db.select({ n: count() }).from(apiKeys))[0]?.n;

    // Asking for what the member cannot hold is refused, and writes nothing.
    const tooMuch = await create({ name: 'x', forUserId: member.id, scopes: ['users:read'] });
    expect(tooMuch.statusCode).toBe(403);
    expect(codeOf(tooMuch)).toBe('SCOPE_NOT_GRANTABLE');
    const otherCompany = await create({ name: 'x', forUserId: member.id, organizationIds: [org2] });
    expect(otherCompany.statusCode).toBe(422);
    expect(codeOf(otherCompany)).toBe('INVALID_ORGANIZATION');
    expect(codeOf(await create({ name: 'x', forUserId: '01900000-0000-7000-8000-000000000000' }))).toBe(
      'USER_NOT_FOUND',
    );
    expect((await t.database.db.select({ n: count() }).from(apiKeys))[0]?.n).toBe(before);

    const res = await create({ name: 'Bank rules script', forUserId: member.id });
    expect(res.statusCode, res.body).toBe(201);
    const { data } = res.json();
    expect(data).toMatchObject({ organizationIds: [org1], createdBy: { id: member.id } });
    expect(data.scopes).not.toContain('users:read');
    expect(data.scopes).toContain('entries:write');
    const key = { authorization: `Bearer ${data.key}`, 'x-organization-id': org1 };
    expect((await api('GET', '/api/v1/accounts', key)).statusCode).toBe(200);
    expect((await api('GET', '/api/v1/accounts', { ...key, 'x-organization-id': org2 })).statusCode).toBe(404);

    expect((await api('DELETE', `/api/v1/users/${member.id}`, t.auth)).statusCode).toBe(204);
    expect((await api('GET', '/api/v1/accounts', key)).statusCode).toBe(401);
    const deactivated = await create({ name: 'again', forUserId: member.id });
    expect(deactivated.statusCode).toBe(409);
    expect(codeOf(deactivated)).toBe('INVALID_STATE');
  });

  it('lets only an owner issue a key acting for an owner', async () => {
    const admin = await addUser(t.database.db, t.demo.firmId, 'admin', 'keys-admin@demo-firm.test');
    const owner = (await api('GET', '/api/v1/users', t.auth))
      .json()
      .data.find((u: { email: string }) => u.email === DEMO_OWNER_EMAIL);
    const asAdmin = await sessionOf('keys-admin@demo-firm.test');
    const refused = await create({ name: 'x', forUserId: owner.id }, asAdmin);
    expect(refused.statusCode).toBe(403);
    expect(codeOf(refused)).toBe('FORBIDDEN');
    const forAdmin = await create({ name: 'for the admin', forUserId: admin.id }, await sessionOf(DEMO_OWNER_EMAIL));
    expect(forAdmin.statusCode, forAdmin.body).toBe(201);
    expect(forAdmin.json().data.createdBy.id).toBe(admin.id);
  });
});
