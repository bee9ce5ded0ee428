import { type Db, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import type { Aggregator } from './aggregator';
import type { TokenKeys } from './secrets';
import { syncFeed } from './sync';

/**
 * Marks the connection of an aggregator item as wanting a sync (what a verified webhook does, and all it does).
 * False when no connection has the item.
 */
export async function requestFeedSync(db: Db, provider: string, itemId: string): Promise<boolean> {
  const rows = rowsOf(
    await db.execute(sql`update bank_feed_connections set sync_requested_at = now()
      where provider = ${provider} and item_id = ${itemId} and status <> 'disconnected'
      returning id`),
  );
  return rows.length > 0;
}

/**
 * Runs the requested syncs until none is left: each claimed with FOR UPDATE SKIP LOCKED (so several workers share
 * them) and cleared in the claim's own transaction; the sync itself is safe to run anywhere at once (see syncFeed).
 * A failed sync is recorded on its connection and does not stop the others. Returns how many ran.
 */
export async function runRequestedSyncs(db: Db, aggregator: Aggregator, keys: TokenKeys): Promise<number> {
  let ran = 0;
  for (;;) {
    const [claimed] = rowsOf<{ id: string; organization_id: string; firm_id: string }>(
      await db.execute(sql`
        update bank_feed_connections c set sync_requested_at = null
        from organizations o
        where o.id = c.organization_id and c.id = (
          select id from bank_feed_connections where sync_requested_at is not null and provider = ${aggregator.provider}
          order by sync_requested_at limit 1 for update skip locked)
        returning c.id, c.organization_id, o.firm_id`),
    );
    if (!claimed) return ran;
    const ctx = { firmId: claimed.firm_id, actor: { kind: 'system', id: 'bank-feed-sync' } };
    await syncFeed(db, ctx, aggregator, keys, claimed.organization_id, claimed.id).catch(() => undefined);
    ran += 1;
  }
}
