import { DomainError, isUuid, newId } from '@firm/core';
import {
  deleteExpiredRecord,
  type Executor,
  type IdempotencyKey,
  type IdempotentOutcome,
  idempotencyInProgress,
  isKeyTaken,
  journalEntries,
  liveRecordQuery,
  replayIfUsed,
  replayOf,
  rowsOf,
  type Tx,
} from '@firm/db';
import { and, eq, sql } from 'drizzle-orm';
import { PgTransaction } from 'drizzle-orm/pg-core';
import { type LedgerContext, nowOf } from './context';
import { checkDate } from './dates';
import { rethrowLedgerError } from './db-errors';
import { type Entry, entryNotFound, getEntry, presentEntry } from './entries';
import { recordEvent } from './events';
import {
  assertBalanced,
  checkLineCount,
  checkPostableAccounts,
  loadPostableAccounts,
  type PostableAccount,
  type PostingLine,
  postableAccountsQuery,
} from './lines';
import { writePostingInTurn } from './posting-batches';
import { checkPostingAccounts, type PostingInput, postingLines, withCanonicalAccountIds } from './posting-inputs';
import { postedEvent, writePosting } from './posting-statement';

/** What a posting route returns. */
export interface PostingReceipt {
  journalEntryId: string;
  status: 'posted';
  createdAt: Date;
  postedAt: Date;
  /** The register rows written for the posting's bank-linked accounts (see `writePosting`); none when it has none. */
  bankTransactionIds: string[];
}

/** The kinds whose money side is a bank or card account: a bank-linked one gets a register row with the entry. */
const REGISTERED_KINDS = new Set(['purchase', 'deposit', 'transfer']);
const MONEY_SIDE_FIELDS = new Set(['sourceAccountId', 'destinationAccountId', 'fromAccountId', 'toAccountId']);

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

/** A posting input checked on its own: its date and its balanced lines, before any account is read. */
export interface PostingPlan {
  input: PostingInput;
  date: string;
  lines: PostingLine[];
}

/** Checks what can be checked without the database: the date, the lines, the amounts. */
export function planPosting(raw: PostingInput): PostingPlan {
  const input = withCanonicalAccountIds(raw);
  return { input, date: checkDate(input.date, 'date'), lines: postingLines(input) };
}

/** A posting ready to write: the entry as it will be stored and the receipt the caller gets. */
export interface PreparedPosting {
  entry: Entry;
  lines: PostingLine[];
  receipt: PostingReceipt;
  /**
   * The money side's lines (a purchase's source, a deposit's destination, a transfer's two accounts), each with the
   * id its register row takes if its account is linked to a bank account: the amount signed as the bank sees it.
   */
  register: { id: string; accountId: string; amountCents: number }[];
}

/**
 * Judges the accounts a plan names, from the rows of `postableAccountsQuery`: each an active account of the
 * organization (INVALID_ACCOUNT), and for a transfer a balance-sheet account (INVALID_TRANSFER).
 */
export function checkPlanAccounts(plan: PostingPlan, rows: readonly PostableAccount[]): void {
  checkPostingAccounts(plan.input, checkPostableAccounts(plan.lines, rows));
}

/** Builds the entry of a checked plan with its ids and timestamps, and the receipt the caller gets. */
export function preparePosting(ctx: LedgerContext, organizationId: string, plan: PostingPlan): PreparedPosting {
  const { input, date, lines } = plan;
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
  const register = REGISTERED_KINDS.has(input.kind)
    ? lines
        .filter((l) => l.field !== undefined && MONEY_SIDE_FIELDS.has(l.field))
        .map((l) => ({ id: newId(), accountId: l.accountId, amountCents: l.amountCents }))
    : [];
  return {
    entry,
    lines,
    register,
    receipt: { journalEntryId: entry.id, status: 'posted', createdAt: now, postedAt: now, bankTransactionIds: [] },
  };
}

/**
 * The one posting path of every caller that posts in a transaction of its own (documents, payments, banking actions,
 * the embedded platform): builds the lines of the input, checks the accounts (active accounts of this organization;
 * transfers between balance-sheet accounts), the balance and, through the database, the closed period; writes the
 * entry as posted with its lines, the daily rollup, and the audit and outbox events, all in the caller's transaction
 * (see `postOnce`).
 */
export async function postTransaction(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: PostingInput,
): Promise<PostingReceipt> {
  return (await postOnce(tx, ctx, organizationId, input)).receipt as PostingReceipt;
}

/** What `postOnce` answered: the response (stored under its key, or replayed) and, when it wrote, the receipt. */
export interface PostOnceOutcome extends IdempotentOutcome {
  /** The posting written, with its register rows' ids; null on a replay. */
  receipt: PostingReceipt | null;
}

export interface PostOnceOptions {
  /**
   * With a key: the posting is written once per key. The key's record (holding the response) is written by the
   * posting statement together with the entry; a live record is replayed instead (or refuses another request).
   */
  key?: IdempotencyKey;
  /** The response body of a posting, stored under its key: the receipt by default. */
  receiptOf?: (receipt: PostingReceipt) => object;
  /**
   * Reads the accounts before writing, so that a bad account is refused before any write is tried. The default
   * without a key (callers in a transaction of their own); the posting routes' hot path leaves it to the posting
   * statement, which checks the accounts itself, and reads them only when nothing was written.
   */
  checkFirst?: boolean;
  /**
   * What is thrown when nothing was written and neither the key's record nor the accounts say why: by default
   * 409 IDEMPOTENCY_IN_PROGRESS with a key (another request holds it), CONFLICT without one.
   */
  busy?: () => DomainError;
}

const accountChanged = () => new DomainError('CONFLICT', 'an account changed while the entry was being posted; retry');

/**
 * Posts a posting input: plan (the date, the lines, the balance, without the database) -> check (the accounts) ->
 * prepare (ids and timestamps) -> write (`writePostings`: one prepared statement) -> when nothing was written, one
 * read says why. The one implementation of posting, for every caller: the posting routes, the scheduled-entry
 * runner and, through `postTransaction`, every domain write that posts.
 *
 * On a pool (the posting routes), the statement is its own transaction: the hot path is one prepared statement and no
 * explicit transaction. It writes the entry, its lines, events, rollup and (with `key`) the key's record, all or
 * nothing, gated on the accounts being postable, on taking the key's advisory lock and on the key having no live
 * record. A crash or a killed connection leaves all of it or none. Postings of one company sent at once share that
 * statement and its commit (`writePostingInTurn`, posting-batches.ts); each is still answered as it would be alone.
 *
 * When nothing was written, one read says why: the key's live record (replayed, or refused for another body), an
 * account that cannot be posted to (422), or else `busy` (another request holding the key).
 *
 * The gate's snapshot is taken just before its lock, so a request that held the key and committed in between is
 * not seen; its record then makes this insert fail on the primary key, nothing is written, and (on a pool) the call
 * runs again and replays it. An expired record that the purge has not removed yet is deleted the same way before the
 * retry.
 */
export async function postOnce(
  db: Executor,
  ctx: LedgerContext,
  organizationId: string,
  input: PostingInput,
  options: PostOnceOptions = {},
): Promise<PostOnceOutcome> {
  const { key } = options;
  const receiptOf = options.receiptOf ?? ((r: PostingReceipt) => r);
  /**
   * A bad body under a key that already answered a request: the key's response is replayed, or this body refused as
   * another request. Whatever is wrong with the body, the caller learns first that the key is taken.
   */
  const replayOrThrow = async (err: unknown): Promise<PostOnceOutcome> => {
    if (!key || !(err instanceof DomainError)) throw err;
    const replay = await replayIfUsed(db, key);
    if (replay) return { ...replay, receipt: null };
    throw err;
  };
  let plan: PostingPlan;
  try {
    plan = planPosting(input);
  } catch (err) {
    return replayOrThrow(err);
  }
  const checkAccounts = async () =>
    checkPostingAccounts(plan.input, await loadPostableAccounts(db, ctx.firmId, organizationId, plan.lines));
  if (options.checkFirst ?? !key) await checkAccounts();
  let posting: PreparedPosting;
  try {
    posting = preparePosting(ctx, organizationId, plan);
  } catch (err) {
    return replayOrThrow(err);
  }
  const busy = options.busy ?? (key ? idempotencyInProgress : accountChanged);
  /** Why nothing was written: a replay, or a refusal thrown. */
  const whyNotWritten = async (): Promise<PostOnceOutcome> => {
    if (!key) {
      // An account was archived between the read and the write; reading again says which.
      await checkAccounts();
      throw busy();
    }
    const [read] = rowsOf<{ stored: Parameters<typeof replayOf>[1] | null; accounts: PostableAccount[] }>(
      await db.execute(sql`
        select (select row_to_json(s) from (${liveRecordQuery(key)}) s) as stored,
               (select coalesce(json_agg(a), '[]'::json)
                from (${postableAccountsQuery(
                  ctx.firmId,
                  organizationId,
                  plan.lines.map((l) => l.accountId),
                )}) a)
                 as accounts`),
    );
    if (read?.stored) return { ...replayOf(key, read.stored), receipt: null };
    checkPlanAccounts(plan, read?.accounts ?? []);
    throw busy();
  };
  if (!plan.lines.every((l) => isUuid(l.accountId))) return whyNotWritten();

  // On a pool, the statement is its own transaction: it can run again after a failed insert of the key's record, and
  // it takes its turn among the company's postings (`writePostingInTurn`). In the caller's transaction, it runs there.
  const onPool = !(db instanceof PgTransaction);
  for (let attempt = 0; ; attempt++) {
    const body = receiptOf(posting.receipt);
    const write = { ctx, posting, key: key && { ...key, response: { status: 201, body } } };
    try {
      const written = onPool ? await writePostingInTurn(db, write) : await writePosting(db, write);
      if (!written) return await whyNotWritten();
      // The register rows' ids join the receipt as the statement stored it for a replay.
      const { bankTransactionIds } = written;
      return {
        replayed: false,
        status: 201,
        body: bankTransactionIds.length > 0 ? { ...body, bankTransactionIds } : body,
        receipt: { ...posting.receipt, bankTransactionIds },
      };
    } catch (err) {
      if (!key || !onPool || !isKeyTaken(err) || attempt >= 2) throw err;
      await deleteExpiredRecord(db, key);
      posting = preparePosting(ctx, organizationId, plan);
    }
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
