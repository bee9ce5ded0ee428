import { DomainError, type ErrorCode, isUuid } from '@firm/core';
import { type Executor, pgErrorOf } from '@firm/db';
import { type ActiveAccount, activeAccountRows } from '@firm/ledger';
import { type SQL, sql } from 'drizzle-orm';

export type { ActiveAccount };

/** The active (not archived) accounts of the organization among `ids`, keyed by id. */
export async function activeAccounts(
  db: Executor,
  organizationId: string,
  ids: readonly string[],
): Promise<Map<string, ActiveAccount>> {
  const wanted = [...new Set(ids.filter(isUuid))];
  if (wanted.length === 0) return new Map();
  const rows = await activeAccountRows(db, organizationId, wanted);
  return new Map(rows.map((r) => [r.id, r]));
}

export const idList = (ids: readonly string[]): SQL =>
  sql.join(
    ids.map((id) => sql`${id}::uuid`),
    sql`, `,
  );

/** INVALID_ACCOUNT pointing at the field, with the same words for missing, archived and other tenants' ids. */
export const invalidAccount = (field: string, problem = 'not an active account of this organization') =>
  new DomainError('INVALID_ACCOUNT', `${field} is ${problem}`, [{ field, message: problem }]);

/** A unique-name violation of `index` becomes a 409 with `code`; anything else is rethrown. */
export function rethrowNameTaken(err: unknown, index: string, code: ErrorCode, name: string | undefined): never {
  const pgErr = pgErrorOf(err);
  if (pgErr?.code === '23505' && pgErr.message.includes(index)) {
    throw new DomainError(code, `the name ${name ?? ''} is already used in this organization`, [
      { field: 'name', message: 'already used (names compare case-insensitively)' },
    ]);
  }
  throw err;
}

export const validation = (field: string, problem: string) =>
  new DomainError('VALIDATION_ERROR', `${field} ${problem}`, [{ field, message: problem }]);
