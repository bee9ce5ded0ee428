import { existsSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createApiKey } from '@firm/identity';
import { DEMO_OWNER_EMAIL } from '@firm/demo';
import { verifyAuditChains } from '@firm/gateway';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { bearer, connect, registerClient, signIn } from '../oauth/fixtures';
import { AGENT_SCOPES, CHROMIUM, CHROMIUM_ARGS, decideOnPage, HOLD_OVER_10K, signInThrough } from './fixtures';

/**
 * The acceptance of agent write approvals, end to end: an agent on the official MCP SDK client writes a bill the
 * client's policy holds, a person approves it on the approvers' page in Chromium, and the agent's retry gets the bill.
 */

const hasChromium = existsSync(CHROMIUM);
if (!hasChromium) console.warn(`approvals.e2e.test.ts: SKIPPED, ${CHROMIUM} is not installed`);

describe.runIf(process.env.CI === 'true')('the browser on CI', () => {
  it(`is installed at ${CHROMIUM}`, () => {
    expect(hasChromium).toBe(true);
  });
});

type Json = Record<string, unknown>;

/**
 * The JSON a tool answered, whatever its wrapping: `structuredContent`, else the text of its first content item; the
 * proposal or record under `data` when it is there.
 */
function answerOf(answer: unknown): Json {
  const result = answer as { structuredContent?: Json; content?: unknown };
  let json = result.structuredContent;
  if (!json) {
    const text = (result.content as { type: string; text?: string }[] | undefined)?.[0]?.text ?? '{}';
    json = JSON.parse(text) as Json;
  }
  const data = json.data;
  return data && typeof data === 'object' && !Array.isArray(data) ? (data as Json) : json;
}

describe.skipIf(!hasChromium)('an agent write held for approval, from the MCP client to the bill', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let page: Page;
  let agent: Client;
  let wholeSiteToken: string;
  let mcpToken: string;
  let vendorId: string;
  const clientPath = () => `/agent/v1/acct/clients/${t.orgId}`;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;

    // The owner's policy for this client: agents' writes over 10,000.00 wait for a person.
    const policy = await t.app.inject({
      method: 'PATCH',
      url: clientPath(),
      headers: t.auth,
      payload: { approvalPolicy: HOLD_OVER_10K },
    });
    expect(policy.statusCode, policy.body).toBe(200);

    // The agent: an OAuth app the owner connected, with a token for the MCP endpoint, and one for the whole site.
    const jar = await signIn(t.app, DEMO_OWNER_EMAIL);
    const registered = await registerClient(t.database.db, { isPublic: true, name: 'Desk Assistant' });
    const metadata = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' });
    mcpToken = (await connect(t.app, jar, registered, { scope: AGENT_SCOPES, resource: metadata.json().resource }))
      .access_token;
    wholeSiteToken = (await connect(t.app, jar, registered, { scope: `${AGENT_SCOPES} entries:read entries:write` }))
      .access_token;
    agent = new Client({ name: 'desk-assistant', version: '1.0.0' });
    await agent.connect(
      new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${mcpToken}` } },
      }),
    );
    const vendor = await agent.callTool({
      name: 'create_entity',
      arguments: { clientId: t.orgId, entity: 'Vendor', idempotencyKey: randomUUID(), body: { DisplayName: 'Acme' } },
    });
    expect(vendor.isError, JSON.stringify(vendor.content)).toBeFalsy();
    vendorId = answerOf(vendor).Id as string;

    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await (await browser.newContext()).newPage();
    await signInThrough(page, `${base}/approvals`);
  }, 120_000);
  afterAll(async () => {
    await agent?.close();
    await browser?.close();
    await t?.close();
  });

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

  const createBill = (amount: number, idempotencyKey: string) =>
    agent.callTool({
      name: 'create_transaction',
      arguments: { clientId: t.orgId, idempotencyKey, body: billOf(amount) },
    });

  /** The client's bills, through the partner API. */
  const bills = async (): Promise<string[]> => {
    const res = await t.app.inject({ method: 'GET', url: '/api/v1/bills?limit=200', headers: t.orgHeaders });
    expect(res.statusCode, res.body).toBe(200);
    return (res.json().data as { id: string }[]).map((b) => b.id);
  };

  const proposal = async (id: string) =>
    (await t.app.inject({ method: 'GET', url: `/api/v1/agent-proposals/${id}`, headers: t.auth })).json().data;

  const approveOnPage = async (id: string) => {
    await page.goto(`${base}/approvals/${id}`);
    await decideOnPage(page, 'Approve', 'Approved in the end-to-end test');
  };

  it('holds a bill of 15,000.00, runs it once when approved on the page, and replays it to the agent', async () => {
    const key = randomUUID();
    const before = await bills();
    const held = await createBill(15000, key);
    expect(held.isError, JSON.stringify(held.content)).toBeFalsy();
    const pending = answerOf(held);
    expect(pending.status).toBe('pending');
    expect(pending.id).toEqual(expect.any(String));
    const id = pending.id as string;
    expect(await bills()).toEqual(before);

    await approveOnPage(id);
    expect(page.url()).toBe(`${base}/approvals/${id}?done=executed`);
    const executed = await proposal(id);
    expect(executed).toMatchObject({ status: 'executed', decision: { by: { kind: 'session' } } });
    const billId = executed.result.body.data.transactionId as string;
    const after = await bills();
    expect(after.filter((b) => !before.includes(b))).toEqual([billId]);

    const retry = await createBill(15000, key);
    expect(retry.isError, JSON.stringify(retry.content)).toBeFalsy();
    const replayed = answerOf(retry);
    expect(replayed.status).not.toBe('pending');
    expect(replayed.transactionId).toBe(billId);
    expect(await bills()).toEqual(after);

    const trail = await t.app.inject({
      method: 'GET',
      url: `/agent/v1/audit-events?clientId=${t.orgId}&limit=200`,
      headers: t.auth,
    });
    const operations = (trail.json().data as { operation: string; entityId: string | null }[])
      .filter((e) => e.entityId === id && e.operation.startsWith('proposals.') && e.operation !== 'proposals.read')
      .map((e) => e.operation);
    expect(operations.sort()).toEqual(['proposals.approve', 'proposals.create', 'proposals.execute']);
    const verified = await verifyAuditChains(t.database.db, t.app.auditTrail, { firmId: t.demo.firmId });
    expect(verified).toMatchObject({ ok: true, breaks: [] });
  });

  it("refuses the agent's own tokens at the approval route, deciding nothing", async () => {
    const held = answerOf(await createBill(11000, randomUUID()));
    const approve = (token: string) =>
      fetch(`${base}/api/v1/agent-proposals/${String(held.id)}/approve`, {
        method: 'POST',
        headers: { ...bearer(token), 'content-type': 'application/json' },
        body: JSON.stringify({ note: 'I approve myself' }),
      });
    const res = await approve(wholeSiteToken);
    expect(res.status).toBe(403);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe('FORBIDDEN');
    // The token it proposed with is bound to the MCP endpoint (RFC 8707), so it is no credential here at all.
    expect((await approve(mcpToken)).status).toBe(401);
    expect((await proposal(held.id as string)).status).toBe('pending');
  });

  it('fails an update whose record changed before approval, writing nothing', async () => {
    const small = answerOf(await createBill(3000, randomUUID()));
    const billId = small.transactionId as string;
    const syncToken = (small.data as Json).SyncToken as string;
    const update = (amount: number) =>
      agent.callTool({
        name: 'update_transaction',
        arguments: {
          clientId: t.orgId,
          transactionId: billId,
          idempotencyKey: randomUUID(),
          body: { entityType: 'bill', payload: { ...billOf(amount).payload, SyncToken: syncToken } },
        },
      });
    const held = answerOf(await update(25000));
    expect(held.status).toBe('pending');
    const changed = await update(3500);
    expect(changed.isError, JSON.stringify(changed.content)).toBeFalsy();

    await approveOnPage(held.id as string);
    expect(page.url()).toBe(`${base}/approvals/${String(held.id)}?done=failed`);
    expect(await page.textContent('main')).toContain('the record changed after the proposal');
    expect(await proposal(held.id as string)).toMatchObject({
      status: 'failed',
      failure: { code: 'STALE_SYNC_TOKEN' },
      result: null,
    });
    const now = await agent.callTool({
      name: 'get_transaction',
      arguments: { clientId: t.orgId, transactionId: billId, entityType: 'bill' },
    });
    expect(answerOf(now)).toMatchObject({ TotalAmt: 3500 });
  });

  it('runs the write once when two people approve at the same moment', async () => {
    const held = answerOf(await createBill(12000, randomUUID()));
    const before = await bills();
    const second = bearer((await createApiKey(t.database.db, { firmId: t.demo.firmId })).key);
    const approve = (headers: { authorization: string }) =>
      t.app.inject({
        method: 'POST',
        url: `/api/v1/agent-proposals/${String(held.id)}/approve`,
        headers,
        payload: {},
      });
    const [a, b] = await Promise.all([approve(t.auth), approve(second)]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 409]);
    expect((await bills()).length).toBe(before.length + 1);
  });
});
