import { isDomainError } from '@firm/core';
import { type Executor, idempotencyLockKey, isConnectionLost } from '@firm/db';
import { type PostingWrite, type PostingWritten, writePosting, writePostings } from './posting-statement';

/**
 * Group commit for the postings a pool writes, one company at a time.
 *
 * A company's postings go to the database one statement at a time (`IN_FLIGHT`). A posting that finds no statement of
 * its company under way is written at once, alone, as before; one that arrives while one is under way waits, and when
 * it ends, the postings waiting by then are written together in one statement and one commit (`writePostings`). So
 * a quiet company's posting waits for nothing, and under load the statements carry more postings instead of more
 * statements queueing for the same rows: every posting of a company updates that company's daily rollup rows (and their monthly
 * and yearly rows), which a statement of several postings updates once per account and day.
 *
 * Each posting is still written whole or not at all, and answered only after the commit that holds it. When the
 * database refuses a statement of several postings (one posting names a closed period, say, or its key was stored
 * meanwhile), nothing of it was written, and each of its postings is written again alone, so each gets the answer it
 * would have had on its own. When the connection fails under it, each gets that error, as it would have alone: the
 * statement may have committed, so none is written again. Two postings under one key never share a statement: the second waits for the next turn. Nor do
 * postings of different dates (see `takeBatch`).
 *
 * Postings of different companies never share a statement, so one company's refusals and rows never touch another's.
 * A statement that waits long (on a lock another transaction holds) lets the company's next ones start beside it, a
 * few at most (`SLOW_STATEMENT_MS`).
 */

/**
 * Statements in flight per company (and process). One: a company's postings mostly update the same rollup rows, so a
 * second statement would mostly wait for the first's row locks; the bench measured 1 against 2, 3 and 4, and one
 * statement carrying what waited wrote the most postings for the least CPU, at both concurrencies.
 */
const IN_FLIGHT = 1;
/**
 * A statement under way longer than this (waiting on a lock another transaction holds, say) lets the next one start
 * beside it, and so on up to `MAX_IN_FLIGHT`: a posting whose rows are free is not held up for long by one that waits.
 * The bench's statements take a few milliseconds.
 */
const SLOW_STATEMENT_MS = 100;
const MAX_IN_FLIGHT = 4;
/** The most postings, and lines, one statement carries. A posting with more lines than that is written alone. */
const MAX_POSTINGS = 50;
const MAX_LINES = 1000;

interface Waiting {
  write: PostingWrite;
  resolve: (written: PostingWritten) => void;
  reject: (err: unknown) => void;
}

interface Company {
  firmId: string;
  organizationId: string;
  inFlight: number;
  /** Statements that may be in flight now: `IN_FLIGHT`, more while statements are slow. */
  allowed: number;
  /** Raises `allowed` once a statement has been under way `SLOW_STATEMENT_MS` with postings waiting. */
  slowTimer: NodeJS.Timeout | undefined;
  waiting: Waiting[];
}

const companiesOf = new WeakMap<object, Map<string, Company>>();

/** What a pool's posting statements have carried since the process started (the metrics read it). */
export interface PostingStatementStats {
  /** Posting statements run. */
  statements: number;
  /** Postings they carried (postings ÷ statements is the mean a statement carried; a split one's count again alone). */
  postings: number;
  /** Statements of several postings that failed, whose postings were then written alone. */
  splits: number;
}

const statsOf = new WeakMap<object, PostingStatementStats>();

/** The posting statements run through `writePostingInTurn` on the pool `db` so far. */
export function postingStatementStats(db: Executor): PostingStatementStats {
  let stats = statsOf.get(db);
  if (!stats) {
    stats = { statements: 0, postings: 0, splits: 0 };
    statsOf.set(db, stats);
  }
  return stats;
}

/**
 * Writes one posting through its company's turns on the pool `db` (see above): what `writePostings` answers for it,
 * or the error writing it alone raised.
 */
export function writePostingInTurn(db: Executor, write: PostingWrite): Promise<PostingWritten> {
  let companies = companiesOf.get(db);
  if (!companies) {
    companies = new Map();
    companiesOf.set(db, companies);
  }
  const { firmId } = write.ctx;
  const { organizationId } = write.posting.entry;
  const id = `${firmId}/${organizationId}`;
  let company = companies.get(id);
  if (!company) {
    company = { firmId, organizationId, inFlight: 0, allowed: IN_FLIGHT, slowTimer: undefined, waiting: [] };
    companies.set(id, company);
  }
  const promise = new Promise<PostingWritten>((resolve, reject) => {
    (company as Company).waiting.push({ write, resolve, reject });
  });
  startTurns(db, companies, id, company);
  return promise;
}

function startTurns(db: Executor, companies: Map<string, Company>, id: string, company: Company): void {
  while (company.inFlight < company.allowed && company.waiting.length > 0) {
    const batch = takeBatch(company);
    company.inFlight++;
    clearTimeout(company.slowTimer);
    company.slowTimer = undefined;
    void writeBatch(db, company, batch).finally(() => {
      company.inFlight--;
      // A statement ended, so none is stuck for good: back to the usual turns as the others end.
      company.allowed = Math.max(IN_FLIGHT, company.inFlight);
      clearTimeout(company.slowTimer);
      company.slowTimer = undefined;
      if (company.inFlight === 0 && company.waiting.length === 0) companies.delete(id);
      else startTurns(db, companies, id, company);
    });
  }
  if (company.waiting.length > 0 && company.slowTimer === undefined && company.allowed < MAX_IN_FLIGHT) {
    company.slowTimer = setTimeout(() => {
      company.slowTimer = undefined;
      company.allowed++;
      startTurns(db, companies, id, company);
    }, SLOW_STATEMENT_MS);
    company.slowTimer.unref();
  }
}

/**
 * The next statement's postings: the longest waiting first, and those after it of the same date, without two that take
 * one advisory lock (one key), within the limits. One date per statement keeps its rollup locks in the order a single
 * posting's take: its daily rows in (account, day) order, then, as each daily row's trigger fires, that account's
 * monthly row and yearly row. A statement with two months of one account would lock that year's row before its second
 * month's row, which a posting of that second month takes the other way round: a deadlock. One date is the simplest
 * rule that rules it out.
 */
function takeBatch(company: Company): Waiting[] {
  const batch: Waiting[] = [];
  const keys = new Set<string>();
  const rest: Waiting[] = [];
  let lines = 0;
  for (const waiting of company.waiting) {
    const { key, posting } = waiting.write;
    const lockKey = key ? idempotencyLockKey(key) : null;
    const fits =
      batch.length === 0 ||
      (batch.length < MAX_POSTINGS &&
        posting.entry.date === batch[0]?.write.posting.entry.date &&
        lines + posting.lines.length <= MAX_LINES &&
        (lockKey === null || !keys.has(lockKey)));
    if (!fits) {
      rest.push(waiting);
      continue;
    }
    batch.push(waiting);
    lines += posting.lines.length;
    if (lockKey !== null) keys.add(lockKey);
  }
  company.waiting = rest;
  return batch;
}

async function writeBatch(db: Executor, company: Company, batch: Waiting[]): Promise<void> {
  const stats = postingStatementStats(db);
  const writeAlone = async ({ write, resolve, reject }: Waiting) => {
    stats.statements++;
    stats.postings++;
    try {
      resolve(await writePosting(db, write));
    } catch (err) {
      reject(err);
    }
  };
  if (batch.length === 1) return writeAlone(batch[0] as Waiting);
  let written: PostingWritten[];
  stats.statements++;
  stats.postings += batch.length;
  try {
    written = await writePostings(
      db,
      company.firmId,
      company.organizationId,
      batch.map((w) => w.write),
    );
  } catch (err) {
    if (!refusedWhole(err)) {
      // The connection failed under the statement: it may have committed, so no posting of it is written again.
      for (const waiting of batch) waiting.reject(err);
      return;
    }
    // Nothing of the statement was written; each posting alone gets its own answer.
    stats.splits++;
    for (const waiting of batch) await writeAlone(waiting);
    return;
  }
  batch.forEach((waiting, i) => waiting.resolve(written[i] ?? null));
}

/**
 * Whether the database answered the statement with an error, so that it was rolled back whole: a ledger rule's
 * refusal, or an error the server reported at severity ERROR (not FATAL, after which the session is gone) for a
 * connection that still stands. After anything else (a connection lost or shut down, a socket error) the statement
 * may have committed without its answer arriving, so its postings are not written again.
 */
function refusedWhole(err: unknown): boolean {
  if (isDomainError(err)) return true;
  let current: unknown = err;
  for (let depth = 0; current && depth < 5; depth++) {
    const e = current as { severity?: unknown; cause?: unknown };
    if (typeof e.severity === 'string') return e.severity === 'ERROR' && !isConnectionLost(current);
    current = e.cause;
  }
  return false;
}
