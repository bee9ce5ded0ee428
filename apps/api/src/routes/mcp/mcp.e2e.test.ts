import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, DEMO_PASSWORD, type TestApp } from '../../testing';
import { hiddenFields } from '../oauth/fixtures';

/**
 * An off-the-shelf MCP client (the official SDK's Client, Streamable HTTP transport and OAuth client provider) given
 * nothing but the URL: it discovers the authorization server, registers itself, is sent to authorize; a person signs
 * in and consents on the real pages (driven here over HTTP as a browser would), and the client goes on with its token.
 */

const CALLBACK = 'http://127.0.0.1:9/mcp-callback';

/** The SDK's OAuth client provider, kept in memory as a desktop assistant would keep it on disk. */
class MemoryProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | null = null;
  readonly redirectUrl = CALLBACK;
  readonly clientMetadata: OAuthClientMetadata = {
    client_name: 'Desk Assistant',
    redirect_uris: [CALLBACK],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  };
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** A browser: follows nothing by itself, keeps cookies. */
class Browser {
  private readonly cookies = new Map<string, string>();
  async open(url: string, init: RequestInit = {}): Promise<Response> {
    const res = await fetch(url, {
      ...init,
      redirect: 'manual',
      headers: {
        ...(init.headers as Record<string, string>),
        cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
    });
    for (const line of res.headers.getSetCookie()) {
      const [pair = ''] = line.split(';');
      const eq = pair.indexOf('=');
      this.cookies.set(pair.slice(0, eq).trim(), pair.slice(eq + 1).trim());
    }
    return res;
  }
  submit(url: string, fields: Record<string, string>) {
    return this.open(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }
}

let t: TestApp;
let base: string;

beforeAll(async () => {
  t = await createTestApp();
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const address = t.app.server.address();
  base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
});
afterAll(() => t?.close());

describe('an MCP client with nothing but the URL', () => {
  it('is sent to authorize, signs in and consents on the real pages, then uses tools, resources and prompts', async () => {
    const provider = new MemoryProvider();
    const url = new URL(`${base}/mcp`);
    const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
    await expect(new Client({ name: 'desk-assistant', version: '1.0.0' }).connect(first)).rejects.toThrow(
      /Unauthorized/,
    );

    // The client registered itself and sent the person to our authorization endpoint, for the MCP resource.
    const authorize = provider.authorizationUrl as URL;
    expect(authorize.origin + authorize.pathname).toBe(`${base}/api/oauth/authorize`);
    expect(authorize.searchParams.get('resource')).toBe(`${base}/mcp`);
    expect(authorize.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authorize.searchParams.get('scope')).toContain('acct:transactions:create');

    // The person: sent to sign in, signs in, comes back to the consent page, which names the client and the scopes.
    const browser = new Browser();
    const toLogin = await browser.open(authorize.href);
    expect(toLogin.status).toBe(302);
    const loginUrl = new URL(toLogin.headers.get('location') as string, base);
    expect(loginUrl.pathname).toBe('/login');
    const loginPage = await browser.open(loginUrl.href);
    const signedIn = await browser.submit(`${base}/login`, {
      ...hiddenFields(await loginPage.text()),
      email: 'owner@demo-firm.test',
      password: DEMO_PASSWORD,
    });
    expect(signedIn.status).toBe(303);
    const consent = await browser.open(new URL(signedIn.headers.get('location') as string, base).href);
    expect(consent.status).toBe(200);
    const page = await consent.text();
    expect(page).toContain('Desk Assistant');
    expect(page).toContain('Agent gateway: create transactions in clients');
    const decided = await browser.submit(`${base}/api/oauth/authorize`, {
      ...hiddenFields(page),
      decision: 'approve',
    });
    expect(decided.status).toBe(303);
    const callback = new URL(decided.headers.get('location') as string);
    expect(callback.origin + callback.pathname).toBe(CALLBACK);
    await first.finishAuth(callback.searchParams.get('code') as string);
    expect(provider.saved?.access_token).toMatch(/^mcp_at_/);

    const client = new Client({ name: 'desk-assistant', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
    try {
      const { tools } = await client.listTools();
      const byName = new Map(tools.map((tool) => [tool.name, tool]));
      expect(byName.get('health_scan')?.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
      expect(byName.get('delete_transaction')?.annotations).toMatchObject({
        readOnlyHint: false,
        destructiveHint: true,
      });
      expect(byName.get('create_transaction')?.inputSchema.required).toEqual(
        expect.arrayContaining(['clientId', 'idempotencyKey', 'body']),
      );
      expect(Object.keys(byName.get('create_transaction')?.inputSchema.properties ?? {})).toContain('dryRun');
      expect(Object.keys(byName.get('post_journal_entry')?.inputSchema.properties ?? {})).toEqual(
        expect.arrayContaining(['clientId', 'idempotencyKey', 'dryRun', 'body']),
      );
      const { resources } = await client.listResources();
      expect(resources.map((r) => r.uri)).toContain('skill://client-health-scan');
      const read = await client.readResource({ uri: 'skill://client-health-scan' });
      expect(JSON.parse((read.contents[0] as { text: string }).text)).toMatchObject({ id: 'client-health-scan' });
      const { prompts } = await client.listPrompts();
      expect(prompts.map((p) => p.name)).toContain('client-health-scan');
      const prompt = await client.getPrompt({ name: 'client-health-scan', arguments: {} });
      expect((prompt.messages[0]?.content as { text: string }).text).toContain('/agent/v1/skills/client-health-scan');

      const scan = await client.callTool({ name: 'health_scan', arguments: {} });
      expect(scan.isError).toBeFalsy();
      expect((scan.structuredContent as { data: { clients: number } }).data.clients).toBeGreaterThan(0);

      const clients = await client.callTool({ name: 'list_clients', arguments: {} });
      const clientId = t.orgId;
      expect((clients.structuredContent as { data: { id: string }[] }).data.map((c) => c.id)).toContain(clientId);
      const purchase = {
        entityType: 'purchase',
        payload: {
          PaymentType: 'Cash',
          AccountRef: { value: t.account('1000') },
          TxnDate: '2026-11-02',
          Line: [
            {
              Amount: 42.5,
              DetailType: 'AccountBasedExpenseLineDetail',
              AccountBasedExpenseLineDetail: { AccountRef: { value: t.account('6100') } },
            },
          ],
        },
      };
      const count = async () => {
        const listed = await client.callTool({
          name: 'list_transactions',
          arguments: { clientId, entityType: 'purchase', maxResults: 1000 },
        });
        return JSON.stringify(listed.structuredContent).length;
      };
      const before = await count();
      const dry = await client.callTool({
        name: 'create_transaction',
        arguments: { clientId, idempotencyKey: randomUUID(), dryRun: true, body: purchase },
      });
      expect(dry.isError, JSON.stringify(dry.content)).toBeFalsy();
      expect(dry.structuredContent).toMatchObject({ data: { dryRun: true } });
      expect(await count()).toBe(before);
      const created = await client.callTool({
        name: 'create_transaction',
        arguments: { clientId, idempotencyKey: randomUUID(), body: purchase },
      });
      expect(created.isError, JSON.stringify(created.content)).toBeFalsy();
      const record = (created.structuredContent as { data: { data: { Id: string } } }).data.data;

      const trail = await client.callTool({ name: 'audit_events', arguments: { clientId, limit: 10 } });
      const events = (trail.structuredContent as { data: Record<string, unknown>[] }).data.filter(
        (e) => e.operation === 'transactions.create',
      );
      expect(events[0]).toMatchObject({
        operation: 'transactions.create',
        outcome: 'succeeded',
        actor: { kind: 'oauth_token' },
        dryRun: false,
      });
      expect(events[1]).toMatchObject({ operation: 'transactions.create', dryRun: true });
      expect(JSON.stringify(events[0])).toContain(record.Id);
    } finally {
      await client.close();
    }
  });
});
