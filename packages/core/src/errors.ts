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
  'METHOD_NOT_ALLOWED',
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
  'AMOUNT_OUT_OF_RANGE',
  'IDEMPOTENCY_KEY_REQUIRED',
  'IDEMPOTENCY_KEY_REUSED',
  'IDEMPOTENCY_IN_PROGRESS',
  'WEBHOOK_NOT_FOUND',
  'WEBHOOK_DELIVERY_NOT_FOUND',
  'WEBHOOK_URL_REFUSED',
  'CONFLICT',
  'CONTACT_NOT_FOUND',
  'CONTACT_NAME_TAKEN',
  'INVALID_CONTACT',
  'WRONG_CONTACT_KIND',
  'ITEM_NOT_FOUND',
  'ITEM_NAME_TAKEN',
  'INVALID_ITEM',
  'TAX_RATE_NOT_FOUND',
  'TAX_RATE_NAME_TAKEN',
  'INVALID_TAX_RATE',
  'DOCUMENT_NOT_FOUND',
  'DOCUMENT_NUMBER_TAKEN',
  'LINE_TARGET_REQUIRED',
  'ZERO_TOTAL',
  'CONTROL_ACCOUNT_MISSING',
  'DOCUMENT_NOT_EDITABLE',
  'DOCUMENT_HAS_PAYMENTS',
  'INVALID_ALLOCATION',
  'DUPLICATE_ALLOCATION',
  'OVER_ALLOCATION',
  'ALLOCATION_EXCEEDS_PAYMENT',
  'BANK_ACCOUNT_NOT_FOUND',
  'BANK_ACCOUNT_TAKEN',
  'BANK_TRANSACTION_NOT_FOUND',
  'ALREADY_RECONCILED',
  'SPLIT_MISMATCH',
  'AMOUNT_MISMATCH',
  'RECONCILIATION_NOT_FOUND',
  'RECONCILIATION_OPEN',
  'NO_OPEN_RECONCILIATION',
  'RECONCILIATION_UNBALANCED',
  'BANK_FEED_NOT_FOUND',
  'AGGREGATOR_ERROR',
  'PUBLIC_TOKEN_REFUSED',
  'CLIENT_NOT_FOUND',
  'CLIENT_READ_ONLY',
  'ENTITY_NOT_COVERED',
  'OPERATION_NOT_SUPPORTED',
  'RECORD_NOT_FOUND',
  'STALE_SYNC_TOKEN',
  'QUERY_INVALID',
  'CLIENT_NEEDS_REAUTH',
  'PLATFORM_ERROR',
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
