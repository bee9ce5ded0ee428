import { DomainError, isUuid, newId } from '@firm/core';
import { type Db, type Executor, rowsOf } from '@firm/db';
import { assertCompanyWritable, type LedgerContext, nowOf, recordEvent, activeAccountSubtype } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { createBankAccount, REGISTER_SUBTYPES } from '../accounts';
import type { Aggregator } from './aggregator';
import { sealToken, type TokenKeys, tokenContext } from './secrets';

export interface FeedAccountLink {
  /** The aggregator's account, by its id or by the last digits the bank shows. */
  feedAccountId?: string | undefined;
  mask?: string | undefined;
  /** The ledger account (bank or credit_card) whose register the account feeds. */
  accountId: string;
}

export interface ConnectFeedInput {
  publicToken: string;
  institutionName: string;
  accounts: FeedAccountLink[];
}

export interface BankFeed {
  id: string;
  organizationId: string;
  provider: string;
  institutionName: string;
  status: 'active' | 'error' | 'needs_relink' | 'disconnected';
  lastSyncedAt: string | null;
  lastError: string | null;
  lastErrorAt: string | null;
  accounts: {
    bankAccountId: string;
    name: string;
    mask: string | null;
    feedAccountId: string;
    unreviewedCount: number;
    lastTransactionDate: string | null;
  }[];
  /** Rows of the connection's accounts waiting for review. */
  pendingReviewCount: number;
  createdAt: string;
}

const iso = (column: string) => sql.raw(`to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`);

/** The organization's feed connections with the health of each account they feed. */
export async function listBankFeeds(db: Executor, organizationId: string): Promise<BankFeed[]> {
  const rows = rowsOf<BankFeed>(
    await db.execute(sql`
      select c.id, c.organization_id as "organizationId", c.provider, c.institution_name as "institutionName",
             c.status, ${iso('c.last_synced_at')} as "lastSyncedAt", c.last_error as "lastError",
             ${iso('c.last_error_at')} as "lastErrorAt", ${iso('c.created_at')} as "createdAt",
             coalesce((
               select json_agg(json_build_object('bankAccountId', b.id, 'name', b.name, 'mask', b.mask,
                        'feedAccountId', b.feed_account_id, 'unreviewedCount', s.unreviewed,
                        'lastTransactionDate', s.last_date) order by lower(b.name), b.id)
               from bank_accounts b
               cross join lateral (
                 select count(*) filter (where t.status = 'unreviewed')::int as unreviewed, max(t.txn_date)::text as last_date
                 from bank_transactions t where t.organization_id = b.organization_id and t.bank_account_id = b.id
               ) s
               where b.organization_id = c.organization_id and b.feed_connection_id = c.id), '[]'::json) as accounts
      from bank_feed_connections c
      where c.organization_id = ${organizationId}
      order by c.created_at, c.id`),
  );
  return rows.map((r) => ({
    ...r,
    pendingReviewCount: r.accounts.reduce((s, a) => s + Number(a.unreviewedCount), 0),
  }));
}

export async function getBankFeed(db: Executor, organizationId: string, id: string): Promise<BankFeed> {
  const feed = (await listBankFeeds(db, organizationId)).find((f) => f.id === id);
  if (!feed) throw new DomainError('BANK_FEED_NOT_FOUND', 'bank feed not found');
  return feed;
}

/**
 * Connects a feed: exchanges the link flow's public token with the aggregator (outside any transaction), then in
 * one transaction stores the connection with its access token sealed, and links each account asked for to the
 * register of its ledger account (created when the ledger account has none). The first sync is the caller's to run.
 */
export async function connectBankFeed(
  db: Db,
  ctx: LedgerContext,
  aggregator: Aggregator,
  keys: TokenKeys,
  organizationId: string,
  input: ConnectFeedInput,
): Promise<BankFeed> {
  await assertCompanyWritable(db, organizationId);
  // The ledger accounts are judged before the single-use public token is spent on a connection we would refuse.
  for (const [i, link] of input.accounts.entries()) {
    const field = `accounts[${i}].accountId`;
    const subtype = isUuid(link.accountId)
      ? await activeAccountSubtype(db, organizationId, link.accountId.toLowerCase())
      : undefined;
    const [account] =
      subtype === undefined
        ? []
        : rowsOf<{ fed: boolean }>(
            await db.execute(sql`
              select exists (select 1 from bank_accounts b where b.organization_id = ${organizationId}
                               and b.account_id = ${link.accountId.toLowerCase()}
                               and b.feed_connection_id is not null) as fed`),
          ).map((r) => ({ subtype, fed: r.fed }));
    if (!account || !(REGISTER_SUBTYPES as readonly string[]).includes(account.subtype)) {
      throw new DomainError(
        'INVALID_ACCOUNT',
        `${field} is not an active bank or credit_card account of this organization`,
        [{ field, message: 'not an active bank or credit_card account of this organization' }],
      );
    }
    if (account.fed) {
      throw new DomainError('BANK_ACCOUNT_TAKEN', `${field}: the bank account already has a feed`, [
        { field, message: 'already fed by another connection' },
      ]);
    }
  }
  const { accessToken, itemId } = await aggregator.exchangePublicToken(input.publicToken);
  const feedAccounts = await aggregator.accounts(accessToken);
  const links = input.accounts.map((link, i) => {
    const found = feedAccounts.find((a) =>
      link.feedAccountId ? a.id === link.feedAccountId : link.mask !== undefined && a.mask === link.mask,
    );
    if (!found) {
      throw new DomainError('VALIDATION_ERROR', `accounts[${i}] names no account of this connection`, [
        {
          field: `accounts[${i}]`,
          message: 'no account of the connection has this id or mask',
          available: feedAccounts.map((a) => ({ feedAccountId: a.id, name: a.name, mask: a.mask })),
        },
      ]);
    }
    return { ...link, feed: found, field: `accounts[${i}]` };
  });
  return db.transaction(async (tx) => {
    const id = newId();
    const sealed = sealToken(keys, accessToken, tokenContext(organizationId, id));
    const now = nowOf(ctx).toISOString();
    await tx.execute(sql`
      insert into bank_feed_connections
        (id, organization_id, provider, institution_name, item_id, access_token, access_token_key_id,
         access_token_bound, created_at, updated_at)
      values (${id}, ${organizationId}, ${aggregator.provider}, ${input.institutionName}, ${itemId}, ${sealed.value},
              ${sealed.keyId}, true, ${now}, ${now})`);
    for (const link of links) {
      const [existing] = rowsOf<{ id: string; feed_connection_id: string | null }>(
        await tx.execute(sql`select id, feed_connection_id from bank_accounts
          where organization_id = ${organizationId} and account_id = ${link.accountId.toLowerCase()} for update`),
      );
      if (existing?.feed_connection_id) {
        throw new DomainError('BANK_ACCOUNT_TAKEN', `${link.field}: the bank account already has a feed`, [
          { field: `${link.field}.accountId`, message: 'already fed by another connection' },
        ]);
      }
      if (existing) {
        await tx.execute(sql`update bank_accounts set feed_connection_id = ${id}, feed_account_id = ${link.feed.id},
            mask = coalesce(mask, ${link.feed.mask}), institution = coalesce(institution, ${input.institutionName}),
            updated_at = ${now}
          where organization_id = ${organizationId} and id = ${existing.id}`);
      } else {
        await createBankAccount(tx, ctx, organizationId, {
          accountId: link.accountId,
          institution: input.institutionName,
          mask: link.feed.mask,
          currency: link.feed.currency,
          feedConnectionId: id,
          feedAccountId: link.feed.id,
        });
      }
    }
    const feed = await getBankFeed(tx, organizationId, id);
    await recordEvent(tx, ctx, {
      organizationId,
      action: 'bank_feed.connected',
      resourceType: 'bank_feed',
      resourceId: id,
      data: { provider: aggregator.provider, institutionName: input.institutionName, accounts: links.length },
      payload: { ...feed },
    });
    return feed;
  });
}
