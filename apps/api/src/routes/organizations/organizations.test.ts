import { randomUUID } from 'node:crypto';
import { accounts, acctClients, organizations, users } from '@firm/db';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { createApiKey, createFirm } from '@firm/identity';
import { STANDARD_CHART } from '@firm/ledger';
import { createWebhookWorker, type Envelope } from '@firm/webhooks';
import { type Receiver, startReceiver, verifyDelivery } from '@firm/webhooks/testing';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import {
  addUser,
  authorizeParams,
  authorizeUrl,
  bearer,
  type CookieJar,
  connect,
  pkce,
  registerClient,
  signIn,
} from '../oauth/fixtures';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: { WEBHOOKS_ALLOW_INSECURE_LOCALHOST: true } });
});
afterAll(() => t.close());

const key = () => ({ 'idempotency-key': randomUUID() });

const createCompany = (body: object, headers: Record<string, string> = { ...t.auth, ...key() }, path = 'companies') =>
  t.app.inject({ method: 'POST', url: `/api/v1/${path}`, headers, payload: body });

const companyCount = async (firmId = t.demo.firmId) =>
  (await t.database.db.select().from(organizations).where(eq(organizations.firmId, firmId))).length;

/** The company-path journal entry route, posting a small balanced entry in the company. */
async function postEntry(companyId: string, headers: Record<string, string> = t.auth) {
  const chart = await t.database.db.select().from(accounts).where(eq(accounts.organizationId, companyId));
  const id = (code: string) => chart.find((a) => a.code === code)?.id as string;
  return t.app.inject({
    method: 'POST',
    url: `/api/v1/companies/${companyId}/journal-entries`,
    headers: { ...headers, ...key() },
    payload: {
      date: '2026-05-01',
      lines: [
        { accountId: id('6300'), debitCents: 125 },
        { accountId: id('1000'), creditCents: 125 },
      ],
    },
  });
}

describe('creating a company', () => {
  it('creates one with the standard chart, once per Idempotency-Key, and a replay answers the same company', async () => {
    const headers = { ...t.auth, ...key() };
    const body = {
      name: 'Harbor Coffee Co',
      legalName: 'Harbor Coffee Company LLC',
      taxId: '12-3456789',
      currency: 'EUR',
      fiscalYearStartMonth: 7,
      chartTemplate: 'standard',
    };
    const before = await companyCount();
    const res = await createCompany(body, headers);
    expect(res.statusCode, res.body).toBe(201);
    const company = res.json().data;
    expect(company).toEqual({
      id: expect.any(String),
      name: 'Harbor Coffee Co',
      legalName: 'Harbor Coffee Company LLC',
      taxId: '12-3456789',
      currency: 'EUR',
      fiscalYearStartMonth: 7,
      booksClosedThrough: null,
      status: 'active',
      archivedAt: null,
      createdAt: expect.any(String),
    });

    const replay = await createCompany(body, headers);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.json()).toEqual(res.json());
    // The key names this request of the firm: another body, or the other route form, is refused.
    const reused = await createCompany({ ...body, name: 'Another Co' }, headers);
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await createCompany(body, headers, 'organizations')).json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await companyCount()).toBe(before + 1);

    const chart = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${company.id}/accounts?limit=1000`,
      headers: t.auth,
    });
    expect(chart.json().data.map((a: { code: string }) => a.code)).toEqual(STANDARD_CHART.map((a) => a.code));
    const books = await t.app.inject({ method: 'GET', url: `/api/v1/companies/${company.id}/books`, headers: t.auth });
    expect(books.json().data).toEqual({ booksClosedThrough: null, fiscalYearStartMonth: 7 });
  });

  it('creates one company for one key however many requests race with it', async () => {
    const headers = { ...t.auth, ...key() };
    const before = await companyCount();
    const answers = await Promise.all(
      Array.from({ length: 6 }, () => createCompany({ name: 'Race Condition Roasters' }, headers)),
    );
    const ids = new Set(answers.filter((r) => r.statusCode === 201).map((r) => r.json().data.id));
    expect(ids.size).toBe(1);
    for (const r of answers.filter((a) => a.statusCode !== 201)) {
      expect(r.statusCode, r.body).toBe(409);
      expect(r.json().error).toMatchObject({ code: 'IDEMPOTENCY_IN_PROGRESS', retryable: true });
    }
    expect(await companyCount()).toBe(before + 1);
    const retried = await createCompany({ name: 'Race Condition Roasters' }, headers);
    expect(retried.json().data.id).toBe([...ids][0]);
  });

  it('creates one with an empty chart through the organization form', async () => {
    const res = await createCompany({ name: 'Blank Slate Studio', chartTemplate: 'empty' }, undefined, 'organizations');
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toMatchObject({ currency: 'USD', fiscalYearStartMonth: 1, legalName: null, taxId: null });
    const chart = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${res.json().data.id}/accounts`,
      headers: t.auth,
    });
    expect(chart.json().data).toEqual([]);
  });

  it('refuses bad input with 400 naming the field, a taken name with 409, and a missing key, writing nothing', async () => {
    const before = await companyCount();
    const cases: [object, string][] = [
      [{ name: 'A', currency: 'XYZ' }, 'currency'],
      [{ name: 'A', currency: 'usd' }, 'currency'],
      [{ name: 'A', fiscalYearStartMonth: 13 }, 'fiscalYearStartMonth'],
      [{ name: 'A', fiscalYearStartMonth: 0 }, 'fiscalYearStartMonth'],
      [{ name: '   ' }, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'A', chartTemplate: 'enterprise' }, 'chartTemplate'],
      [{ name: 'A', status: 'archived' }, 'status'],
      [{}, 'name'],
    ];
    for (const [body, field] of cases) {
      const res = await createCompany(body);
      expect(res.statusCode, JSON.stringify(body)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
      expect(JSON.stringify(res.json().error.details), JSON.stringify(body)).toContain(field);
    }
    const taken = await createCompany({ name: 'Northwind Bakery LLC' });
    expect(taken.statusCode).toBe(409);
    expect(taken.json().error).toMatchObject({ code: 'COMPANY_NAME_TAKEN', details: [{ field: 'name' }] });
    const keyless = await createCompany({ name: 'No Key Co' }, t.auth);
    expect(keyless.statusCode).toBe(400);
    expect(keyless.json().error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
    expect(await companyCount()).toBe(before);
  });

  it('is for owners and admins with a credential covering the whole firm: others get 403', async () => {
    const before = await companyCount();
    const narrowed = await createApiKey(t.database.db, { firmId: t.demo.firmId, organizationIds: [t.orgId] });
    const noScope = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['organizations:read'] });
    const member = await addUser(t.database.db, t.demo.firmId, 'member', 'member@demo-firm.test');
    const membersKey = await createApiKey(t.database.db, { firmId: t.demo.firmId, createdByUserId: member.id });
    const refusals: [Record<string, string>, string][] = [
      [bearer(narrowed.key), 'FORBIDDEN'],
      [bearer(noScope.key), 'INSUFFICIENT_SCOPE'],
      // A key acts as its maker: a member's key holds no more than the member, who lacks companies:write.
      [bearer(membersKey.key), 'INSUFFICIENT_SCOPE'],
    ];
    for (const [auth, code] of refusals) {
      const res = await createCompany({ name: 'Not Allowed Co' }, { ...auth, ...key() });
      expect(res.statusCode, res.body).toBe(403);
      expect(res.json().error.code).toBe(code);
    }
    // A member signed in holds no companies:write at all.
    const jar: CookieJar = await signIn(t.app, 'member@demo-firm.test');
    const session = await t.app.inject({ method: 'GET', url: '/api/session', headers: jar.header() });
    const res = await createCompany(
      { name: 'Not Allowed Co' },
      { ...jar.header(), 'x-csrf-token': session.json().csrfToken, ...key() },
    );
    expect(res.statusCode, res.body).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
    // Nor may a member's key or a narrowed key change or archive one.
    for (const auth of [bearer(membersKey.key)]) {
      const archive = await t.app.inject({
        method: 'POST',
        url: `/api/v1/companies/${t.orgId}/archive`,
        headers: auth,
      });
      expect(archive.statusCode).toBe(403);
    }
    expect(await companyCount()).toBe(before);
  });

  it('gives a new firm a company to work on: its organization-header calls stop being 400', async () => {
    const firm = await createFirm(t.database.db, { name: 'Fresh Start Partners' });
    const { key: firmKey } = await createApiKey(t.database.db, { firmId: firm.id });
    const created = await createCompany({ name: 'First Client' }, { ...bearer(firmKey), ...key() });
    expect(created.statusCode, created.body).toBe(201);
    const list = await t.app.inject({
      method: 'GET',
      url: '/api/v1/accounts',
      headers: { ...bearer(firmKey), 'x-organization-id': created.json().data.id },
    });
    expect(list.statusCode).toBe(200);
    expect(list.json().data).toHaveLength(STANDARD_CHART.length);
    // The same name in another firm is another company.
    expect((await createCompany({ name: 'Northwind Bakery LLC' }, { ...bearer(firmKey), ...key() })).statusCode).toBe(
      201,
    );
  });

  it('is a client of the gateway closed to agents until an owner or admin opens it', async () => {
    const created = await createCompany({ name: 'Gateway Newcomer' });
    const id = created.json().data.id as string;
    const [client] = await t.database.db.select().from(acctClients).where(eq(acctClients.organizationId, id));
    expect(client?.agentAccess).toBe('none');
    const listed = async () =>
      (await t.app.inject({ method: 'GET', url: '/agent/v1/acct/clients', headers: t.auth }))
        .json()
        .data.filter((c: { id: string }) => c.id === id);
    expect(await listed()).toEqual([]);
    const one = await t.app.inject({ method: 'GET', url: `/agent/v1/acct/clients/${id}`, headers: t.auth });
    expect(one.json().error.code).toBe('CLIENT_NOT_FOUND');
    const opened = await t.app.inject({
      method: 'PATCH',
      url: `/agent/v1/acct/clients/${id}`,
      headers: t.auth,
      payload: { agentAccess: 'read' },
    });
    expect(opened.statusCode, opened.body).toBe(200);
    expect(await listed()).toMatchObject([{ id, name: 'Gateway Newcomer', agentAccess: 'read', platform: 'embedded' }]);
  });
});

describe('changing a company', () => {
  it('changes the fields sent, honours the fiscal year in the books, and locks the currency once it has posted', async () => {
    const id = (await createCompany({ name: 'Patchable Co', taxId: 'OLD' })).json().data.id as string;
    const patch = (payload: object, headers: Record<string, string> = t.auth) =>
      t.app.inject({ method: 'PATCH', url: `/api/v1/companies/${id}`, headers, payload });
    const changed = await patch({ name: 'Patched Co', taxId: null, fiscalYearStartMonth: 4, currency: 'GBP' });
    expect(changed.statusCode, changed.body).toBe(200);
    expect(changed.json().data).toMatchObject({ name: 'Patched Co', taxId: null, fiscalYearStartMonth: 4 });
    const books = await t.app.inject({ method: 'GET', url: `/api/v1/companies/${id}/books`, headers: t.auth });
    expect(books.json().data.fiscalYearStartMonth).toBe(4);

    expect((await postEntry(id)).statusCode).toBe(201);
    const locked = await patch({ currency: 'USD' });
    expect(locked.statusCode).toBe(409);
    expect(locked.json().error).toMatchObject({ code: 'CURRENCY_LOCKED', details: [{ field: 'currency' }] });
    expect((await patch({})).statusCode).toBe(400);
    expect((await patch({ fiscalYearStartMonth: 13 })).statusCode).toBe(400);
    expect((await patch({ name: 'Northwind Bakery LLC' })).json().error.code).toBe('COMPANY_NAME_TAKEN');

    // With a key, a retry changes nothing twice and answers as the first time.
    const headers = { ...t.auth, ...key() };
    const first = await patch({ legalName: 'Patched Company Ltd' }, headers);
    const again = await patch({ legalName: 'Patched Company Ltd' }, headers);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(first.json());

    const other = await createOtherFirm(t.database.db, 'patch-other');
    const foreign = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/companies/${other.orgId}`,
      headers: t.auth,
      payload: { name: 'Mine now' },
    });
    expect(foreign.statusCode).toBe(404);
  });
});

describe('archiving a company', () => {
  it('refuses every write with 409 COMPANY_ARCHIVED, keeps reads, hides it from lists, and unarchiving lifts it', async () => {
    const id = t.demo.organizations[1]?.id as string;
    const archive = (action: 'archive' | 'unarchive') =>
      t.app.inject({ method: 'POST', url: `/api/v1/companies/${id}/${action}`, headers: { ...t.auth, ...key() } });
    expect((await postEntry(id)).statusCode).toBe(201);

    const archived = await archive('archive');
    expect(archived.statusCode, archived.body).toBe(200);
    expect(archived.json().data).toMatchObject({ id, status: 'archived', archivedAt: expect.any(String) });
    const again = await archive('archive');
    expect(again.json().data.archivedAt).toBe(archived.json().data.archivedAt);

    // Writes: company path, organization header, the company itself, the agent gateway.
    const refusals = [
      await postEntry(id),
      await t.app.inject({
        method: 'POST',
        url: '/api/v1/accounts',
        headers: { ...t.auth, 'x-organization-id': id },
        payload: { code: '1999', name: 'Late account', type: 'asset' },
      }),
      await t.app.inject({
        method: 'PATCH',
        url: `/api/v1/companies/${id}`,
        headers: t.auth,
        payload: { name: 'Renamed while archived' },
      }),
      await t.app.inject({
        method: 'POST',
        url: `/agent/v1/acct/clients/${id}/entities/Customer`,
        headers: t.auth,
        payload: { DisplayName: 'Late customer' },
      }),
      await t.app.inject({
        method: 'POST',
        url: `/agent/v1/acct/clients/${id}/request`,
        headers: t.auth,
        payload: { method: 'POST', path: 'customer', body: { DisplayName: 'Relayed customer' } },
      }),
    ];
    for (const res of refusals) {
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json().error.code).toBe('COMPANY_ARCHIVED');
    }

    // Reads and reports keep working, for partners and agents.
    for (const url of [
      `/api/v1/companies/${id}`,
      `/api/v1/companies/${id}/accounts`,
      `/api/v1/companies/${id}/journal-entries`,
      `/api/v1/companies/${id}/reports/trial-balance?endDate=2026-12-31`,
      `/agent/v1/acct/clients/${id}`,
      `/agent/v1/acct/clients/${id}/entities/Account`,
    ]) {
      const res = await t.app.inject({ method: 'GET', url, headers: t.auth });
      expect(res.statusCode, `${url} ${res.body}`).toBe(200);
    }
    const query = await t.app.inject({
      method: 'POST',
      url: `/agent/v1/acct/clients/${id}/query`,
      headers: t.auth,
      payload: { query: 'select * from Account maxresults 1' },
    });
    expect(query.statusCode, query.body).toBe(200);

    // Lists hide it unless asked for.
    const ids = async (url: string) =>
      (await t.app.inject({ method: 'GET', url, headers: t.auth })).json().data.map((c: { id: string }) => c.id);
    expect(await ids('/api/v1/companies')).not.toContain(id);
    expect(await ids('/api/v1/organizations')).not.toContain(id);
    expect(await ids('/api/v1/companies?status=archived')).toEqual([id]);
    expect(await ids('/api/v1/companies?status=all')).toEqual(expect.arrayContaining([id, t.orgId]));
    expect(await ids('/agent/v1/acct/clients')).not.toContain(id);

    const back = await archive('unarchive');
    expect(back.json().data).toMatchObject({ status: 'active', archivedAt: null });
    expect((await postEntry(id)).statusCode).toBe(201);
    expect(await ids('/api/v1/companies')).toContain(id);
    expect(await ids('/agent/v1/acct/clients')).toContain(id);
  });

  it('leaves an archived company out of a session’s default company and out of the consent page', async () => {
    const [active, other] = t.demo.organizations as [{ id: string; name: string }, { id: string; name: string }];
    const member = await addUser(t.database.db, t.demo.firmId, 'member', 'two-companies@demo-firm.test');
    await t.database.db
      .update(users)
      .set({ organizationIds: [active.id, other.id] })
      .where(eq(users.id, member.id));
    const memberJar = await signIn(t.app, member.email);
    const withoutHeader = () => t.app.inject({ method: 'GET', url: '/api/v1/accounts', headers: memberJar.header() });
    const ownerJar = await signIn(t.app, DEMO_OWNER_EMAIL);
    const consentPage = async () => {
      const registered = await registerClient(t.database.db);
      const url = authorizeUrl(authorizeParams(registered.client, pkce().challenge));
      const page = await t.app.inject({ method: 'GET', url, headers: ownerJar.header() });
      expect(page.statusCode, page.body).toBe(200);
      return page.body;
    };
    expect((await withoutHeader()).json().error.code).toBe('ORGANIZATION_REQUIRED');
    expect(await consentPage()).toContain(other.name);

    const archive = (action: 'archive' | 'unarchive') =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/companies/${other.id}/${action}`,
        headers: { ...t.auth, ...key() },
      });
    expect((await archive('archive')).statusCode).toBe(200);
    try {
      const res = await withoutHeader();
      expect(res.statusCode, res.body).toBe(200);
      const chart = await t.database.db.select().from(accounts).where(eq(accounts.organizationId, active.id));
      expect(
        res
          .json()
          .data.map((a: { id: string }) => a.id)
          .sort(),
      ).toEqual(chart.map((a) => a.id).sort());
      const page = await consentPage();
      expect(page).toContain(active.name);
      expect(page).not.toContain(other.name);
    } finally {
      expect((await archive('unarchive')).statusCode).toBe(200);
    }
  });

  it('refuses the MCP tools’ writes to an archived company, through the partner API and the gateway', async () => {
    const id = (await createCompany({ name: 'Agent Archive Co' })).json().data.id as string;
    await t.database.db
      .update(acctClients)
      .set({ agentAccess: 'read_write' })
      .where(eq(acctClients.organizationId, id));
    const chart = await t.database.db.select().from(accounts).where(eq(accounts.organizationId, id));
    const account = (code: string) => chart.find((a) => a.code === code)?.id as string;
    const jar = await signIn(t.app, 'owner@demo-firm.test');
    const metadata = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' });
    const registered = await registerClient(t.database.db, { isPublic: true, name: 'Desk Assistant' });
    const token = (
      await connect(t.app, jar, registered, {
        scope: 'acct:clients:read acct:transactions:create acct:entities:read acct:entities:write entries:write',
        resource: metadata.json().resource,
      })
    ).access_token;
    let rpc = 0;
    const tool = async (name: string, args: object) => {
      const res = await t.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: {
          ...bearer(token),
          accept: 'application/json, text/event-stream',
          'content-type': 'application/json',
        },
        payload: { jsonrpc: '2.0', id: ++rpc, method: 'tools/call', params: { name, arguments: args } },
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json().result as { isError?: boolean; content: { text: string }[] };
    };
    const archived = await t.app.inject({
      method: 'POST',
      url: `/api/v1/companies/${id}/archive`,
      headers: t.auth,
    });
    expect(archived.statusCode).toBe(200);

    const journal = await tool('post_journal_entry', {
      clientId: id,
      idempotencyKey: randomUUID(),
      body: {
        txnDate: '2026-11-04',
        lines: [
          { accountId: account('6300'), postingType: 'debit', amount: 5 },
          { accountId: account('1000'), postingType: 'credit', amount: 5 },
        ],
      },
    });
    const purchase = await tool('create_transaction', {
      clientId: id,
      idempotencyKey: randomUUID(),
      body: {
        entityType: 'purchase',
        payload: {
          PaymentType: 'Cash',
          AccountRef: { value: account('1000') },
          TxnDate: '2026-11-03',
          Line: [
            {
              Amount: 12,
              DetailType: 'AccountBasedExpenseLineDetail',
              AccountBasedExpenseLineDetail: { AccountRef: { value: account('6100') } },
            },
          ],
        },
      },
    });
    // A write that posts nothing is refused where the company is resolved, as postings are.
    const customer = await tool('create_entity', {
      clientId: id,
      entity: 'Customer',
      idempotencyKey: randomUUID(),
      body: { DisplayName: 'Late customer' },
    });
    for (const answer of [journal, purchase, customer]) {
      expect(answer.isError).toBe(true);
      expect(JSON.parse(answer.content[0]?.text ?? '{}').error.code).toBe('COMPANY_ARCHIVED');
    }
    const read = await tool('list_entities', { clientId: id, entity: 'Account' });
    expect(read.isError ?? false).toBe(false);
  });
});

describe('company events', () => {
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver('/companies');
  });
  afterAll(() => receiver.close());

  it('delivers company.created, company.updated, company.archived and company.unarchived to a subscription', async () => {
    const sub = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: t.auth,
      payload: {
        url: receiver.url,
        eventTypes: ['company.created', 'company.updated', 'company.archived', 'company.unarchived'],
      },
    });
    expect(sub.statusCode, sub.body).toBe(201);
    const { secret } = sub.json().data as { secret: string };

    const created = (await createCompany({ name: 'Eventful Co' })).json().data;
    const id = created.id as string;
    const updated = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/companies/${id}`,
      headers: t.auth,
      payload: { legalName: 'Eventful Company Inc' },
    });
    const archived = await t.app.inject({ method: 'POST', url: `/api/v1/companies/${id}/archive`, headers: t.auth });
    await t.app.inject({ method: 'POST', url: `/api/v1/companies/${id}/archive`, headers: t.auth });
    const unarchived = await t.app.inject({
      method: 'POST',
      url: `/api/v1/companies/${id}/unarchive`,
      headers: t.auth,
    });

    const worker = createWebhookWorker({
      db: t.database.db,
      policy: { allowInsecureLocalhost: true },
      secretKeys: t.app.webhookSecretKeys,
      timeoutMs: 5000,
    });
    await worker.drain();
    await worker.stop();
    const events: Envelope[] = receiver.received.map((r) => verifyDelivery(secret, r));
    const mine = events.filter((e) => e.organizationId === id);
    expect(mine.map((e) => e.type)).toEqual([
      'company.created',
      'company.updated',
      'company.archived',
      'company.unarchived',
    ]);
    // Each carries the company as the API returned it.
    expect(mine.map((e) => e.data)).toEqual([
      created,
      updated.json().data,
      archived.json().data,
      unarchived.json().data,
    ]);
    const [row] = await t.database.db
      .select()
      .from(organizations)
      .where(and(eq(organizations.id, id), eq(organizations.firmId, t.demo.firmId)));
    expect(row?.archivedAt).toBeNull();
  });
});
