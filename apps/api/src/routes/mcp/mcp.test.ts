import { randomUUID } from 'node:crypto';
import { rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import {
  approveForCode,
  authorizeParams,
  connect,
  type CookieJar,
  pkce,
  registerClient,
  signIn,
  tokenRequest,
} from '../oauth/fixtures';

let t: TestApp;
let jar: CookieJar;
/** The MCP resource as this server names it for inject's origin. */
let resource: string;
let full: string;
let narrow: string;

const READ_AND_WRITE =
  'acct:clients:read acct:transactions:read acct:transactions:create acct:reports:read acct:audit:read entries:write bank:read bank:write';

async function tokenFor(scope: string, extra: Record<string, string> = {}) {
  const registered = await registerClient(t.database.db, { isPublic: true, name: 'Desk Assistant' });
  return (await connect(t.app, jar, registered, { scope, ...extra })).access_token;
}

let rpcId = 0;
const mcp = (token: string | null, method: string, params: object = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      ...(token ? { authorization: `Bearer ${token}` } : {}),
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    },
    payload: { jsonrpc: '2.0', id: ++rpcId, method, params },
  });

interface ToolAnswer {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content: { text: string }[];
}
async function tool(token: string, name: string, args: object): Promise<ToolAnswer> {
  const res = await mcp(token, 'tools/call', { name, arguments: args });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().result as ToolAnswer;
}
const errorOf = (answer: ToolAnswer) => {
  expect(answer.isError).toBe(true);
  return JSON.parse(answer.content[0]?.text ?? '{}').error as { code: string; message: string };
};

const purchase = () => ({
  entityType: 'purchase',
  payload: {
    PaymentType: 'Cash',
    AccountRef: { value: t.account('1000') },
    TxnDate: '2026-11-03',
    Line: [
      {
        Amount: 12,
        DetailType: 'AccountBasedExpenseLineDetail',
        AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6100') } },
      },
    ],
  },
});
const journalEntry = (amount: number) => ({
  txnDate: '2026-11-04',
  memo: 'accrual',
  lines: [
    { accountId: t.account('6300'), postingType: 'debit', amount },
    { accountId: t.account('1000'), postingType: 'credit', amount },
  ],
});
const entryCount = async () =>
  rowsOf<{ n: number }>(
    await t.database.db.execute(sql`select count(*)::int as n from journal_entries where organization_id = ${t.orgId}`),
  )[0]?.n;

beforeAll(async () => {
  t = await createTestApp();
  jar = await signIn(t.app, 'owner@demo-firm.test');
  const metadata = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' });
  resource = metadata.json().resource;
  full = await tokenFor(READ_AND_WRITE, { resource });
  narrow = await tokenFor('acct:clients:read', { resource });
});
afterAll(() => t?.close());

describe('the MCP endpoint', () => {
  it('answers a request without a token 401, naming its protected-resource metadata', async () => {
    const res = await mcp(null, 'tools/list');
    expect(res.statusCode).toBe(401);
    expect(res.headers['www-authenticate']).toBe(
      'Bearer resource_metadata="http://localhost:80/.well-known/oauth-protected-resource/mcp"',
    );
    expect(res.json().error.code).toBe('UNAUTHENTICATED');
    expect(resource).toBe('http://localhost:80/mcp');
    // Whatever the body: no body, or one that is not JSON-RPC.
    for (const payload of [undefined, '{"not":"json-rpc"}']) {
      const bare = await t.app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { 'content-type': 'application/json' },
        ...(payload ? { payload } : {}),
      });
      expect(bare.statusCode).toBe(401);
      expect(bare.headers['www-authenticate']).toContain('oauth-protected-resource/mcp');
    }
    const metadata = await t.app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp' });
    expect(metadata.json()).toMatchObject({ authorization_servers: ['http://localhost:80'] });
    expect(metadata.json().scopes_supported).toContain('acct:transactions:create');
    expect(metadata.json().scopes_supported).not.toContain('connections:write');
  });

  it('refuses a token issued for another resource, and its own tokens elsewhere', async () => {
    const forTheApi = await tokenFor(READ_AND_WRITE);
    const refused = await mcp(forTheApi, 'tools/list');
    expect(refused.statusCode).toBe(401);
    expect(refused.headers['www-authenticate']).toContain('error="invalid_token"');
    expect(refused.json().error.message).toContain('another resource');
    const forAPath = await tokenFor(READ_AND_WRITE, { resource: 'http://localhost:80/agent/v1' });
    expect((await mcp(forAPath, 'tools/list')).statusCode).toBe(401);
    // The API token works on the API; the MCP token does not, on the gateway or the partner API.
    const clients = (token: string) =>
      t.app.inject({ method: 'GET', url: '/agent/v1/acct/clients', headers: { authorization: `Bearer ${token}` } });
    expect((await clients(forTheApi)).statusCode).toBe(200);
    expect((await clients(forAPath)).statusCode).toBe(200);
    const elsewhere = await clients(full);
    expect(elsewhere.statusCode).toBe(401);
    expect(elsewhere.json().error.message).toContain('another resource');
    // Nor can an approval for one resource be exchanged for a token of another.
    expect((await mcp(full, 'tools/list')).statusCode).toBe(200);
  });

  it('refuses a token request naming another resource than the one approved', async () => {
    const { client } = await registerClient(t.database.db, { isPublic: true });
    const exchange = async (tokenResource: string) => {
      const { verifier, challenge } = pkce();
      const params = authorizeParams(client, challenge, { scope: 'acct:clients:read', resource });
      const code = await approveForCode(t.app, jar, params);
      return tokenRequest(t.app, {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        redirect_uri: params.redirect_uri,
        client_id: client.clientId,
        resource: tokenResource,
      });
    };
    const other = await exchange('http://localhost:80/api/v1');
    expect(other.statusCode).toBe(400);
    expect(other.json()).toMatchObject({ error: 'invalid_target' });
    expect((await exchange(resource)).statusCode).toBe(200);
  });

  it('answers a tool call without the scope with the API’s error, as on HTTP', async () => {
    const before = await entryCount();
    const create = await tool(narrow, 'create_transaction', {
      clientId: t.orgId,
      idempotencyKey: randomUUID(),
      body: purchase(),
    });
    expect(errorOf(create).code).toBe('INSUFFICIENT_SCOPE');
    const post = await tool(narrow, 'post_journal_entry', {
      clientId: t.orgId,
      idempotencyKey: randomUUID(),
      body: journalEntry(5),
    });
    expect(errorOf(post)).toMatchObject({
      code: 'INSUFFICIENT_SCOPE',
      message: expect.stringContaining('entries:write'),
    });
    const dry = await tool(narrow, 'post_journal_entry', {
      clientId: t.orgId,
      idempotencyKey: randomUUID(),
      dryRun: true,
      body: journalEntry(5),
    });
    expect(errorOf(dry).code).toBe('INSUFFICIENT_SCOPE');
    expect(await entryCount()).toBe(before);
  });

  it('refuses arguments that fail the tool’s schema, naming them, and writes nothing', async () => {
    const before = await entryCount();
    const missing = await tool(full, 'create_transaction', { clientId: t.orgId, idempotencyKey: randomUUID() });
    expect(errorOf(missing).code).toBe('VALIDATION_ERROR');
    expect(missing.content[0]?.text).toContain('body');
    const wrongType = await tool(full, 'post_journal_entry', {
      clientId: 'not-a-uuid',
      idempotencyKey: randomUUID(),
      body: journalEntry(5),
    });
    expect(errorOf(wrongType).code).toBe('VALIDATION_ERROR');
    expect(wrongType.content[0]?.text).toContain('arguments.clientId');
    const unknown = await tool(full, 'list_clients', { everything: true });
    expect(errorOf(unknown).code).toBe('VALIDATION_ERROR');
    // The route's own checks go further than its schema: an unbalanced entry is refused as on HTTP.
    const unbalanced = await tool(full, 'post_journal_entry', {
      clientId: t.orgId,
      idempotencyKey: randomUUID(),
      body: { ...journalEntry(5), lines: [{ accountId: t.account('6300'), postingType: 'debit', amount: 5 }] },
    });
    expect(errorOf(unbalanced).code).toMatch(/VALIDATION_ERROR|UNBALANCED_ENTRY/);
    expect(await entryCount()).toBe(before);
    const noSuchTool = await mcp(full, 'tools/call', { name: 'drop_tables', arguments: {} });
    expect(noSuchTool.json().error).toMatchObject({ code: -32602 });
  });

  it('refuses write tools on a client open to agents for reading only, and allows its reads', async () => {
    const setAccess = (agentAccess: string) =>
      t.app.inject({
        method: 'PATCH',
        url: `/agent/v1/acct/clients/${t.orgId}`,
        headers: t.auth,
        payload: { agentAccess },
      });
    expect((await setAccess('read')).statusCode).toBe(200);
    try {
      const before = await entryCount();
      const create = await tool(full, 'create_transaction', {
        clientId: t.orgId,
        idempotencyKey: randomUUID(),
        dryRun: true,
        body: purchase(),
      });
      expect(errorOf(create).code).toBe('CLIENT_READ_ONLY');
      for (const dryRun of [true, false]) {
        const post = await tool(full, 'post_journal_entry', {
          clientId: t.orgId,
          idempotencyKey: randomUUID(),
          dryRun,
          body: journalEntry(7),
        });
        expect(errorOf(post).code).toBe('CLIENT_READ_ONLY');
      }
      expect(await entryCount()).toBe(before);
      const read = await tool(full, 'list_bank_transactions', { clientId: t.orgId });
      expect(read.isError).toBeFalsy();
      expect((await setAccess('none')).statusCode).toBe(200);
      expect(errorOf(await tool(full, 'list_bank_transactions', { clientId: t.orgId })).code).toBe('CLIENT_NOT_FOUND');
    } finally {
      await setAccess('read_write');
    }
  });

  it('replays a write for its idempotency key, refuses the key with another body, and audits each call', async () => {
    const key = randomUUID();
    const args = { clientId: t.orgId, idempotencyKey: key, body: journalEntry(9) };
    const dry = await tool(full, 'post_journal_entry', { ...args, dryRun: true });
    expect(dry.structuredContent).toMatchObject({
      dryRun: true,
      wouldCall: { method: 'POST', path: '/api/v1/journal-entries' },
    });
    const before = await entryCount();
    const first = await tool(full, 'post_journal_entry', args);
    expect(first.isError, first.content[0]?.text).toBeFalsy();
    const again = await tool(full, 'post_journal_entry', args);
    expect(again.structuredContent).toEqual(first.structuredContent);
    expect(await entryCount()).toBe((before ?? 0) + 1);
    const other = await tool(full, 'post_journal_entry', { ...args, body: journalEntry(10) });
    expect(errorOf(other).code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await entryCount()).toBe((before ?? 0) + 1);

    const trail = await tool(full, 'audit_events', { clientId: t.orgId, limit: 4 });
    const events = (trail.structuredContent as { data: Record<string, unknown>[] }).data;
    expect(events.map((e) => [e.operation, e.outcome, e.dryRun])).toEqual([
      ['mcp.post_journal_entry', 'refused', false],
      ['mcp.post_journal_entry', 'succeeded', false],
      ['mcp.post_journal_entry', 'succeeded', false],
      ['mcp.post_journal_entry', 'succeeded', true],
    ]);
    expect(events[0]).toMatchObject({ errorCode: 'IDEMPOTENCY_KEY_REUSED', actor: { kind: 'oauth_token' } });
  });

  it('is stateless: a tool call needs no session, and GET answers 405', async () => {
    const res = await mcp(full, 'tools/list');
    expect(res.headers['mcp-session-id']).toBeUndefined();
    const tools = res.json().result.tools as {
      name: string;
      inputSchema: { properties: Record<string, { enum?: string[] }> };
    }[];
    expect(tools.length).toBeGreaterThan(20);
    // The entity tools list what the coverage registry covers for their operation.
    const entities = (name: string) => tools.find((x) => x.name === name)?.inputSchema.properties.entity?.enum ?? [];
    expect(entities('get_entity')).toEqual(expect.arrayContaining(['Customer', 'TaxRate', 'Invoice', 'CompanyInfo']));
    expect(entities('create_entity')).toContain('Customer');
    expect(entities('create_entity')).not.toContain('TaxRate');
    const get = await t.app.inject({ method: 'GET', url: '/mcp', headers: { authorization: `Bearer ${full}` } });
    expect(get.statusCode).toBe(405);
    expect(get.headers.allow).toBe('POST');
    const del = await t.app.inject({ method: 'DELETE', url: '/mcp', headers: { authorization: `Bearer ${full}` } });
    expect(del.statusCode).toBe(405);
  });

  it('records in the audit trail the tool calls whose routes do not record themselves', async () => {
    expect((await tool(full, 'coverage', {})).isError).toBeFalsy();
    const trail = await tool(full, 'audit_events', { limit: 2 });
    const events = (trail.structuredContent as { data: Record<string, unknown>[] }).data;
    expect(events.map((e) => e.operation)).toEqual(['mcp.coverage', expect.any(String)]);
    const limits = await tool(narrow, 'limits', {});
    expect(limits.isError).toBeFalsy();
    const again = (await tool(full, 'audit_events', { limit: 3 })).structuredContent as {
      data: Record<string, unknown>[];
    };
    expect(again.data.map((e) => e.operation)).toEqual(['mcp.limits', 'mcp.audit_events', 'mcp.coverage']);
  });

  it('gives every write tool an idempotency key and a dry run', async () => {
    const tools = (await mcp(full, 'tools/list')).json().result.tools as {
      name: string;
      annotations: { readOnlyHint: boolean };
      inputSchema: { properties: Record<string, unknown> };
    }[];
    const writes = tools.filter((x) => !x.annotations.readOnlyHint);
    expect(writes.length).toBeGreaterThan(10);
    for (const w of writes) {
      expect(Object.keys(w.inputSchema.properties), w.name).toEqual(
        expect.arrayContaining(['idempotencyKey', 'dryRun']),
      );
    }
  });

  it('takes an API key too, with its scopes', async () => {
    const res = await mcp(t.demo.apiKey, 'tools/call', { name: 'list_clients', arguments: {} });
    expect(res.json().result.structuredContent.data.length).toBeGreaterThan(0);
  });
});
