/**
 * What the books need from a bank-data aggregator, in the shapes of Plaid's API (the one implementation, used both
 * against Plaid and against the sandbox aggregator that speaks its protocol).
 */
export interface FeedAccount {
  /** The aggregator's id of the account. */
  id: string;
  name: string;
  mask: string | null;
  kind: 'depository' | 'credit' | 'other';
  currency: string;
}

/** One transaction as a feed reports it. `amountCents` is in the register's sign: money in positive. */
export interface FeedTransaction {
  id: string;
  accountId: string;
  date: string;
  amountCents: number;
  description: string;
  counterparty: string | null;
  pending: boolean;
  /** The pending transaction this posted one replaces. */
  pendingId: string | null;
}

export interface FeedPage {
  added: FeedTransaction[];
  modified: FeedTransaction[];
  removed: { id: string; accountId: string }[];
  nextCursor: string;
  hasMore: boolean;
}

/** A verified aggregator webhook: which item it is about (null: none) and what happened. */
export interface FeedWebhook {
  itemId: string | null;
  type: string;
  code: string;
  /** The same for every copy of one delivery: a replay of it carries this id again. */
  deliveryId: string;
  /** Until when the signature would still be accepted, so until when a replay must be recognised. */
  replayableUntil: Date;
}

export interface Aggregator {
  readonly provider: string;
  /** Exchanges the public token a link flow produced for a long-lived access token. */
  exchangePublicToken(publicToken: string): Promise<{ accessToken: string; itemId: string }>;
  accounts(accessToken: string): Promise<FeedAccount[]>;
  /** One page of changes after `cursor` (null: from the beginning). */
  syncPage(accessToken: string, cursor: string | null, count: number): Promise<FeedPage>;
  /**
   * Verifies an inbound webhook's signature against its exact bytes; throws UNAUTHENTICATED when it does not hold,
   * MALFORMED_JSON or VALIDATION_ERROR when a signed body is not a JSON object.
   */
  verifyWebhook(headers: Record<string, string | string[] | undefined>, rawBody: Buffer): Promise<FeedWebhook>;
}
