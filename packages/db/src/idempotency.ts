import { DomainError } from '@firm/core';
import { type SQL, sql } from 'drizzle-orm';
import { type Db, type Executor, pgErrorOf, rowsOf, type Tx } from './connection';

/**
 * Idempotency keys: what makes a write run once per key, whoever sends it (an HTTP request, the scheduled-entry
 * runner, a write an agent asked for and a person approved). Every statement that reads or writes
 * `idempotency_keys` lives here; callers name the key and say what the write is.
 */

/** The key space of requests to the API: one per firm and organization, whatever the path. */
export const API_KEYS = 'api';

/**
 * The firm's key space: requests of the firm that create an organization (a new company), which no organization
 * names yet. The record is kept under the organization the request created (the key's advisory lock, which every
 * writer under it takes before reading it, makes it one record per firm and key).
 */
export const FIRM_KEYS = 'firm';

/** A key and the request it names: the record's primary key, what a replay is compared with, how long it lives. */
export interface IdempotencyKey {
  key: string;
  firmId: string;
  /** The organization the write is of; in the firm's key space (`FIRM_KEYS`), '' until the write creates it. */
  organizationId: string;
  /** The key space the key is unique in (`api` for requests to the API, `firm` for the firm's). */
  route: string;
  /**
   * Where an earlier release stored this request's key (its route pattern): a live record there holds the key too.
   */
  formerRoute?: string | null;
  /** Method and path of the request, stored so that the key on another path is refused; null: none to compare. */
  target?: string | null;
  /** The request's hash: the same key with another hash is another request, refused. */
  requestHash: string;
  retentionHours: number;
}

/** A write's response, as sent and as stored under its key. */
export interface StoredResponse {
  status: number;
  body: unknown;
}

/** What a write under a key answered: its own response, or (`replayed`) the one stored by the key's first use. */
export interface IdempotentOutcome extends StoredResponse {
  replayed: boolean;
}

interface StoredRecord {
  target: string | null;
  request_hash: string;
  response_status: number;
  response_body: unknown;
}

/** What a key's transaction-scoped advisory lock hashes: every writer under one key takes the same lock. */
export const idempotencyLockKey = (k: Pick<IdempotencyKey, 'firmId' | 'organizationId' | 'route' | 'key'>): string =>
  `${k.firmId}|${k.organizationId}|${k.route}|${k.key}`;

/** The key's records (`k` is idempotency_keys): in the firm's key space by firm, else by organization. */
function sameOf(k: IdempotencyKey): SQL {
  if (k.route === FIRM_KEYS) return sql`k.firm_id = ${k.firmId} and k.route = ${FIRM_KEYS} and k.key = ${k.key}`;
  return sql`k.firm_id = ${k.firmId} and k.organization_id = ${k.organizationId} and k.key = ${k.key}
      and k.route in (${k.route}, ${k.formerRoute ?? k.route})`;
}

/**
 * Of several records of a key, the one that answers. A key with a record of each kind (one from before 0015 on its
 * route pattern, one since in the key space) answers as its first use did.
 */
function firstOf(k: IdempotencyKey): SQL {
  return k.route === FIRM_KEYS ? sql`limit 1` : sql`order by k.route = ${k.route} limit 1`;
}

/** The statement reading the key's live record (target, request_hash, response_status, response_body). */
export function liveRecordQuery(k: IdempotencyKey): SQL {
  return sql`select k.target, k.request_hash, k.response_status, k.response_body from idempotency_keys k
    where ${sameOf(k)} and k.expires_at > now() ${firstOf(k)}`;
}

/** The key's live record as a replay (the same request) or a refusal thrown (another request). */
export function replayOf(k: IdempotencyKey, stored: StoredRecord): IdempotentOutcome & { replayed: true } {
  // Another resource's response would tell the caller its write was done: the key is refused instead.
  if (stored.target && stored.target !== k.target) {
    throw new DomainError(
      'IDEMPOTENCY_KEY_REUSED',
      `this Idempotency-Key was used for ${stored.target}; use a new key for a new request`,
    );
  }
  if (stored.request_hash !== k.requestHash) {
    throw new DomainError(
      'IDEMPOTENCY_KEY_REUSED',
      'this Idempotency-Key was used with a different request; use a new key for a new request',
    );
  }
  return { replayed: true, status: stored.response_status, body: stored.response_body };
}

/** The key's live record, replayed (or refused), or null when the key is free. */
export async function replayIfUsed(
  db: Executor,
  k: IdempotencyKey,
): Promise<(IdempotentOutcome & { replayed: true }) | null> {
  const [stored] = rowsOf<StoredRecord>(await db.execute(liveRecordQuery(k)));
  return stored ? replayOf(k, stored) : null;
}

/** The refusal of a key another request holds right now. */
export const idempotencyInProgress = () =>
  new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is still running; retry');

/** Whether an error is the insert of a key's record that another request stored first. */
export const isKeyTaken = (err: unknown) => {
  const pgErr = pgErrorOf(err);
  return pgErr?.code === '23505' && pgErr.constraint === 'idempotency_keys_pkey';
};

/** Deletes the key's expired record, which the purge has not removed yet. */
export async function deleteExpiredRecord(db: Executor, k: IdempotencyKey): Promise<void> {
  await db.execute(sql`delete from idempotency_keys k where ${sameOf(k)} and k.expires_at <= now()`);
}

/** The insert of the key's record holding the response. */
function recordOf(k: IdempotencyKey, status: number, body: unknown): SQL {
  return sql`
    insert into idempotency_keys
      (firm_id, organization_id, route, key, target, request_hash, response_status, response_body, expires_at)
    select ${k.firmId}, ${k.organizationId}, ${k.route}, ${k.key}, ${k.target ?? null}, ${k.requestHash}, ${status},
           ${JSON.stringify(body)}::jsonb, now() + make_interval(hours => ${k.retentionHours})`;
}

/**
 * Takes the key's transaction-scoped advisory lock and, in the same statement, drops an expired record of the key and
 * reads a live one: its replay (or refusal), null when the key is free, or 409 IDEMPOTENCY_IN_PROGRESS while another
 * request holds it.
 */
async function lockKey(tx: Tx, k: IdempotencyKey): Promise<(IdempotentOutcome & { replayed: true }) | null> {
  const same = sameOf(k);
  const [found] = rowsOf<{ locked: boolean } & Partial<StoredRecord>>(
    await tx.execute(sql`
      with l as (select pg_try_advisory_xact_lock(hashtextextended(${idempotencyLockKey(k)}, 0)) as locked),
      expired as (
        delete from idempotency_keys k using l where l.locked and ${same} and k.expires_at <= now()
      )
      select l.locked, k.target, k.request_hash, k.response_status, k.response_body
      from l left join idempotency_keys k on l.locked and ${same} and k.expires_at > now()
      ${firstOf(k)}`),
  );
  if (!found?.locked) throw idempotencyInProgress();
  return found.request_hash ? replayOf(k, found as StoredRecord) : null;
}

/** What a write does under an idempotency key, in the transaction that also stores its response. */
export type IdempotentWork = (tx: Tx) => Promise<StoredResponse>;

/**
 * Runs a write exactly once per key, for writes that need a transaction of several statements (document payments,
 * which lock what they pay; an agent's write through a platform adapter).
 *
 * One transaction takes a transaction-scoped advisory lock on the key and, in the same statement, drops an
 * expired record of the key and looks for a live one; then runs the write and stores its response in the key's
 * record. The record and the write commit together, so a crash leaves both or neither; a second request with the
 * key while the first holds the lock gets 409 IDEMPOTENCY_IN_PROGRESS instead of waiting.
 *
 * The lookup's snapshot is taken just before the lock, so a request that held the key and committed in between
 * is not seen. Its record then makes this request's insert fail on the primary key, which rolls this write back,
 * and the whole call runs again: it sees the record and replays it.
 */
export async function runOnce(db: Db, k: IdempotencyKey, work: IdempotentWork): Promise<IdempotentOutcome> {
  const attempt = () =>
    db.transaction(async (tx) => {
      const found = await lockKey(tx, k);
      if (found) return found;
      const result = await work(tx);
      await tx.execute(recordOf(k, result.status, result.body));
      return { replayed: false, ...result };
    });
  return attempt().catch((err: unknown) => {
    if (isKeyTaken(err)) return attempt();
    throw err;
  });
}

/**
 * Runs a write of the firm that creates an organization once per (firm, key) (`k` in the firm's key space), as
 * `runOnce` does for a write of an organization: under the key's lock, the organization, its events and the key's
 * record (kept under the new organization) commit together. A request with the key that committed after this one's
 * snapshot makes this one fail (on the key's record, or on what it created, such as a company's name); the record it
 * left is then replayed, or refuses this request when it was another.
 */
export async function runOnceCreation(
  db: Db,
  k: IdempotencyKey,
  work: (tx: Tx) => Promise<StoredResponse & { organizationId: string }>,
): Promise<IdempotentOutcome> {
  try {
    return await db.transaction(async (tx) => {
      const found = await lockKey(tx, k);
      if (found) return found;
      const { organizationId, ...result } = await work(tx);
      await tx.execute(recordOf({ ...k, organizationId }, result.status, result.body));
      return { replayed: false, ...result };
    });
  } catch (err) {
    if (err instanceof DomainError && err.code === 'IDEMPOTENCY_IN_PROGRESS') throw err;
    const replay = await replayIfUsed(db, k);
    if (replay) return replay;
    throw err;
  }
}

/**
 * Runs a write to another system (a client's accounting platform over HTTP) once per key, without holding a
 * database transaction over the remote call. The remote system is what makes a repeat the same write: the caller
 * derives the platform's own request id from the key, so two requests with one key (a retry, or two at once) reach
 * the platform as one write and get the same record back. A live record of the key replays; afterwards the
 * response is stored, and if another request stored the key first, that record is replayed instead.
 */
export async function runOnceRemote(
  db: Db,
  k: IdempotencyKey,
  work: () => Promise<StoredResponse>,
): Promise<IdempotentOutcome> {
  const earlier = await replayIfUsed(db, k);
  if (earlier) return earlier;
  const result = await work();
  try {
    await db.transaction(async (tx) => {
      await deleteExpiredRecord(tx, k);
      await tx.execute(recordOf(k, result.status, result.body));
    });
  } catch (err) {
    const first = isKeyTaken(err) ? await replayIfUsed(db, k) : null;
    if (!first) throw err;
    return first;
  }
  return { replayed: false, ...result };
}

const p = sql.placeholder;

/**
 * For a statement that writes under keys in one round trip (the ledger's posting statement), for each row `s` of its
 * input: true when the row has no key (`s.key` null), or when this statement takes the key's advisory lock
 * (`s.lock_key`) and the key has no live record under `s.route` or `s.former_route`. Placeholders: firmId,
 * organizationId.
 */
export const keyIsFreeSql = sql`(s.key is null or (
          pg_try_advisory_xact_lock(hashtextextended(s.lock_key, 0))
          and not exists (
            select 1 from idempotency_keys k
            where k.firm_id = ${p('firmId')} and k.organization_id = ${p('organizationId')}
              and k.key = s.key and k.route in (s.route, s.former_route) and k.expires_at > now())))`;

/**
 * For the same statement: the insert of the records of the keys of the rows `w` of `from` that have one (columns key,
 * route, target, request_hash, response_status, response_body, retention_hours), each response body merged with
 * `extra` (a jsonb). Placeholders: firmId, organizationId.
 */
export const keyRecordSql = (from: SQL, extra: SQL) => sql`insert into idempotency_keys
        (firm_id, organization_id, route, key, target, request_hash, response_status, response_body, expires_at)
      select ${p('firmId')}, ${p('organizationId')}, w.route, w.key, w.target, w.request_hash, w.response_status,
             w.response_body || ${extra}, now() + make_interval(hours => w.retention_hours)
      from ${from}
      where w.key is not null`;

/**
 * Deletes idempotency records past their retention window (they are already ignored by lookups), so the
 * table holds about one window of postings. Run periodically by the server and on demand by the CLI.
 */
export async function purgeExpiredIdempotencyKeys(db: Executor): Promise<number> {
  const rows = rowsOf<{ n: number }>(
    await db.execute(sql`with d as (delete from idempotency_keys where expires_at <= now() returning 1)
      select count(*)::int as n from d`),
  );
  return rows[0]?.n ?? 0;
}
