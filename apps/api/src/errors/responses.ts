import { ERROR_CODES, type ErrorCode, type ErrorDetail, isDomainError } from '@firm/core';
import { isConnectionLost, pgErrorOf } from '@firm/db';
import { ledgerErrorOf } from '@firm/ledger';
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { Type } from 'typebox';
import { ERROR_TABLE } from './catalogue';

// The error body's schema, sending it, and mapping anything thrown to it.

export const ErrorResponse = Type.Object(
  {
    error: Type.Object(
      {
        code: Type.Enum(ERROR_CODES, {
          description: 'Stable machine-readable code; see the x-error-codes table of this document.',
        }),
        message: Type.String(),
        retryable: Type.Boolean(),
        requestId: Type.String(),
        details: Type.Optional(
          Type.Array(
            Type.Object(
              { field: Type.Optional(Type.String()), message: Type.String() },
              { additionalProperties: true },
            ),
          ),
        ),
      },
      { title: 'ErrorBody' },
    ),
  },
  { description: 'Error', title: 'Error' },
);

/** Error responses keyed by status, for route schemas. */
export function errorResponses(...statuses: number[]): Record<number, typeof ErrorResponse> {
  return Object.fromEntries(statuses.map((s) => [s, ErrorResponse]));
}

export function sendError(
  reply: FastifyReply,
  request: FastifyRequest,
  code: ErrorCode,
  message: string,
  details?: ErrorDetail[],
): FastifyReply {
  const info = ERROR_TABLE[code];
  const error: Record<string, unknown> = { code, message, retryable: info.retryable, requestId: request.id };
  if (details && details.length > 0) error.details = details;
  // A platform's throttling carries how long to wait; say it the HTTP way too.
  const wait = details?.[0]?.retryAfterSeconds;
  if (code === 'RATE_LIMITED' && typeof wait === 'number' && !reply.hasHeader('retry-after')) {
    reply.header('retry-after', String(Math.max(1, Math.ceil(wait))));
  }
  return reply.code(info.status).send({ error });
}

interface ValidationIssue {
  instancePath?: string;
  message?: string;
  keyword?: string;
  params?: Record<string, unknown>;
}

function validationDetails(err: FastifyError): ErrorDetail[] {
  const context = (err as { validationContext?: string }).validationContext ?? 'body';
  return ((err.validation ?? []) as ValidationIssue[]).map((issue) => {
    const path = (issue.instancePath ?? '').split('/').filter(Boolean).join('.');
    const missing = issue.params?.requiredProperties ?? issue.params?.missingProperty;
    const extra = issue.params?.additionalProperties ?? issue.params?.additionalProperty;
    const leaf = Array.isArray(missing) ? missing.join(',') : Array.isArray(extra) ? extra.join(',') : undefined;
    const field = [context, path, leaf].filter(Boolean).join('.');
    let message = issue.message ?? 'is invalid';
    if (issue.keyword === 'additionalProperties') message = 'is not a known field';
    if (issue.keyword === 'required') message = 'is required';
    return { field, message };
  });
}

/**
 * A malformed Idempotency-Key, in the same words whichever of its rules it breaks and whoever finds it (the header's
 * schema, or the idempotency plugin on a route whose schema leaves the header out).
 */
export const INVALID_IDEMPOTENCY_KEY = {
  message: 'the Idempotency-Key header is not valid',
  detail: { field: 'headers.idempotency-key', message: 'must be 1-255 printable ASCII characters' },
} as const;

/** Maps anything thrown to the documented error shape. Unexpected errors are logged, never echoed. */
export function toErrorResponse(err: unknown): { code: ErrorCode; message: string; details?: ErrorDetail[] } {
  // A ledger rule the database checks at COMMIT (an entry's balance) fails outside the domain function.
  const domain = isDomainError(err) ? err : ledgerErrorOf(err);
  if (domain) return { code: domain.code, message: domain.message, details: domain.details };
  const fe = err as FastifyError;
  if (fe.validation) {
    const details = validationDetails(fe);
    // A posting without its Idempotency-Key gets the specific code that tells the client what to add.
    if (details.some((d) => d.field === 'headers.idempotency-key' && d.message === 'is required')) {
      return { code: 'IDEMPOTENCY_KEY_REQUIRED', message: 'posting routes need an Idempotency-Key header', details };
    }
    const others = details.filter((d) => d.field !== INVALID_IDEMPOTENCY_KEY.detail.field);
    if (others.length < details.length) {
      return {
        code: 'VALIDATION_ERROR',
        message: others.length === 0 ? INVALID_IDEMPOTENCY_KEY.message : 'the request failed validation',
        details: [...others, { ...INVALID_IDEMPOTENCY_KEY.detail }],
      };
    }
    return { code: 'VALIDATION_ERROR', message: 'the request failed validation', details };
  }
  switch (fe.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return { code: 'MALFORMED_JSON', message: 'the body is not valid JSON' };
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'send the body as application/json' };
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return { code: 'PAYLOAD_TOO_LARGE', message: 'the body is larger than the limit' };
  }
  if (fe.name === 'SyntaxError' && fe.statusCode === 400)
    return { code: 'MALFORMED_JSON', message: 'the body is not valid JSON' };
  const pg = pgErrorOf(err);
  // Deadlocks and serialization failures are transient: the same request can succeed when retried.
  if (pg && (pg.code === '40001' || pg.code === '40P01')) {
    return { code: 'CONFLICT', message: 'a concurrent change conflicted with this request; retry it' };
  }
  // The database connection was lost (killed, failover, shutdown): nothing was committed; retry later.
  if (isConnectionLost(err)) {
    return { code: 'SERVICE_UNAVAILABLE', message: 'the database connection was lost; nothing was committed, retry' };
  }
  if (fe.statusCode === 429) return { code: 'RATE_LIMITED', message: 'too many requests' };
  if (fe.statusCode === 413) return { code: 'PAYLOAD_TOO_LARGE', message: 'the body is larger than the limit' };
  if (fe.statusCode === 415) return { code: 'UNSUPPORTED_MEDIA_TYPE', message: 'send the body as application/json' };
  if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
    return { code: 'VALIDATION_ERROR', message: 'the request is not acceptable' };
  }
  return { code: 'INTERNAL_ERROR', message: 'unexpected error; the request id identifies it in the logs' };
}
