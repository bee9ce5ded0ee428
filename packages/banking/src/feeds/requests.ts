import { type Db, type Executor, rowsOf } from '@firm/db';
import { archivedOrganizationIds, firmOfOrganization } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import type { Aggregator, FeedWebhook } from './aggregator';
import type { TokenKeys } from './secrets';
import { syncFeed } from './sync';

/**
 * Marks the connection of an aggregator item as wanting a sync (what a verified webhook does, and all it does).
 * False when no connection has the item.
 */
export async function requestFeedSync(db: Executor, provider: string, itemId: string): Promise<boolean> {
  const rows = rowsOf(
    await db.execute(sql`update bank_feed_connections set sync_requested_at = now()
      where provider = ${provider} and item_id = ${itemId} and status <> 'disconnected'
      returning id`),
  );
  return rows.length > 0;
}

/** Kept past the end of a delivery's replay window, for hosts whose clocks run behind the database's. */
const REPLAY_MARGIN_MS = 60_000;

export interface AcceptedWebhook {
  /** This delivery was accepted before (a replay within its window): nothing was done this time. */
  duplicate: boolean;
  /** A connection of the item was marked as wanting a sync. */
  syncRequested: boolean;
}

/**
 * Accepts a verified aggregator webhook once. The delivery is remembered (until its signature would be refused as
 * too old anyway) in the same transaction that marks the item's connection for a sync, when the webhook asks for
 * one: so a second copy of the same delivery, in this process or any other, finds it and changes nothing, and a
 * copy arriving while the first is still being accepted waits for that one's outcome on the key.
 */
export async function acceptFeedWebhook(db: Db, provider: string, event: FeedWebhook): Promise<AcceptedWebhook> {
  return db.transaction(async (tx) => {
    const expiresAt = new Date(event.replayableUntil.getTime() + REPLAY_MARGIN_MS).toISOString();
    const fresh = rowsOf(
      await tx.execute(sql`insert into aggregator_webhook_deliveries (provider, delivery_id, expires_at)
        values (${provider}, ${event.deliveryId}, ${expiresAt})
        on conflict (provider, delivery_id) do nothing
        returning 1`),
    );
    if (fresh.length === 0) return { duplicate: true, syncRequested: false };
    const wanted = event.type === 'TRANSACTIONS' && event.code === 'SYNC_UPDATES_AVAILABLE' && event.itemId !== null;
    return { duplicate: false, syncRequested: wanted && (await requestFeedSync(tx, provider, event.itemId as string)) };
  });
}

/**
 * Deletes remembered webhook deliveries whose replay window has passed, at most `batch` of them; rows another
 * process is deleting at the same moment are skipped rather than waited for. Returns how many were deleted.
 */
export async function pruneFeedWebhookDeliveries(db: Executor, batch = 500): Promise<number> {
  const rows = rowsOf(
    await db.execute(sql`delete from aggregator_webhook_deliveries
      where (provider, delivery_id) in (
        select provider, delivery_id from aggregator_webhook_deliveries where expires_at < now()
        order by expires_at limit ${batch} for update skip locked)
      returning 1`),
  );
  return rows.length;
}

/**
 * Runs the requested syncs until none is left: each claimed with FOR UPDATE SKIP LOCKED (so several workers share
 * them) and cleared in the claim's own transaction; the sync itself is safe to run anywhere at once (see syncFeed).
 * A request for an archived company waits, still requested, until the company is unarchived.
 * A failed sync is recorded on its connection and does not stop the others. Returns how many ran.
 */
export async function runRequestedSyncs(db: Db, aggregator: Aggregator, keys: TokenKeys): Promise<number> {
  let ran = 0;
  for (;;) {
    const [claimed] = rowsOf<{ id: string; organization_id: string; firm_id: string }>(
      await db.execute(sql`
        update bank_feed_connections c set sync_requested_at = null
        where c.id = (
          select id from bank_feed_connections where sync_requested_at is not null and provider = ${aggregator.provider}
            and organization_id not in ${archivedOrganizationIds}
          order by sync_requested_at limit 1 for update skip locked)
        returning c.id, c.organization_id, ${firmOfOrganization(sql`c.organization_id`)} as firm_id`),
    );
    if (!claimed) return ran;
    const ctx = { firmId: claimed.firm_id, actor: { kind: 'system', id: 'bank-feed-sync' } };
    await syncFeed(db, ctx, aggregator, keys, claimed.organization_id, claimed.id).catch(() => undefined);
    ran += 1;
  }
}
