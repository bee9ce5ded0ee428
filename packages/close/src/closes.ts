import { DomainError, decodeCursor, type ErrorDetail, newId, type Page, toPage } from '@firm/core';
import { type CloseStatus, closeComments, closeSignoffs, closes, type Executor, pgErrorOf, type Tx } from '@firm/db';
import {
  addDays,
  fiscalYearStart,
  getBookSettings,
  isIsoDate,
  type LedgerContext,
  nowOf,
  recordEvent,
} from '@firm/ledger';
import { and, asc, desc, eq, inArray, lt, or, type SQL } from 'drizzle-orm';
import type { ClosesOf } from '@firm/gateway';
import { type ChecklistItem, type ClosePeriod, computeChecklist } from './checklist';

export type CloseRow = typeof closes.$inferSelect;

export interface Signoff {
  note: string;
  by: { kind: string; id: string };
  at: Date;
}

export interface CloseComment {
  id: string;
  itemKey: string | null;
  author: { kind: string; id: string };
  body: string;
  createdAt: Date;
}

/** A checklist item as a close shows it: with its sign-off when a person judged it fine as it is. */
export type CloseItem = ChecklistItem & { signoff: Signoff | null };

export interface OpenCounts {
  /** Blocking items not signed off: while any is open the close cannot finish. */
  blocking: number;
  advisory: number;
}

/** A close as read: its row, its checklist computed from the books now, its comments and what is still open. */
export interface CloseView {
  close: CloseRow;
  items: CloseItem[];
  comments: CloseComment[];
  open: OpenCounts;
}

const closeNotFound = () => new DomainError('CLOSE_NOT_FOUND', 'no such close of this company');

const periodError = (field: string, message: string) =>
  new DomainError('VALIDATION_ERROR', message, [{ field, message }]);

const monthStart = (date: string) => `${date.slice(0, 8)}01`;
const isMonthEnd = (date: string) => addDays(date, 1).endsWith('-01');

/**
 * The period a close covers: a whole month ending at `periodEnd` unless `periodStart` is given, in which case any
 * range of days within one fiscal year (which the firm's fiscal-year start month decides).
 */
export async function checkPeriod(
  db: Executor,
  organizationId: string,
  input: { periodEnd: string; periodStart?: string | undefined },
): Promise<{ periodStart: string; periodEnd: string }> {
  const { periodEnd } = input;
  if (!isIsoDate(periodEnd)) throw periodError('periodEnd', 'not a date (YYYY-MM-DD)');
  if (input.periodStart === undefined) {
    if (!isMonthEnd(periodEnd)) {
      throw periodError('periodEnd', 'not the last day of a month; send periodStart for a period that is not a month');
    }
    return { periodStart: monthStart(periodEnd), periodEnd };
  }
  const { periodStart } = input;
  if (!isIsoDate(periodStart)) throw periodError('periodStart', 'not a date (YYYY-MM-DD)');
  if (periodStart > periodEnd) throw periodError('periodStart', 'after periodEnd');
  const { fiscalYearStartMonth } = await getBookSettings(db, organizationId);
  const yearStart = fiscalYearStart(periodEnd, fiscalYearStartMonth);
  if (periodStart < yearStart) {
    throw periodError('periodStart', `before ${yearStart}, the start of the fiscal year periodEnd falls in`);
  }
  return { periodStart, periodEnd };
}

/**
 * Opens a close of a company's period. One open close per company and period: a second is 409 CLOSE_ALREADY_OPEN
 * naming the open one (the unique index `closes_one_open` decides between two at once). Records close.opened.
 */
export async function openClose(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: { periodEnd: string; periodStart?: string | undefined },
): Promise<CloseRow> {
  const period = await checkPeriod(tx, organizationId, input);
  const id = newId();
  let row: CloseRow | undefined;
  try {
    // A savepoint, so that the transaction survives the conflict and can name the open close.
    [row] = await tx.transaction((sp) =>
      sp
        .insert(closes)
        .values({
          id,
          firmId: ctx.firmId,
          organizationId,
          ...period,
          openedByKind: ctx.actor.kind,
          openedById: ctx.actor.id,
          openedAt: nowOf(ctx),
          updatedAt: nowOf(ctx),
        })
        .returning(),
    );
  } catch (err) {
    if (pgErrorOf(err)?.code !== '23505') throw err;
    const [open] = await tx
      .select({ id: closes.id })
      .from(closes)
      .where(
        and(
          eq(closes.organizationId, organizationId),
          eq(closes.periodStart, period.periodStart),
          eq(closes.periodEnd, period.periodEnd),
          eq(closes.status, 'open'),
        ),
      );
    throw new DomainError('CLOSE_ALREADY_OPEN', `a close of ${period.periodStart}..${period.periodEnd} is open`, [
      { message: 'the open close', closeId: open?.id ?? null } as ErrorDetail,
    ]);
  }
  const close = row as CloseRow;
  await recordEvent(tx, ctx, {
    organizationId,
    action: 'close.opened',
    resourceType: 'close',
    resourceId: id,
    data: period,
    payload: { closeId: id, organizationId, ...period },
  });
  return close;
}

/** The close of this organization, or CLOSE_NOT_FOUND; `lock` takes its row for the transaction. */
export async function closeOf(db: Executor, organizationId: string, closeId: string, lock = false): Promise<CloseRow> {
  const query = db
    .select()
    .from(closes)
    .where(and(eq(closes.organizationId, organizationId), eq(closes.id, closeId)));
  const [row] = lock ? await query.for('update') : await query;
  if (!row) throw closeNotFound();
  return row;
}

/** A company's closes, newest period first, optionally of one status. */
export async function listCloses(
  db: Executor,
  organizationId: string,
  filter: { status?: CloseStatus | undefined; limit: number; cursor?: string | undefined },
): Promise<Page<CloseRow>> {
  let after: SQL | undefined;
  if (filter.cursor) {
    const [periodEnd, id] = decodeCursor(filter.cursor, ['string', 'uuid']) as [string, string];
    after = or(lt(closes.periodEnd, periodEnd), and(eq(closes.periodEnd, periodEnd), lt(closes.id, id)));
  }
  const rows = await db
    .select()
    .from(closes)
    .where(
      and(
        eq(closes.organizationId, organizationId),
        filter.status ? eq(closes.status, filter.status) : undefined,
        after,
      ),
    )
    .orderBy(desc(closes.periodEnd), desc(closes.id))
    .limit(filter.limit + 1);
  return toPage(rows, filter.limit, (c) => [c.periodEnd, c.id]);
}

const periodOf = (close: CloseRow): ClosePeriod => ({
  firmId: close.firmId,
  organizationId: close.organizationId,
  periodStart: close.periodStart,
  periodEnd: close.periodEnd,
});

async function signoffsOf(db: Executor, close: CloseRow): Promise<Map<string, Signoff>> {
  const rows = await db
    .select()
    .from(closeSignoffs)
    .where(and(eq(closeSignoffs.organizationId, close.organizationId), eq(closeSignoffs.closeId, close.id)));
  return new Map(
    rows.map((r) => [r.itemKey, { note: r.note, by: { kind: r.signedByKind, id: r.signedById }, at: r.signedAt }]),
  );
}

/** Blocking and advisory items that nobody signed off. */
export function openCounts(items: readonly CloseItem[]): OpenCounts {
  const open = items.filter((i) => i.signoff === null);
  return {
    blocking: open.filter((i) => i.severity === 'blocking').length,
    advisory: open.filter((i) => i.severity === 'advisory').length,
  };
}

/** The checklist of a close computed from the books now, each item with its sign-off when one is kept under its key. */
export async function closeItems(db: Executor, close: CloseRow): Promise<CloseItem[]> {
  // One after the other: `db` may be a transaction, whose one connection takes one query at a time.
  const items = await computeChecklist(db, periodOf(close));
  const signoffs = await signoffsOf(db, close);
  return items.map((item) => ({ ...item, signoff: signoffs.get(item.key) ?? null }));
}

/** A close with its checklist (computed on every read), its comments and its open counts. */
export async function readClose(db: Executor, organizationId: string, closeId: string): Promise<CloseView> {
  const close = await closeOf(db, organizationId, closeId);
  const items = await closeItems(db, close);
  const comments = await db
    .select()
    .from(closeComments)
    .where(and(eq(closeComments.organizationId, organizationId), eq(closeComments.closeId, closeId)))
    .orderBy(asc(closeComments.createdAt), asc(closeComments.id));
  return {
    close,
    items,
    comments: comments.map((c) => ({
      id: c.id,
      itemKey: c.itemKey,
      author: { kind: c.authorKind, id: c.authorId },
      body: c.body,
      createdAt: c.createdAt,
    })),
    open: openCounts(items),
  };
}

const refuseUnlessOpen = (close: CloseRow, what: string) => {
  if (close.status !== 'open') throw new DomainError('INVALID_STATE', `the close is ${close.status}: ${what}`);
};

/**
 * Signs off an item of an open close's current checklist as fine as it is, with a note. Who may is the caller's rule
 * (people, never agents). The sign-off is kept under the item's key, so it holds while the same problem does; signing
 * off again replaces the note. Records close.item_signed_off.
 */
export async function signOffItem(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  closeId: string,
  itemKey: string,
  note: string,
): Promise<CloseItem> {
  const close = await closeOf(tx, organizationId, closeId, true);
  refuseUnlessOpen(close, 'its items can no longer be signed off');
  const item = (await computeChecklist(tx, periodOf(close))).find((i) => i.key === itemKey);
  if (!item) throw new DomainError('CLOSE_ITEM_NOT_FOUND', 'no such item on the checklist of this close now');
  const signoff = { note, signedByKind: ctx.actor.kind, signedById: ctx.actor.id, signedAt: nowOf(ctx) };
  await tx
    .insert(closeSignoffs)
    .values({ closeId, organizationId, itemKey, kind: item.kind, ...signoff })
    .onConflictDoUpdate({
      target: [closeSignoffs.organizationId, closeSignoffs.closeId, closeSignoffs.itemKey],
      set: signoff,
    });
  await recordEvent(tx, ctx, {
    organizationId,
    action: 'close.item_signed_off',
    resourceType: 'close',
    resourceId: closeId,
    data: { itemKey, kind: item.kind, note },
    payload: { closeId, organizationId, itemKey, kind: item.kind, severity: item.severity, note },
  });
  return { ...item, signoff: { note, by: ctx.actor, at: signoff.signedAt } };
}

/** A comment on a close, or on one item of it (by its key), by a person or an agent. */
export async function addComment(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  closeId: string,
  input: { body: string; itemKey?: string | null | undefined },
): Promise<CloseComment> {
  await closeOf(tx, organizationId, closeId);
  const comment = {
    id: newId(),
    closeId,
    organizationId,
    itemKey: input.itemKey ?? null,
    authorKind: ctx.actor.kind,
    authorId: ctx.actor.id,
    body: input.body,
    createdAt: nowOf(ctx),
  };
  await tx.insert(closeComments).values(comment);
  return {
    id: comment.id,
    itemKey: comment.itemKey,
    author: ctx.actor,
    body: comment.body,
    createdAt: comment.createdAt,
  };
}

/** Per company of a board: its close of the period (the latest opened, when it was reopened and opened again). */
export interface BoardRow {
  organizationId: string;
  close: CloseRow | null;
  open: OpenCounts | null;
}

/**
 * The firm's close board for a period ending on `periodEnd`: for each of these companies, its close (or none) and, when
 * there is one, the items still open. The caller passes the companies its credential may see.
 */
export async function closeBoard(
  db: Executor,
  firmId: string,
  organizationIds: readonly string[],
  periodEnd: string,
): Promise<BoardRow[]> {
  if (!isIsoDate(periodEnd)) throw periodError('periodEnd', 'not a date (YYYY-MM-DD)');
  if (organizationIds.length === 0) return [];
  const rows = await db
    .select()
    .from(closes)
    .where(
      and(
        eq(closes.firmId, firmId),
        inArray(closes.organizationId, [...organizationIds]),
        eq(closes.periodEnd, periodEnd),
      ),
    )
    .orderBy(asc(closes.organizationId), desc(closes.openedAt), desc(closes.id));
  const latest = new Map<string, CloseRow>();
  for (const row of rows) if (!latest.has(row.organizationId)) latest.set(row.organizationId, row);
  const board: BoardRow[] = [];
  for (const organizationId of organizationIds) {
    const close = latest.get(organizationId) ?? null;
    board.push({ organizationId, close, open: close && openCounts(await closeItems(db, close)) });
  }
  return board;
}

/** The health scan's view of the closes of some companies for a period (`ClosesOf` of the gateway). */
export function closesOfClients(db: Executor, firmId: string): ClosesOf {
  return async (clientIds, periodEnd) => {
    const board = await closeBoard(db, firmId, clientIds, periodEnd);
    return new Map(
      board.map((row) => [
        row.organizationId,
        {
          closeId: row.close?.id ?? null,
          status: row.close?.status ?? null,
          openBlocking: row.open?.blocking ?? 0,
          openAdvisory: row.open?.advisory ?? 0,
        },
      ]),
    );
  };
}
