import { describe, expect, it } from 'vitest';
import { toErrorResponse } from './errors';

/** Errors as the pg driver raises them (a code, a constraint, a message), possibly wrapped by Drizzle. */
const pgError = (code: string, message: string) => Object.assign(new Error(message), { code });
const wrapped = (cause: Error) => Object.assign(new Error('Failed query: commit'), { cause });

describe('toErrorResponse', () => {
  it('maps a ledger rule the database raises at commit to its domain code', () => {
    const err = wrapped(
      pgError('P0001', 'UNBALANCED_ENTRY: posted entry x does not balance: its lines sum to 5 cents'),
    );
    expect(toErrorResponse(err)).toMatchObject({ code: 'UNBALANCED_ENTRY' });
  });

  it('answers a lost connection with a retryable 503 and a deadlock with a retryable 409', () => {
    expect(toErrorResponse(wrapped(new Error('Connection terminated unexpectedly'))).code).toBe('SERVICE_UNAVAILABLE');
    expect(toErrorResponse(pgError('57P01', 'terminating connection due to administrator command')).code).toBe(
      'SERVICE_UNAVAILABLE',
    );
    expect(toErrorResponse(wrapped(pgError('40P01', 'deadlock detected'))).code).toBe('CONFLICT');
  });

  it('never echoes an unexpected error', () => {
    const res = toErrorResponse(pgError('42P01', 'relation "secret_table" does not exist'));
    expect(res).toEqual({ code: 'INTERNAL_ERROR', message: expect.not.stringContaining('secret_table') });
  });
});
