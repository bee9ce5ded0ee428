import { createHash } from 'node:crypto';
import { DomainError, isUuid } from '@firm/core';
import { pgErrorOf, rowsOf, type Tx } from '@firm/db';
import {
  checkPlanAccounts,
  idempotencyLockKey,
  type PostableAccount,
  type PostingInput,
  type PostingPlan,
  type PostingReceipt,
  type PreparedPosting,
  planPosting,
  postableAccountsQuery,
  preparePosting,
  writePosting,
} from '@firm/ledger';
import { type SQL, sql } from 'drizzle-orm';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { INVALID_IDEMPOTENCY_KEY } from '../errors';
import { ledgerContext } from '../routes/context';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
/** What a key is made of: printable ASCII, no space. The header's schema states it with the length bounds. */
const KEY_PATTERN = '^[\\x21-\\x7e]+$';
const KEY_MAX_LENGTH = 255;
const KEY_FORMAT = new RegExp(KEY_PATTERN);

/** What a key means, as the OpenAPI document and the MCP tools describe it. */
export const IDEMPOTENCY_KEY_RULES =
  '1-255 printable ASCII characters, unique per logical request (a UUID is a good choice). A key names one request ' +
  'of the organization: its method, its path (with the ids in it) and its body. The same request again replays ' +
  'the stored response with `Idempotent-Replayed: true`; the key with another body, or on another method or path, ' +
  'is 422 IDEMPOTENCY_KEY_REUSED; while the first request runs it is 409 IDEMPOTENCY_IN_PROGRESS.';

export const IdempotencyHeaders = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.String({
    minLength: 1,
    maxLength: KEY_MAX_LENGTH,
    pattern: KEY_PATTERN,
    description: `Required. ${IDEMPOTENCY_KEY_RULES}`,
  }),
});

/** The header on writes that are safe to repeat anyway: honoured when sent. */
export const OptionalIdempotencyHeaders = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.Optional({
    ...IdempotencyHeaders.properties[IDEMPOTENCY_HEADER],
    description: `Optional; with it a retry never writes twice. ${IDEMPOTENCY_KEY_RULES}`,
  }),
});

/** Stable JSON: object keys sorted, so that the same body always hashes the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

export function idempotencyKeyOf(request: FastifyRequest): string {
  const raw = request.headers[IDEMPOTENCY_HEADER];
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (!key) {
    throw new DomainError('IDEMPOTENCY_KEY_REQUIRED', 'posting routes need an Idempotency-Key header', [
      { field: 'headers.idempotency-key', message: 'is required' },
    ]);
  }
  if (!KEY_FORMAT.test(key) || key.length > KEY_MAX_LENGTH) {
    throw new DomainError('VALIDATION_ERROR', INVALID_IDEMPOTENCY_KEY.message, [{ ...INVALID_IDEMPOTENCY_KEY.detail }]);
  }
  return key;
}

interface StoredResponse {
  status: number;
  body: unknown;
}

/**
 * The key space of requests to the API: one per firm and organization, whatever the path, so that a key is one
 * request (and one write) and the key's record is one row under the primary key.
 */
const API_KEYS = 'api';

/**
 * The request a key names: its method and its path as the route's parameters spell it (the entity, the record's id),
 * with the query parameters that change the write. `dryRun` does not: a dry run never reaches a key's record.
 */
function targetOf(request: FastifyRequest): string {
  const params = (request.params ?? {}) as Record<string, unknown>;
  const pattern = request.routeOptions.url ?? request.url.split('?')[0] ?? '';
  const path = pattern.replace(/:(\w+)/g, (_, name: string) => encodeURIComponent(String(params[name] ?? '')));
  const query = Object.entries((request.query ?? {}) as Record<string, unknown>)
    .filter(([name, value]) => name !== 'dryRun' && value !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([name, value]): [string, string] => [name, String(value)]);
  return `${request.method} ${path}${query.length > 0 ? `?${new URLSearchParams(query)}` : ''}`;
}

/** Everything that names a request's idempotency key: the record's primary key and the request it names. */
function keyOf(request: FastifyRequest) {
  const key = idempotencyKeyOf(request);
  const firmId = request.credential.firmId;
  const organizationId = request.organization.id;
  // Before 0015 a key's record was kept under its route pattern; such a record, live, still holds the key.
  const formerRoute = `${request.method} ${request.routeOptions.url}`;
  return {
    key,
    firmId,
    organizationId,
    route: API_KEYS,
    formerRoute,
    target: targetOf(request),
    // An action without a body (archiving a company) hashes as null.
    requestHash: createHash('sha256')
      .update(canonical(request.body ?? null))
      .digest('hex'),
    retentionHours: request.server.config.IDEMPOTENCY_RETENTION_HOURS,
    same: sql`k.firm_id = ${firmId} and k.organization_id = ${organizationId} and k.key = ${key}
      and k.route in (${API_KEYS}, ${formerRoute})`,
    // A key with a record of each kind (one from before 0015 on this route, one since on another path) answers as
    // its first use did.
    first: sql`order by k.route = ${API_KEYS} limit 1`,
  };
}
type KeyOf = ReturnType<typeof keyOf>;

/**
 * The firm's key space: requests of the firm that create an organization (a new company), which no organization
 * names yet. One key, one request of the firm; its record is kept under the organization the request created
 * (the unique index `idempotency_keys_firm_key` makes it one record per firm and key).
 */
const FIRM_KEYS = 'firm';

function firmKeyOf(request: FastifyRequest): KeyOf {
  const key = idempotencyKeyOf(request);
  const firmId = request.credential.firmId;
  return {
    key,
    firmId,
    // Set to the organization the request creates, before its record is written.
    organizationId: '',
    route: FIRM_KEYS,
    formerRoute: FIRM_KEYS,
    target: targetOf(request),
    requestHash: createHash('sha256')
      .update(canonical(request.body ?? null))
      .digest('hex'),
    retentionHours: request.server.config.IDEMPOTENCY_RETENTION_HOURS,
    same: sql`k.firm_id = ${firmId} and k.route = ${FIRM_KEYS} and k.key = ${key}`,
    first: sql`limit 1`,
  };
}

interface StoredRecord {
  target: string | null;
  request_hash: string;
  response_status: number;
  response_body: unknown;
}

/** The key's live record, as a replay (same request) or a refusal (another request). */
function replayOf(k: KeyOf, stored: StoredRecord): StoredResponse & { replayed: true } {
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

/** The insert of the key's record holding the response; with `when`, only if that condition holds. */
function recordOf(k: KeyOf, status: number, body: unknown, when?: SQL): SQL {
  return sql`
    insert into idempotency_keys
      (firm_id, organization_id, route, key, target, request_hash, response_status, response_body, expires_at)
    select ${k.firmId}, ${k.organizationId}, ${k.route}, ${k.key}, ${k.target}, ${k.requestHash}, ${status},
           ${JSON.stringify(body)}::jsonb, now() + make_interval(hours => ${k.retentionHours})
    ${when ? sql`where ${when}` : sql``}`;
}

const isKeyTaken = (err: unknown) => {
  const pgErr = pgErrorOf(err);
  return (
    pgErr?.code === '23505' &&
    (pgErr.constraint === 'idempotency_keys_pkey' || pgErr.constraint === 'idempotency_keys_firm_key')
  );
};

/** Sends the outcome, marking a replay. */
function send(reply: FastifyReply, outcome: StoredResponse & { replayed: boolean }): FastifyReply {
  if (outcome.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(outcome.status).send(outcome.body);
}

/** What a posting does under an idempotency key, in the transaction that also stores its response. */
export type IdempotentWork = (tx: Tx) => Promise<StoredResponse>;

/**
 * Runs a posting exactly once per (firm, organization, key), for postings that need a transaction of
 * several statements (document payments, which lock what they pay).
 *
 * One transaction takes a transaction-scoped advisory lock on the key and, in the same statement, drops an
 * expired record of the key and looks for a live one; then runs the posting and stores its response in the key's
 * record. The record and the posting commit together, so a crash leaves both or neither; a second
 * request with the key while the first holds the lock gets 409 IDEMPOTENCY_IN_PROGRESS instead of waiting.
 *
 * The lookup's snapshot is taken just before the lock, so a request that held the key and committed in between
 * is not seen. Its record then makes this request's insert fail on the primary key, which rolls this posting back,
 * and the whole call runs again: it sees the record and replays it.
 */
export async function runIdempotent(
  request: FastifyRequest,
  reply: FastifyReply,
  work: IdempotentWork,
): Promise<FastifyReply> {
  return runUnderKey(request, reply, keyOf(request), work);
}

/**
 * `runIdempotent` for a request whose body is a stream read by the handler (an imported file): the handler hashes
 * what it read, and that hash stands for the body.
 */
export async function runIdempotentHashed(
  request: FastifyRequest,
  reply: FastifyReply,
  requestHash: string,
  work: IdempotentWork,
): Promise<FastifyReply> {
  return runUnderKey(request, reply, { ...keyOf(request), requestHash }, work);
}

/**
 * For a keyed request refused before its work runs (a file with bad rows): the key's live record is replayed, or
 * refuses this request as another one, so that the caller learns first that the key is taken. Null: the key is free.
 */
export async function replayHashed(
  request: FastifyRequest,
  reply: FastifyReply,
  requestHash: string,
): Promise<FastifyReply | null> {
  const k = { ...keyOf(request), requestHash };
  const [stored] = rowsOf<StoredRecord>(
    await request.server.database.db.execute(sql`select k.target, k.request_hash, k.response_status, k.response_body
      from idempotency_keys k where ${k.same} and k.expires_at > now() ${k.first}`),
  );
  return stored ? send(reply, replayOf(k, stored)) : null;
}

async function runUnderKey(
  request: FastifyRequest,
  reply: FastifyReply,
  k: KeyOf,
  work: IdempotentWork,
): Promise<FastifyReply> {
  const attempt = () =>
    request.server.database.db.transaction(async (tx) => {
      const found = await lockKey(tx, k);
      if (found) return found;
      const result = await work(tx);
      await tx.execute(recordOf(k, result.status, result.body));
      return { replayed: false, ...result };
    });

  const outcome = await attempt().catch((err: unknown) => {
    if (isKeyTaken(err)) return attempt();
    throw err;
  });
  return send(reply, outcome);
}

/**
 * Takes the key's transaction-scoped advisory lock and, in the same statement, drops an expired record of the key and
 * reads a live one: its replay (or refusal), null when the key is free, or 409 IDEMPOTENCY_IN_PROGRESS while another
 * request holds it.
 */
async function lockKey(tx: Tx, k: KeyOf): Promise<(StoredResponse & { replayed: true }) | null> {
  const [found] = rowsOf<{ locked: boolean } & Partial<StoredRecord>>(
    await tx.execute(sql`
      with l as (select pg_try_advisory_xact_lock(hashtextextended(${idempotencyLockKey(k)}, 0)) as locked),
      expired as (
        delete from idempotency_keys k using l where l.locked and ${k.same} and k.expires_at <= now()
      )
      select l.locked, k.target, k.request_hash, k.response_status, k.response_body
      from l left join idempotency_keys k on l.locked and ${k.same} and k.expires_at > now()
      ${k.first}`),
  );
  if (!found?.locked) throw inProgress();
  return found.request_hash ? replayOf(k, found as StoredRecord) : null;
}

/**
 * Runs a request of the firm that creates an organization once per (firm, key), as `runIdempotent` does for a
 * request of an organization: under the key's lock, the organization, its events and the key's record (kept under
 * the new organization) commit together. A request with the key that committed after this one's snapshot makes this
 * one fail (on the key's record, or on what it created, such as a company's name); the record it left is then
 * replayed, or refuses this request when it was another.
 */
export async function runIdempotentCreation(
  request: FastifyRequest,
  reply: FastifyReply,
  work: (tx: Tx) => Promise<StoredResponse & { organizationId: string }>,
): Promise<FastifyReply> {
  const k = firmKeyOf(request);
  const db = request.server.database.db;
  try {
    const outcome = await db.transaction(async (tx) => {
      const found = await lockKey(tx, k);
      if (found) return found;
      const { organizationId, ...result } = await work(tx);
      await tx.execute(recordOf({ ...k, organizationId }, result.status, result.body));
      return { replayed: false, ...result };
    });
    return send(reply, outcome);
  } catch (err) {
    if (err instanceof DomainError && err.code === 'IDEMPOTENCY_IN_PROGRESS') throw err;
    const [stored] = rowsOf<StoredRecord>(
      await db.execute(sql`select k.target, k.request_hash, k.response_status, k.response_body
        from idempotency_keys k where ${k.same} and k.expires_at > now() ${k.first}`),
    );
    if (stored) return send(reply, replayOf(k, stored));
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
export async function runIdempotentRemote(
  request: FastifyRequest,
  reply: FastifyReply,
  work: () => Promise<StoredResponse>,
): Promise<FastifyReply> {
  const k = keyOf(request);
  const db = request.server.database.db;
  const live = async () =>
    rowsOf<StoredRecord>(
      await db.execute(sql`select k.target, k.request_hash, k.response_status, k.response_body from idempotency_keys k
        where ${k.same} and k.expires_at > now() ${k.first}`),
    )[0];
  const earlier = await live();
  if (earlier) return send(reply, replayOf(k, earlier));
  const result = await work();
  try {
    await db.transaction(async (tx) => {
      await tx.execute(sql`delete from idempotency_keys k where ${k.same} and k.expires_at <= now()`);
      await tx.execute(recordOf(k, result.status, result.body));
    });
  } catch (err) {
    const first = isKeyTaken(err) ? await live() : undefined;
    if (!first) throw err;
    return send(reply, replayOf(k, first));
  }
  return send(reply, { replayed: false, ...result });
}

const inProgress = () =>
  new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is still running; retry');

/**
 * Posts a ledger posting exactly once per (firm, organization, key): the hot path of the posting routes, one
 * prepared statement and no explicit transaction. That statement (see `writePosting`) writes the entry, its lines,
 * events, rollup and the key's record, all or nothing, gated on the accounts being postable, on taking the key's
 * advisory lock and on the key having no live record. A crash or a killed connection leaves all of it or none.
 *
 * When nothing was written, one read says why: the key's live record (replayed, or refused for another body), an
 * account that cannot be posted to (422), or else another request holding the key (409 IDEMPOTENCY_IN_PROGRESS).
 *
 * The gate's snapshot is taken just before its lock, so a request that held the key and committed in between is
 * not seen; its record then makes this insert fail on the primary key, nothing is written, and the call runs again
 * and replays it. An expired record that the purge has not removed yet is deleted the same way before the retry.
 */
export async function runIdempotentPosting(
  request: FastifyRequest,
  reply: FastifyReply,
  input: PostingInput,
  receiptOf: (receipt: PostingReceipt) => object,
): Promise<FastifyReply> {
  const k = keyOf(request);
  const db = request.server.database.db;
  const ctx = ledgerContext(request);
  const live = sql`select k.target, k.request_hash, k.response_status, k.response_body from idempotency_keys k
    where ${k.same} and k.expires_at > now() ${k.first}`;
  let plan: PostingPlan;
  let posting: PreparedPosting;
  try {
    plan = planPosting(input);
    posting = preparePosting(ctx, k.organizationId, plan);
  } catch (err) {
    // A key that already answered a request replays it, or refuses this body as another request: whatever is
    // wrong with this body, the caller learns first that the key is taken.
    if (!(err instanceof DomainError)) throw err;
    const [stored] = rowsOf<StoredRecord>(await db.execute(live));
    if (stored) return send(reply, replayOf(k, stored));
    throw err;
  }
  /** Why nothing was written: a replay, or a refusal thrown. */
  const whyNotWritten = async () => {
    const [read] = rowsOf<{ stored: StoredRecord | null; accounts: PostableAccount[] }>(
      await db.execute(sql`
        select (select row_to_json(s) from (${live}) s) as stored,
               (select coalesce(json_agg(a), '[]'::json)
                from (${postableAccountsQuery(
                  k.firmId,
                  k.organizationId,
                  plan.lines.map((l) => l.accountId),
                )}) a)
                 as accounts`),
    );
    if (read?.stored) return send(reply, replayOf(k, read.stored));
    checkPlanAccounts(plan, read?.accounts ?? []);
    throw inProgress();
  };
  if (!plan.lines.every((l) => isUuid(l.accountId))) return whyNotWritten();

  for (let attempt = 0; ; attempt++) {
    const body = receiptOf(posting.receipt);
    try {
      const written = await writePosting(db, ctx, posting, { ...k, response: { status: 201, body } });
      if (written) {
        // The register rows' ids join the receipt as the statement stored it for a replay.
        const { bankTransactionIds } = written;
        const sent = bankTransactionIds.length > 0 ? { ...body, bankTransactionIds } : body;
        return send(reply, { replayed: false, status: 201, body: sent });
      }
      return await whyNotWritten();
    } catch (err) {
      if (!isKeyTaken(err) || attempt >= 2) throw err;
      await db.execute(sql`delete from idempotency_keys k where ${k.same} and k.expires_at <= now()`);
      posting = preparePosting(ctx, k.organizationId, plan);
    }
  }
}
