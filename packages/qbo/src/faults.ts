import { DomainError, type ErrorDetail } from '@firm/core';

/** One error of a QBO `Fault`, whichever casing the body uses (`Fault.Error[]`, or `fault.error[]` on some 401s). */
export interface QboFaultError {
  code: string;
  message: string;
  detail: string;
  element: string | null;
}

export interface QboFault {
  type: string;
  errors: QboFaultError[];
}

const text = (value: unknown) =>
  typeof value === 'string' ? value : value === null || value === undefined ? '' : String(value);

/**
 * The Fault of a response body, or null when it has none. An upload's answer carries it inside its item
 * (`AttachableResponse[0].Fault`).
 */
export function faultOf(body: unknown): QboFault | null {
  if (typeof body !== 'object' || body === null) return null;
  const record = body as Record<string, unknown>;
  const items = record.AttachableResponse;
  if (Array.isArray(items)) {
    for (const item of items) {
      const nested = faultOf({ Fault: (item as Record<string, unknown> | null)?.Fault });
      if (nested) return nested;
    }
  }
  const fault = (record.Fault ?? record.fault) as Record<string, unknown> | undefined | null;
  if (typeof fault !== 'object' || fault === null) return null;
  const list = (fault.Error ?? fault.error) as unknown;
  const errors = (Array.isArray(list) ? list : []).map((e: Record<string, unknown>) => ({
    code: text(e.code ?? e.Code),
    message: text(e.Message ?? e.message),
    detail: text(e.Detail ?? e.detail),
    element: e.element === null || e.element === undefined || e.element === '' ? null : text(e.element),
  }));
  return { type: text(fault.type ?? fault.Type), errors };
}

/** Throttling, in the codes QBO uses for it. */
export const isThrottleFault = (fault: QboFault | null) =>
  fault !== null && (/throttl/i.test(fault.type) || fault.errors.some((e) => e.code === '003001' || e.code === '3001'));

/** Authentication (an expired or revoked token), in the codes and types QBO uses for it (a 401 says AUTHENTICATION). */
export const isAuthenticationFault = (fault: QboFault | null) =>
  fault !== null && (/authentication/i.test(fault.type) || fault.errors.some((e) => /^0*320\d$/.test(e.code)));

const detailsOf = (fault: QboFault): ErrorDetail[] =>
  fault.errors.map((e) => ({
    message: e.detail || e.message,
    ...(e.element ? { field: e.element } : {}),
    platform: 'qbo',
    platformCode: e.code,
    platformMessage: e.message,
  }));

/**
 * The gateway's error for a QBO Fault: a stale SyncToken (5010) is STALE_SYNC_TOKEN (the adapter adds the current
 * record), an object not found (610) RECORD_NOT_FOUND, a duplicate name (6240) CONFLICT, an unsupported operation
 * (500) OPERATION_NOT_SUPPORTED, a query parser error (4000, 4001) QUERY_INVALID, any other ValidationFault
 * VALIDATION_ERROR, throttling RATE_LIMITED, an AuthorizationFault FORBIDDEN; anything else PLATFORM_ERROR. Each carries QBO's code and detail.
 */
export function faultError(fault: QboFault, status: number): DomainError {
  const codes = new Set(fault.errors.map((e) => e.code));
  const first = fault.errors[0];
  const message = first
    ? `QuickBooks: ${first.message}${first.detail ? ` (${first.detail})` : ''}`
    : 'QuickBooks fault';
  const details = detailsOf(fault);
  if (codes.has('5010')) return new DomainError('STALE_SYNC_TOKEN', message, details);
  if (codes.has('610')) return new DomainError('RECORD_NOT_FOUND', message, details);
  if (codes.has('6240')) return new DomainError('CONFLICT', message, details);
  if (codes.has('500') && /validation/i.test(fault.type))
    return new DomainError('OPERATION_NOT_SUPPORTED', message, details);
  if (codes.has('4000') || codes.has('4001')) return new DomainError('QUERY_INVALID', message, details);
  if (isThrottleFault(fault) || status === 429) return new DomainError('RATE_LIMITED', message, details);
  // Authorization (not authentication): the company does not let this app do it (a lapsed subscription, a role).
  if (/authorization/i.test(fault.type) || status === 403) return new DomainError('FORBIDDEN', message, details);
  if (/validation/i.test(fault.type)) return new DomainError('VALIDATION_ERROR', message, details);
  return new DomainError('PLATFORM_ERROR', message, details);
}
