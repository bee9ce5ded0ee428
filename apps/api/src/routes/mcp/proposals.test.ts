import { randomUUID } from 'node:crypto';
import { agentAuditEvents, agentProposals, documents } from '@firm/db';
import { expireDueProposals } from '@firm/gateway';
import { createApiKey } from '@firm/identity';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { and, count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { nextStepOf, type ProposalAnswer } from './next-step';

/**
 * Writes the firm's approval policy holds, through MCP, with the official SDK's client: it checks every
 * structuredContent against the tool's declared outputSchema, as any client may.
 */

let t: TestApp;
let url: URL;
let agent: Client;
let agentKey: string;
let vendorId: string;

const connect = async (key: string) => {
  const client = new Client({ name: 'bookkeeper', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${key}` } } }),
  );
  // The client validates a tool's structuredContent against the outputSchema tools/list gave it.
  await client.listTools();
  return client;
};

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  url = new URL(`http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/mcp`);
  agentKey = (await createApiKey(t.database.db, { firmId: t.demo.firmId })).key;
  agent = await connect(agentKey);
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
  await agent?.close();
  await t?.close();
});

const bill = (amount: number) => ({
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

interface Answer {
  data: ProposalAnswer & Record<string, unknown>;
  next: string;
}

async function write(amount: number, idempotencyKey: string) {
  const res = await agent.callTool({
    name: 'create_transaction',
    arguments: { clientId: t.orgId, idempotencyKey, body: bill(amount) },
  });
  expect(res.isError, JSON.stringify(res.content)).toBeFalsy();
  return res;
}

async function status(proposalId: string, client = agent) {
  const res = await client.callTool({ name: 'proposal_status', arguments: { proposalId } });
  return res;
}

const decide = (id: string, decision: 'approve' | 'reject', note?: string) =>
  t.app.inject({
    method: 'POST',
    url: `/api/v1/agent-proposals/${id}/${decision}`,
    headers: t.auth,
    payload: note === undefined ? {} : { note },
  });

const errorOf = (res: Awaited<ReturnType<Client['callTool']>>) => {
  expect(res.isError).toBe(true);
  return JSON.parse((res.content as { text: string }[])[0]?.text ?? '{}').error as { code: string };
};

describe('MCP writes held for approval', () => {
  let proposalId: string;

  it('lists proposal_status as a read-only tool taking a proposalId', async () => {
    const { tools } = await agent.listTools();
    const tool = tools.find((x) => x.name === 'proposal_status');
    expect(tool?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(tool?.inputSchema).toMatchObject({
      required: ['proposalId'],
      properties: { proposalId: { type: 'string', format: 'uuid' } },
    });
    expect(tool?.description).toContain('proposal');
    // The write tools declare the held write's answer among their outputs.
    const create = tools.find((x) => x.name === 'create_transaction');
    expect(JSON.stringify(create?.outputSchema)).toContain('"next"');
  });

  it('answers a held write with the pending proposal and what happens next, writing nothing', async () => {
    const before = await bills();
    const res = await write(15000, 'mcp-big-bill');
    const answer = res.structuredContent as unknown as Answer;
    expect(answer.data).toMatchObject({
      status: 'pending',
      entity: 'Bill',
      operation: 'create',
      request: { idempotencyKey: 'mcp-big-bill' },
      preview: { syncToken: null },
    });
    proposalId = answer.data.id;
    expect(answer.next).toContain('Nothing was written yet');
    expect(answer.next).toContain(proposalId);
    expect(answer.next).toContain(answer.data.expiresAt);
    expect(answer.next).toContain('proposal_status');
    expect(JSON.parse((res.content as { text: string }[])[0]?.text ?? '{}')).toEqual(answer);
    expect(await bills()).toBe(before);

    // The same call again answers the same proposal.
    const again = (await write(15000, 'mcp-big-bill')).structuredContent as unknown as Answer;
    expect(again.data.id).toBe(proposalId);
  });

  it('audits the held write as held: the write answered 202, and the proposal was made', async () => {
    const events = await t.database.db
      .select({
        operation: agentAuditEvents.operation,
        statusCode: agentAuditEvents.statusCode,
        entityId: agentAuditEvents.entityId,
      })
      .from(agentAuditEvents)
      .where(and(eq(agentAuditEvents.firmId, t.demo.firmId), eq(agentAuditEvents.organizationId, t.orgId)));
    const writes = events.filter((e) => e.operation === 'transactions.create');
    expect(writes.map((e) => e.statusCode)).toEqual([202, 202]);
    expect(events.filter((e) => e.operation === 'proposals.create')).toEqual([
      { operation: 'proposals.create', statusCode: 202, entityId: proposalId },
    ]);
  });

  it("reads the agent's own proposal with proposal_status; another agent's is not found", async () => {
    const res = await status(proposalId);
    expect(res.isError).toBeFalsy();
    const answer = res.structuredContent as unknown as Answer;
    expect(answer.data).toMatchObject({ id: proposalId, status: 'pending', decision: null });
    expect(answer.next).toContain('waits for a person');

    const other = await connect((await createApiKey(t.database.db, { firmId: t.demo.firmId })).key);
    try {
      expect(errorOf(await status(proposalId, other)).code).toBe('NOT_FOUND');
    } finally {
      await other.close();
    }
    expect(errorOf(await status(randomUUID())).code).toBe('NOT_FOUND');
    expect(errorOf(await status('not-a-uuid')).code).toBe('VALIDATION_ERROR');
    // The route records the read in the audit trail itself, once; the tool adds no event of its own.
    const reads = await t.database.db
      .select({ operation: agentAuditEvents.operation, statusCode: agentAuditEvents.statusCode })
      .from(agentAuditEvents)
      .where(and(eq(agentAuditEvents.firmId, t.demo.firmId), eq(agentAuditEvents.entityId, proposalId)));
    expect(reads.filter((e) => e.operation.endsWith('proposal_status'))).toEqual([]);
    expect(reads.filter((e) => e.operation === 'proposals.read').map((e) => e.statusCode)).toEqual([200, 404]);
  });

  it('once approved and executed, says so; the same write again returns the written record', async () => {
    const before = await bills();
    expect((await decide(proposalId, 'approve', 'checked')).statusCode).toBe(200);
    const answer = (await status(proposalId)).structuredContent as unknown as Answer;
    expect(answer.data).toMatchObject({ status: 'executed', decision: { note: 'checked' }, result: { status: 201 } });
    expect(answer.next).toContain('mcp-big-bill');
    const written = (answer.data.result as unknown as { body: { data: { transactionId: string } } }).body.data
      .transactionId;

    const retried = await write(15000, 'mcp-big-bill');
    expect((retried.structuredContent as { data: { transactionId: string } }).data.transactionId).toBe(written);
    expect(retried.structuredContent).not.toHaveProperty('next');
    expect(await bills()).toBe((before ?? 0) + 1);
  });

  it("tells a rejected write's note, and an expired one's new key", async () => {
    const rejected = (await write(16000, 'mcp-rejected')).structuredContent as unknown as Answer;
    expect((await decide(rejected.data.id, 'reject', 'not this quarter')).statusCode).toBe(200);
    const afterReject = (await status(rejected.data.id)).structuredContent as unknown as Answer;
    expect(afterReject.data.status).toBe('rejected');
    expect(afterReject.next).toContain('not this quarter');

    const held = (await write(17000, 'mcp-expiring')).structuredContent as unknown as Answer;
    await t.database.db
      .update(agentProposals)
      .set({ expiresAt: new Date(Date.now() - 1000) })
      .where(eq(agentProposals.id, held.data.id));
    expect(await expireDueProposals(t.database.db)).toBe(1);
    const expired = (await status(held.data.id)).structuredContent as unknown as Answer;
    expect(expired.data.status).toBe('expired');
    expect(expired.next).toContain('new idempotencyKey');
    // The write tool, sent the same key again, answers the expired proposal and the same advice.
    const replayed = (await write(17000, 'mcp-expiring')).structuredContent as unknown as Answer;
    expect(replayed.data.status).toBe('expired');
    expect(replayed.next).toContain('new idempotencyKey');
  });
});

describe('the next step of a proposal', () => {
  const base: ProposalAnswer = {
    id: '0b9a5f55-2f0e-4a34-a0a8-8f0f5e3f1e11',
    status: 'pending',
    expiresAt: '2026-12-01T00:00:00.000Z',
    request: { idempotencyKey: 'k1' },
    decision: null,
    result: null,
    failure: null,
  };

  it('says, for each status, whether anything was written and what to do', () => {
    expect(nextStepOf(base, 'write')).toBe(
      'Nothing was written yet: a person at the firm must approve this write (proposal ' +
        '0b9a5f55-2f0e-4a34-a0a8-8f0f5e3f1e11, expires 2026-12-01T00:00:00.000Z). Check it with the proposal_status ' +
        'tool { "proposalId": "0b9a5f55-2f0e-4a34-a0a8-8f0f5e3f1e11" }; once approved and executed, calling this tool ' +
        'again with the same idempotencyKey (k1) returns the written record.',
    );
    expect(nextStepOf({ ...base, status: 'approved' }, 'status')).toContain('running');
    const failed = nextStepOf(
      { ...base, status: 'failed', failure: { code: 'STALE_SYNC_TOKEN', reason: 'the record changed' } },
      'status',
    );
    expect(failed).toContain('STALE_SYNC_TOKEN: the record changed');
    expect(failed).toContain('nothing was written');
    expect(failed).toContain('new idempotencyKey');
    expect(nextStepOf({ ...base, status: 'rejected', decision: { note: null } }, 'status')).toContain('(no note)');
    expect(nextStepOf({ ...base, status: 'executed', result: { status: 201 } }, 'status')).toContain(
      'calling the write tool again with the same idempotencyKey (k1)',
    );
  });
});
