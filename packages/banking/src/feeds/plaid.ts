import { createHash, timingSafeEqual } from 'node:crypto';
import { DomainError } from '@firm/core';
import { type CryptoKey, decodeProtectedHeader, importJWK, type JWK, jwtVerify } from 'jose';
import type { PlaidApi } from 'plaid';
import type { Aggregator, FeedAccount, FeedPage, FeedTransaction, FeedWebhook } from './aggregator';

export interface PlaidOptions {
  clientId: string;
  secret: string;
  /** https://production.plaid.com, https://sandbox.plaid.com, or the local sandbox aggregator. */
  basePath: string;
  timeoutMs?: number;
}

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
  /** Verification keys by key id, fetched from the aggregator once each. */
  private readonly webhookKeys = new Map<string, CryptoKey | Uint8Array>();

  constructor(private readonly options: PlaidOptions) {}

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
   * the exact body.
   */
  async verifyWebhook(headers: Record<string, string | string[] | undefined>, rawBody: Buffer): Promise<FeedWebhook> {
    const refuse = (why: string) => new DomainError('UNAUTHENTICATED', `the webhook is not verified: ${why}`);
    const raw = headers['plaid-verification'];
    const token = Array.isArray(raw) ? raw[0] : raw;
    if (!token) throw refuse('no Plaid-Verification header');
    let kid: string | undefined;
    try {
      const header = decodeProtectedHeader(token);
      if (header.alg !== 'ES256') throw refuse('not an ES256 token');
      kid = header.kid;
    } catch (err) {
      throw err instanceof DomainError ? err : refuse('not a JWT');
    }
    if (!kid) throw refuse('no key id');
    let key = this.webhookKeys.get(kid);
    if (!key) {
      try {
        const { data } = await (await this.api()).webhookVerificationKeyGet({ key_id: kid });
        key = await importJWK(data.key as unknown as JWK, 'ES256');
      } catch {
        throw refuse('unknown key id');
      }
      this.webhookKeys.set(kid, key);
    }
    let claimed: unknown;
    try {
      const { payload } = await jwtVerify(token, key, { algorithms: ['ES256'], maxTokenAge: '5 min' });
      claimed = payload.request_body_sha256;
    } catch {
      throw refuse('bad signature or too old');
    }
    const digest = Buffer.from(createHash('sha256').update(rawBody).digest('hex'));
    if (
      typeof claimed !== 'string' ||
      claimed.length !== digest.length ||
      !timingSafeEqual(Buffer.from(claimed), digest)
    ) {
      throw refuse('the body does not match its signature');
    }
    const body = JSON.parse(rawBody.toString('utf8')) as {
      webhook_type?: string;
      webhook_code?: string;
      item_id?: string;
    };
    if (!body.item_id) throw refuse('no item_id');
    return { itemId: body.item_id, type: body.webhook_type ?? '', code: body.webhook_code ?? '' };
  }
}
