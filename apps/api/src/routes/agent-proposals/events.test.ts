import { agentAuditEvents, agentProposals, apiKeys, auditEvents } from '@firm/db';
import { expireDueProposals, verifyAuditChains } from '@firm/gateway';
import { createApiKey } from '@firm/identity';
import { createWebhookWorker, type Envelope } from '@firm/webhooks';
import { type Receiver, startReceiver, verifyDelivery } from '@firm/webhooks/testing';
import { and, asc, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

/** What a subscriber and an auditor see of proposals: every `agent_proposal.*` event, and the hash-chained trail. */

const PROPOSAL_EVENTS = [
  'agent_proposal.created',
  'agent_proposal.approved',
  'agent_proposal.rejected',
  'agent_proposal.executed',
  'agent_proposal.failed',
  'agent_proposal.expired',
];

let t: TestApp;
let receiver: Receiver;
let vendorId: string;
let agent: { authorization: string; id: string };

beforeAll(async () => {
  t = await createTestApp({ config: { WEBHOOKS_ALLOW_INSECURE_LOCALHOST: true } });
  receiver = await startReceiver('/proposals');
  agent = await newAgent();
  const vendor = await t.app.inject({
    method: 'POST',
    url: `/agent/v1/acct/clients/${t.orgId}/entities/Vendor`,
    headers: { ...t.auth, 'idempotency-key': 'vendor' },
    payload: { DisplayName: 'Big Supplies' },
  });
  vendorId = vendor.json().data.Id;
  const policy = await t.app.inject({
    method: 'PATCH',
    url: `/agent/v1/acct/clients/${t.orgId}`,
    headers: t.auth,
    payload: { approvalPolicy: { mode: 'approval', amountOverCents: 1_000_000 } },
  });
  expect(policy.statusCode).toBe(200);
});
afterAll(async () => {
  await receiver?.close();
  await t?.close();
});

async function newAgent() {
  const { key, record } = await createApiKey(t.database.db, { firmId: t.demo.firmId });
  return { authorization: `Bearer ${key}`, id: record.id };
}

/** A bill over the policy's threshold, sent by `as`: held, its proposal's id answered. */
async function propose(amount: number, key: string, as = agent): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: `/agent/v1/acct/clients/${t.orgId}/transactions`,
    headers: { authorization: as.authorization, 'idempotency-key': key },
    payload: {
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
    },
  });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().data.id;
}

const decide = async (id: string, decision: 'approve' | 'reject', note: string) => {
  const res = await t.app.inject({
    method: 'POST',
    url: `/api/v1/agent-proposals/${id}/${decision}`,
    headers: t.auth,
    payload: { note },
  });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data as { status: string; decision: { by: { id: string } } };
};

describe('agent proposal events', () => {
  it('are in the catalogue, subscribable, and each delivered as the flows produce them', async () => {
    const catalogue = await t.app.inject({ method: 'GET', url: '/api/v1/webhooks/event-types', headers: t.auth });
    const types = catalogue.json().data as { type: string; subscribable: boolean }[];
    for (const type of PROPOSAL_EVENTS) {
      expect(
        types.find((e) => e.type === type),
        type,
      ).toMatchObject({ subscribable: true });
    }
    const subscribed = await t.app.inject({
      method: 'POST',
      url: '/api/v1/webhooks',
      headers: t.auth,
      payload: { url: receiver.url, eventTypes: PROPOSAL_EVENTS },
    });
    expect(subscribed.statusCode, subscribed.body).toBe(201);
    const { secret } = subscribed.json().data as { secret: string };

    const executed = await propose(15000, 'ev-executed');
    const approval = await decide(executed, 'approve', 'matches the quote');
    expect(approval.status).toBe('executed');
    const rejected = await propose(16000, 'ev-rejected');
    expect((await decide(rejected, 'reject', 'not this quarter')).status).toBe('rejected');
    // Its agent's key is revoked before the approval: the write cannot run.
    const revokedAgent = await newAgent();
    const failed = await propose(17000, 'ev-failed', revokedAgent);
    await t.database.db.update(apiKeys).set({ revokedAt: new Date() }).where(eq(apiKeys.id, revokedAgent.id));
    expect((await decide(failed, 'approve', 'fine')).status).toBe('failed');
    const expired = await propose(18000, 'ev-expired');
    await t.database.db
      .update(agentProposals)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(agentProposals.id, expired));
    expect(await expireDueProposals(t.database.db)).toBe(1);

    const worker = createWebhookWorker({
      db: t.database.db,
      policy: { allowInsecureLocalhost: true },
      secretKeys: t.app.webhookSecretKeys,
      timeoutMs: 5000,
    });
    await worker.drain();
    await worker.stop();
    const delivered = receiver.received.map((r) => verifyDelivery(secret, r));
    const of = (id: string) =>
      delivered.filter((e: Envelope) => (e.data as { id: string }).id === id).map((e) => e.type);
    expect(of(executed)).toEqual(['agent_proposal.created', 'agent_proposal.approved', 'agent_proposal.executed']);
    expect(of(rejected)).toEqual(['agent_proposal.created', 'agent_proposal.rejected']);
    expect(of(failed)).toEqual(['agent_proposal.created', 'agent_proposal.approved', 'agent_proposal.failed']);
    expect(of(expired)).toEqual(['agent_proposal.created', 'agent_proposal.expired']);
    expect(new Set(delivered.map((e) => e.type))).toEqual(new Set(PROPOSAL_EVENTS));
    expect(delivered).toHaveLength(10);
    const rejection = delivered.find((e) => e.type === 'agent_proposal.rejected');
    expect(rejection?.data).toMatchObject({
      id: rejected,
      status: 'rejected',
      decision: { note: 'not this quarter', by: { kind: 'api_key' } },
    });
    const failure = delivered.find((e) => e.type === 'agent_proposal.failed');
    expect(failure?.data).toMatchObject({ id: failed, failure: { code: 'UNAUTHENTICATED' } });

    // The hash-chained trail links the proposal, its decision and its run: who, when, under which request.
    const chain = await t.database.db
      .select()
      .from(agentAuditEvents)
      .where(and(eq(agentAuditEvents.firmId, t.demo.firmId), eq(agentAuditEvents.entityId, executed)))
      .orderBy(asc(agentAuditEvents.seq));
    const approver = approval.decision.by.id;
    expect(approver).not.toBe(agent.id);
    expect(chain.map((e) => [e.operation, e.entityType, e.actorId])).toEqual([
      ['proposals.create', 'AgentProposal', agent.id],
      ['proposals.approve', 'AgentProposal', approver],
      ['proposals.execute', 'AgentProposal', agent.id],
    ]);
    const [create, approve, execute] = chain;
    expect(create?.createdAt.getTime()).toBeLessThanOrEqual(approve?.createdAt.getTime() ?? 0);
    // The run is the approval's: the same request.
    expect(approve?.requestId).toBe(execute?.requestId);
    // The note is the decision's own record, kept with it in the firm's audit log.
    const decision = await t.database.db
      .select({ actorId: auditEvents.actorId, data: auditEvents.data, at: auditEvents.createdAt })
      .from(auditEvents)
      .where(and(eq(auditEvents.resourceId, executed), eq(auditEvents.action, 'agent_proposal.approved')));
    expect(decision).toEqual([
      { actorId: approver, data: expect.objectContaining({ note: 'matches the quote' }), at: expect.any(Date) },
    ]);

    // ...and in the hash-chained trail itself: the approver's note is hashed with the approval's event.
    expect([create?.note, approve?.note, execute?.note]).toEqual([null, 'matches the quote', null]);

    const verified = await verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId });
    expect(verified).toMatchObject({ ok: true, breaks: [] });

    // A note changed afterwards breaks the chain at that event.
    await t.database.db
      .update(agentAuditEvents)
      .set({ note: 'approved without a quote' })
      .where(eq(agentAuditEvents.id, approve?.id ?? ''));
    const tampered = await verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId });
    expect(tampered.ok).toBe(false);
    expect(JSON.stringify(tampered.breaks)).toContain(String(approve?.seq));
  });
});
