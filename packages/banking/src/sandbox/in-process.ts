import { randomUUID } from 'node:crypto';
import { DomainError } from '@firm/core';
import type { Aggregator, FeedAccount, FeedPage, FeedWebhook } from '../feeds/aggregator';
import { toFeedTransaction } from '../feeds/plaid';
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
 * The sandbox aggregator's activity without its HTTP server, for the demo seed: the same items, pages and
 * cursors the server gives, read in process. Public tokens are any string; each exchange makes a new item, whose
 * access token the sandbox aggregator's server serves too (see `sandboxAccessToken`).
 */
export class InProcessSandboxAggregator implements Aggregator {
  readonly provider = 'sandbox';
  private readonly logs = new Map<string, SandboxChange[]>();

  constructor(
    private readonly start: string,
    /** More card rows per item, for load tests. */
    private readonly extraRows = 0,
  ) {}

  async exchangePublicToken(): Promise<{ accessToken: string; itemId: string }> {
    const itemId = `item-${randomUUID().slice(0, 8)}`;
    return { accessToken: sandboxAccessToken(itemId, this.start), itemId };
  }

  async verifyWebhook(): Promise<FeedWebhook> {
    throw new DomainError('UNAUTHENTICATED', 'the in-process sandbox sends no webhooks');
  }

  private item(accessToken: string): { itemId: string; start: string } {
    const named = parseSandboxAccessToken(accessToken);
    if (!named) throw new DomainError('AGGREGATOR_ERROR', 'the aggregator refused the request: INVALID_ACCESS_TOKEN');
    return named;
  }

  async accounts(accessToken: string): Promise<FeedAccount[]> {
    return sandboxAccounts(this.item(accessToken).itemId).map((a) => ({
      id: a.account_id,
      name: a.name,
      mask: a.mask,
      kind: a.type,
      currency: a.balances.iso_currency_code,
    }));
  }

  async syncPage(accessToken: string, cursor: string | null, count: number): Promise<FeedPage> {
    const { itemId, start } = this.item(accessToken);
    let changes = this.logs.get(itemId);
    if (!changes) {
      changes = sandboxActivity(itemId, start, this.extraRows);
      this.logs.set(itemId, changes);
    }
    const from = decodeSandboxCursor(cursor) ?? 0;
    const page = sandboxSyncPage(changes, from, count);
    return {
      added: page.added.map(toFeedTransaction),
      modified: page.modified.map(toFeedTransaction),
      removed: page.removed.map((r) => ({ id: r.transaction_id, accountId: r.account_id })),
      nextCursor: page.next_cursor,
      hasMore: page.has_more,
    };
  }
}
