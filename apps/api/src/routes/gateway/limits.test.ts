import { acctClients, agentLimits, contacts } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { addUser } from '../oauth/fixtures';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: { AGENT_WRITE_BUDGET: 2, AGENT_WRITE_WINDOW_SECONDS: 60 } });
});
afterAll(() => t.close());

describe('agent write budget', () => {
  it('answers writes over the budget with 429 and Retry-After, writing nothing, while reads go on', async () => {
    const base = `/agent/v1/acct/clients/${t.orgId}`;
    const create = (name: string) =>
      t.app.inject({
        method: 'POST',
        url: `${base}/entities/Customer`,
        headers: { ...t.auth, 'idempotency-key': name },
        payload: { DisplayName: name },
      });
    expect((await create('first')).statusCode).toBe(201);
    expect((await create('second')).statusCode).toBe(201);
    const contactsBefore = await t.database.db
      .select({ n: count() })
      .from(contacts)
      .where(eq(contacts.organizationId, t.orgId));
    const over = await create('third');
    expect(over.statusCode).toBe(429);
    expect(over.json().error.code).toBe('RATE_LIMITED');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    const list = await t.app.inject({ method: 'GET', url: `${base}/customers`, headers: t.auth });
    expect(list.json().data.QueryResponse.Customer.map((c: { DisplayName: string }) => c.DisplayName)).toEqual([
      'first',
      'second',
    ]);
    expect(
      await t.database.db.select({ n: count() }).from(contacts).where(eq(contacts.organizationId, t.orgId)),
    ).toEqual(contactsBefore);
  });
});

describe("a firm's own agent limits", () => {
  const limits = (method: 'GET' | 'PATCH', headers: Record<string, string>, payload?: object) =>
    t.app.inject({ method, url: '/agent/v1/limits', headers, ...(payload ? { payload } : {}) });
  const newKey = async (options: { organizationIds?: string[] } = {}) => ({
    authorization: `Bearer ${(await createApiKey(t.database.db, { firmId: t.demo.firmId, ...options })).key}`,
  });
  const stored = async () => t.database.db.select().from(agentLimits).where(eq(agentLimits.firmId, t.demo.firmId));

  it('refuses limits that are not whole numbers from 1 to 1,000,000, writing nothing', async () => {
    for (const body of [{}, { writeBudget: 0 }, { readLimit: 1_000_001 }, { readLimit: '5' }, { other: 1 }]) {
      const res = await limits('PATCH', t.auth, body);
      expect({ body, status: res.statusCode }).toEqual({ body, status: 400 });
    }
    expect(await stored()).toEqual([]);
  });

  it('cannot be changed by a key limited to some organizations', async () => {
    const narrowed = await newKey({ organizationIds: [t.orgId] });
    const res = await limits('PATCH', narrowed, { readLimit: 1 });
    expect(res.statusCode).toBe(403);
    expect(await stored()).toEqual([]);
  });

  it('limits reads per credential per minute once set, and go back to the default with null', async () => {
    const res = await limits('PATCH', t.auth, { readLimit: 3 });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ readLimit: 3, readWindowSeconds: 60, firm: { readLimit: 3 } });
    const agent = await newKey();
    const read = () => t.app.inject({ method: 'GET', url: `/agent/v1/acct/clients/${t.orgId}`, headers: agent });
    for (let i = 0; i < 3; i++) expect((await read()).statusCode).toBe(200);
    const over = await read();
    expect(over.statusCode).toBe(429);
    expect(over.json().error.code).toBe('RATE_LIMITED');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    // firm-wide reads count against the same limit; another credential has its own
    expect((await t.app.inject({ method: 'GET', url: '/agent/v1/acct/clients', headers: agent })).statusCode).toBe(429);
    const other = await newKey();
    expect((await t.app.inject({ method: 'GET', url: `/agent/v1/acct/clients`, headers: other })).statusCode).toBe(200);

    const reset = await limits('PATCH', t.auth, { readLimit: null });
    expect(reset.json().data).toMatchObject({ readLimit: 1_000_000, firm: { readLimit: null } });
    expect((await read()).statusCode).toBe(200);
  });

  it('sets the write budget of every credential of the firm', async () => {
    await limits('PATCH', t.auth, { writeBudget: 1 });
    const agent = await newKey();
    const create = (name: string) =>
      t.app.inject({
        method: 'POST',
        url: `/agent/v1/acct/clients/${t.orgId}/entities/Customer`,
        headers: { ...agent, 'idempotency-key': `limit-${name.replace(' ', '-')}` },
        payload: { DisplayName: name },
      });
    expect((await create('Budget One')).statusCode).toBe(201);
    expect((await create('Budget Two')).statusCode).toBe(429);
    const names = await t.database.db
      .select({ name: contacts.name })
      .from(contacts)
      .where(eq(contacts.organizationId, t.orgId));
    expect(names.map((n) => n.name)).not.toContain('Budget Two');
    await limits('PATCH', t.auth, { writeBudget: null });
  });
});

describe('settings only firm managers change', () => {
  let memberKey: Record<string, string>;
  let adminKey: Record<string, string>;
  beforeAll(async () => {
    const member = await addUser(t.database.db, t.demo.firmId, 'member', 'member-keys@demo-firm.test');
    const admin = await addUser(t.database.db, t.demo.firmId, 'admin', 'admin-keys@demo-firm.test');
    const mint = async (createdByUserId: string) => ({
      authorization: `Bearer ${(await createApiKey(t.database.db, { firmId: t.demo.firmId, createdByUserId })).key}`,
    });
    memberKey = await mint(member.id);
    adminKey = await mint(admin.id);
  });

  const access = async () =>
    (await t.database.db.select().from(acctClients).where(eq(acctClients.organizationId, t.orgId)))[0]?.agentAccess;
  const setAccess = (headers: Record<string, string>, agentAccess: string) =>
    t.app.inject({
      method: 'PATCH',
      url: `/agent/v1/acct/clients/${t.orgId}`,
      headers,
      payload: { agentAccess },
    });

  it("refuses a member's key a client's agent access and the limits, writing nothing", async () => {
    const before = await access();
    const res = await setAccess(memberKey, 'read');
    expect(res.statusCode).toBe(403);
    // The key acts for a member, who holds no management scope (as their session does not).
    expect(res.json().error).toMatchObject({
      code: 'INSUFFICIENT_SCOPE',
      message: expect.stringContaining('acct:clients:write'),
    });
    expect(await access()).toBe(before);
    const limits = await t.app.inject({
      method: 'PATCH',
      url: '/agent/v1/limits',
      headers: memberKey,
      payload: { readLimit: 1 },
    });
    expect(limits.statusCode).toBe(403);
  });

  it("lets an admin's key change a client's agent access", async () => {
    const res = await setAccess(adminKey, 'read');
    expect(res.statusCode).toBe(200);
    expect(await access()).toBe('read');
    expect((await setAccess(adminKey, 'read_write')).statusCode).toBe(200);
  });
});
