import { DomainError, isUuid, newId } from '@firm/core';
import { type Executor, journalEntries, rowsOf, type Tx } from '@firm/db';
import { and, eq, type SQL, sql } from 'drizzle-orm';
import { type LedgerContext, nowOf } from './context';
import { checkDate } from './dates';
import { rethrowLedgerError } from './db-errors';
import { type Entry, entryNotFound, getEntry, presentEntry } from './entries';
import { eventCtes, type LedgerEvent, recordEvent } from './events';
import { assertBalanced, checkLineCount, loadPostableAccounts, type PostableAccount, type PostingLine } from './lines';
import { checkPostingAccounts, type PostingInput, postingLines } from './posting-inputs';

export interface PostingOptions {
  /**
   * One more write for the posting statement itself, as a data-modifying SQL statement (it becomes a CTE): the
   * caller's record of the receipt, say, so that it commits with the entry at no extra round trip. `written` is the
   * SQL condition that the entry is written; a write that must not happen without it uses it in its WHERE.
   */
  alsoWrite?: (receipt: PostingReceipt, written: SQL) => SQL;
}

/** What a posting route returns. */
export interface PostingReceipt {
  journalEntryId: string;
  status: 'posted';
  createdAt: Date;
  postedAt: Date;
}

/**
 * Adds (`sign` 1, on posting) or subtracts (`sign` -1, on voiding) an entry's lines to the daily
 * rollup the reports read. The amounts are summed from the stored lines, so the rollup follows what
 * was written, not what the caller meant to write. Rows are upserted in (account, day) order so that
 * concurrent postings lock rollup rows in the same order and cannot deadlock.
 */
async function applyToDailyBalances(tx: Tx, organizationId: string, entryId: string, sign: 1 | -1): Promise<void> {
  await tx.execute(sql`
    insert into account_daily_balances (organization_id, account_id, day, amount_cents)
    select l.organization_id, l.account_id, e.entry_date, ${sign}::int * sum(l.amount_cents)
    from journal_lines l
    join journal_entries e on e.organization_id = l.organization_id and e.id = l.entry_id
    where l.organization_id = ${organizationId} and l.entry_id = ${entryId}
    group by l.organization_id, l.account_id, e.entry_date
    order by l.account_id, e.entry_date
    on conflict (organization_id, account_id, day)
    do update set amount_cents = account_daily_balances.amount_cents + excluded.amount_cents`);
}

/** entry.posted: the audit row keeps a summary, the outbox carries the entry as the API returns it. */
const postedEvent = (entry: Entry): LedgerEvent => ({
  organizationId: entry.organizationId,
  action: 'entry.posted',
  resourceType: 'journal_entry',
  resourceId: entry.id,
  data: { source: entry.source, date: entry.date, totalCents: entry.totalCents, lineCount: entry.lines.length },
  payload: presentEntry(entry),
});

/** A posting input checked on its own: its date and its balanced lines, before any account is read. */
export interface PostingPlan {
  input: PostingInput;
  date: string;
  lines: PostingLine[];
}

/** Checks what can be checked without the database: the date, the lines, the amounts. */
export function planPosting(input: PostingInput): PostingPlan {
  return { input, date: checkDate(input.date, 'date'), lines: postingLines(input) };
}

/** A posting ready to write: the entry as it will be stored and the receipt the caller gets. */
export interface PreparedPosting {
  entry: Entry;
  lines: PostingLine[];
  receipt: PostingReceipt;
}

/**
 * Checks the plan against the accounts it names (active accounts of this organization; transfers between
 * balance-sheet accounts) and the balance, and builds the entry with its ids and timestamps.
 */
export function preparePosting(
  ctx: LedgerContext,
  organizationId: string,
  plan: PostingPlan,
  accounts: Map<string, PostableAccount>,
): PreparedPosting {
  const { input, date, lines } = plan;
  checkPostingAccounts(input, accounts);
  const totalCents = assertBalanced(lines);
  const now = nowOf(ctx);
  const entry: Entry = {
    id: newId(),
    organizationId,
    status: 'posted',
    source: input.kind,
    date,
    memo: input.memo ?? null,
    reference: input.reference ?? null,
    payeeName: input.payeeName ?? null,
    totalCents,
    createdAt: now,
    postedAt: now,
    voidedAt: null,
    voidReason: null,
    lines: lines.map((l, i) => ({
      id: newId(),
      lineNo: i + 1,
      accountId: l.accountId,
      description: l.description,
      debitCents: Math.max(l.amountCents, 0),
      creditCents: Math.max(-l.amountCents, 0),
    })),
  };
  return { entry, lines, receipt: { journalEntryId: entry.id, status: 'posted', createdAt: now, postedAt: now } };
}

/**
 * The one posting path every posting route takes: builds the lines of the input, checks the accounts
 * (active accounts of this organization; transfers between balance-sheet accounts), the balance and, through
 * the database, the closed period; writes the entry as posted with its lines, the daily rollup, and the
 * audit and outbox events, all in the caller's transaction.
 */
export async function postTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: PostingInput,
): Promise<PostingReceipt> {
  const plan = planPosting(input);
  const accounts = await loadPostableAccounts(tx, ctx.firmId, organizationId, plan.lines);
  const posting = preparePosting(ctx, organizationId, plan, accounts);
  await writePosting(tx, ctx, posting);
  return posting.receipt;
}

/**
 * Writes a prepared posting: the entry, its lines, the entry.posted events, the caller's extra write and the
 * lines' daily rollup, in one statement (one round trip on the hot path). On a pool rather than in a transaction,
 * that statement is its own transaction. With `options.gate` (a boolean SQL expression, evaluated once) nothing at
 * all is written when it is false; the result says whether the posting was written.
 *
 * The database lets a transaction write the lines of the entry it posts, checks the closed period on the entry, and
 * checks the whole entry's balance at commit. The rollup is summed from the lines as stored (the RETURNING of their
 * insert), upserted in (account, day) order so that concurrent postings lock rollup rows in the same order and
 * cannot deadlock. Those rows are the hot rows that concurrent postings to one account wait for, so this statement
 * is the posting's last: their locks are held only until the commit that follows.
 */
export async function writePosting(
  db: Executor,
  ctx: LedgerContext,
  posting: PreparedPosting,
  options: PostingOptions & { gate?: SQL } = {},
): Promise<boolean> {
  const { entry, lines, receipt } = posting;
  const at = entry.createdAt.toISOString();
  const written = sql`exists (select 1 from new_entry)`;
  const values = lines.map(
    (l, i) =>
      sql`(${entry.lines[i]?.id}::uuid, ${i + 1}::int, ${l.accountId}::uuid, ${l.description}::text, ${l.amountCents}::bigint)`,
  );
  const alsoWrite = options.alsoWrite?.(receipt, written);
  try {
    const [row] = rowsOf<{ written: boolean }>(
      await db.execute(sql`
        with gate as (select ${options.gate ?? sql`true`} as go),
        new_entry as (
          insert into journal_entries
            (id, organization_id, status, source, entry_date, memo, reference, payee_name, created_at, posted_at,
             created_by_kind, created_by_id)
          select ${entry.id}, ${entry.organizationId}, 'posted', ${entry.source}, ${entry.date}, ${entry.memo},
                 ${entry.reference}, ${entry.payeeName}, ${at}, ${at}, ${ctx.actor.kind}, ${ctx.actor.id}
          from gate where go
          returning id
        ), new_lines as (
          insert into journal_lines (id, organization_id, entry_id, line_no, account_id, description, amount_cents)
          select v.id, ${entry.organizationId}, ${entry.id}, v.line_no, v.account_id, v.description, v.amount_cents
          from (values ${sql.join(values, sql`, `)}) as v(id, line_no, account_id, description, amount_cents)
          where ${written}
          returning account_id, amount_cents
        ), ${eventCtes(ctx, postedEvent(entry), written)}${alsoWrite ? sql`, also_write as (${alsoWrite})` : sql``},
        rollup as (
          insert into account_daily_balances (organization_id, account_id, day, amount_cents)
          select ${entry.organizationId}, account_id, ${entry.date}::date, sum(amount_cents)
          from new_lines
          group by account_id
          order by account_id
          on conflict (organization_id, account_id, day)
          do update set amount_cents = account_daily_balances.amount_cents + excluded.amount_cents
        )
        select ${written} as written`),
    );
    return row?.written === true;
  } catch (err) {
    rethrowLedgerError(err);
  }
}

/** Locks the entry for the state change, so concurrent posts and voids of one entry take turns. */
async function lockEntry(tx: Tx, organizationId: string, entryId: string): Promise<Entry> {
  if (!isUuid(entryId)) throw entryNotFound();
  const [row] = await tx
    .select({ id: journalEntries.id })
    .from(journalEntries)
    .where(and(eq(journalEntries.organizationId, organizationId), eq(journalEntries.id, entryId)))
    .for('update');
  if (!row) throw entryNotFound();
  return getEntry(tx, organizationId, entryId);
}

/** draft -> posted. The draft's lines must still name active accounts and balance. */
export async function postEntry(tx: Tx, ctx: LedgerContext, organizationId: string, entryId: string): Promise<Entry> {
  const entry = await lockEntry(tx, organizationId, entryId);
  if (entry.status !== 'draft') {
    throw new DomainError('INVALID_STATE', `only a draft can be posted; this entry is ${entry.status}`);
  }
  const lines: PostingLine[] = entry.lines.map((l, i) => ({
    accountId: l.accountId,
    description: l.description,
    amountCents: l.debitCents - l.creditCents,
    field: `lines[${i}].accountId`,
  }));
  checkLineCount(lines, 2);
  await loadPostableAccounts(tx, ctx.firmId, organizationId, lines);
  const totalCents = assertBalanced(lines);
  const now = nowOf(ctx);
  try {
    await tx
      .update(journalEntries)
      .set({ status: 'posted', postedAt: now })
      .where(and(eq(journalEntries.organizationId, organizationId), eq(journalEntries.id, entry.id)));
    await applyToDailyBalances(tx, organizationId, entry.id, 1);
    const posted: Entry = { ...entry, status: 'posted', postedAt: now, totalCents };
    await recordEvent(tx, ctx, postedEvent(posted));
    return posted;
  } catch (err) {
    rethrowLedgerError(err);
  }
}

/** posted -> void. The entry and its lines stay visible; its amounts leave every balance. */
export async function voidEntry(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  entryId: string,
  reason: string,
): Promise<Entry> {
  const why = reason.trim();
  if (why.length === 0) {
    throw new DomainError('VALIDATION_ERROR', 'a void needs a reason', [{ field: 'reason', message: 'is empty' }]);
  }
  const entry = await lockEntry(tx, organizationId, entryId);
  if (entry.status !== 'posted') {
    throw new DomainError('INVALID_STATE', `only a posted entry can be voided; this entry is ${entry.status}`);
  }
  const now = nowOf(ctx);
  try {
    await tx
      .update(journalEntries)
      .set({ status: 'void', voidedAt: now, voidReason: why })
      .where(and(eq(journalEntries.organizationId, organizationId), eq(journalEntries.id, entry.id)));
    await applyToDailyBalances(tx, organizationId, entry.id, -1);
    const voided: Entry = { ...entry, status: 'void', voidedAt: now, voidReason: why };
    await recordEvent(tx, ctx, {
      organizationId,
      action: 'entry.voided',
      resourceType: 'journal_entry',
      resourceId: entry.id,
      data: { date: entry.date, totalCents: entry.totalCents, reason: why },
      payload: presentEntry(voided),
    });
    return voided;
  } catch (err) {
    rethrowLedgerError(err);
  }
}
