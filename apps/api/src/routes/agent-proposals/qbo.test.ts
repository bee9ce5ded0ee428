import { agentProposals, outboxEvents } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { FakeQbo } from '@firm/qbo/testing/fake-qbo';
import { and, count, eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { type CookieJar, signIn } from '../oauth/fixtures';

/** A client on QuickBooks Online (the fake QBO server) whose approval policy holds an agent's new customers. */

let t: TestApp;
let fake: FakeQbo;
let agent: { authorization: string };

const client = () => `/agent/v1/acct/clients/${t.orgId}`;

async function connectQbo(owner: CookieJar) {
  const csrf = (await t.app.inject({ method: 'GET', url: '/api/session', headers: owner.header() })).json().csrfToken;
  const started = await t.app.inject({
    method: 'POST',
    url: '/api/v1/qbo/connection',
    headers: { ...owner.header(), 'x-csrf-token': csrf, 'x-organization-id': t.orgId },
  });
  expect(started.statusCode).toBe(201);
  const state = new URL(started.json().data.authorizationUrl).searchParams.get('state') as string;
  const done = await t.app.inject({
    method: 'GET',
    url: `/api/qbo/callback?${new URLSearchParams({ state, code: fake.issueCode(), realmId: fake.realmId })}`,
    headers: owner.header(),
  });
  expect(done.statusCode).toBe(200);
}

beforeAll(async () => {
  fake = new FakeQbo();
  await fake.start();
  t = await createTestApp({ config: fake.env() });
  await connectQbo(await signIn(t.app, 'owner@demo-firm.test'));
  agent = { authorization: `Bearer ${(await createApiKey(t.database.db, { firmId: t.demo.firmId })).key}` };
  const policy = await t.app.inject({
    method: 'PATCH',
    url: client(),
    headers: t.auth,
    payload: { approvalPolicy: { mode: 'approval', newContacts: true } },
  });
  expect(policy.statusCode).toBe(200);
});
afterAll(async () => {
  await t?.close();
  await fake?.stop();
});

const createCustomer = (name: string, key: string) =>
  t.app.inject({
    method: 'POST',
    url: `${client()}/entities/Customer`,
    headers: { ...agent, 'idempotency-key': key },
    payload: { DisplayName: name },
  });
const approve = (id: string) =>
  t.app.inject({ method: 'POST', url: `/api/v1/agent-proposals/${id}/approve`, headers: t.auth, payload: {} });
const creates = () => fake.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/customer'));

describe('a QuickBooks Online client whose policy holds the write', () => {
  it('answers 202 and sends QBO nothing; approval creates the customer once, through the QBO adapter', async () => {
    const before = fake.count('Customer');
    fake.requests.length = 0;
    const held = await createCustomer('Held Co', 'qbo-held-1');
    expect(held.statusCode).toBe(202);
    expect(held.json().data).toMatchObject({ status: 'pending', entity: 'Customer', operation: 'create' });
    expect(fake.requests).toEqual([]);
    expect(fake.count('Customer')).toBe(before);

    const approved = await approve(held.json().data.id);
    expect(approved.statusCode).toBe(200);
    const proposal = approved.json().data;
    expect(proposal).toMatchObject({ status: 'executed', result: { status: 201 }, failure: null });
    const record = proposal.result.body.data;
    expect(record).toMatchObject({ DisplayName: 'Held Co', Id: expect.any(String), SyncToken: '0' });
    expect(creates()).toHaveLength(1);
    expect(fake.count('Customer')).toBe(before + 1);
    expect(fake.record('Customer', record.Id)).toMatchObject({ DisplayName: 'Held Co' });

    const retry = await createCustomer('Held Co', 'qbo-held-1');
    expect(retry.statusCode).toBe(201);
    expect(retry.json().data.Id).toBe(record.Id);
    expect(creates()).toHaveLength(1);
  });

  it("executes once when QBO's answer to the create is lost: the adapter finds the customer it made", async () => {
    const before = fake.count('Customer');
    fake.requests.length = 0;
    const held = await createCustomer('Lost Answer Ltd', 'qbo-held-2');
    expect(held.statusCode).toBe(202);
    fake.inject({ kind: 'drop-after' }, (r) => r.method === 'POST' && r.path.endsWith('/customer'));

    const approved = await approve(held.json().data.id);
    expect(approved.statusCode).toBe(200);
    const proposal = approved.json().data;
    expect(proposal).toMatchObject({ status: 'executed', result: { status: 201 } });
    const record = proposal.result.body.data;
    expect(record).toMatchObject({ DisplayName: 'Lost Answer Ltd' });
    expect(fake.count('Customer')).toBe(before + 1);
    // The create was sent again after its answer was lost, under the same requestid: QBO kept one customer.
    // The create whose answer was lost, sent again under the same requestid: QBO answered the customer it kept.
    expect(creates()).toHaveLength(2);
    expect(new Set(creates().map((r) => r.query.requestid)).size).toBe(1);
    const executed = await t.database.db
      .select({ n: count() })
      .from(outboxEvents)
      .where(
        and(eq(outboxEvents.type, 'agent_proposal.executed'), sql`${outboxEvents.payload}->>'id' = ${proposal.id}`),
      );
    expect(executed).toEqual([{ n: 1 }]);

    // Read again, the proposal does not run again; the agent's retry answers the one customer.
    const own = await t.app.inject({ method: 'GET', url: `/agent/v1/proposals/${proposal.id}`, headers: agent });
    expect(own.json().data).toMatchObject({ status: 'executed', result: { body: { data: { Id: record.Id } } } });
    const retry = await createCustomer('Lost Answer Ltd', 'qbo-held-2');
    expect(retry.json().data.Id).toBe(record.Id);
    expect(fake.count('Customer')).toBe(before + 1);
  });

  it('keeps a proposal approved when QBO never answers the create, and runs it once when next read', async () => {
    const before = fake.count('Customer');
    fake.requests.length = 0;
    const held = await createCustomer('Silent Books Inc', 'qbo-held-3');
    const id = held.json().data.id;
    // Every attempt's answer is lost: QBO made the customer, and the adapter gives up not knowing it.
    fake.inject({ kind: 'drop-after' }, (r) => r.method === 'POST' && r.path.endsWith('/customer'), 4);
    const approved = await approve(id);
    expect(approved.statusCode).toBe(200);
    // Not failed: nobody knows yet whether it was written, and the agent must not be told to write it anew.
    expect(approved.json().data).toMatchObject({ status: 'approved', failure: null, result: null });
    expect(fake.count('Customer')).toBe(before + 1);
    const events = async (type: string) =>
      (
        await t.database.db
          .select({ n: count() })
          .from(outboxEvents)
          .where(and(eq(outboxEvents.type, type), sql`${outboxEvents.payload}->>'id' = ${id}`))
      )[0]?.n;
    expect(await events('agent_proposal.failed')).toBe(0);

    // Minutes later the agent reads it: it runs again under the same requestid, and QBO answers the customer it kept.
    await t.database.db
      .update(agentProposals)
      .set({ decidedAt: new Date(Date.now() - 600_000) })
      .where(eq(agentProposals.id, id));
    const read = await t.app.inject({ method: 'GET', url: `/agent/v1/proposals/${id}`, headers: agent });
    expect(read.json().data).toMatchObject({ status: 'executed', result: { status: 201 } });
    expect(read.json().data.result.body.data).toMatchObject({ DisplayName: 'Silent Books Inc' });
    expect(fake.count('Customer')).toBe(before + 1);
    expect(new Set(creates().map((r) => r.query.requestid)).size).toBe(1);
    expect(await events('agent_proposal.executed')).toBe(1);
    expect(await events('agent_proposal.failed')).toBe(0);
  });
});
