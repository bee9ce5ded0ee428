import { createHash } from 'node:crypto';
import { DomainError } from '@firm/core';
import { type Tx, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
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

/** Another request with the key committed between this one's snapshot and its lock; this one must not store. */
class KeyTakenMeanwhile extends Error {}

/**
 * Runs a posting exactly once per (firm, organization, route, key).
 *
 * One transaction takes a transaction-scoped advisory lock on the key and, in the same statement, looks for a
 * stored response; then runs the posting and stores its response. The record and the posting commit together, so
 * a crash leaves both or neither; a second request with the key while the first holds the lock gets
 * 409 IDEMPOTENCY_IN_PROGRESS instead of waiting.
 *
 * The lookup's snapshot is taken just before the lock, so a request that held the key and committed in between
 * is not seen. The insert at the end then finds that request's live record, stores nothing and rolls this
 * posting back, and the whole call runs again: it sees the record and replays it.
 */
export async function runIdempotent(
  request: FastifyRequest,
  reply: FastifyReply,
  work: (tx: Tx) => Promise<StoredResponse>,
): Promise<FastifyReply> {
  const key = idempotencyKeyOf(request);
  const firmId = request.credential.firmId;
  const organizationId = request.organization.id;
  const route = `${request.method} ${request.routeOptions.url}`;
  const requestHash = createHash('sha256').update(canonical(request.body)).digest('hex');
  const retentionHours = request.server.config.IDEMPOTENCY_RETENTION_HOURS;
  const lockName = `${firmId}|${organizationId}|${route}|${key}`;

  const attempt = () =>
    request.server.database.db.transaction(async (tx) => {
      const [found] = rowsOf<{
        locked: boolean;
        request_hash: string | null;
        response_status: number | null;
        response_body: unknown;
      }>(
        await tx.execute(sql`
          select l.locked, k.request_hash, k.response_status, k.response_body
          from (select pg_try_advisory_xact_lock(hashtextextended(${lockName}, 0)) as locked) l
          left join idempotency_keys k
            on l.locked and k.firm_id = ${firmId} and k.organization_id = ${organizationId} and k.route = ${route}
              and k.key = ${key} and k.expires_at > now()`),
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
      const result = await work(tx);
      // An expired record (not yet purged) is replaced; a live one means another request got here first.
      const stored = rowsOf(
        await tx.execute(sql`
          insert into idempotency_keys
            (firm_id, organization_id, route, key, request_hash, response_status, response_body, expires_at)
          values (${firmId}, ${organizationId}, ${route}, ${key}, ${requestHash}, ${result.status},
                  ${JSON.stringify(result.body)}::jsonb, now() + make_interval(hours => ${retentionHours}))
          on conflict (firm_id, organization_id, route, key) do update
            set request_hash = excluded.request_hash, response_status = excluded.response_status,
                response_body = excluded.response_body, created_at = now(), expires_at = excluded.expires_at
            where idempotency_keys.expires_at <= now()
          returning 1`),
      );
      if (stored.length === 0) throw new KeyTakenMeanwhile();
      return { replayed: false, ...result };
    });

  const outcome = await attempt().catch((err: unknown) => {
    if (err instanceof KeyTakenMeanwhile) return attempt();
    throw err;
  });
  if (outcome.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(outcome.status).send(outcome.body);
}
