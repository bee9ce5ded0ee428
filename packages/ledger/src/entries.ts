import { DomainError, decodeCursor, isUuid, type Page, toPage } from '@firm/core';
import {
  type entrySource,
  type entryStatus,
  type Executor,
  journalEntries,
  journalLines,
  type Tx,
  rowsOf,
} from '@firm/db';
import { and, asc, count, eq, gt, gte, inArray, lte, or, sql } from 'drizzle-orm';
import { type LedgerContext, nowOf } from './context';
import { checkDate } from './dates';
import { rethrowLedgerError } from './db-errors';
import { recordEvent } from './events';
import { checkLineCount, type DebitCreditLine, loadPostableAccounts, signedLine } from './lines';

export type EntryStatus = (typeof entryStatus.enumValues)[number];
export type EntrySource = (typeof entrySource.enumValues)[number];

/** A line as callers read it: the signed amount split into two non-negative columns. */
export interface EntryLine {
  id: string;
  lineNo: number;
  accountId: string;
  description: string | null;
  debitCents: number;
  creditCents: number;
}

export interface Entry {
  id: string;
  organizationId: string;
  status: EntryStatus;
  source: EntrySource;
  date: string;
  memo: string | null;
  reference: string | null;
  payeeName: string | null;
  /** Sum of the debits; equal to the sum of the credits once posted. */
  totalCents: number;
  createdAt: Date;
  postedAt: Date | null;
  voidedAt: Date | null;
  voidReason: string | null;
  lines: EntryLine[];
}

export interface DraftInput {
  date: string;
  memo?: string | null | undefined;
  reference?: string | null | undefined;
  lines: DebitCreditLine[];
}

export interface EntryFilter {
  status?: EntryStatus | undefined;
  startDate?: string | undefined;
  endDate?: string | undefined;
  /** Entries with at least one line on this account. */
  accountId?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

export interface LineFilter {
  accountId?: string | undefined;
  startDate?: string | undefined;
  endDate?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** A line of a posted entry, with the entry's date: the rows every balance is a sum of. */
export interface JournalLine {
  id: string;
  entryId: string;
  lineNo: number;
  date: string;
  accountId: string;
  description: string | null;
  debitCents: number;
  creditCents: number;
}

export const entryNotFound = () => new DomainError('ENTRY_NOT_FOUND', 'journal entry not found');

const splitAmount = (amount: number) => ({
  debitCents: amount > 0 ? amount : 0,
  creditCents: amount < 0 ? -amount : 0,
});

export type EntryRow = typeof journalEntries.$inferSelect;
export type LineRow = typeof journalLines.$inferSelect;

function toEntry(row: EntryRow, lines: LineRow[]): Entry {
  return {
    id: row.id,
    organizationId: row.organizationId,
    status: row.status,
    source: row.source,
    date: row.entryDate,
    memo: row.memo,
    reference: row.reference,
    payeeName: row.payeeName,
    totalCents: lines.reduce((sum, l) => sum + Math.max(l.amountCents, 0), 0),
    createdAt: row.createdAt,
    postedAt: row.postedAt,
    voidedAt: row.voidedAt,
    voidReason: row.voidReason,
    lines: lines.map((l) => ({
      id: l.id,
      lineNo: l.lineNo,
      accountId: l.accountId,
      description: l.description,
      ...splitAmount(l.amountCents),
    })),
  };
}

/** The lines of the organization's entries among `entryIds`, by entry, each entry's in line order. */
export async function entryLinesOf(
  db: Executor,
  organizationId: string,
  entryIds: readonly string[],
): Promise<Map<string, LineRow[]>> {
  const byEntry = new Map<string, LineRow[]>(entryIds.map((id) => [id, []]));
  if (entryIds.length === 0) return byEntry;
  const rows = await db
    .select()
    .from(journalLines)
    .where(and(eq(journalLines.organizationId, organizationId), inArray(journalLines.entryId, [...entryIds])))
    .orderBy(asc(journalLines.entryId), asc(journalLines.lineNo));
  for (const row of rows) byEntry.get(row.entryId)?.push(row);
  return byEntry;
}

/** Creates a draft: it need not balance yet and moves no balance until it is posted. */
export async function createDraftEntry(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: DraftInput,
): Promise<Entry> {
  const date = checkDate(input.date, 'date');
  checkLineCount(input.lines, 2);
  const lines = input.lines.map((line, i) => signedLine(line, `lines[${i}]`));
  await loadPostableAccounts(tx, ctx.firmId, organizationId, lines);
  const now = nowOf(ctx);
  try {
    const [entry] = await tx
      .insert(journalEntries)
      .values({
        organizationId,
        status: 'draft',
        source: 'manual',
        entryDate: date,
        memo: input.memo ?? null,
        reference: input.reference ?? null,
        createdAt: now,
        createdByKind: ctx.actor.kind,
        createdById: ctx.actor.id,
      })
      .returning();
    const row = entry as EntryRow;
    const lineRows = await tx
      .insert(journalLines)
      .values(
        lines.map((l, i) => ({
          organizationId,
          entryId: row.id,
          lineNo: i + 1,
          accountId: l.accountId,
          description: l.description,
          amountCents: l.amountCents,
        })),
      )
      .returning();
    const draft = toEntry(row, lineRows);
    await recordEvent(tx, ctx, {
      organizationId,
      action: 'entry.created',
      resourceType: 'journal_entry',
      resourceId: row.id,
      data: { status: 'draft', date, lineCount: lines.length },
      payload: presentEntry(draft),
    });
    return draft;
  } catch (err) {
    rethrowLedgerError(err);
  }
}

/** The entry with its lines. Another organization's entry is reported exactly like a missing one. */
export async function getEntry(db: Executor, organizationId: string, id: string): Promise<Entry> {
  if (!isUuid(id)) throw entryNotFound();
  const [row] = await db
    .select()
    .from(journalEntries)
    .where(and(eq(journalEntries.organizationId, organizationId), eq(journalEntries.id, id)))
    .limit(1);
  if (!row) throw entryNotFound();
  const lines = await entryLinesOf(db, organizationId, [row.id]);
  return toEntry(row, lines.get(row.id) ?? []);
}

/** The organization's posted entries from one of `sources`: what the embedded platform shows as its transactions. */
const postedFrom = (organizationId: string, sources: readonly EntrySource[]) =>
  and(
    eq(journalEntries.organizationId, organizationId),
    eq(journalEntries.status, 'posted'),
    inArray(journalEntries.source, [...sources]),
  );

/** The entry (without its lines) when it is a posted one of the organization from one of `sources`. */
export async function postedEntryFrom(
  db: Executor,
  organizationId: string,
  sources: readonly EntrySource[],
  id: string,
): Promise<EntryRow | undefined> {
  const [row] = await db
    .select()
    .from(journalEntries)
    .where(and(postedFrom(organizationId, sources), eq(journalEntries.id, id)));
  return row;
}

/**
 * The organization's posted entries from one of `sources` (without their lines) in date order, `limit` of them from
 * `offset`, and how many there are: for lists paged by position (the embedded platform's).
 */
export async function postedEntriesAtOffset(
  db: Executor,
  organizationId: string,
  sources: readonly EntrySource[],
  offset: number,
  limit: number,
): Promise<{ rows: EntryRow[]; total: number }> {
  const rows = await db
    .select()
    .from(journalEntries)
    .where(postedFrom(organizationId, sources))
    .orderBy(asc(journalEntries.entryDate), asc(journalEntries.id))
    .offset(offset)
    .limit(limit);
  const [total] = await db.select({ n: count() }).from(journalEntries).where(postedFrom(organizationId, sources));
  return { rows, total: total?.n ?? 0 };
}

function checkAccountFilter(accountId: string | undefined): void {
  if (accountId !== undefined && !isUuid(accountId)) {
    throw new DomainError('VALIDATION_ERROR', 'accountId must be a UUID', [
      { field: 'accountId', message: 'not a UUID' },
    ]);
  }
}

function checkRange(filter: { startDate?: string | undefined; endDate?: string | undefined }): void {
  if (filter.startDate !== undefined) checkDate(filter.startDate, 'startDate');
  if (filter.endDate !== undefined) checkDate(filter.endDate, 'endDate');
}

/** Entries in date order (then id), with their lines. Drafts and void entries are included unless filtered. */
export async function listEntries(db: Executor, organizationId: string, filter: EntryFilter): Promise<Page<Entry>> {
  checkAccountFilter(filter.accountId);
  checkRange(filter);
  let after: ReturnType<typeof or>;
  if (filter.cursor) {
    const [date, id] = decodeCursor(filter.cursor, ['date', 'uuid']).map(String) as [string, string];
    after = or(gt(journalEntries.entryDate, date), and(eq(journalEntries.entryDate, date), gt(journalEntries.id, id)));
  }
  const rows = await db
    .select()
    .from(journalEntries)
    .where(
      and(
        eq(journalEntries.organizationId, organizationId),
        filter.status ? eq(journalEntries.status, filter.status) : undefined,
        filter.startDate ? gte(journalEntries.entryDate, filter.startDate) : undefined,
        filter.endDate ? lte(journalEntries.entryDate, filter.endDate) : undefined,
        filter.accountId
          ? sql`exists (select 1 from journal_lines l where l.organization_id = ${journalEntries.organizationId}
                 and l.entry_id = ${journalEntries.id} and l.account_id = ${filter.accountId})`
          : undefined,
        after,
      ),
    )
    .orderBy(asc(journalEntries.entryDate), asc(journalEntries.id))
    .limit(filter.limit + 1);
  const page = toPage(rows, filter.limit, (e) => [e.entryDate, e.id]);
  const lines = await entryLinesOf(
    db,
    organizationId,
    page.data.map((e) => e.id),
  );
  return { data: page.data.map((e) => toEntry(e, lines.get(e.id) ?? [])), nextCursor: page.nextCursor };
}

/** Lines of posted entries in (date, entry, line number) order: the detail behind every balance. */
export async function listJournalLines(
  db: Executor,
  organizationId: string,
  filter: LineFilter,
): Promise<Page<JournalLine>> {
  checkAccountFilter(filter.accountId);
  checkRange(filter);
  let after: [string, string, number] | null = null;
  if (filter.cursor) {
    const [date, entryId, lineNo] = decodeCursor(filter.cursor, ['date', 'uuid', 'int']);
    after = [String(date), String(entryId), Number(lineNo)];
  }
  const rows = rowsOf<{
    id: string;
    entry_id: string;
    line_no: number;
    date: string;
    account_id: string;
    description: string | null;
    amount_cents: number | string;
  }>(
    await db.execute(sql`
      select l.id, l.entry_id, l.line_no, e.entry_date::text as date, l.account_id, l.description, l.amount_cents
      from journal_lines l
      join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
      where l.organization_id = ${organizationId} and e.status = 'posted'
        and (${filter.accountId ?? null}::uuid is null or l.account_id = ${filter.accountId ?? null}::uuid)
        and (${filter.startDate ?? null}::date is null or e.entry_date >= ${filter.startDate ?? null}::date)
        and (${filter.endDate ?? null}::date is null or e.entry_date <= ${filter.endDate ?? null}::date)
        and (${after === null}
             or (e.entry_date, l.entry_id, l.line_no) > (${after?.[0] ?? null}::date, ${after?.[1] ?? null}::uuid, ${after?.[2] ?? null}::int))
      order by e.entry_date, l.entry_id, l.line_no
      limit ${filter.limit + 1}`),
  );
  const page = toPage(rows, filter.limit, (r) => [r.date, r.entry_id, r.line_no]);
  return {
    data: page.data.map((r) => ({
      id: r.id,
      entryId: r.entry_id,
      lineNo: r.line_no,
      date: r.date,
      accountId: r.account_id,
      description: r.description,
      ...splitAmount(Number(r.amount_cents)),
    })),
    nextCursor: page.nextCursor,
  };
}

/** The entry as the API returns it and as events carry it: instants as ISO strings. */
export const presentEntry = (entry: Entry) => ({
  ...entry,
  createdAt: entry.createdAt.toISOString(),
  postedAt: entry.postedAt?.toISOString() ?? null,
  voidedAt: entry.voidedAt?.toISOString() ?? null,
});

export type EntryResource = ReturnType<typeof presentEntry>;

/** An entry's status, or undefined when the organization has no such entry. */
export async function journalEntryStatus(
  db: Executor,
  organizationId: string,
  id: string,
): Promise<EntryStatus | undefined> {
  const [row] = rowsOf<{ status: EntryStatus }>(
    await db.execute(sql`select status from journal_entries where organization_id = ${organizationId} and id = ${id}`),
  );
  return row?.status;
}
