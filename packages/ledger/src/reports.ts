import { type AccountSubtype, type AccountType, DomainError } from '@firm/core';
import { type Executor, readAll, rowsOf } from '@firm/db';
import { sql } from 'drizzle-orm';
import { inNormalDirection } from './account-ledger';
import { rollupRows } from './balances';
import { addDays, checkDate, checkDateRange, fiscalYearStart } from './dates';

/**
 * Financial reports. Balances come from the rollups the posting path keeps (see balances.ts): whole months from
 * account_monthly_balances and the days at a range's edges from account_daily_balances, so a report reads a few
 * rows per account whatever the number of lines. The general ledger (general-ledger.ts) lists lines from
 * journal_lines, with its opening balances from the same rollups. Amounts are cents in the account's normal direction
 * (debit for assets and expenses, credit for the rest) unless a field says debit or credit.
 */

export interface ReportAccount {
  accountId: string;
  code: string;
  name: string;
  type: AccountType;
  subtype: AccountSubtype;
}

interface AccountNet extends ReportAccount {
  /** Signed like journal lines: debit positive. */
  netCents: number;
}

const sumOf = <T>(rows: readonly T[], pick: (row: T) => number) => rows.reduce((sum, row) => sum + pick(row), 0);

/** Per account, the signed sum of posted lines dated in [from, through] (from null: since the beginning). */
async function accountNets(
  db: Executor,
  organizationId: string,
  from: string | null,
  through: string,
  types: readonly AccountType[],
): Promise<AccountNet[]> {
  const rows = rowsOf<{
    id: string;
    code: string;
    name: string;
    type: AccountType;
    subtype: AccountSubtype;
    net: number | string;
  }>(
    await db.execute(sql`
      select a.id, a.code, a.name, a.type, a.subtype, s.net
      from (
        select account_id, sum(amount_cents) as net
        from ${rollupRows(organizationId, from, through)} r
        group by account_id
      ) s
      join accounts a on a.organization_id = ${organizationId} and a.id = s.account_id
      where s.net <> 0 and a.type in (${sql.join(
        types.map((t) => sql`${t}::account_type`),
        sql`, `,
      )})
      order by a.code`),
  );
  return rows.map((r) => ({
    accountId: r.id,
    code: r.code,
    name: r.name,
    type: r.type,
    subtype: r.subtype,
    netCents: Number(r.net),
  }));
}

const ALL_TYPES: readonly AccountType[] = ['asset', 'liability', 'equity', 'income', 'expense'];

// ---------------------------------------------------------------- trial balance

export interface TrialBalanceRow extends ReportAccount {
  debitCents: number;
  creditCents: number;
}

export interface TrialBalance {
  startDate: string | null;
  endDate: string;
  rows: TrialBalanceRow[];
  totalDebitCents: number;
  totalCreditCents: number;
}

/**
 * Each account's net of the posted lines dated from `startDate` (or the beginning) through `endDate`,
 * in a debit or a credit column. The two totals are equal because every entry balances and all of an
 * entry's lines share its date.
 */
export async function trialBalance(
  db: Executor,
  organizationId: string,
  range: { startDate?: string | undefined; endDate: string },
): Promise<TrialBalance> {
  const startDate = range.startDate ?? null;
  checkDateRange(startDate, range.endDate);
  const nets = await accountNets(db, organizationId, startDate, range.endDate, ALL_TYPES);
  const rows = nets.map(({ netCents, ...account }) => ({
    ...account,
    debitCents: netCents > 0 ? netCents : 0,
    creditCents: netCents < 0 ? -netCents : 0,
  }));
  return {
    startDate,
    endDate: range.endDate,
    rows,
    totalDebitCents: sumOf(rows, (r) => r.debitCents),
    totalCreditCents: sumOf(rows, (r) => r.creditCents),
  };
}

// ---------------------------------------------------------------- balance sheet

export interface BalanceRow extends ReportAccount {
  balanceCents: number;
}

export interface BalanceSection {
  accounts: BalanceRow[];
  totalCents: number;
}

export interface BalanceSheet {
  asOf: string;
  /** First day of the fiscal year containing asOf. */
  fiscalYearStart: string;
  assets: BalanceSection;
  liabilities: BalanceSection;
  equity: BalanceSection & {
    /** Net income of every fiscal year before the current one (on top of any retained-earnings account). */
    retainedEarningsCents: number;
    /** Net income from the start of the fiscal year through asOf. */
    currentYearEarningsCents: number;
  };
  totalLiabilitiesAndEquityCents: number;
}

function section(nets: AccountNet[], type: AccountType): BalanceSection {
  const accounts = nets
    .filter((n) => n.type === type)
    .map(({ netCents, ...account }) => ({ ...account, balanceCents: inNormalDirection(type, netCents) }));
  return { accounts, totalCents: sumOf(accounts, (a) => a.balanceCents) };
}

async function fiscalYearStartMonth(db: Executor, organizationId: string): Promise<number> {
  const [org] = rowsOf<{ month: number }>(
    await db.execute(sql`select fiscal_year_start_month as month from organizations where id = ${organizationId}`),
  );
  if (!org) throw new DomainError('ORGANIZATION_NOT_FOUND', 'organization not found');
  return Number(org.month);
}

/**
 * Assets = liabilities + equity as of a date. Income and expense accounts are not listed: their
 * balances are rolled into equity as current-year earnings (from the start of the fiscal year that
 * contains asOf) and retained earnings (everything before it).
 */
export async function balanceSheet(
  db: Executor,
  organizationId: string,
  query: { asOf: string },
): Promise<BalanceSheet> {
  const asOf = checkDate(query.asOf, 'asOf');
  const yearStart = fiscalYearStart(asOf, await fiscalYearStartMonth(db, organizationId));
  const [nets, prior, current] = await readAll(db, [
    () => accountNets(db, organizationId, null, asOf, ['asset', 'liability', 'equity']),
    () => accountNets(db, organizationId, null, addDays(yearStart, -1), ['income', 'expense']),
    () => accountNets(db, organizationId, yearStart, asOf, ['income', 'expense']),
  ]);
  // Income is credit (negative) and expense debit (positive), so earnings are the sum seen from the credit side.
  const retainedEarningsCents = inNormalDirection(
    'equity',
    sumOf(prior, (n) => n.netCents),
  );
  const currentYearEarningsCents = inNormalDirection(
    'equity',
    sumOf(current, (n) => n.netCents),
  );
  const assets = section(nets, 'asset');
  const liabilities = section(nets, 'liability');
  const equityAccounts = section(nets, 'equity');
  const equity = {
    accounts: equityAccounts.accounts,
    retainedEarningsCents,
    currentYearEarningsCents,
    totalCents: equityAccounts.totalCents + retainedEarningsCents + currentYearEarningsCents,
  };
  return {
    asOf,
    fiscalYearStart: yearStart,
    assets,
    liabilities,
    equity,
    totalLiabilitiesAndEquityCents: liabilities.totalCents + equity.totalCents,
  };
}

// ---------------------------------------------------------------- profit and loss

export interface ProfitAndLossRow extends ReportAccount {
  amountCents: number;
}

export interface ProfitAndLossSection {
  accounts: ProfitAndLossRow[];
  totalCents: number;
}

export interface ProfitAndLoss {
  startDate: string;
  endDate: string;
  income: ProfitAndLossSection;
  costOfSales: ProfitAndLossSection;
  /** income - costOfSales */
  grossProfitCents: number;
  expenses: ProfitAndLossSection;
  otherIncome: ProfitAndLossSection;
  otherExpenses: ProfitAndLossSection;
  /** grossProfit - expenses + otherIncome - otherExpenses */
  netIncomeCents: number;
}

function pnlSection(nets: AccountNet[], subtype: AccountSubtype): ProfitAndLossSection {
  const accounts = nets
    .filter((n) => n.subtype === subtype)
    .map(({ netCents, ...account }) => ({ ...account, amountCents: inNormalDirection(account.type, netCents) }));
  return { accounts, totalCents: sumOf(accounts, (a) => a.amountCents) };
}

/** Income and expenses of the posted entries dated in [startDate, endDate]. */
export async function profitAndLoss(
  db: Executor,
  organizationId: string,
  range: { startDate: string; endDate: string },
): Promise<ProfitAndLoss> {
  checkDateRange(range.startDate, range.endDate);
  const nets = await accountNets(db, organizationId, range.startDate, range.endDate, ['income', 'expense']);
  const income = pnlSection(nets, 'income');
  const costOfSales = pnlSection(nets, 'cost_of_sales');
  const expenses = pnlSection(nets, 'expense');
  const otherIncome = pnlSection(nets, 'other_income');
  const otherExpenses = pnlSection(nets, 'other_expense');
  const grossProfitCents = income.totalCents - costOfSales.totalCents;
  return {
    startDate: range.startDate,
    endDate: range.endDate,
    income,
    costOfSales,
    grossProfitCents,
    expenses,
    otherIncome,
    otherExpenses,
    netIncomeCents: grossProfitCents - expenses.totalCents + otherIncome.totalCents - otherExpenses.totalCents,
  };
}

// ---------------------------------------------------------------- cash flow

export interface CashFlowLine extends ReportAccount {
  /** Cash effect of the account's change over the period: positive when it brought cash in. */
  amountCents: number;
}

export interface CashFlowSection {
  lines: CashFlowLine[];
  totalCents: number;
}

export interface CashFlowStatement {
  startDate: string;
  endDate: string;
  operating: CashFlowSection & { netIncomeCents: number };
  investing: CashFlowSection;
  financing: CashFlowSection;
  netChangeInCashCents: number;
  /** Bank accounts' balance at the end of the day before startDate, and at endDate. */
  cashAtStartCents: number;
  cashAtEndCents: number;
}

const OPERATING: readonly AccountSubtype[] = [
  'accounts_receivable',
  'other_current_asset',
  'accounts_payable',
  'credit_card',
  'other_current_liability',
];
const INVESTING: readonly AccountSubtype[] = ['fixed_asset', 'other_asset'];
const FINANCING: readonly AccountSubtype[] = ['long_term_liability', 'equity', 'retained_earnings'];

/**
 * The cash-flow statement by the indirect method, from account subtypes: the period's net income, adjusted by the
 * change of every current asset and liability other than cash (operating), of fixed and other assets (investing),
 * and of long-term liabilities and equity (financing). Cash is the bank accounts; the three sections add up to its
 * change exactly, since every entry balances.
 */
export async function cashFlowStatement(
  db: Executor,
  organizationId: string,
  range: { startDate: string; endDate: string },
): Promise<CashFlowStatement> {
  checkDateRange(range.startDate, range.endDate);
  const [changes, pnl, before] = await readAll(db, [
    () => accountNets(db, organizationId, range.startDate, range.endDate, ['asset', 'liability', 'equity']),
    () => profitAndLoss(db, organizationId, range),
    () => accountNets(db, organizationId, null, addDays(range.startDate, -1), ['asset']),
  ]);
  const lines = (subtypes: readonly AccountSubtype[]): CashFlowSection => {
    const picked = changes
      .filter((c) => subtypes.includes(c.subtype))
      .map(({ netCents, ...account }) => ({ ...account, amountCents: -netCents }));
    return { lines: picked, totalCents: sumOf(picked, (l) => l.amountCents) };
  };
  const operating = lines(OPERATING);
  const investing = lines(INVESTING);
  const financing = lines(FINANCING);
  const cashAtStartCents = sumOf(
    before.filter((a) => a.subtype === 'bank'),
    (a) => a.netCents,
  );
  const netChangeInCashCents = sumOf(
    changes.filter((a) => a.subtype === 'bank'),
    (a) => a.netCents,
  );
  return {
    startDate: range.startDate,
    endDate: range.endDate,
    operating: {
      netIncomeCents: pnl.netIncomeCents,
      lines: operating.lines,
      totalCents: pnl.netIncomeCents + operating.totalCents,
    },
    investing,
    financing,
    netChangeInCashCents,
    cashAtStartCents,
    cashAtEndCents: cashAtStartCents + netChangeInCashCents,
  };
}

// ---------------------------------------------------------------- monthly trend

export interface TrendMonth {
  /** YYYY-MM */
  month: string;
  startDate: string;
  /** The month's last day, or the trend's end date in its last month. */
  endDate: string;
  /** Income and other income. */
  incomeCents: number;
  /** Cost of sales, expenses and other expenses. */
  expensesCents: number;
  /** incomeCents - expensesCents: the profit and loss's net income for the month. */
  netIncomeCents: number;
  /** The bank accounts' balance at endDate, as the cash-flow statement counts cash. */
  cashAtEndCents: number;
}

const monthStartBefore = (date: string, months: number) => {
  const index = Number(date.slice(0, 4)) * 12 + Number(date.slice(5, 7)) - 1 - months;
  return `${String(Math.floor(index / 12)).padStart(4, '0')}-${String((index % 12) + 1).padStart(2, '0')}-01`;
};

/**
 * Income, expenses, net income and cash of each of the `months` calendar months ending with the one that holds
 * `endDate` (the last one running to `endDate`), in one query: the whole months from account_monthly_balances, the
 * days of a partial last month from account_daily_balances, and the cash before the first month from the rollups
 * through its eve, which each month's change of the bank accounts then carries forward.
 */
export async function monthlyTrend(
  db: Executor,
  organizationId: string,
  query: { endDate: string; months?: number },
): Promise<TrendMonth[]> {
  const endDate = checkDate(query.endDate, 'endDate');
  const count = query.months ?? 12;
  const first = monthStartBefore(endDate, count - 1);
  const last = monthStartBefore(endDate, 0);
  const wholeLast = addDays(endDate, 1).slice(8) === '01';
  const days = wholeLast
    ? sql``
    : sql`union all
        select ${last}::date as month, account_id, amount_cents from account_daily_balances
        where organization_id = ${organizationId} and day >= ${last}::date and day <= ${endDate}::date`;
  const rows = rowsOf<{ month: string | null; type: AccountType; subtype: AccountSubtype; net: number | string }>(
    await db.execute(sql`
      select to_char(p.month, 'YYYY-MM-DD') as month, a.type, a.subtype, sum(p.amount_cents) as net
      from (
        select month, account_id, amount_cents from account_monthly_balances
        where organization_id = ${organizationId} and month >= ${first}::date
          and month ${wholeLast ? sql`<=` : sql`<`} ${last}::date
        ${days}
        union all
        select null::date as month, r.account_id, r.amount_cents
        from ${rollupRows(organizationId, null, addDays(first, -1))} r
      ) p
      join accounts a on a.organization_id = ${organizationId} and a.id = p.account_id
      where a.subtype = 'bank' or (p.month is not null and a.type in ('income', 'expense'))
      group by p.month, a.type, a.subtype`),
  );
  let cash = sumOf(
    rows.filter((r) => r.month === null),
    (r) => Number(r.net),
  );
  return Array.from({ length: count }, (_, i) => {
    const startDate = monthStartBefore(endDate, count - 1 - i);
    const of = rows.filter((r) => r.month === startDate);
    const net = (pick: (r: (typeof of)[number]) => boolean) => sumOf(of.filter(pick), (r) => Number(r.net));
    const incomeCents = -net((r) => r.type === 'income');
    const expensesCents = net((r) => r.type === 'expense');
    cash += net((r) => r.subtype === 'bank');
    return {
      month: startDate.slice(0, 7),
      startDate,
      endDate: i === count - 1 ? endDate : addDays(monthStartBefore(endDate, count - 2 - i), -1),
      incomeCents,
      expensesCents,
      netIncomeCents: incomeCents - expensesCents,
      cashAtEndCents: cash,
    };
  });
}
