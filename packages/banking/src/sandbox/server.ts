import { createHash, randomUUID } from 'node:crypto';
import { type CryptoKey, exportJWK, generateKeyPair, type JWK, SignJWT } from 'jose';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  decodeSandboxCursor,
  parseSandboxAccessToken,
  sandboxAccessToken,
  type SandboxChange,
  sandboxAccounts,
  sandboxActivity,
  sandboxSyncPage,
} from './activity';

/**
 * A local stand-in for Plaid that speaks Plaid's wire protocol for the endpoints the connector uses
 * (/sandbox/public_token/create, /item/public_token/exchange, /accounts/get, /transactions/sync), so the same
 * connector, through the official `plaid` client, talks to it or to Plaid. State is in memory, per process, but an
 * access token names its item and activity, so an item this process never saw (the server restarted, the demo seed's
 * in-process aggregator made it) is served from its token alone, without a webhook until one is set.
 */
export interface SandboxOptions {
  clientId: string;
  secret: string;
  /** First day of the month of activity every new item gets. */
  start?: string;
  /** More card rows per item, for load tests. */
  extraRows?: number;
  /** Answer this request (1-based count of /transactions/sync calls) with a 500, like a failing upstream. */
  failSyncCall?: (n: number) => boolean;
}

interface Item {
  itemId: string;
  accessToken: string;
  changes: SandboxChange[];
  /** Where the item's webhooks go. */
  webhook: string | null;
}

export interface SandboxAggregatorServer {
  url: string;
  server: Server;
  /** Adds a change to an item's log, as if the bank reported it later. */
  append(itemId: string, change: SandboxChange): void;
  /** Sends the item's webhook, signed as Plaid signs them (ES256 JWT in Plaid-Verification); resolves to its status. */
  fireWebhook(itemId: string, code?: string): Promise<number>;
  /**
   * The Plaid-Verification JWT for these exact bytes: under the current key or another this server made, issued at
   * `issuedAt` (seconds; default now).
   */
  signWebhook(body: string | Buffer, options?: { keyId?: string; issuedAt?: number }): Promise<string>;
  /** The id of the key webhooks are signed with now. */
  webhookKeyId(): string;
  /**
   * Expires the current webhook key (its `expired_at` is now, as Plaid reports a rotated key) and signs with a new
   * one from then on; resolves to the expired key's id.
   */
  rotateWebhookKey(): Promise<string>;
  /** How many requests reached an endpoint (`/webhook_verification_key/get`, `/transactions/sync`...). */
  requestCount(path: string): number;
  close(): Promise<void>;
}

/** A key webhooks are signed with; Plaid serves its public half with `created_at` and `expired_at` (seconds). */
interface WebhookKey {
  privateKey: CryptoKey;
  jwk: JWK;
  createdAt: number;
  expiredAt: number | null;
}

const plaidError = (res: ServerResponse, status: number, type: string, code: string, message: string) =>
  send(res, status, {
    error_type: type,
    error_code: code,
    error_message: message,
    display_message: null,
    request_id: randomUUID(),
  });

function send(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}

export async function startSandboxAggregator(
  options: SandboxOptions,
  port = 0,
  host = '127.0.0.1',
): Promise<SandboxAggregatorServer> {
  const items = new Map<string, Item>();
  const publicTokens = new Map<string, string>();
  let syncCalls = 0;
  const start = options.start ?? '2026-10-01';
  const requests = new Map<string, number>();
  const webhookKeys = new Map<string, WebhookKey>();
  let kid = '';
  const newWebhookKey = async () => {
    const pair = await generateKeyPair('ES256');
    kid = randomUUID();
    webhookKeys.set(kid, {
      privateKey: pair.privateKey,
      jwk: { ...(await exportJWK(pair.publicKey)), kid, alg: 'ES256', use: 'sig' },
      createdAt: Math.floor(Date.now() / 1000),
      expiredAt: null,
    });
  };
  await newWebhookKey();

  const signWebhook = async (body: string | Buffer, options: { keyId?: string; issuedAt?: number } = {}) => {
    const keyId = options.keyId ?? kid;
    const key = webhookKeys.get(keyId);
    if (!key) throw new Error(`no webhook key ${keyId}`);
    return new SignJWT({ request_body_sha256: createHash('sha256').update(body).digest('hex') })
      .setProtectedHeader({ alg: 'ES256', kid: keyId, typ: 'JWT' })
      .setIssuedAt(options.issuedAt ?? Math.floor(Date.now() / 1000))
      .sign(key.privateKey);
  };

  const fireWebhook = async (itemId: string, code = 'SYNC_UPDATES_AVAILABLE'): Promise<number> => {
    const found = items.get(itemId);
    if (!found?.webhook) throw new Error(`item ${itemId} has no webhook`);
    const body = JSON.stringify({
      webhook_type: 'TRANSACTIONS',
      webhook_code: code,
      item_id: itemId,
      initial_update_complete: true,
      historical_update_complete: true,
      environment: 'sandbox',
    });
    const jwt = await signWebhook(body);
    const res = await fetch(found.webhook, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'plaid-verification': jwt },
      body,
    });
    return res.status;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    requests.set(req.url ?? '', (requests.get(req.url ?? '') ?? 0) + 1);
    if (req.method !== 'POST') return plaidError(res, 404, 'INVALID_REQUEST', 'NOT_FOUND', 'unknown endpoint');
    const body = await readJson(req).catch(() => null);
    if (!body) return plaidError(res, 400, 'INVALID_REQUEST', 'INVALID_BODY', 'body is not valid JSON');
    const clientId = req.headers['plaid-client-id'] ?? body.client_id;
    const secret = req.headers['plaid-secret'] ?? body.secret;
    if (clientId !== options.clientId || secret !== options.secret) {
      return plaidError(res, 400, 'INVALID_INPUT', 'INVALID_API_KEYS', 'invalid client_id or secret provided');
    }
    const item = () => {
      let found = [...items.values()].find((i) => i.accessToken === body.access_token);
      const named = found ? null : parseSandboxAccessToken(body.access_token);
      if (named && !items.has(named.itemId)) {
        found = {
          itemId: named.itemId,
          accessToken: String(body.access_token),
          changes: sandboxActivity(named.itemId, named.start, options.extraRows ?? 0),
          webhook: null,
        };
        items.set(named.itemId, found);
      }
      if (!found) plaidError(res, 400, 'INVALID_INPUT', 'INVALID_ACCESS_TOKEN', 'provided access token is invalid');
      return found;
    };
    switch (req.url) {
      case '/sandbox/public_token/create': {
        const itemId = `item-${randomUUID().slice(0, 8)}`;
        const publicToken = `public-sandbox-${randomUUID()}`;
        items.set(itemId, {
          itemId,
          accessToken: sandboxAccessToken(itemId, start),
          changes: sandboxActivity(itemId, start, options.extraRows ?? 0),
          webhook: ((body.options as { webhook?: string } | undefined)?.webhook ?? null) as string | null,
        });
        publicTokens.set(publicToken, itemId);
        return send(res, 200, { public_token: publicToken, request_id: randomUUID() });
      }
      case '/item/public_token/exchange': {
        const itemId = publicTokens.get(String(body.public_token));
        const found = itemId ? items.get(itemId) : undefined;
        if (!found) {
          return plaidError(res, 400, 'INVALID_INPUT', 'INVALID_PUBLIC_TOKEN', 'provided public token is invalid');
        }
        publicTokens.delete(String(body.public_token));
        return send(res, 200, { access_token: found.accessToken, item_id: found.itemId, request_id: randomUUID() });
      }
      case '/webhook_verification_key/get': {
        const key = webhookKeys.get(String(body.key_id));
        if (!key) {
          return plaidError(res, 400, 'INVALID_INPUT', 'INVALID_WEBHOOK_VERIFICATION_KEY_ID', 'unknown key_id');
        }
        return send(res, 200, {
          key: { ...key.jwk, created_at: key.createdAt, expired_at: key.expiredAt },
          request_id: randomUUID(),
        });
      }
      case '/item/webhook/update': {
        const found = item();
        if (!found) return;
        found.webhook = typeof body.webhook === 'string' ? body.webhook : null;
        return send(res, 200, { item: { item_id: found.itemId, webhook: found.webhook }, request_id: randomUUID() });
      }
      case '/sandbox/item/fire_webhook': {
        const found = item();
        if (!found) return;
        const status = await fireWebhook(found.itemId, String(body.webhook_code ?? 'SYNC_UPDATES_AVAILABLE'));
        return send(res, 200, { webhook_fired: status < 300, request_id: randomUUID() });
      }
      case '/accounts/get': {
        const found = item();
        if (!found) return;
        return send(res, 200, {
          accounts: sandboxAccounts(found.itemId),
          item: { item_id: found.itemId, institution_id: 'ins_109508', webhook: null },
          request_id: randomUUID(),
        });
      }
      case '/transactions/sync': {
        syncCalls += 1;
        if (options.failSyncCall?.(syncCalls)) {
          return plaidError(res, 500, 'API_ERROR', 'INTERNAL_SERVER_ERROR', 'an unexpected error occurred');
        }
        const found = item();
        if (!found) return;
        const from = decodeSandboxCursor(body.cursor);
        if (from === null || from > found.changes.length) {
          return plaidError(res, 400, 'INVALID_INPUT', 'INVALID_FIELD', 'cursor is not valid');
        }
        const count = Math.min(
          Math.max(Number((body.options as { count?: number })?.count ?? body.count ?? 100), 1),
          500,
        );
        return send(res, 200, {
          ...sandboxSyncPage(found.changes, from, count),
          transactions_update_status: 'HISTORICAL_UPDATE_COMPLETE',
          accounts: sandboxAccounts(found.itemId),
          request_id: randomUUID(),
        });
      }
      default:
        return plaidError(res, 404, 'INVALID_REQUEST', 'NOT_FOUND', `unknown endpoint ${req.url}`);
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch(() => plaidError(res, 500, 'API_ERROR', 'INTERNAL_SERVER_ERROR', 'unexpected error'));
  });
  // A port already taken (another server's sandbox) rejects here rather than crashing the process.
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}`,
    server,
    append(itemId, change) {
      items.get(itemId)?.changes.push(change);
    },
    fireWebhook,
    signWebhook,
    webhookKeyId: () => kid,
    async rotateWebhookKey() {
      const expired = kid;
      (webhookKeys.get(expired) as WebhookKey).expiredAt = Math.floor(Date.now() / 1000);
      await newWebhookKey();
      return expired;
    },
    requestCount: (path) => requests.get(path) ?? 0,
    close: () => new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve()))),
  };
}
