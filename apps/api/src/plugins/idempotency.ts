import { createHash } from 'node:crypto';
import { DomainError } from '@firm/core';
import {
  API_KEYS,
  FIRM_KEYS,
  type IdempotencyKey,
  type IdempotentOutcome,
  runOnce,
  runOnceCreation,
  replayIfUsed,
  runOnceRemote,
  type StoredResponse,
  type Tx,
} from '@firm/db';
import { type PostingInput, type PostingReceipt, postOnce } from '@firm/ledger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { INVALID_IDEMPOTENCY_KEY } from '../errors/responses';
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

/** The hash of a request's body; an action without a body (archiving a company) hashes as null. */
const requestHashOf = (request: FastifyRequest) =>
  createHash('sha256')
    .update(canonical(request.body ?? null))
    .digest('hex');

/**
 * The request's idempotency key in the API's key space (one per firm and organization, whatever the path, so that a
 * key is one request and one write): its record's primary key and the request it names.
 */
export function requestKeyOf(request: FastifyRequest): IdempotencyKey {
  return {
    key: idempotencyKeyOf(request),
    firmId: request.credential.firmId,
    organizationId: request.organization.id,
    route: API_KEYS,
    // Before 0015 a key's record was kept under its route pattern; such a record, live, still holds the key.
    formerRoute: `${request.method} ${request.routeOptions.url}`,
    target: targetOf(request),
    requestHash: requestHashOf(request),
    retentionHours: request.server.config.IDEMPOTENCY_RETENTION_HOURS,
  };
}

/** The request's key in the firm's key space: requests of the firm that create an organization. */
function firmKeyOf(request: FastifyRequest): IdempotencyKey {
  return {
    key: idempotencyKeyOf(request),
    firmId: request.credential.firmId,
    // Set to the organization the request creates, before its record is written.
    organizationId: '',
    route: FIRM_KEYS,
    formerRoute: FIRM_KEYS,
    target: targetOf(request),
    requestHash: requestHashOf(request),
    retentionHours: request.server.config.IDEMPOTENCY_RETENTION_HOURS,
  };
}

/** Sends the outcome, marking a replay. */
export function sendOutcome(reply: FastifyReply, outcome: IdempotentOutcome): FastifyReply {
  if (outcome.replayed) reply.header('idempotent-replayed', 'true');
  return reply.code(outcome.status).send(outcome.body);
}

/** What a write does under an idempotency key, in the transaction that also stores its response. */
export type IdempotentWork = (tx: Tx) => Promise<StoredResponse>;

/** Runs a write exactly once per (firm, organization, key) of the request: see `runOnce` of @firm/db. */
export async function runIdempotent(
  request: FastifyRequest,
  reply: FastifyReply,
  work: IdempotentWork,
): Promise<FastifyReply> {
  return sendOutcome(reply, await runOnce(request.server.database.db, requestKeyOf(request), work));
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
  return sendOutcome(reply, await runOnce(request.server.database.db, { ...requestKeyOf(request), requestHash }, work));
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
  const stored = await replayIfUsed(request.server.database.db, { ...requestKeyOf(request), requestHash });
  return stored ? sendOutcome(reply, stored) : null;
}

/** Runs a request of the firm that creates an organization once per (firm, key): see `runOnceCreation`. */
export async function runIdempotentCreation(
  request: FastifyRequest,
  reply: FastifyReply,
  work: (tx: Tx) => Promise<StoredResponse & { organizationId: string }>,
): Promise<FastifyReply> {
  return sendOutcome(reply, await runOnceCreation(request.server.database.db, firmKeyOf(request), work));
}

/** Runs a write to another system once per key, with no transaction held over it: see `runOnceRemote`. */
export async function runIdempotentRemote(
  request: FastifyRequest,
  reply: FastifyReply,
  work: () => Promise<StoredResponse>,
): Promise<FastifyReply> {
  return sendOutcome(reply, await runOnceRemote(request.server.database.db, requestKeyOf(request), work));
}

/**
 * Posts a ledger posting exactly once per (firm, organization, key): the hot path of the posting routes, one
 * prepared statement and no explicit transaction (see `postOnce` of @firm/ledger).
 */
export async function runIdempotentPosting(
  request: FastifyRequest,
  reply: FastifyReply,
  input: PostingInput,
  receiptOf: (receipt: PostingReceipt) => object,
): Promise<FastifyReply> {
  const k = requestKeyOf(request);
  const outcome = await postOnce(request.server.database.db, ledgerContext(request), k.organizationId, input, {
    key: k,
    receiptOf,
  });
  return sendOutcome(reply, outcome);
}
