import {
  ACCOUNT_SUBTYPES,
  ACCOUNT_TYPES,
  type AccountSubtype,
  type AccountType,
  accountTypeFromCode,
  DEFAULT_SUBTYPE,
  DomainError,
  type ErrorDetail,
  newId,
} from '@firm/core';
import { journalEntries, organizations, rowsOf, type Tx } from '@firm/db';
import { and, eq, sql } from 'drizzle-orm';
import { parse } from 'csv-parse/sync';
import type { Account } from './accounts';
import { companyArchived } from './companies';
import { type LedgerContext, nowOf } from './context';
import { addDays, checkDate } from './dates';
import { type Entry, getEntry } from './entries';
import type { DebitCreditLine } from './lines';
import { setBooksClosedThrough } from './periods';
import { postTransaction, voidEntry } from './posting';

/** The most rows one opening-balances request may carry. */
export const OPENING_BALANCE_MAX_ROWS = 10_000;

/** The name the account that takes the difference between the debits and credits is found by, and created with. */
export const OPENING_BALANCE_EQUITY_NAME = 'Opening balance equity';

/**
 * One row of opening balances: the account (by code, by name, or `account`, tried as a code then as a name), its
 * balance in exactly one of `debit` and `credit` (decimal strings, at most two decimals, never negative), and for an
 * account to be created its `type` (a type or subtype name) and `name`.
 */
export interface OpeningBalanceRow {
  account?: string | null | undefined;
  accountCode?: string | null | undefined;
  accountName?: string | null | undefined;
  debit?: string | null | undefined;
  credit?: string | null | undefined;
  type?: string | null | undefined;
  name?: string | null | undefined;
}

/** Which column of the caller's input each field of a row came from, so a problem names the caller's column. */
export type OpeningBalanceColumns = Record<keyof OpeningBalanceRow, string>;

const JSON_COLUMNS: OpeningBalanceColumns = {
  account: 'account',
  accountCode: 'accountCode',
  accountName: 'accountName',
  debit: 'debit',
  credit: 'credit',
  type: 'type',
  name: 'name',
};

export interface OpeningBalancesInput {
  /** The date of the opening entry. */
  date: string;
  rows: OpeningBalanceRow[];
  /** The number each row is reported under (a CSV's line numbers); by default its position, from 1. */
  rowNumbers?: number[] | undefined;
  columns?: OpeningBalanceColumns | undefined;
  /** Create an account a row names that does not exist, with the row's type or the one its code implies. */
  createMissingAccounts?: boolean | undefined;
  /** Void the company's opening entry and post this one instead. */
  replace?: boolean | undefined;
  /** Close the books through the day before `date`. */
  closeBooksBefore?: boolean | undefined;
}

/**
 * Why a row (or the request) cannot be taken. `row` is absent for problems of the request as a whole (its date).
 */
export type OpeningBalanceReason =
  | 'missing_account'
  | 'unknown_account'
  | 'ambiguous_account'
  | 'archived_account'
  | 'bad_code'
  | 'bad_name'
  | 'bad_type'
  | 'type_unknown'
  | 'type_mismatch'
  | 'bad_amount'
  | 'debit_and_credit'
  | 'duplicate_account'
  | 'period_closed'
  | 'no_amounts'
  | 'too_many_rows'
  | 'bad_csv'
  | 'no_equity_code';

export interface OpeningBalanceProblem extends ErrorDetail {
  row?: number;
  column: string;
  reason: OpeningBalanceReason;
}

export interface OpeningBalancesResult {
  entry: Entry;
  /** The accounts this request created, the opening balance equity account included when it was created. */
  createdAccounts: Account[];
  /**
   * The difference between the rows' debits and credits, posted to the opening balance equity account on `side`;
   * zero (side and account null) when the rows balance.
   */
  difference: {
    cents: number;
    side: 'debit' | 'credit' | null;
    account: Pick<Account, 'id' | 'code' | 'name'> | null;
  };
  /** The opening entry this one replaced (voided), if any. */
  replacedEntryId: string | null;
  /** The closed-books date afterwards, when closeBooksBefore was asked; else null. */
  booksClosedThrough: string | null;
}

const CODE_FORMAT = /^[A-Za-z0-9][A-Za-z0-9._-]{0,19}$/;
const AMOUNT_FORMAT = /^(\d+)(?:\.(\d{1,2}))?$/;
const NAME_MAX = 200;

const invalid = (problems: OpeningBalanceProblem[]) =>
  new DomainError(
    'OPENING_BALANCES_INVALID',
    problems.length === 1
      ? `the opening balances cannot be posted: ${problems[0]?.message}`
      : `the opening balances cannot be posted: ${problems.length} problems, see details`,
    problems,
  );

const clean = (value: string | null | undefined): string | null => {
  const text = value?.trim();
  return text ? text : null;
};

/** Exact cents of a non-negative decimal string with at most two decimals; null when empty, a message when bad. */
export function parseAmount(value: string | null | undefined): { cents: number } | { problem: string } | null {
  const text = clean(value);
  if (text === null) return null;
  const match = AMOUNT_FORMAT.exec(text);
  if (!match) {
    return {
      problem: text.startsWith('-')
        ? 'must not be negative: put a credit balance in the credit column'
        : 'must be a decimal number with at most two decimals, such as 1250.00',
    };
  }
  const cents = BigInt(match[1] as string) * 100n + BigInt((match[2] ?? '').padEnd(2, '0'));
  if (cents > BigInt(Number.MAX_SAFE_INTEGER)) return { problem: 'is larger than the ledger keeps' };
  return { cents: Number(cents) };
}

/** A type or subtype name (any case): the type and subtype it stands for, or null. */
function parseType(value: string): { type: AccountType; subtype: AccountSubtype } | null {
  const name = value
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');
  if ((ACCOUNT_TYPES as string[]).includes(name)) {
    const type = name as AccountType;
    return { type, subtype: DEFAULT_SUBTYPE[type] };
  }
  for (const type of ACCOUNT_TYPES) {
    if ((ACCOUNT_SUBTYPES[type] as readonly string[]).includes(name)) return { type, subtype: name as AccountSubtype };
  }
  return null;
}

const CSV_HEADERS: Record<string, keyof OpeningBalanceRow> = {
  account: 'account',
  code: 'accountCode',
  account_code: 'accountCode',
  accountcode: 'accountCode',
  name: 'accountName',
  account_name: 'accountName',
  accountname: 'accountName',
  debit: 'debit',
  credit: 'credit',
  type: 'type',
};

/**
 * The rows of a CSV of opening balances: a header row naming the columns (`code` and/or `name`, or `account`;
 * `debit`, `credit`; optionally `type`), then one row per account. With both `code` and `name`, the code finds the
 * account and the name names it if it is created. Other columns are ignored. Rows are numbered by their line in the
 * file. A file that cannot be read as CSV, or lacks the columns, is OPENING_BALANCES_INVALID.
 */
export function parseOpeningBalancesCsv(text: string): {
  rows: OpeningBalanceRow[];
  rowNumbers: number[];
  columns: OpeningBalanceColumns;
} {
  let records: { record: string[]; info: { lines: number } }[];
  try {
    records = parse(text, {
      bom: true,
      skip_empty_lines: true,
      trim: true,
      relax_column_count: true,
      info: true,
    }) as unknown as { record: string[]; info: { lines: number } }[];
  } catch (err) {
    const line = (err as { lines?: number }).lines;
    throw invalid([
      {
        ...(typeof line === 'number' ? { row: line } : {}),
        column: 'body',
        reason: 'bad_csv',
        message: `the file cannot be read as CSV: ${(err as Error).message}`,
      },
    ]);
  }
  const [header, ...body] = records;
  const names = (header?.record ?? []).map((h) => h.trim().toLowerCase().replace(/\s+/g, '_'));
  const headerNames = header?.record ?? [];
  const index = new Map<keyof OpeningBalanceRow, number>();
  names.forEach((name, i) => {
    const field = CSV_HEADERS[name];
    if (field && !index.has(field)) index.set(field, i);
  });
  const problems: OpeningBalanceProblem[] = [];
  if (!index.has('accountCode') && !index.has('accountName') && !index.has('account')) {
    problems.push({ row: 1, column: 'code', reason: 'bad_csv', message: 'the header needs a code or name column' });
  }
  if (!index.has('debit') && !index.has('credit')) {
    problems.push({ row: 1, column: 'debit', reason: 'bad_csv', message: 'the header needs debit and credit columns' });
  }
  if (problems.length > 0) throw invalid(problems);
  const hasCode = index.has('accountCode');
  const columnOf = (field: keyof OpeningBalanceRow, fallback: string) => {
    const i = index.get(field);
    return i === undefined ? fallback : (headerNames[i] ?? fallback).trim();
  };
  const columns: OpeningBalanceColumns = {
    account: columnOf('account', 'account'),
    accountCode: columnOf('accountCode', 'code'),
    accountName: columnOf('accountName', 'name'),
    debit: columnOf('debit', 'debit'),
    credit: columnOf('credit', 'credit'),
    type: columnOf('type', 'type'),
    // With a code column, the name column names the account to create.
    name: columnOf('accountName', 'name'),
  };
  const cell = (record: string[], field: keyof OpeningBalanceRow) => {
    const i = index.get(field);
    return i === undefined ? undefined : record[i];
  };
  const rows = body.map(({ record }): OpeningBalanceRow => {
    const name = cell(record, 'accountName');
    return {
      account: cell(record, 'account'),
      accountCode: cell(record, 'accountCode'),
      // A code finds the account; the name is then what a created account is called.
      accountName: hasCode && clean(cell(record, 'accountCode')) ? undefined : name,
      name: hasCode && clean(cell(record, 'accountCode')) ? name : undefined,
      debit: cell(record, 'debit'),
      credit: cell(record, 'credit'),
      type: cell(record, 'type'),
    };
  });
  return { rows, rowNumbers: body.map((r) => r.info.lines), columns };
}

interface ExistingAccount {
  id: string;
  code: string;
  name: string;
  type: AccountType;
  subtype: AccountSubtype;
  archived: boolean;
}

interface NewAccount {
  code: string;
  name: string;
  type: AccountType;
  subtype: AccountSubtype;
}

/** A row as judged: its account (existing or to create) and its signed amount (debits positive). */
interface JudgedRow {
  account: { existing: ExistingAccount } | { create: NewAccount };
  amountCents: number;
}

/**
 * Judges every row against the company's accounts, collecting every problem rather than stopping at the first.
 * Nothing is written.
 */
function judgeRows(
  input: OpeningBalancesInput,
  existing: ExistingAccount[],
): { judged: JudgedRow[]; problems: OpeningBalanceProblem[] } {
  const columns = input.columns ?? JSON_COLUMNS;
  const byCode = new Map(existing.map((a) => [a.code, a]));
  const byName = new Map<string, ExistingAccount[]>();
  for (const a of existing) {
    const key = a.name.trim().toLowerCase();
    byName.set(key, [...(byName.get(key) ?? []), a]);
  }
  const problems: OpeningBalanceProblem[] = [];
  const judged: JudgedRow[] = [];
  /** The row that first named each account: existing accounts by id, new ones by code. */
  const seen = new Map<string, number>();

  input.rows.forEach((row, i) => {
    const rowNo = input.rowNumbers?.[i] ?? i + 1;
    const before = problems.length;
    const problem = (field: keyof OpeningBalanceRow, reason: OpeningBalanceReason, message: string) =>
      problems.push({
        row: rowNo,
        column: columns[field],
        reason,
        message: `row ${rowNo}, ${columns[field]}: ${message}`,
        ...(input.columns ? {} : { field: `lines[${i}].${field}` }),
      });

    // The amount.
    const debit = parseAmount(row.debit);
    const credit = parseAmount(row.credit);
    if (debit && 'problem' in debit) problem('debit', 'bad_amount', debit.problem);
    if (credit && 'problem' in credit) problem('credit', 'bad_amount', credit.problem);
    const debitCents = debit && 'cents' in debit ? debit.cents : 0;
    const creditCents = credit && 'cents' in credit ? credit.cents : 0;
    if (debitCents > 0 && creditCents > 0) {
      problem('credit', 'debit_and_credit', 'a row has a debit or a credit, not both');
    }

    // The type, when given.
    const typeText = clean(row.type);
    const givenType = typeText === null ? null : parseType(typeText);
    if (typeText !== null && givenType === null) {
      problem('type', 'bad_type', `${typeText} is not an account type (${ACCOUNT_TYPES.join(', ')}) or subtype`);
    }

    // The account.
    const code = clean(row.accountCode);
    const name = clean(row.accountName);
    const either = clean(row.account);
    let account: JudgedRow['account'] | null = null;
    let field: keyof OpeningBalanceRow = code ? 'accountCode' : either ? 'account' : 'accountName';
    if (!code && !name && !either) {
      field = input.columns ? 'accountCode' : 'account';
      problem(field, 'missing_account', 'names no account: give its code or name');
    } else {
      let found: ExistingAccount | undefined;
      let ambiguous = false;
      if (code) found = byCode.get(code);
      else {
        const key = (either ?? name) as string;
        found = either ? byCode.get(either) : undefined;
        if (!found) {
          const named = byName.get(key.toLowerCase()) ?? [];
          if (named.length > 1) ambiguous = true;
          else found = named[0];
        }
      }
      const ref = (code ?? either ?? name) as string;
      if (ambiguous) {
        problem(field, 'ambiguous_account', `more than one account is named ${ref}; give its code`);
      } else if (found) {
        if (found.archived) problem(field, 'archived_account', `account ${found.code} ${found.name} is archived`);
        else if (givenType && givenType.type !== found.type) {
          problem('type', 'type_mismatch', `account ${found.code} is a ${found.type} account, not ${givenType.type}`);
        } else account = { existing: found };
      } else if (!input.createMissingAccounts) {
        problem(field, 'unknown_account', `no account has the ${code ? 'code' : 'code or name'} ${ref}`);
      } else {
        // A new account needs a code: the code column, or `account` when it reads as a code (starts with a digit).
        const newCode = code ?? (either && /^\d/.test(either) ? either : null);
        if (newCode === null) {
          problem(field, 'unknown_account', `no account is named ${ref}; to create it, give its code`);
        } else if (!CODE_FORMAT.test(newCode)) {
          problem(
            field,
            'bad_code',
            `${newCode} is not an account code (1-20 letters, digits, dot, dash or underscore)`,
          );
        } else {
          const newName = clean(row.name) ?? (code ? name : null) ?? `Account ${newCode}`;
          const typed = givenType ?? (typeText === null ? accountTypeFromCode(newCode) : null);
          if (newName.length > NAME_MAX) problem('name', 'bad_name', `is longer than ${NAME_MAX} characters`);
          else if (typeText === null && typed === null) {
            problem(
              field,
              'type_unknown',
              `account ${newCode} does not exist and its type cannot be told from its code; give its type`,
            );
          } else if (typed) account = { create: { code: newCode, name: newName, ...typed } };
        }
      }
    }

    if (account) {
      const key = 'existing' in account ? account.existing.id : `new:${account.create.code}`;
      const first = seen.get(key);
      if (first !== undefined) {
        const label = 'existing' in account ? account.existing.code : account.create.code;
        problem(field, 'duplicate_account', `account ${label} is already on row ${first}`);
      } else seen.set(key, rowNo);
    }
    if (problems.length === before && account) judged.push({ account, amountCents: debitCents - creditCents });
  });
  return { judged, problems };
}

/**
 * Inserts the accounts with their account.created events (the audit row, and the outbox row carrying the account as
 * the API returns it) in one statement, whatever their number: the rows come as arrays.
 */
async function createAccounts(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  list: NewAccount[],
): Promise<Account[]> {
  if (list.length === 0) return [];
  const at = nowOf(ctx).toISOString();
  const ids = list.map(() => newId());
  const column = <K extends keyof NewAccount>(key: K) => sql.param(list.map((a) => a[key]));
  const rows = rowsOf<{ id: string }>(
    await tx.execute(sql`
      with v as (
        select * from unnest(${sql.param(ids)}::uuid[], ${column('code')}::text[], ${column('name')}::text[],
                             ${column('type')}::text[], ${column('subtype')}::text[],
                             ${sql.param(list.map(() => newId()))}::uuid[], ${sql.param(list.map(() => newId()))}::uuid[])
          with ordinality as v(id, code, name, type, subtype, audit_id, outbox_id, n)
      ),
      created as (
        insert into accounts (id, organization_id, code, name, type, subtype, created_at, updated_at)
        select id, ${organizationId}::uuid, code, name, type::account_type, subtype::account_subtype, ${at}::timestamptz,
               ${at}::timestamptz
        from v order by n
        returning id
      ),
      audit as (
        insert into audit_events
          (id, firm_id, organization_id, actor_kind, actor_id, action, resource_type, resource_id, request_id, data,
           created_at)
        select audit_id, ${ctx.firmId}::uuid, ${organizationId}::uuid, ${ctx.actor.kind}, ${ctx.actor.id},
               'account.created', 'account', id::text, ${ctx.requestId ?? null}::text,
               jsonb_build_object('code', code, 'type', type), ${at}::timestamptz
        from v where exists (select 1 from created)
      ),
      outbox as (
        insert into outbox_events (id, firm_id, organization_id, type, payload, created_at)
        select outbox_id, ${ctx.firmId}::uuid, ${organizationId}::uuid, 'account.created',
               jsonb_build_object('id', id, 'organizationId', ${organizationId}::uuid, 'code', code, 'name', name,
                                  'type', type, 'subtype', subtype, 'description', null, 'archived', false,
                                  'createdAt', ${at}::text, 'updatedAt', ${at}::text),
               ${at}::timestamptz
        from v where exists (select 1 from created)
      )
      select id from created`),
  );
  if (rows.length !== list.length) throw new Error('not every opening-balance account was created');
  const when = new Date(at);
  return list.map((a, i) => ({
    id: ids[i] as string,
    organizationId,
    ...a,
    description: null,
    archived: false,
    createdAt: when,
    updatedAt: when,
  }));
}

/** The first free code of 3050-3099, then 3000-3049, for a new opening balance equity account; null when none is. */
function equityCode(taken: ReadonlySet<string>): string | null {
  for (const n of [
    ...Array.from({ length: 50 }, (_, i) => 3050 + i),
    ...Array.from({ length: 50 }, (_, i) => 3000 + i),
  ]) {
    if (!taken.has(String(n))) return String(n);
  }
  return null;
}

/** The company's posted opening entry, if it has one. */
export async function findOpeningEntry(tx: Tx, organizationId: string): Promise<{ id: string; date: string } | null> {
  const [row] = await tx
    .select({ id: journalEntries.id, date: journalEntries.entryDate })
    .from(journalEntries)
    .where(
      and(
        eq(journalEntries.organizationId, organizationId),
        eq(journalEntries.source, 'opening_balance'),
        eq(journalEntries.status, 'posted'),
      ),
    )
    .limit(1);
  return row ?? null;
}

/**
 * Posts a company's opening balances as one balanced journal entry (source `opening_balance`) on `date`, through the
 * ledger's one posting path: every row names an account and its balance; accounts that do not exist are created
 * when asked; whatever the debits and credits differ by goes to the opening balance equity account (found by name,
 * else created as equity with code 3050 or the next free 30xx code).
 *
 * Every row is judged before anything is written, and all the problems are reported together
 * (OPENING_BALANCES_INVALID). A company has one opening entry: a second is OPENING_BALANCES_EXIST unless `replace`,
 * which voids the first in the same transaction. `closeBooksBefore` closes the books through the day before `date`
 * (never moving a later closed-books date back). Two requests for one company take turns (an advisory lock).
 */
export async function postOpeningBalances(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  input: OpeningBalancesInput,
): Promise<OpeningBalancesResult> {
  const date = checkDate(input.date, 'date');
  if (input.rows.length > OPENING_BALANCE_MAX_ROWS) {
    throw invalid([
      {
        column: 'lines',
        reason: 'too_many_rows',
        message: `at most ${OPENING_BALANCE_MAX_ROWS} rows; this request has ${input.rows.length}`,
      },
    ]);
  }
  await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`opening_balances|${organizationId}`}, 0))`);
  const [org] = await tx
    .select({ closedThrough: organizations.booksClosedThrough, archivedAt: organizations.archivedAt })
    .from(organizations)
    .where(and(eq(organizations.id, organizationId), eq(organizations.firmId, ctx.firmId)));
  if (!org) throw new DomainError('ORGANIZATION_NOT_FOUND', 'organization not found');
  if (org.archivedAt) throw companyArchived();

  const current = await findOpeningEntry(tx, organizationId);
  if (current && !input.replace) {
    throw new DomainError(
      'OPENING_BALANCES_EXIST',
      `the company already has opening balances (entry ${current.id} on ${current.date}); send replace: true to replace them`,
      [{ field: 'replace', message: 'the company has an opening entry', entryId: current.id, date: current.date }],
    );
  }

  const existing = rowsOf<ExistingAccount>(
    await tx.execute(sql`select id, code, name, type::text as type, subtype::text as subtype, archived
      from accounts where organization_id = ${organizationId}`),
  );
  const { judged, problems } = judgeRows(input, existing);
  if (org.closedThrough !== null && date <= org.closedThrough) {
    problems.unshift({
      column: 'date',
      field: 'date',
      reason: 'period_closed',
      message: `the date ${date} is in closed books (closed through ${org.closedThrough})`,
    });
  }
  if (current && org.closedThrough !== null && current.date <= org.closedThrough) {
    problems.unshift({
      column: 'replace',
      field: 'replace',
      reason: 'period_closed',
      message: `the opening entry to replace is dated ${current.date}, in closed books (closed through ${org.closedThrough})`,
    });
  }
  if (problems.length === 0 && !judged.some((j) => j.amountCents !== 0)) {
    problems.push({ column: 'lines', field: 'lines', reason: 'no_amounts', message: 'no row has a debit or a credit' });
  }

  const differenceCents = judged.reduce((sum, j) => sum + j.amountCents, 0);
  // The opening balance equity account, when the rows do not balance: found by name, else created.
  const equityKey = OPENING_BALANCE_EQUITY_NAME.toLowerCase();
  let equity: ExistingAccount | NewAccount | null = null;
  if (differenceCents !== 0) {
    equity =
      existing.find((a) => !a.archived && a.type === 'equity' && a.name.trim().toLowerCase() === equityKey) ?? null;
    const created = judged.flatMap((j) => ('create' in j.account ? [j.account.create] : []));
    equity ??= created.find((a) => a.type === 'equity' && a.name.trim().toLowerCase() === equityKey) ?? null;
    if (!equity) {
      const code = equityCode(new Set([...existing.map((a) => a.code), ...created.map((a) => a.code)]));
      if (code === null) {
        problems.push({
          column: 'lines',
          field: 'lines',
          reason: 'no_equity_code',
          message: 'the rows do not balance and no code of 3000-3099 is free for an opening balance equity account',
        });
      } else equity = { code, name: OPENING_BALANCE_EQUITY_NAME, type: 'equity', subtype: 'equity' };
    }
  }
  if (problems.length > 0) throw invalid(problems);

  // Nothing was wrong: write.
  const toCreate = judged.flatMap((j) => ('create' in j.account ? [j.account.create] : []));
  if (equity && !('id' in equity) && !toCreate.includes(equity)) toCreate.push(equity);
  const createdAccounts = await createAccounts(tx, ctx, organizationId, toCreate);
  const idOf = new Map(createdAccounts.map((a) => [a.code, a.id]));
  const accountId = (a: ExistingAccount | NewAccount) => ('id' in a ? a.id : (idOf.get(a.code) as string));

  const lines: DebitCreditLine[] = judged
    .filter((j) => j.amountCents !== 0)
    .map((j) => {
      const account = 'existing' in j.account ? j.account.existing : j.account.create;
      return {
        accountId: accountId(account),
        description: 'Opening balance',
        ...(j.amountCents > 0 ? { debitCents: j.amountCents } : { creditCents: -j.amountCents }),
      };
    });
  if (equity && differenceCents !== 0) {
    lines.push({
      accountId: accountId(equity),
      description: 'Opening balance difference',
      ...(differenceCents > 0 ? { creditCents: differenceCents } : { debitCents: -differenceCents }),
    });
  }

  if (current) await voidEntry(tx, ctx, organizationId, current.id, 'replaced by new opening balances');
  const receipt = await postTransaction(tx, ctx, organizationId, {
    kind: 'opening_balance',
    date,
    memo: 'Opening balances',
    lines,
  });

  let booksClosedThrough: string | null = null;
  if (input.closeBooksBefore) {
    const through = addDays(date, -1);
    const closed = org.closedThrough;
    booksClosedThrough =
      closed !== null && closed >= through
        ? closed
        : (await setBooksClosedThrough(tx, ctx, organizationId, through)).booksClosedThrough;
  }

  return {
    entry: await getEntry(tx, organizationId, receipt.journalEntryId),
    createdAccounts,
    difference: {
      cents: Math.abs(differenceCents),
      side: differenceCents === 0 ? null : differenceCents > 0 ? 'credit' : 'debit',
      account: equity ? { id: accountId(equity), code: equity.code, name: equity.name } : null,
    },
    replacedEntryId: current?.id ?? null,
    booksClosedThrough,
  };
}
