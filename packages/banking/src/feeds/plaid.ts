import { DomainError } from '@firm/core';
import { Configuration, PlaidApi } from 'plaid';
import type { Aggregator, FeedAccount, FeedPage, FeedTransaction } from './aggregator';

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
  private readonly api: PlaidApi;

  constructor(options: PlaidOptions) {
    this.api = new PlaidApi(
      new Configuration({
        basePath: options.basePath,
        baseOptions: {
          timeout: options.timeoutMs ?? 15_000,
          headers: { 'PLAID-CLIENT-ID': options.clientId, 'PLAID-SECRET': options.secret },
        },
      }),
    );
  }

  async exchangePublicToken(publicToken: string) {
    try {
      const { data } = await this.api.itemPublicTokenExchange({ public_token: publicToken });
      return { accessToken: data.access_token, itemId: data.item_id };
    } catch (err) {
      throw aggregatorError(err);
    }
  }

  async accounts(accessToken: string): Promise<FeedAccount[]> {
    try {
      const { data } = await this.api.accountsGet({ access_token: accessToken });
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
      const { data } = await this.api.transactionsSync({
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
}
