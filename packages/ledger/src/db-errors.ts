import { DomainError, ERROR_CODES, type ErrorCode } from '@firm/core';
import { pgErrorOf } from '@firm/db';

// The ledger triggers (migrations/0003_ledger_invariants.sql) raise P0001 with '<ERROR_CODE>: <message>'.
const RULE_MESSAGE = /^([A-Z][A-Z_]*): (.+)$/s;

const isErrorCode = (value: string): value is ErrorCode => (ERROR_CODES as readonly string[]).includes(value);

/**
 * The DomainError for a database error raised by a ledger rule, or null when the error is something
 * else. Exported because deferred rules (an entry's balance) only fire at COMMIT, outside the domain
 * function, so whoever commits may want the same mapping.
 */
export function ledgerErrorOf(err: unknown): DomainError | null {
  const pgErr = pgErrorOf(err);
  if (!pgErr) return null;
  if (pgErr.code === 'P0001') {
    const m = RULE_MESSAGE.exec(pgErr.message);
    if (m?.[1] && m[2] && isErrorCode(m[1])) return new DomainError(m[1], m[2]);
  }
  // The composite foreign key refuses a line naming an account of another organization.
  if (pgErr.code === '23503' && pgErr.message.includes('journal_lines_account_fk')) {
    return new DomainError('INVALID_ACCOUNT', 'a line names an account that is not an account of this organization');
  }
  // A sum past what bigint holds: a day's rollup or a balance beyond 9.2 * 10^18 cents.
  if (pgErr.code === '22003') {
    return new DomainError(
      'AMOUNT_OUT_OF_RANGE',
      'a total or balance would be larger than the ledger can keep; amounts are exact up to 2^53-1 cents',
    );
  }
  return null;
}

export function rethrowLedgerError(err: unknown): never {
  throw ledgerErrorOf(err) ?? err;
}
