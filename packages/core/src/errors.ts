/**
 * Every error the service can return has a stable UPPER_SNAKE code. Domain packages throw
 * `DomainError` with one of these codes; the HTTP layer owns the mapping to a status
 * (apps/api/src/errors.ts), so domain code never speaks HTTP.
 */
export const ERROR_CODES = [
  'VALIDATION_ERROR',
  'MALFORMED_JSON',
  'UNSUPPORTED_MEDIA_TYPE',
  'PAYLOAD_TOO_LARGE',
  'UNAUTHENTICATED',
  'INSUFFICIENT_SCOPE',
  'FORBIDDEN',
  'NOT_FOUND',
  'ROUTE_NOT_FOUND',
  'ORGANIZATION_REQUIRED',
  'ORGANIZATION_NOT_FOUND',
  'ACCOUNT_NOT_FOUND',
  'ACCOUNT_CODE_TAKEN',
  'ACCOUNT_IN_USE',
  'ACCOUNT_TYPE_LOCKED',
  'INVALID_ACCOUNT',
  'ENTRY_NOT_FOUND',
  'UNBALANCED_ENTRY',
  'INVALID_STATE',
  'INVALID_TRANSFER',
  'PERIOD_CLOSED',
  'IDEMPOTENCY_KEY_REQUIRED',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_IN_PROGRESS',
  'WEBHOOK_NOT_FOUND',
  'WEBHOOK_DELIVERY_NOT_FOUND',
  'WEBHOOK_URL_REFUSED',
  'CONFLICT',
  'RATE_LIMITED',
  'SERVICE_UNAVAILABLE',
  'INTERNAL_ERROR',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

export interface ErrorDetail {
  field?: string;
  message: string;
  [key: string]: unknown;
}

export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
  ) {
    super(message);
  }
}

export const isDomainError = (err: unknown): err is DomainError => err instanceof DomainError;
