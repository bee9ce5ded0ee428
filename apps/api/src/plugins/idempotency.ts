import { createHash } from 'node:crypto';
import { DomainError } from '@firm/core';
import { pgErrorOf, rowsOf, type Tx } from '@firm/db';
import { type SQL, sql } from 'drizzle-orm';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';

export const IDEMPOTENCY_HEADER = 'idempotency-key';
const KEY_FORMAT = /^[\x21-\x7e]{1,255}$/;

export const IdempotencyHeaders = Type.Object({
  [IDEMPOTENCY_HEADER]: Type.String({
    minLength: 1,
    maxLength: 255,
    description:
      'Required. 1-255 printable ASCII characters, unique per logical request (a UUID is a good choice). ' +
      'The same key with the same body replays the stored receipt with `Idempotent-Replayed: true`; with another ' +
      'body it is 422 IDEMPOTENCY_KEY_REUSED; while the first request runs it is 409 IDEMPOTENCY_IN_PROGRESS.',
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
  if (!KEY_FORMAT.test(key)) {
    throw new DomainError('VALIDATION_ERROR', 'the Idempotency-Key header is not valid', [
      { field: 'headers.idempotency-key', message: 'must be 1-255 printable ASCII characters' },
    ]);
  }
  return key;
}

interface StoredResponse {
  status: number;
  body: unknown;
}

/**
 * What a posting does under an idempotency key. `record(status, body)` is the insert of the key's record holding
 * the response; a posting that can run it inside its own last statement does so (one round trip less, and the
 * record commits with the entry by construction). Otherwise the record is inserted after the work.
 */
export type IdempotentWork = (tx: Tx, record: (status: number, body: unknown) => SQL) => Promise<StoredResponse>;

const isKeyTaken = (err: unknown) => {
  const pgErr = pgErrorOf(err);
  return pgErr?.code === '23505' && pgErr.constraint === 'idempotency_keys_pkey';
};

/**
 * Runs a posting exactly once per (firm, organization, route, key).
 *
 * One transaction takes a transaction-scoped advisory lock on the key and, in the same statement, drops an
 * expired record of the key and looks for a live one; then runs the posting, which stores the response in a
 * record of its own. The record and the posting commit together, so a crash leaves both or neither; a second
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
  const key = idempotencyKeyOf(request);
  const firmId = request.credential.firmId;
  const organizationId = request.organization.id;
  const route = `${request.method} ${request.routeOptions.url}`;
  const requestHash = createHash('sha256').update(canonical(request.body)).digest('hex');
  const retentionHours = request.server.config.IDEMPOTENCY_RETENTION_HOURS;
  const lockName = `${firmId}|${organizationId}|${route}|${key}`;
  const sameKey = sql`k.firm_id = ${firmId} and k.organization_id = ${organizationId} and k.route = ${route}
    and k.key = ${key}`;

  const attempt = () =>
    request.server.database.db.transaction(async (tx) => {
      const [found] = rowsOf<{
        locked: boolean;
        request_hash: string | null;
        response_status: number | null;
        response_body: unknown;
      }>(
        await tx.execute(sql`
          with l as (select pg_try_advisory_xact_lock(hashtextextended(${lockName}, 0)) as locked),
          expired as (
            delete from idempotency_keys k using l where l.locked and ${sameKey} and k.expires_at <= now()
          )
          select l.locked, k.request_hash, k.response_status, k.response_body
          from l left join idempotency_keys k on l.locked and ${sameKey} and k.expires_at > now()`),
      );
      if (!found?.locked) {
        throw new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this Idempotency-Key is still running; retry');
      }
      if (found.request_hash !== null) {
        if (found.request_hash !== requestHash) {
          throw new DomainError(
            'IDEMPOTENCY_KEY_REUSED',
            'this Idempotency-Key was used with a different request; use a new key for a new request',
          );
        }
        return { replayed: true, status: found.response_status as number, body: found.response_body };
      }
      let recorded = false;
      const record = (status: number, body: unknown) => {
        recorded = true;
        return sql`
          insert into idempotency_keys
            (firm_id, organization_id, route, key, request_hash, response_status, response_body, expires_at)
          values (${firmId}, ${organizationId}, ${route}, ${key}, ${requestHash}, ${status},
                  ${JSON.stringify(body)}::jsonb, now() + make_interval(hours => ${retentionHours}))`;
      };
      const result = await work(tx, record);
      if (!recorded) await tx.execute(record(result.status, result.body));
      return { replayed: false, ...result };
    });

  const outcome = await attempt().catch((err: unknown) => {
    if (isKeyTaken(err)) return attempt();
    throw err;
  });
  if (outcome.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(outcome.status).send(outcome.body);
}
