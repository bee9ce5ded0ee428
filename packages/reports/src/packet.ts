import { reconciliationStatus } from '@firm/banking';
import type { AccountSubtype } from '@firm/core';
import { type Executor, readAll } from '@firm/db';
import { agingReport } from '@firm/documents';
import {
  addDays,
  type BalanceSheet,
  balanceSheet,
  cashFlowStatement,
  checkDateRange,
  fiscalYearStart,
  monthlyTrend,
  type ProfitAndLoss,
  profitAndLoss,
  todayUtc,
  trialBalance,
} from '@firm/ledger';
import {
  agingStatement,
  balanceSheetStatement,
  cashFlowStatementOf,
  profitAndLossStatement,
  type Statement,
  trendStatement,
  trialBalanceStatement,
} from './statements';

/** What a report needs to know of its company: its name for the headings, its fiscal year for the default start. */
export interface ReportCompany {
  id: string;
  name: string;
  fiscalYearStartMonth: number;
}

export interface PacketQuery {
  /** Default: the start of the fiscal year of endDate. */
  startDate?: string | undefined;
  /** Default: today, UTC. */
  endDate?: string | undefined;
  /** Add the period of the same length just before (default true). */
  comparePriorPeriod?: boolean | undefined;
  /** Add the same period a year earlier (default true). */
  comparePriorYear?: boolean | undefined;
}

const CURRENT_ASSETS: readonly AccountSubtype[] = ['bank', 'accounts_receivable', 'other_current_asset'];
const QUICK_ASSETS: readonly AccountSubtype[] = ['bank', 'accounts_receivable'];
const CURRENT_LIABILITIES: readonly AccountSubtype[] = ['accounts_payable', 'credit_card', 'other_current_liability'];

const round = (n: number) => Math.round(n * 10_000) / 10_000;
const ratio = (a: number, b: number) => (b === 0 ? null : round(a / b));

function ratiosOf(bs: BalanceSheet, pnl: ProfitAndLoss) {
  const total = (rows: BalanceSheet['assets']['accounts'], subtypes: readonly AccountSubtype[]) =>
    rows.filter((r) => subtypes.includes(r.subtype)).reduce((s, r) => s + r.balanceCents, 0);
  const currentAssets = total(bs.assets.accounts, CURRENT_ASSETS);
  const currentLiabilities = total(bs.liabilities.accounts, CURRENT_LIABILITIES);
  const revenue = pnl.income.totalCents + pnl.otherIncome.totalCents;
  return {
    currentRatio: ratio(currentAssets, currentLiabilities),
    quickRatio: ratio(total(bs.assets.accounts, QUICK_ASSETS), currentLiabilities),
    grossMarginPct: pnl.income.totalCents === 0 ? null : round((pnl.grossProfitCents / pnl.income.totalCents) * 100),
    netMarginPct: revenue === 0 ? null : round((pnl.netIncomeCents / revenue) * 100),
    debtToEquity: ratio(bs.liabilities.totalCents, bs.equity.totalCents),
    workingCapitalCents: currentAssets - currentLiabilities,
  };
}

/** The same dates a year earlier (29 February becomes the 28th). */
function yearEarlier(date: string): string {
  const [y, m, d] = date.split('-').map(Number) as [number, number, number];
  const last = new Date(Date.UTC(y - 1, m, 0)).getUTCDate();
  return `${String(y - 1).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(Math.min(d, last)).padStart(2, '0')}`;
}

const daysBetween = (a: string, b: string) => (Date.parse(b) - Date.parse(a)) / 86_400_000;

/**
 * Builds the month-end packet from the standalone reports themselves, so every figure in it is the one the report
 * it repeats answers for the same dates.
 */
export async function financialPacket(db: Executor, organization: ReportCompany, query: PacketQuery) {
  const endDate = query.endDate ?? todayUtc();
  const startDate = query.startDate ?? fiscalYearStart(endDate, organization.fiscalYearStartMonth);
  checkDateRange(startDate, endDate);
  const orgId = organization.id;
  const priorEnd = addDays(startDate, -1);
  const priorPeriod =
    query.comparePriorPeriod === false
      ? null
      : { startDate: addDays(priorEnd, -daysBetween(startDate, endDate)), endDate: priorEnd };
  const priorYear =
    query.comparePriorYear === false ? null : { startDate: yearEarlier(startDate), endDate: yearEarlier(endDate) };
  const [pnl, pnlPrior, pnlYear, bs, bsPrior, bsYear, cashFlow, tb, ar, ap, bank, trend] = await readAll(db, [
    () => profitAndLoss(db, orgId, { startDate, endDate }),
    () => (priorPeriod ? profitAndLoss(db, orgId, priorPeriod) : null),
    () => (priorYear ? profitAndLoss(db, orgId, priorYear) : null),
    () => balanceSheet(db, orgId, { asOf: endDate }),
    () => (priorPeriod ? balanceSheet(db, orgId, { asOf: priorPeriod.endDate }) : null),
    () => (priorYear ? balanceSheet(db, orgId, { asOf: priorYear.endDate }) : null),
    () => cashFlowStatement(db, orgId, { startDate, endDate }),
    () => trialBalance(db, orgId, { endDate }),
    () => agingReport(db, orgId, 'receivable', endDate),
    () => agingReport(db, orgId, 'payable', endDate),
    () => reconciliationStatus(db, orgId, endDate),
    () => monthlyTrend(db, orgId, { endDate }),
  ]);
  return {
    organization: { id: organization.id, name: organization.name },
    period: { startDate, endDate },
    comparisons: { priorPeriod, priorYear },
    profitAndLoss: { current: pnl, priorPeriod: pnlPrior, priorYear: pnlYear },
    balanceSheet: { current: bs, priorPeriod: bsPrior, priorYear: bsYear },
    cashFlow,
    trialBalance: tb,
    arAging: ar,
    apAging: ap,
    bankReconciliation: { endDate, rows: bank },
    ratios: ratiosOf(bs, pnl),
    /** The twelve months ending with the one that holds endDate, for the charts. */
    monthlyTrend: trend,
    generatedAt: new Date().toISOString(),
  };
}

export type FinancialPacket = Awaited<ReturnType<typeof financialPacket>>;

/**
 * The packet laid out as statements: the profit and loss and the balance sheet with their comparison columns, the
 * cash flows, the trial balance, both agings and the twelve months with their charts.
 */
export function packetStatements(p: FinancialPacket, company: string): Statement[] {
  const pnl = [{ title: 'Current', report: p.profitAndLoss.current }];
  if (p.profitAndLoss.priorPeriod) pnl.push({ title: 'Prior period', report: p.profitAndLoss.priorPeriod });
  if (p.profitAndLoss.priorYear) pnl.push({ title: 'Prior year', report: p.profitAndLoss.priorYear });
  const bs = [{ title: p.balanceSheet.current.asOf, report: p.balanceSheet.current }];
  if (p.balanceSheet.priorPeriod)
    bs.push({ title: p.balanceSheet.priorPeriod.asOf, report: p.balanceSheet.priorPeriod });
  if (p.balanceSheet.priorYear) bs.push({ title: p.balanceSheet.priorYear.asOf, report: p.balanceSheet.priorYear });
  return [
    profitAndLossStatement(pnl, company),
    balanceSheetStatement(bs, company),
    cashFlowStatementOf(p.cashFlow, company),
    trialBalanceStatement(p.trialBalance, company),
    agingStatement(p.arAging, company),
    agingStatement(p.apAging, company),
    trendStatement(p.monthlyTrend, company),
  ];
}
