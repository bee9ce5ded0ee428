import {
  agentAuditEvents,
  agentProposals,
  apiKeys,
  auditEvents,
  documents,
  organizations,
  outboxEvents,
} from '@firm/db';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { expireDueProposals, verifyAuditChains } from '@firm/gateway';
import { createApiKey } from '@firm/identity';
import { and, count, eq, like, ne, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';
import { bearer, connect, registerClient, signIn } from '../oauth/fixtures';

let t: TestApp;
let agent: { authorization: string };
let manager: { authorization: string };
let other: Awaited<ReturnType<typeof createOtherFirm>>;
let vendorId: string;
let base: string;
let agentClientId: string;

beforeAll(async () => {
  t = await createTestApp();
  base = `/agent/v1/acct/clients/${t.orgId}`;
  const jar = await signIn(t.app, DEMO_OWNER_EMAIL);
  const registered = await registerClient(t.database.db, {
    isPublic: true,
    name: 'Bookkeeping Agent',
    redirectUris: ['http://127.0.0.1:33418/callback'],
  });
  const tokens = await connect(t.app, jar, registered, {
    scope: [
      'acct:clients:read',
      'acct:clients:write',
      'acct:entities:read',
      'acct:entities:write',
      'acct:transactions:read',
      'acct:transactions:create',
      'acct:transactions:update',
      // an agent that may also write the books directly: still never an approver
      'entries:read',
      'entries:write',
    ].join(' '),
  });
  agent = bearer(tokens.access_token);
  agentClientId = registered.client.id;
  manager = bearer((await createApiKey(t.database.db, { firmId: t.demo.firmId })).key);
  other = await createOtherFirm(t.database.db);
  const vendor = await agentCall('POST', `${base}/entities/Vendor`, { DisplayName: 'Big Supplies' }, 'vendor');
  expect(vendor.statusCode).toBe(201);
  vendorId = vendor.json().data.Id;
});
afterAll(() => t.close());

function agentCall(
  method: 'GET' | 'POST' | 'PATCH',
  url: string,
  payload?: object,
  key?: string,
  headers: Record<string, string> = {},
) {
  return t.app.inject({
    method,
    url,
    headers: { ...agent, ...(key ? { 'idempotency-key': key } : {}), ...headers },
    ...(payload ? { payload } : {}),
  });
}

const billOf = (amount: number) => ({
  entityType: 'bill',
  payload: {
    VendorRef: { value: vendorId },
    TxnDate: '2026-04-02',
    Line: [
      {
        Amount: amount,
        DetailType: 'AccountBasedExpenseLineDetail',
        AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6300') } },
      },
    ],
  },
});

const bills = async () =>
  (
    await t.database.db
      .select({ n: count() })
      .from(documents)
      .where(and(eq(documents.organizationId, t.orgId), eq(documents.type, 'bill')))
  )[0]?.n;

const decide = (id: string, decision: 'approve' | 'reject', headers = t.auth, note?: string) =>
  t.app.inject({
    method: 'POST',
    url: `/api/v1/agent-proposals/${id}/${decision}`,
    headers,
    payload: note === undefined ? {} : { note },
  });

const setClientPolicy = (policy: object | null, headers = t.auth) =>
  t.app.inject({ method: 'PATCH', url: base, headers, payload: { approvalPolicy: policy } });

describe('approval policies', () => {
  it('ships auto: the firm default is none, and agent writes run', async () => {
    const res = await t.app.inject({ method: 'GET', url: '/agent/v1/approval-policy', headers: t.auth });
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toEqual({ policy: { mode: 'auto' }, source: 'default', firm: null });
    const client = await t.app.inject({ method: 'GET', url: base, headers: t.auth });
    expect(client.json().data.approvalPolicy).toEqual({ policy: { mode: 'auto' }, source: 'default' });
  });

  it('refuses a bad policy with 400 VALIDATION_ERROR, storing nothing', async () => {
    const bad = [
      { mode: 'approval', entityTypes: ['Spaceship'] },
      { mode: 'approval', operations: ['launch'] },
      { mode: 'approval', amountOverCents: -1 },
      { mode: 'approval', amountOverCents: 1.5 },
      { mode: 'approval', datesBefore: 'yesterday' },
      { mode: 'sometimes' },
      { mode: 'approval', other: true },
    ];
    for (const policy of bad) {
      const firm = await t.app.inject({
        method: 'PATCH',
        url: '/agent/v1/approval-policy',
        headers: t.auth,
        payload: policy,
      });
      expect({ policy, status: firm.statusCode, code: firm.json().error.code }).toEqual({
        policy,
        status: 400,
        code: 'VALIDATION_ERROR',
      });
      const client = await setClientPolicy(policy);
      expect({ policy, status: client.statusCode }).toEqual({ policy, status: 400 });
    }
    const res = await t.app.inject({ method: 'GET', url: base, headers: t.auth });
    expect(res.json().data.approvalPolicy.source).toBe('default');
  });

  it("cannot be changed by an agent's token: 403 FORBIDDEN", async () => {
    const firm = await agentCall('PATCH', '/agent/v1/approval-policy', { mode: 'auto' });
    expect(firm.statusCode).toBe(403);
    expect(firm.json().error.code).toBe('FORBIDDEN');
    const client = await setClientPolicy({ mode: 'auto' }, agent);
    expect(client.statusCode).toBe(403);
  });

  it("sets the firm default and a client's own, the client's in force; null goes back to the firm's", async () => {
    const firm = await t.app.inject({
      method: 'PATCH',
      url: '/agent/v1/approval-policy',
      headers: t.auth,
      payload: { mode: 'approval', entityTypes: ['invoice'], operations: ['delete'] },
    });
    expect(firm.statusCode).toBe(200);
    expect(firm.json().data).toMatchObject({
      policy: { mode: 'approval', entityTypes: ['Invoice'], operations: ['delete'] },
      source: 'firm',
    });
    const own = await setClientPolicy({ mode: 'approval', amountOverCents: 1_000_000 });
    expect(own.statusCode).toBe(200);
    expect(own.json().data).toMatchObject({
      id: t.orgId,
      agentAccess: 'read_write',
      approvalPolicy: { policy: { mode: 'approval', amountOverCents: 1_000_000 }, source: 'client' },
    });
    const cleared = await setClientPolicy(null);
    expect(cleared.json().data.approvalPolicy.source).toBe('firm');
    await t.app.inject({
      method: 'PATCH',
      url: '/agent/v1/approval-policy',
      headers: t.auth,
      payload: { mode: 'auto' },
    });
  });
});

describe('a write held for approval', () => {
  let proposalId: string;

  beforeAll(async () => {
    expect((await setClientPolicy({ mode: 'approval', amountOverCents: 1_000_000 })).statusCode).toBe(200);
  });

  it('runs a write under the threshold at once', async () => {
    const before = await bills();
    const res = await agentCall('POST', `${base}/transactions`, billOf(5000), 'small-bill');
    expect(res.statusCode).toBe(201);
    expect(await bills()).toBe((before ?? 0) + 1);
  });

  it('answers a bill of 15,000.00 with 202 and a pending proposal, writing no bill', async () => {
    const before = await bills();
    const res = await agentCall('POST', `${base}/transactions`, billOf(15000), 'big-bill', {
      'x-agent-reason': 'Quarterly equipment invoice from Big Supplies',
    });
    expect(res.statusCode).toBe(202);
    const proposal = res.json().data;
    expect(proposal).toMatchObject({
      status: 'pending',
      clientId: t.orgId,
      entity: 'Bill',
      operation: 'create',
      reason: 'Quarterly equipment invoice from Big Supplies',
      rules: ['the amount 15,000.00 is over 10,000.00'],
      request: { method: 'POST', idempotencyKey: 'big-bill', body: billOf(15000) },
      preview: { syncToken: null, period: { status: 'open', closedThrough: null } },
      decision: null,
      result: null,
      links: { self: `/agent/v1/proposals/${proposal.id}` },
    });
    expect(proposal.preview.journal.reduce((s: number, l: { debit: number }) => s + l.debit, 0)).toBe(15000);
    expect(Date.parse(proposal.expiresAt) - Date.parse(proposal.createdAt)).toBe(168 * 3_600_000);
    expect(await bills()).toBe(before);
    proposalId = proposal.id;

    const again = await agentCall('POST', `${base}/transactions`, billOf(15000), 'big-bill');
    expect(again.statusCode).toBe(202);
    expect(again.json().data.id).toBe(proposalId);
    const reused = await agentCall('POST', `${base}/transactions`, billOf(16000), 'big-bill');
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await t.database.db.select({ n: count() }).from(agentProposals)).toEqual([{ n: 1 }]);
  });

  it('lets the agent read its own proposal, and nobody else through the agent route', async () => {
    const own = await agentCall('GET', `/agent/v1/proposals/${proposalId}`);
    expect(own.statusCode).toBe(200);
    expect(own.json().data).toMatchObject({ id: proposalId, status: 'pending' });
    const others = await t.app.inject({ method: 'GET', url: `/agent/v1/proposals/${proposalId}`, headers: manager });
    expect(others.statusCode).toBe(404);
    const foreign = await t.app.inject({
      method: 'GET',
      url: `/agent/v1/proposals/${proposalId}`,
      headers: { authorization: other.authorization },
    });
    expect(foreign.statusCode).toBe(404);
  });

  it('lists proposals for approvers, filtered, and hides them from other firms', async () => {
    const list = await t.app.inject({
      method: 'GET',
      url: `/api/v1/agent-proposals?status=pending&clientId=${t.orgId}`,
      headers: t.auth,
    });
    expect(list.statusCode).toBe(200);
    expect(list.json().data.map((p: { id: string }) => p.id)).toEqual([proposalId]);
    const none = await t.app.inject({ method: 'GET', url: '/api/v1/agent-proposals?status=executed', headers: t.auth });
    expect(none.json().data).toEqual([]);
    const foreignList = await t.app.inject({
      method: 'GET',
      url: '/api/v1/agent-proposals',
      headers: { authorization: other.authorization },
    });
    expect(foreignList.json().data).toEqual([]);
    for (const url of [`/api/v1/agent-proposals/${proposalId}`, '/api/v1/agent-proposals/not-an-id']) {
      const res = await t.app.inject({ method: 'GET', url, headers: { authorization: other.authorization } });
      expect(res.statusCode).toBe(404);
    }
    const foreignApprove = await decide(proposalId, 'approve', { authorization: other.authorization });
    expect(foreignApprove.statusCode).toBe(404);
  });

  it("refuses approval by the agent's own token (403 FORBIDDEN), writing nothing", async () => {
    const before = await bills();
    const res = await decide(proposalId, 'approve', agent);
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('FORBIDDEN');
    expect(await bills()).toBe(before);
  });

  it('runs the bill exactly once on approval; the retry with the same key answers the executed result', async () => {
    const before = await bills();
    const res = await decide(proposalId, 'approve', t.auth, 'checked against the quote');
    expect(res.statusCode).toBe(200);
    const proposal = res.json().data;
    expect(proposal).toMatchObject({
      status: 'executed',
      decision: { note: 'checked against the quote', by: { kind: 'api_key' } },
      result: { status: 201 },
      failure: null,
    });
    expect(await bills()).toBe((before ?? 0) + 1);
    const billId = proposal.result.body.data.transactionId;
    expect(proposal.result.body.data.data).toMatchObject({ TotalAmt: 15000 });

    const retry = await agentCall('POST', `${base}/transactions`, billOf(15000), 'big-bill');
    expect(retry.statusCode).toBe(201);
    expect(retry.json().data.transactionId).toBe(billId);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await bills()).toBe((before ?? 0) + 1);

    for (const decision of ['approve', 'reject'] as const) {
      const late = await decide(proposalId, decision);
      expect(late.statusCode).toBe(409);
      expect(late.json().error.code).toBe('INVALID_STATE');
    }
    const own = await agentCall('GET', `/agent/v1/proposals/${proposalId}`);
    expect(own.json().data).toMatchObject({ status: 'executed', result: { status: 201 } });
  });

  it('records proposal, approval and execution in the audit trail and the outbox, and the chain verifies', async () => {
    const operations = (
      await t.database.db
        .select({ operation: agentAuditEvents.operation })
        .from(agentAuditEvents)
        .where(and(eq(agentAuditEvents.entityId, proposalId), like(agentAuditEvents.operation, 'proposals.%')))
    )
      .map((e) => e.operation)
      .filter((o) => o !== 'proposals.read');
    expect(operations.sort()).toEqual(['proposals.approve', 'proposals.create', 'proposals.execute']);
    const types = (
      await t.database.db
        .select({ type: outboxEvents.type })
        .from(outboxEvents)
        .where(like(outboxEvents.type, 'agent_proposal.%'))
    ).map((e) => e.type);
    expect(types.sort()).toEqual(['agent_proposal.approved', 'agent_proposal.created', 'agent_proposal.executed']);
    const verified = await verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId });
    expect(verified).toMatchObject({ ok: true, breaks: [] });
  });

  it('fails a proposal whose record changed before approval, writing nothing', async () => {
    const created = await agentCall('POST', `${base}/transactions`, billOf(3000), 'bill-to-change');
    expect(created.statusCode).toBe(201);
    const bill = created.json().data;
    const update = (amount: number, syncToken: string, key: string) =>
      agentCall(
        'PATCH',
        `${base}/transactions/${bill.transactionId}`,
        { entityType: 'bill', payload: { ...billOf(amount).payload, SyncToken: syncToken } },
        key,
      );
    const held = await update(25000, bill.data.SyncToken, 'raise-bill');
    expect(held.statusCode).toBe(202);
    expect(held.json().data.preview.syncToken).toBe(bill.data.SyncToken);
    const changed = await update(3500, bill.data.SyncToken, 'small-change');
    expect(changed.statusCode).toBe(200);

    const res = await decide(held.json().data.id, 'approve');
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'failed', failure: { code: 'STALE_SYNC_TOKEN' }, result: null });
    const now = await agentCall('GET', `${base}/transactions/${bill.transactionId}?entityType=bill`);
    expect(now.json().data).toMatchObject({ TotalAmt: 3500, SyncToken: changed.json().data.data.SyncToken });
  });

  it('runs once when two people approve at the same moment', async () => {
    const held = await agentCall('POST', `${base}/transactions`, billOf(12000), 'race-bill');
    expect(held.statusCode).toBe(202);
    const before = await bills();
    const [a, b] = await Promise.all([
      decide(held.json().data.id, 'approve', t.auth),
      decide(held.json().data.id, 'approve', manager),
    ]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
    expect(await bills()).toBe((before ?? 0) + 1);
  });

  it('rejects: nothing is written, and the agent sees the note', async () => {
    const held = await agentCall('POST', `${base}/transactions`, billOf(11000), 'rejected-bill');
    expect(held.statusCode).toBe(202);
    const before = await bills();
    const res = await decide(held.json().data.id, 'reject', manager, 'not ours');
    expect(res.statusCode).toBe(200);
    expect(res.json().data).toMatchObject({ status: 'rejected', decision: { note: 'not ours' } });
    expect(await bills()).toBe(before);
    const again = await agentCall('POST', `${base}/transactions`, billOf(11000), 'rejected-bill');
    expect(again.statusCode).toBe(202);
    expect(again.json().data.status).toBe('rejected');
    expect((await decide(held.json().data.id, 'approve')).statusCode).toBe(409);
  });

  it('answers 404 for an unknown proposal and 400 for a bad note', async () => {
    const unknown = await decide('00000000-0000-4000-8000-000000000000', 'approve');
    expect(unknown.statusCode).toBe(404);
    const held = await agentCall('POST', `${base}/transactions`, billOf(11000), 'bad-note');
    const res = await decide(held.json().data.id, 'approve', t.auth, 'x'.repeat(2001));
    expect(res.statusCode).toBe(400);
    expect((await agentCall('GET', `/agent/v1/proposals/${held.json().data.id}`)).json().data.status).toBe('pending');
  });

  it('holds a write relayed through /request too, and runs it as the relay answers', async () => {
    const held = await agentCall(
      'POST',
      `${base}/request`,
      { method: 'POST', path: 'bill', body: billOf(20000).payload },
      'relayed-bill',
    );
    expect(held.statusCode).toBe(202);
    expect(held.json().data).toMatchObject({ status: 'pending', entity: 'Bill', request: { body: { path: 'bill' } } });
    const before = await bills();
    const res = await decide(held.json().data.id, 'approve');
    expect(res.json().data).toMatchObject({ status: 'executed', result: { status: 200 } });
    expect(res.json().data.result.body.data.Bill).toMatchObject({ TotalAmt: 20000 });
    expect(await bills()).toBe((before ?? 0) + 1);
    const retry = await agentCall(
      'POST',
      `${base}/request`,
      { method: 'POST', path: 'bill', body: billOf(20000).payload },
      'relayed-bill',
    );
    expect(retry.statusCode).toBe(200);
    expect(retry.json().data.Bill.Id).toBe(res.json().data.result.body.data.Bill.Id);
  });

  it('expires a pending proposal past its expiry: 409 INVALID_STATE, and subscribers hear of it', async () => {
    const held = await agentCall('POST', `${base}/transactions`, billOf(13000), 'expiring-bill');
    const id = held.json().data.id;
    await t.database.db
      .update(agentProposals)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(agentProposals.id, id));
    const before = await bills();
    const res = await decide(id, 'approve');
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('INVALID_STATE');
    expect(await bills()).toBe(before);
    expect((await agentCall('GET', `/agent/v1/proposals/${id}`)).json().data.status).toBe('expired');
    const expired = await t.database.db
      .select({ n: count() })
      .from(outboxEvents)
      .where(eq(outboxEvents.type, 'agent_proposal.expired'));
    expect(expired).toEqual([{ n: 1 }]);
  });

  it('expires a due proposal by one run of the expiry job, without any read; a second run changes nothing', async () => {
    expect(
      (await setClientPolicy({ mode: 'approval', amountOverCents: 1_000_000, expiresInHours: 1 })).statusCode,
    ).toBe(200);
    const held = await agentCall('POST', `${base}/transactions`, billOf(12500), 'short-lived-bill');
    expect(held.statusCode).toBe(202);
    const { id, createdAt, expiresAt } = held.json().data;
    expect(Date.parse(expiresAt) - Date.parse(createdAt)).toBe(3_600_000);
    const overAnHourLater = () => new Date(Date.parse(expiresAt) + 1000);
    const expiredEvents = async () => ({
      outbox: await t.database.db
        .select({ type: outboxEvents.type })
        .from(outboxEvents)
        .where(and(eq(outboxEvents.type, 'agent_proposal.expired'), sql`${outboxEvents.payload}->>'id' = ${id}`)),
      audit: await t.database.db
        .select({ action: auditEvents.action, actorKind: auditEvents.actorKind })
        .from(auditEvents)
        .where(eq(auditEvents.resourceId, id)),
    });
    const status = async () =>
      (await t.database.db.select().from(agentProposals).where(eq(agentProposals.id, id)))[0]?.status;

    expect(await expireDueProposals(t.database.db)).toBe(0);
    expect(await status()).toBe('pending');
    expect(await expireDueProposals(t.database.db, { now: overAnHourLater })).toBe(1);
    expect(await status()).toBe('expired');
    const once = await expiredEvents();
    expect(once.outbox).toEqual([{ type: 'agent_proposal.expired' }]);
    expect(once.audit).toEqual(expect.arrayContaining([{ action: 'agent_proposal.expired', actorKind: 'system' }]));

    expect(await expireDueProposals(t.database.db, { now: overAnHourLater })).toBe(0);
    expect(await expiredEvents()).toEqual(once);
    expect(await status()).toBe('expired');
    expect((await setClientPolicy({ mode: 'approval', amountOverCents: 1_000_000 })).statusCode).toBe(200);
  });

  it('is invisible to a key limited to other companies of the firm: 404', async () => {
    const held = await agentCall('POST', `${base}/transactions`, billOf(14000), 'narrowed-bill');
    const [second] = await t.database.db
      .select({ id: organizations.id })
      .from(organizations)
      .where(and(eq(organizations.firmId, t.demo.firmId), ne(organizations.id, t.orgId)));
    const narrowed = bearer(
      (await createApiKey(t.database.db, { firmId: t.demo.firmId, organizationIds: [second?.id as string] })).key,
    );
    const id = held.json().data.id;
    expect(
      (await t.app.inject({ method: 'GET', url: `/api/v1/agent-proposals/${id}`, headers: narrowed })).statusCode,
    ).toBe(404);
    const list = await t.app.inject({ method: 'GET', url: '/api/v1/agent-proposals', headers: narrowed });
    expect(list.json().data).toEqual([]);
    expect((await decide(id, 'approve', narrowed)).statusCode).toBe(404);
    expect((await agentCall('GET', `/agent/v1/proposals/${id}`)).json().data.status).toBe('pending');
  });

  it("lets an agent's own policy win over the client's; an agent cannot set it, an unknown agent is 404", async () => {
    const url = `/agent/v1/approval-policy/agents/${agentClientId}`;
    const put = (payload: object | null, headers = t.auth) =>
      t.app.inject({
        method: 'PUT',
        url,
        headers: { ...headers, 'content-type': 'application/json' },
        payload: JSON.stringify(payload),
      });
    expect((await put({ mode: 'auto' }, agent)).statusCode).toBe(403);
    const unknown = await t.app.inject({
      method: 'PUT',
      url: '/agent/v1/approval-policy/agents/00000000-0000-4000-8000-000000000000',
      headers: t.auth,
      payload: { mode: 'auto' },
    });
    expect(unknown.statusCode).toBe(404);
    expect((await put({ mode: 'approval', amountOverCents: -5 })).statusCode).toBe(400);
    const set = await put({ mode: 'auto' });
    expect(set.statusCode).toBe(200);
    expect(set.json().data).toEqual({ agentId: agentClientId, policy: { mode: 'auto' } });
    const direct = await agentCall('POST', `${base}/transactions`, billOf(30000), 'agent-policy-bill');
    expect(direct.statusCode).toBe(201);
    const removed = await put(null);
    expect(removed.json().data.policy).toBeNull();
    const held = await agentCall('POST', `${base}/transactions`, billOf(30000), 'agent-policy-bill-2');
    expect(held.statusCode).toBe(202);
  });

  it('fails a proposal dated in a period closed after it was made, writing nothing', async () => {
    const held = await agentCall('POST', `${base}/transactions`, billOf(17000), 'closing-bill');
    expect(held.json().data.preview.period).toEqual({ closedThrough: null, status: 'open' });
    await t.database.db
      .update(organizations)
      .set({ booksClosedThrough: '2026-04-30' })
      .where(eq(organizations.id, t.orgId));
    try {
      const before = await bills();
      const res = await decide(held.json().data.id, 'approve');
      expect(res.json().data).toMatchObject({ status: 'failed', failure: { code: 'PERIOD_CLOSED' } });
      expect(await bills()).toBe(before);
    } finally {
      await t.database.db.update(organizations).set({ booksClosedThrough: null }).where(eq(organizations.id, t.orgId));
    }
  });

  it('fails a proposal whose API key was revoked before approval', async () => {
    const { key, record } = await createApiKey(t.database.db, { firmId: t.demo.firmId });
    const id = record.id;
    const held = await t.app.inject({
      method: 'POST',
      url: `${base}/transactions`,
      headers: { ...bearer(key), 'idempotency-key': 'revoked-key-bill' },
      payload: billOf(18000),
    });
    expect(held.statusCode).toBe(202);
    expect(held.json().data.agent).toEqual({ kind: 'api_key', id, clientId: id });
    await t.database.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, id));
    const before = await bills();
    const res = await decide(held.json().data.id, 'approve');
    expect(res.json().data).toMatchObject({ status: 'failed', failure: { code: 'UNAUTHENTICATED' } });
    expect(await bills()).toBe(before);
  });

  it('runs again, once, an approved proposal whose run died, when it is next read', async () => {
    const created = await agentCall('POST', `${base}/transactions`, billOf(2000), 'bill-for-stuck');
    const bill = created.json().data;
    // an update without a key: the proposal's own key makes a second run one write too
    const held = await agentCall('PATCH', `${base}/transactions/${bill.transactionId}`, {
      entityType: 'bill',
      payload: { ...billOf(40000).payload, SyncToken: bill.data.SyncToken },
    });
    expect(held.statusCode).toBe(202);
    const id = held.json().data.id;
    // as if the process stopped between the approval and the write
    await t.database.db
      .update(agentProposals)
      .set({
        status: 'approved',
        decidedByKind: 'api_key',
        decidedById: 'x',
        decidedAt: new Date(Date.now() - 600_000),
      })
      .where(eq(agentProposals.id, id));
    const read = await agentCall('GET', `/agent/v1/proposals/${id}`);
    expect(read.json().data).toMatchObject({ status: 'executed', result: { status: 200 } });
    const now = await agentCall('GET', `${base}/transactions/${bill.transactionId}?entityType=bill`);
    expect(now.json().data).toMatchObject({ TotalAmt: 40000 });
    const again = await agentCall('GET', `/agent/v1/proposals/${id}`);
    expect(again.json().data.status).toBe('executed');
  });
});
