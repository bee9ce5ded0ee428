import { type AccountSubtype, type AccountType, DomainError, isUuid } from '@firm/core';
import { type Executor, openSnapshot, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { inNormalDirection } from './account-ledger';
import { rollupRows } from './balances';
import { addDays, checkDateRange } from './dates';
import type { ReportAccount } from './reports';

/**
 * The general ledger: per account, the balance before startDate, each posted line in [startDate, endDate] with a
 * running balance, and the closing balance. Its size grows with the books, unlike the other reports, so it is read in
 * two steps: a summary (each account's opening and closing balance and number of lines), which decides against the
 * caller's limit before any line is read, then the lines, account by account, a page at a time. Held in memory, a
 * report is at most one page of lines.
 */

/** Lines per report unless the caller says otherwise (the API takes its limit from GENERAL_LEDGER_MAX_LINES). */
export const DEFAULT_GENERAL_LEDGER_MAX_LINES = 50_000;
/** Lines read per statement. */
export const GENERAL_LEDGER_PAGE_LINES = 5_000;

export interface GeneralLedgerLine {
  entryId: string;
  lineId: string;
  lineNo: number;
  date: string;
  memo: string | null;
  description: string | null;
  debitCents: number;
  creditCents: number;
  runningBalanceCents: number;
}

export interface GeneralLedgerAccount extends ReportAccount {
  openingBalanceCents: number;
  lines: GeneralLedgerLine[];
  closingBalanceCents: number;
}

export interface GeneralLedger {
  startDate: string;
  endDate: string;
  accounts: GeneralLedgerAccount[];
}

export interface GeneralLedgerQuery {
  startDate: string;
  endDate: string;
  accountId?: string | undefined;
}

export interface GeneralLedgerLimits {
  /** The most lines a report may list; beyond it REPORT_TOO_LARGE, before any line is read. */
  maxLines?: number | undefined;
  /** Lines read per statement. */
  pageLines?: number | undefined;
}

/** An account of the general ledger as the summary gives it: everything but its lines. */
export interface GeneralLedgerAccountSummary extends ReportAccount {
  openingBalanceCents: number;
  /** Posted lines in the range. */
  lineCount: number;
  closingBalanceCents: number;
}

/** A general ledger being read: its summary, then its lines a page at a time. `close` must be called. */
export interface GeneralLedgerReader {
  startDate: string;
  endDate: string;
  /** Posted lines in the range, all accounts together. */
  lineCount: number;
  /**
   * Every account with an opening balance or lines in the range (or just `accountId`, even when it is quiet), in
   * code order.
   */
  accounts: GeneralLedgerAccountSummary[];
  /** The account's lines in date order (then entry and line number), with running balances, a page at a time. */
  pages(account: GeneralLedgerAccountSummary): AsyncGenerator<GeneralLedgerLine[]>;
  /** Ends the reading (on Postgres, the transaction it reads in); safe to call more than once. */
  close(): Promise<void>;
}

const accountNotFound = () => new DomainError('ACCOUNT_NOT_FOUND', 'account not found');
const thousands = (n: number) => n.toLocaleString('en-US');

/**
 * Opens a general ledger: reads its summary and refuses, with REPORT_TOO_LARGE, a range with more lines than
 * `maxLines`, saying how many it has and how to narrow it. On Postgres the summary and every page are read in one
 * read-only snapshot (see `openSnapshot`), so the lines add up to the balances the summary gave.
 */
export async function openGeneralLedger(
  db: Executor,
  organizationId: string,
  query: GeneralLedgerQuery,
  limits: GeneralLedgerLimits = {},
): Promise<GeneralLedgerReader> {
  checkDateRange(query.startDate, query.endDate);
  const accountId = query.accountId ?? null;
  if (accountId !== null && !isUuid(accountId)) throw accountNotFound();
  const maxLines = limits.maxLines ?? DEFAULT_GENERAL_LEDGER_MAX_LINES;
  const pageLines = limits.pageLines ?? GENERAL_LEDGER_PAGE_LINES;
  const snapshot = await openSnapshot(db);
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await snapshot.release();
  };
  try {
    const accounts = await summary(snapshot.db, organizationId, query, accountId);
    const lineCount = accounts.reduce((n, a) => n + a.lineCount, 0);
    if (lineCount > maxLines) {
      throw new DomainError(
        'REPORT_TOO_LARGE',
        `the general ledger from ${query.startDate} to ${query.endDate} has ${thousands(lineCount)} lines, more ` +
          `than the ${thousands(maxLines)} one report may hold: ask for a shorter date range (startDate, endDate)` +
          `${accountId === null ? ' or for one account (accountId)' : ''}`,
        [{ field: 'query', message: 'too many lines in the range', lineCount, maxLines }],
      );
    }
    return {
      startDate: query.startDate,
      endDate: query.endDate,
      lineCount,
      accounts,
      async *pages(account) {
        if (account.lineCount === 0) return;
        const type = account.type;
        // Running balances are added up here, page after page, debit-positive from the opening balance (the normal
        // direction is its own inverse).
        let running = inNormalDirection(type, account.openingBalanceCents);
        let after: [string, string, number] | null = null;
        for (;;) {
          if (closed) throw new Error('the general ledger was closed');
          const rows = await linePage(snapshot.db, organizationId, query, account.accountId, after, pageLines);
          if (rows.length === 0) return;
          const page = rows.map((r) => {
            const amount = Number(r.amount);
            running += amount;
            return {
              entryId: r.entry_id,
              lineId: r.line_id,
              lineNo: r.line_no,
              date: r.date,
              memo: r.memo,
              description: r.description,
              debitCents: amount > 0 ? amount : 0,
              creditCents: amount < 0 ? -amount : 0,
              runningBalanceCents: inNormalDirection(type, running),
            };
          });
          yield page;
          if (rows.length < pageLines) return;
          const last = rows[rows.length - 1] as LineRow;
          after = [last.date, last.entry_id, last.line_no];
        }
      },
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

async function summary(
  db: Executor,
  organizationId: string,
  query: GeneralLedgerQuery,
  accountId: string | null,
): Promise<GeneralLedgerAccountSummary[]> {
  const accounts = rowsOf<{ id: string; code: string; name: string; type: AccountType; subtype: AccountSubtype }>(
    await db.execute(sql`
      select id, code, name, type, subtype from accounts
      where organization_id = ${organizationId} and (${accountId}::uuid is null or id = ${accountId}::uuid)
      order by code`),
  );
  if (accountId !== null && accounts.length === 0) throw accountNotFound();
  const openings = rowsOf<{ account_id: string; opening: number | string }>(
    await db.execute(sql`
      select account_id, sum(amount_cents) as opening
      from ${rollupRows(organizationId, null, addDays(query.startDate, -1), accountId)} r
      group by account_id
      having sum(amount_cents) <> 0`),
  );
  // One pass over the range's lines, none of them brought back: how many per account, and their sum.
  const activity = rowsOf<{ account_id: string; lines: number | string; net: number | string }>(
    await db.execute(sql`
      select l.account_id, count(*) as lines, sum(l.amount_cents) as net
      from journal_lines l
      join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
      where l.organization_id = ${organizationId} and e.status = 'posted'
        and e.entry_date between ${query.startDate}::date and ${query.endDate}::date
        and (${accountId}::uuid is null or l.account_id = ${accountId}::uuid)
      group by l.account_id`),
  );
  const openingOf = new Map(openings.map((o) => [o.account_id, Number(o.opening)]));
  const activityOf = new Map(activity.map((a) => [a.account_id, { lines: Number(a.lines), net: Number(a.net) }]));
  const result: GeneralLedgerAccountSummary[] = [];
  for (const a of accounts) {
    const opening = openingOf.get(a.id) ?? 0;
    const { lines, net } = activityOf.get(a.id) ?? { lines: 0, net: 0 };
    if (accountId === null && opening === 0 && lines === 0) continue;
    result.push({
      accountId: a.id,
      code: a.code,
      name: a.name,
      type: a.type,
      subtype: a.subtype,
      openingBalanceCents: inNormalDirection(a.type, opening),
      lineCount: lines,
      closingBalanceCents: inNormalDirection(a.type, opening + net),
    });
  }
  return result;
}

interface LineRow {
  entry_id: string;
  line_id: string;
  line_no: number;
  date: string;
  memo: string | null;
  description: string | null;
  amount: number | string;
}

/**
 * One account's posted lines in the range after a (date, entry, line number) key, in that order. The key's date also
 * bounds the entries' dates, which their index can use: each page starts where the last one ended.
 */
async function linePage(
  db: Executor,
  organizationId: string,
  query: GeneralLedgerQuery,
  accountId: string,
  after: [string, string, number] | null,
  limit: number,
): Promise<LineRow[]> {
  return rowsOf<LineRow>(
    await db.execute(sql`
      select l.entry_id, l.id as line_id, l.line_no, e.entry_date::text as date, e.memo, l.description,
             l.amount_cents as amount
      from journal_lines l
      join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
      where l.organization_id = ${organizationId} and l.account_id = ${accountId} and e.status = 'posted'
        and e.entry_date between ${after?.[0] ?? query.startDate}::date and ${query.endDate}::date
        and (${after === null}
          or (e.entry_date, l.entry_id, l.line_no) > (${after?.[0] ?? null}::date, ${after?.[1] ?? null}::uuid, ${after?.[2] ?? null}::int))
      order by e.entry_date, l.entry_id, l.line_no
      limit ${limit}`),
  );
}

/**
 * The whole general ledger in memory, within `limits.maxLines` lines (REPORT_TOO_LARGE beyond): for callers that
 * need it as one value. Callers that send it on should read it in pages with `openGeneralLedger`.
 */
export async function generalLedger(
  db: Executor,
  organizationId: string,
  query: GeneralLedgerQuery,
  limits: GeneralLedgerLimits = {},
): Promise<GeneralLedger> {
  const reader = await openGeneralLedger(db, organizationId, query, limits);
  try {
    const accounts: GeneralLedgerAccount[] = [];
    for (const account of reader.accounts) {
      const lines: GeneralLedgerLine[] = [];
      for await (const page of reader.pages(account)) lines.push(...page);
      const { lineCount: _, closingBalanceCents, ...rest } = account;
      accounts.push({ ...rest, lines, closingBalanceCents });
    }
    return { startDate: reader.startDate, endDate: reader.endDate, accounts };
  } finally {
    await reader.close();
  }
}
