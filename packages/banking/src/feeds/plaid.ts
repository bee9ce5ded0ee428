import { createHash, timingSafeEqual } from 'node:crypto';
import { DomainError } from '@firm/core';
import { compactVerify, type CryptoKey, decodeJwt, decodeProtectedHeader, importJWK, type JWK } from 'jose';
import type { PlaidApi } from 'plaid';
import type { Aggregator, FeedAccount, FeedPage, FeedTransaction, FeedWebhook } from './aggregator';

export interface PlaidOptions {
  clientId: string;
  secret: string;
  /** https://production.plaid.com, https://sandbox.plaid.com, or the local sandbox aggregator. */
  basePath: string;
  timeoutMs?: number;
  /** How long a webhook verification key is trusted before it is fetched again (its `expired_at` may have come). */
  keyCacheMs?: number;
  /** How long a key id the aggregator does not know is answered as unknown without asking again. */
  unknownKeyCacheMs?: number;
  /** Fetches per minute for key ids this process has not seen; beyond, such webhooks are refused unasked. */
  unknownKeyFetchesPerMinute?: number;
  /** The clock, in milliseconds. */
  now?: () => number;
}

/** Plaid's rule: a webhook's token is at most five minutes old. */
export const WEBHOOK_MAX_AGE_S = 300;
/** How far ahead of this process's clock the aggregator's may run. */
const WEBHOOK_CLOCK_SKEW_S = 60;
const KEY_CACHE_MS = 5 * 60_000;
const UNKNOWN_KEY_FETCHES_PER_MINUTE = 10;
const MAX_CACHED_KEYS = 1000;
const MAX_TOKEN_LENGTH = 4096;
/** Plaid's key ids are UUIDs; anything far from one is refused without asking. */
const KEY_ID = /^[A-Za-z0-9_-]{1,128}$/;

interface CachedKey {
  /** Null: the aggregator does not know the id. */
  key: CryptoKey | Uint8Array | null;
  /** The key's `expired_at`, in milliseconds. */
  expiredAt: number | null;
  /** Until when this answer is used without asking again. */
  until: number;
}

const refuse = (why: string) => new DomainError('UNAUTHENTICATED', `the webhook is not verified: ${why}`);

interface PlaidTransactionShape {
  transaction_id: string;
  account_id: string;
  amount: number;
  date: string;
  name?: string | null;
  original_description?: string | null;
  merchant_name?: string | null;
  pending: boolean;
  pending_transaction_id?: string | null;
}

/** Plaid's amounts are decimal units, positive for money out; ours are integer cents, positive for money in. */
export const centsOfPlaidAmount = (amount: number): number => -Math.round(amount * 100);

export const toFeedTransaction = (t: PlaidTransactionShape): FeedTransaction => ({
  id: t.transaction_id,
  accountId: t.account_id,
  date: t.date,
  amountCents: centsOfPlaidAmount(t.amount),
  description: t.original_description ?? t.name ?? '',
  counterparty: t.merchant_name ?? null,
  pending: t.pending,
  pendingId: t.pending_transaction_id ?? null,
});

/** An aggregator error as ours: what Plaid answered, never the credentials. */
function aggregatorError(err: unknown): DomainError {
  const data = (err as { response?: { status?: number; data?: { error_code?: string; error_message?: string } } })
    .response;
  const code = data?.data?.error_code ?? 'UNREACHABLE';
  const message = data?.data?.error_message ?? (err instanceof Error ? err.message : 'no answer');
  return new DomainError('AGGREGATOR_ERROR', `the aggregator refused the request: ${code}`, [
    { message, aggregatorCode: code, status: data?.status ?? null },
  ]);
}

/** The Plaid connector, through the official `plaid` client. */
export class PlaidAggregator implements Aggregator {
  readonly provider = 'plaid';
  private client: Promise<PlaidApi> | null = null;
  /** Webhook verification keys by key id, and the ids the aggregator does not know (key null). */
  private readonly webhookKeys = new Map<string, CachedKey>();
  private readonly keyFetches = new Map<string, Promise<CachedKey>>();
  /** When fetches for key ids this process had not seen started, over the last minute. */
  private readonly unknownKeyFetches: number[] = [];
  private readonly now: () => number;

  constructor(private readonly options: PlaidOptions) {
    this.now = options.now ?? Date.now;
  }

  /**
   * The official client, loaded on first use: its generated API is about 90 MB of heap, which a process that never
   * talks to the aggregator (most API instances, the CLI) should not carry.
   */
  private api(): Promise<PlaidApi> {
    this.client ??= import('plaid').then(
      ({ Configuration, PlaidApi }) =>
        new PlaidApi(
          new Configuration({
            basePath: this.options.basePath,
            baseOptions: {
              timeout: this.options.timeoutMs ?? 15_000,
              headers: { 'PLAID-CLIENT-ID': this.options.clientId, 'PLAID-SECRET': this.options.secret },
            },
          }),
        ),
    );
    return this.client;
  }

  async exchangePublicToken(publicToken: string) {
    try {
      const { data } = await (await this.api()).itemPublicTokenExchange({ public_token: publicToken });
      return { accessToken: data.access_token, itemId: data.item_id };
    } catch (err) {
      const answer = (err as { response?: { data?: { error_code?: string; error_message?: string } } }).response;
      // The caller's token, not the aggregator, is at fault: retrying the same token cannot succeed.
      if (answer?.data?.error_code === 'INVALID_PUBLIC_TOKEN') {
        throw new DomainError('PUBLIC_TOKEN_REFUSED', 'the aggregator refused the public token', [
          { field: 'publicToken', message: answer.data.error_message ?? 'invalid or already exchanged' },
        ]);
      }
      throw aggregatorError(err);
    }
  }

  async accounts(accessToken: string): Promise<FeedAccount[]> {
    try {
      const { data } = await (await this.api()).accountsGet({ access_token: accessToken });
      return data.accounts.map((a) => ({
        id: a.account_id,
        name: a.name,
        mask: a.mask ?? null,
        kind: a.type === 'depository' || a.type === 'credit' ? a.type : 'other',
        currency: a.balances.iso_currency_code ?? 'USD',
      }));
    } catch (err) {
      throw aggregatorError(err);
    }
  }

  async syncPage(accessToken: string, cursor: string | null, count: number): Promise<FeedPage> {
    try {
      const { data } = await (
        await this.api()
      ).transactionsSync({
        access_token: accessToken,
        ...(cursor ? { cursor } : {}),
        count,
      });
      return {
        added: data.added.map((t) => toFeedTransaction(t as PlaidTransactionShape)),
        modified: data.modified.map((t) => toFeedTransaction(t as PlaidTransactionShape)),
        removed: data.removed.map((r) => ({ id: r.transaction_id, accountId: r.account_id ?? '' })),
        nextCursor: data.next_cursor,
        hasMore: data.has_more,
      };
    } catch (err) {
      throw aggregatorError(err);
    }
  }

  /**
   * Plaid's webhook verification: the `Plaid-Verification` header is an ES256 JWT whose key id names a key the
   * aggregator serves (/webhook_verification_key/get); it must be at most five minutes old and carry the SHA-256 of
   * the exact body. The claims are judged before the key is looked up, so a stale or mismatched token costs no call
   * to the aggregator; they are the signed ones once the signature holds over the same bytes.
   */
  async verifyWebhook(headers: Record<string, string | string[] | undefined>, rawBody: Buffer): Promise<FeedWebhook> {
    const raw = headers['plaid-verification'];
    const token = Array.isArray(raw) ? raw[0] : raw;
    if (!token) throw refuse('no Plaid-Verification header');
    if (token.length > MAX_TOKEN_LENGTH) throw refuse('the token is too long');
    let kid: unknown;
    let iat: unknown;
    let claimed: unknown;
    try {
      const header = decodeProtectedHeader(token);
      if (header.alg !== 'ES256') throw refuse('not an ES256 token');
      kid = header.kid;
      ({ iat, request_body_sha256: claimed } = decodeJwt(token));
    } catch (err) {
      throw err instanceof DomainError ? err : refuse('not a JWT');
    }
    if (typeof kid !== 'string' || !KEY_ID.test(kid)) throw refuse('no key id');
    const now = this.now();
    if (typeof iat !== 'number' || !Number.isInteger(iat)) throw refuse('no issue time');
    if (now / 1000 - iat > WEBHOOK_MAX_AGE_S) throw refuse('too old');
    if (iat - now / 1000 > WEBHOOK_CLOCK_SKEW_S) throw refuse('issued in the future');
    const digest = Buffer.from(createHash('sha256').update(rawBody).digest('hex'));
    if (
      typeof claimed !== 'string' ||
      claimed.length !== digest.length ||
      !timingSafeEqual(Buffer.from(claimed), digest)
    ) {
      throw refuse('the body does not match its signature');
    }
    const key = await this.webhookKey(kid);
    try {
      await compactVerify(token, key, { algorithms: ['ES256'] });
    } catch {
      throw refuse('bad signature');
    }
    let body: unknown;
    try {
      body = JSON.parse(rawBody.toString('utf8'));
    } catch {
      throw new DomainError('MALFORMED_JSON', 'the webhook body is not JSON');
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw new DomainError('VALIDATION_ERROR', 'the webhook body is not a JSON object');
    }
    const fields = body as { webhook_type?: unknown; webhook_code?: unknown; item_id?: unknown };
    const text = (value: unknown) => (typeof value === 'string' ? value : '');
    return {
      itemId: typeof fields.item_id === 'string' && fields.item_id ? fields.item_id : null,
      type: text(fields.webhook_type),
      code: text(fields.webhook_code),
      // The signing input, not the whole token: an ECDSA signature (r, s) has a twin (r, n - s) that verifies too, so
      // the same delivery can arrive under two different tokens.
      deliveryId: createHash('sha256')
        .update(token.slice(0, token.lastIndexOf('.')))
        .digest('hex'),
      replayableUntil: new Date((iat + WEBHOOK_MAX_AGE_S) * 1000),
    };
  }

  /**
   * A verification key by id: from this process's cache while its lifetime lasts (never past the key's own
   * `expired_at`), else from the aggregator. An id the aggregator does not know is remembered as unknown for a while,
   * and ids this process has not seen may make only so many fetches a minute, so forged key ids cannot turn
   * webhooks into a stream of calls to the aggregator. Concurrent webhooks naming one id share one fetch.
   */
  private async webhookKey(kid: string): Promise<CryptoKey | Uint8Array> {
    let entry = this.webhookKeys.get(kid);
    if (!entry || entry.until <= this.now()) entry = await this.fetchWebhookKey(kid, Boolean(entry?.key));
    if (!entry.key) throw refuse('unknown key id');
    if (entry.expiredAt !== null && entry.expiredAt <= this.now()) throw refuse('the key has expired');
    return entry.key;
  }

  private fetchWebhookKey(kid: string, known: boolean): Promise<CachedKey> {
    const running = this.keyFetches.get(kid);
    if (running) return running;
    if (!known && !this.takeKeyFetch()) throw refuse('too many unknown key ids; not fetched');
    const fetching = (async (): Promise<CachedKey> => {
      let answer: { key: Record<string, unknown> };
      try {
        ({ data: answer } = (await (await this.api()).webhookVerificationKeyGet({ key_id: kid })) as unknown as {
          data: { key: Record<string, unknown> };
        });
      } catch (err) {
        const status = (err as { response?: { status?: number } }).response?.status;
        // Only the aggregator saying no is remembered; an outage is not, so the next webhook tries again.
        if (status !== undefined && status >= 400 && status < 500) return this.cacheKey(kid, null, null);
        throw refuse('the key could not be fetched');
      }
      const { kty, crv, x, y, kid: servedKid, expired_at: expiredAt } = answer.key;
      try {
        if (servedKid !== kid || crv !== 'P-256') throw new Error('not the key asked for');
        const key = await importJWK({ kty, crv, x, y } as JWK, 'ES256');
        return this.cacheKey(kid, key, typeof expiredAt === 'number' ? expiredAt * 1000 : null);
      } catch {
        return this.cacheKey(kid, null, null);
      }
    })().finally(() => this.keyFetches.delete(kid));
    this.keyFetches.set(kid, fetching);
    return fetching;
  }

  private cacheKey(kid: string, key: CryptoKey | Uint8Array | null, expiredAt: number | null): CachedKey {
    const now = this.now();
    const lifetime = key ? (this.options.keyCacheMs ?? KEY_CACHE_MS) : (this.options.unknownKeyCacheMs ?? KEY_CACHE_MS);
    const entry = {
      key,
      expiredAt,
      until: Math.min(now + lifetime, expiredAt !== null && expiredAt > now ? expiredAt : Infinity),
    };
    if (this.webhookKeys.size >= MAX_CACHED_KEYS) {
      for (const [id, cached] of this.webhookKeys) if (cached.until <= now) this.webhookKeys.delete(id);
      const oldest = this.webhookKeys.keys().next();
      if (this.webhookKeys.size >= MAX_CACHED_KEYS && !oldest.done) this.webhookKeys.delete(oldest.value);
    }
    this.webhookKeys.delete(kid);
    this.webhookKeys.set(kid, entry);
    return entry;
  }

  /** One fetch for a key id this process has not seen, if the last minute's allowance is not spent. */
  private takeKeyFetch(): boolean {
    const now = this.now();
    while (this.unknownKeyFetches.length > 0 && (this.unknownKeyFetches[0] as number) <= now - 60_000) {
      this.unknownKeyFetches.shift();
    }
    if (this.unknownKeyFetches.length >= (this.options.unknownKeyFetchesPerMinute ?? UNKNOWN_KEY_FETCHES_PER_MINUTE)) {
      return false;
    }
    this.unknownKeyFetches.push(now);
    return true;
  }
}
