import { DomainError, isUuid, newId } from '@firm/core';
import { type Db, type Executor, rowsOf, type Tx } from '@firm/db';
import {
  assertCompanyWritable,
  companyArchived,
  type LedgerContext,
  nowOf,
  recordEvent,
  companyArchivedAt,
} from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { unapplyBankTransaction } from '../actions';
import {
  type BankTransactionStatus,
  bankTransactionEvent,
  getBankTransaction,
  moveBankTransaction,
} from '../transactions';
import type { Aggregator, FeedPage, FeedTransaction } from './aggregator';
import { openToken, sealToken, TokenKeyMissing, type TokenKeys, tokenContext } from './secrets';

export interface SyncResult {
  pages: number;
  added: number;
  modified: number;
  removed: number;
  /** Pages another sync of the connection had applied first (dropped here, nothing written twice). */
  skipped: number;
}

export interface SyncOptions {
  /** Rows per page asked of the aggregator (Plaid allows 1-500). */
  count?: number;
  /** Stop after this many pages, as a sync cut short would. */
  maxPages?: number;
}

interface Connection {
  id: string;
  cursor: string | null;
  access_token: string;
  access_token_key_id: string;
  access_token_bound: boolean;
}

async function readConnection(db: Executor, organizationId: string, id: string, lock = false): Promise<Connection> {
  const [row] = isUuid(id)
    ? rowsOf<Connection>(
        await db.execute(sql`select id, cursor, access_token, access_token_key_id, access_token_bound
          from bank_feed_connections
          where organization_id = ${organizationId} and id = ${id} ${lock ? sql`for update` : sql``}`),
      )
    : [];
  if (!row) throw new DomainError('BANK_FEED_NOT_FOUND', 'bank feed not found');
  return row;
}

/** The token in clear, or why it does not open (for the connection's lastError). */
function tryOpen(keys: TokenKeys, row: Connection, context: string | undefined): { token: string } | { why: string } {
  try {
    return { token: openToken(keys, row.access_token, row.access_token_key_id, context) };
  } catch (err) {
    return {
      why:
        err instanceof TokenKeyMissing
          ? `its key ${row.access_token_key_id} is not in BANK_TOKEN_KEYS`
          : 'it was sealed for another connection, or altered',
    };
  }
}

/**
 * The connection's access token in clear. A token sealed bound to its row opens only in that row. One sealed before
 * tokens were bound, or under a key that is no longer the current one, is opened as it was and sealed anew, bound and
 * under the current key, under the row's lock in a transaction of its own, so two readers reseal it once (this is
 * the only place a token is read, so every one is resealed before it is used). A token that does not open leaves the
 * connection needs_relink, recorded like a failed sync, and throws BANK_FEED_NEEDS_RELINK rather than syncing with
 * it: connecting the bank again gives a usable one (restoring a key dropped by mistake works too: the status follows
 * the next sync).
 */
async function connectionToken(
  db: Db,
  ctx: LedgerContext,
  keys: TokenKeys,
  organizationId: string,
  connection: Connection,
): Promise<string> {
  const context = tokenContext(organizationId, connection.id);
  const settled = (row: Connection) => row.access_token_bound && row.access_token_key_id === keys.current;
  const opened = settled(connection)
    ? tryOpen(keys, connection, context)
    : await db.transaction(async (tx) => {
        const row = await readConnection(tx, organizationId, connection.id, true);
        // Another process resealed it since it was read.
        if (settled(row)) return tryOpen(keys, row, context);
        const found = tryOpen(keys, row, row.access_token_bound ? context : undefined);
        if (!('token' in found)) return found;
        const sealed = sealToken(keys, found.token, context);
        await tx.execute(sql`update bank_feed_connections set access_token = ${sealed.value},
            access_token_key_id = ${sealed.keyId}, access_token_bound = true
          where organization_id = ${organizationId} and id = ${connection.id}`);
        return found;
      });
  if ('token' in opened) return opened.token;
  const err = new DomainError(
    'BANK_FEED_NEEDS_RELINK',
    `the stored access token of bank feed ${connection.id} does not open (${opened.why}); connect the bank again`,
  );
  await recordFailure(db, ctx, organizationId, connection.id, err, 'needs_relink');
  throw err;
}

interface ExistingRow {
  id: string;
  amount_cents: number;
  txn_date: string;
  status: BankTransactionStatus;
  reconciled: boolean;
}

/**
 * Syncs a feed connection with the semantics of Plaid's /transactions/sync: page after page from the stored cursor,
 * each page applied in one transaction that also stores the page's next cursor. So a sync cut short resumes where
 * its last committed page ended, and a page that arrives again changes nothing: the transaction locks the
 * connection row and applies the page only if the cursor it was fetched from is still the stored one (another sync
 * of the same connection, in this or another process, has otherwise applied it already). Rows are also keyed by
 * the aggregator's id per account, so even a page applied from a stale cursor could not write a row twice.
 *
 * Aggregator calls happen outside any transaction; a failure is recorded on the connection (last error) and thrown.
 */
export async function syncFeed(
  db: Db,
  ctx: LedgerContext,
  aggregator: Aggregator,
  keys: TokenKeys,
  organizationId: string,
  connectionId: string,
  options: SyncOptions = {},
): Promise<SyncResult> {
  const result: SyncResult = { pages: 0, added: 0, modified: 0, removed: 0, skipped: 0 };
  await assertCompanyWritable(db, organizationId);
  for (;;) {
    if (options.maxPages !== undefined && result.pages + result.skipped >= options.maxPages) return result;
    const connection = await readConnection(db, organizationId, connectionId);
    const token = await connectionToken(db, ctx, keys, organizationId, connection);
    let page: FeedPage;
    try {
      page = await aggregator.syncPage(token, connection.cursor, options.count ?? 100);
    } catch (err) {
      await recordFailure(db, ctx, organizationId, connectionId, err);
      throw err;
    }
    const applied = await db.transaction(async (tx) => {
      const [locked] = rowsOf<{ cursor: string | null }>(
        await tx.execute(sql`select cursor from bank_feed_connections
          where organization_id = ${organizationId} and id = ${connectionId} for update`),
      );
      if (!locked || locked.cursor !== connection.cursor) return false;
      // An archive that committed since the sync began stops it: nothing is written to an archived company.
      if (await companyArchivedAt(tx, organizationId, true)) throw companyArchived();
      await applyPage(tx, ctx, organizationId, connectionId, page, result);
      const now = nowOf(ctx).toISOString();
      await tx.execute(sql`update bank_feed_connections set cursor = ${page.nextCursor}, status = 'active',
          last_synced_at = ${now}, last_error = null, last_error_at = null, updated_at = ${now}
        where organization_id = ${organizationId} and id = ${connectionId}`);
      await recordEvent(tx, ctx, {
        organizationId,
        action: 'bank_feed.synced',
        resourceType: 'bank_feed',
        resourceId: connectionId,
        data: { added: page.added.length, modified: page.modified.length, removed: page.removed.length },
        payload: {
          connectionId,
          added: page.added.length,
          modified: page.modified.length,
          removed: page.removed.length,
          hasMore: page.hasMore,
        },
      });
      return true;
    });
    if (applied) result.pages += 1;
    else result.skipped += 1;
    if (!applied || !page.hasMore) return result;
  }
}

async function recordFailure(
  db: Db,
  ctx: LedgerContext,
  organizationId: string,
  connectionId: string,
  err: unknown,
  status: 'error' | 'needs_relink' = 'error',
) {
  const message = err instanceof Error ? err.message : String(err);
  const now = nowOf(ctx).toISOString();
  await db.transaction(async (tx) => {
    await tx.execute(sql`update bank_feed_connections set status = ${status}, last_error = ${message},
        last_error_at = ${now}, updated_at = ${now}
      where organization_id = ${organizationId} and id = ${connectionId}`);
    await recordEvent(tx, ctx, {
      organizationId,
      action: 'bank_feed.failed',
      resourceType: 'bank_feed',
      resourceId: connectionId,
      data: { error: message },
      payload: { connectionId, error: message },
    });
  });
}

async function applyPage(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  connectionId: string,
  page: FeedPage,
  result: SyncResult,
): Promise<void> {
  const accounts = new Map(
    rowsOf<{ id: string; feed_account_id: string }>(
      await tx.execute(sql`select id, feed_account_id from bank_accounts
        where organization_id = ${organizationId} and feed_connection_id = ${connectionId}`),
    ).map((r) => [r.feed_account_id, r.id]),
  );
  // Every row the page names, read (and locked) in one statement; rows the page adds go in with one insert.
  const named = [
    ...new Set(
      [...page.added, ...page.modified]
        .flatMap((t) => [t.id, t.pendingId])
        .concat(page.removed.map((r) => r.id))
        .filter((id): id is string => id !== null),
    ),
  ];
  const key = (bankAccountId: string, externalId: string) => `${bankAccountId}|${externalId}`;
  const existing = new Map<string, ExistingRow>();
  if (named.length > 0 && accounts.size > 0) {
    const rows = rowsOf<ExistingRow & { external_id: string; bank_account_id: string }>(
      await tx.execute(sql`select id, bank_account_id, amount_cents::float8 as amount_cents, txn_date::text as txn_date,
          status, reconciliation_id is not null as reconciled, external_id
        from bank_transactions
        where organization_id = ${organizationId}
          and bank_account_id = any(${sql.param([...accounts.values()])}::uuid[])
          and external_id = any(${sql.param(named)}::text[])
        order by id
        for update`),
    );
    for (const r of rows) existing.set(key(r.bank_account_id, r.external_id), r);
  }
  const fresh = new Map<string, FeedTransaction & { bankAccountId: string }>();
  for (const t of [...page.added, ...page.modified]) {
    const bankAccountId = accounts.get(t.accountId);
    if (!bankAccountId) continue;
    const own = key(bankAccountId, t.id);
    const replaced = t.pendingId ? key(bankAccountId, t.pendingId) : null;
    const found = existing.has(own) ? own : replaced && existing.has(replaced) ? replaced : null;
    const stored = found ? existing.get(found) : undefined;
    // A pending row this page added and this one replaces, or a row this page added and now changes.
    if (replaced) fresh.delete(replaced);
    if (found && stored) {
      await changeRow(tx, ctx, organizationId, stored, t);
      // The pending row now carries this transaction's id.
      existing.delete(found);
      existing.set(own, { ...stored, amount_cents: t.amountCents, txn_date: t.date });
      continue;
    }
    fresh.set(own, { ...t, bankAccountId });
  }
  for (const r of page.removed) {
    const bankAccountId = accounts.get(r.accountId);
    if (!bankAccountId) continue;
    // Added earlier in this very page: it never reaches the table.
    if (fresh.delete(key(bankAccountId, r.id))) continue;
    const stored = existing.get(key(bankAccountId, r.id));
    if (stored) {
      await removeRow(tx, ctx, organizationId, stored);
      existing.delete(key(bankAccountId, r.id));
    }
  }
  if (fresh.size > 0) {
    const rows = [...fresh.values()];
    const now = nowOf(ctx).toISOString();
    await tx.execute(sql`
      insert into bank_transactions
        (id, organization_id, bank_account_id, txn_date, amount_cents, description, counterparty, source_type,
         external_id, pending, created_at, updated_at)
      select v.id, ${organizationId}, v.bank_account_id, v.txn_date, v.amount_cents, v.description, v.counterparty,
             'aggregator_bank_feed', v.external_id, v.pending, ${now}, ${now}
      from unnest(${sql.param(rows.map(() => newId()))}::uuid[], ${sql.param(rows.map((r) => r.bankAccountId))}::uuid[],
                  ${sql.param(rows.map((r) => r.date))}::date[], ${sql.param(rows.map((r) => r.amountCents))}::bigint[],
                  ${sql.param(rows.map((r) => r.description))}::text[], ${sql.param(rows.map((r) => r.counterparty))}::text[],
                  ${sql.param(rows.map((r) => r.id))}::text[], ${sql.param(rows.map((r) => r.pending))}::boolean[])
        as v(id, bank_account_id, txn_date, amount_cents, description, counterparty, external_id, pending)`);
  }
  result.added += page.added.length;
  result.modified += page.modified.length;
  result.removed += page.removed.length;
}

/**
 * The bank changed a row (or posted a pending one). Text and the pending flag follow the bank. A new amount or date
 * follows too while the row is not in the books; once categorized or matched, what the row posted is voided and it
 * returns to unreviewed with reviewReason `amount_changed`, so nobody's books keep an amount the bank no longer
 * shows; once reconciled, the row keeps what was reconciled and is flagged `changed_after_reconciliation`.
 */
async function changeRow(tx: Tx, ctx: LedgerContext, organizationId: string, row: ExistingRow, t: FeedTransaction) {
  const now = nowOf(ctx).toISOString();
  const moved = Number(row.amount_cents) !== t.amountCents || row.txn_date !== t.date;
  const text = sql`description = ${t.description}, counterparty = ${t.counterparty}, pending = ${t.pending},
    external_id = ${t.id}, updated_at = ${now}`;
  if (row.reconciled) {
    await tx.execute(sql`update bank_transactions set ${text}
        ${moved ? sql`, review_reason = 'changed_after_reconciliation'` : sql``}
      where organization_id = ${organizationId} and id = ${row.id}`);
    return;
  }
  const classified = row.status === 'categorized' || row.status === 'matched';
  if (moved && classified) {
    const current = await getBankTransaction(tx, organizationId, row.id);
    await unapplyBankTransaction(tx, ctx, current, 'the bank changed the amount or date');
  }
  await tx.execute(sql`update bank_transactions set ${text}, amount_cents = ${t.amountCents}, txn_date = ${t.date}
    where organization_id = ${organizationId} and id = ${row.id}`);
  if (moved && classified) {
    await moveBankTransaction(tx, ctx, organizationId, row, 'unreviewed', { reviewReason: 'amount_changed' });
  }
  if (moved && classified) {
    await bankTransactionEvent(
      tx,
      ctx,
      'bank_transaction.review_needed',
      await getBankTransaction(tx, organizationId, row.id),
      { reviewReason: 'amount_changed' },
    );
  }
}

/**
 * The bank withdrew a row. One nobody acted on is deleted; one in the books has what it posted voided and is
 * excluded with reviewReason `removed_by_bank`; a reconciled one stays as reconciled and is flagged.
 */
async function removeRow(tx: Tx, ctx: LedgerContext, organizationId: string, row: ExistingRow) {
  const now = nowOf(ctx).toISOString();
  if (row.reconciled) {
    await tx.execute(sql`update bank_transactions set review_reason = 'removed_by_bank', updated_at = ${now}
      where organization_id = ${organizationId} and id = ${row.id}`);
    return;
  }
  if (row.status === 'categorized' || row.status === 'matched') {
    const current = await getBankTransaction(tx, organizationId, row.id);
    await unapplyBankTransaction(tx, ctx, current, 'the bank removed the transaction');
    await moveBankTransaction(tx, ctx, organizationId, row, 'excluded', { reviewReason: 'removed_by_bank' });
    await bankTransactionEvent(
      tx,
      ctx,
      'bank_transaction.review_needed',
      await getBankTransaction(tx, organizationId, row.id),
      { reviewReason: 'removed_by_bank' },
    );
    return;
  }
  await tx.execute(sql`delete from bank_transactions where organization_id = ${organizationId} and id = ${row.id}`);
}
