import { type AccountType, DomainError, type ErrorDetail, isUuid } from '@firm/core';
import { type Executor, rowsOf } from '@firm/db';
import { type SQL, sql } from 'drizzle-orm';

/**
 * A line ready to store. `amountCents` is signed like `journal_lines.amount_cents`: debits positive,
 * credits negative. `field` says where the line came from in the caller's input, so errors can point at it.
 */
export interface PostingLine {
  accountId: string;
  description: string | null;
  amountCents: number;
  field: string;
}

/** A line as callers write it: exactly one of `debitCents` and `creditCents`, a positive whole number of cents. */
export interface DebitCreditLine {
  accountId: string;
  description?: string | null | undefined;
  debitCents?: number | null | undefined;
  creditCents?: number | null | undefined;
}

/** VALIDATION_ERROR whose message is "<field> <problem>" and whose detail points at the field. */
const invalid = (field: string, problem: string) =>
  new DomainError('VALIDATION_ERROR', `${field} ${problem}`, [{ field, message: problem }]);

/** A positive whole number of cents that every JSON parser reads exactly. */
export function checkCents(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw invalid(field, 'must be a positive whole number of cents');
  }
  return value;
}

export function signedLine(line: DebitCreditLine, field: string): PostingLine {
  const hasDebit = line.debitCents !== undefined && line.debitCents !== null;
  const hasCredit = line.creditCents !== undefined && line.creditCents !== null;
  if (hasDebit === hasCredit) {
    throw invalid(field, 'needs exactly one of debitCents and creditCents');
  }
  const amountCents = hasDebit
    ? checkCents(line.debitCents, `${field}.debitCents`)
    : -checkCents(line.creditCents, `${field}.creditCents`);
  return { accountId: line.accountId, description: line.description ?? null, amountCents, field };
}

export function checkLineCount(lines: readonly unknown[], min: number, field = 'lines'): void {
  if (lines.length < min) throw invalid(field, `needs at least ${min} line${min === 1 ? '' : 's'}`);
}

/**
 * Debits must equal credits. Returns the total of the debits. The database checks the same at commit;
 * checking here first gives the caller the difference.
 */
export function assertBalanced(lines: readonly PostingLine[]): number {
  let debitCents = 0;
  let creditCents = 0;
  for (const line of lines) {
    if (line.amountCents > 0) debitCents += line.amountCents;
    else creditCents -= line.amountCents;
  }
  if (!Number.isSafeInteger(debitCents) || !Number.isSafeInteger(creditCents)) {
    throw invalid('lines', 'total more cents than can be represented exactly');
  }
  if (debitCents !== creditCents) {
    const differenceCents = debitCents - creditCents;
    throw new DomainError(
      'UNBALANCED_ENTRY',
      `debits (${debitCents}) and credits (${creditCents}) differ by ${Math.abs(differenceCents)} cents`,
      [{ field: 'lines', message: 'debits must equal credits', debitCents, creditCents, differenceCents }],
    );
  }
  return debitCents;
}

export interface PostableAccount {
  id: string;
  code: string;
  name: string;
  type: AccountType;
}

/**
 * The query for the active (not archived) accounts of the organization that `ids` name, for callers that run it
 * inside a statement of their own; `checkPostableAccounts` then judges its rows.
 */
export function postableAccountsQuery(firmId: string, organizationId: string, ids: readonly string[]): SQL {
  const valid = [...new Set(ids.filter(isUuid))];
  if (valid.length === 0)
    return sql`select null::uuid as id, null::text as code, null::text as name, null::account_type as type where false`;
  return sql`
    select a.id, a.code, a.name, a.type
    from accounts a
    join organizations o on o.id = a.organization_id
    where a.organization_id = ${organizationId} and o.firm_id = ${firmId} and not a.archived
      and a.id in (${sql.join(
        valid.map((id) => sql`${id}::uuid`),
        sql`, `,
      )})`;
}

/**
 * The accounts the lines name, keyed by id, from the rows of `postableAccountsQuery`. Any other id, whether
 * missing, archived or another tenant's, gets the same INVALID_ACCOUNT, so the error does not tell a caller
 * whether an id exists elsewhere.
 */
export function checkPostableAccounts(
  refs: readonly { accountId: string; field: string }[],
  rows: readonly PostableAccount[],
): Map<string, PostableAccount> {
  // Ids come back in lower case; a caller may write a UUID in either.
  const found = new Map(rows.map((r) => [r.id.toLowerCase(), r]));
  const missing = (r: { accountId: string }) => !found.has(r.accountId.toLowerCase());
  const bad: ErrorDetail[] = refs
    .filter(missing)
    .map((r) => ({ field: r.field, message: 'not an active account of this organization' }));
  if (bad.length > 0) {
    const first = refs.find(missing);
    throw new DomainError(
      'INVALID_ACCOUNT',
      bad.length === 1
        ? `account ${first?.accountId} is not an active account of this organization`
        : `${bad.length} lines name accounts that are not active accounts of this organization`,
      bad,
    );
  }
  return found;
}

/**
 * The active (not archived) accounts of the organization that the lines name, keyed by id (see
 * `checkPostableAccounts`). The organization must belong to the acting firm.
 */
export async function loadPostableAccounts(
  db: Executor,
  firmId: string,
  organizationId: string,
  refs: readonly { accountId: string; field: string }[],
): Promise<Map<string, PostableAccount>> {
  const ids = refs.map((r) => r.accountId);
  const rows = ids.some(isUuid)
    ? rowsOf<PostableAccount>(await db.execute(postableAccountsQuery(firmId, organizationId, ids)))
    : [];
  return checkPostableAccounts(refs, rows);
}
