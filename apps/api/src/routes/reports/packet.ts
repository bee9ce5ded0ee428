import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { reconciliationStatus } from '@firm/banking';
import type { AccountSubtype } from '@firm/core';
import { agingReport } from '@firm/documents';
import {
  type BalanceSheet as BalanceSheetReport,
  addDays,
  balanceSheet,
  cashFlowStatement,
  checkDateRange,
  fiscalYearStart,
  type ProfitAndLoss as ProfitAndLossReport,
  profitAndLoss,
  todayUtc,
  trialBalance,
} from '@firm/ledger';
import { Type } from 'typebox';
import { errorResponses } from '../../errors';
import { IsoDate, Uuid } from '../../schemas';
import { AgingReport } from '../aging/schemas';
import { ReconciliationStatusReport } from '../banking/schemas';
import { BalanceSheet, ProfitAndLoss, ReportOf, TrialBalance } from './schemas';

const Cents = Type.Integer();
const Period = Type.Object({ startDate: IsoDate(), endDate: IsoDate() });
const Nullable = <T extends ReturnType<typeof Type.Object>>(t: T) => Type.Union([t, Type.Null()]);
const Ratio = (description: string) => Type.Union([Type.Number(), Type.Null()], { description });

const CashFlowLine = Type.Object({
  accountId: Uuid(),
  code: Type.String(),
  name: Type.String(),
  type: Type.String(),
  subtype: Type.String(),
  amountCents: Type.Integer({ description: 'Cash effect of the change: positive when it brought cash in.' }),
});
const CashFlowSection = { lines: Type.Array(CashFlowLine), totalCents: Cents };

export const CashFlow = Type.Object(
  {
    startDate: IsoDate(),
    endDate: IsoDate(),
    operating: Type.Object({ netIncomeCents: Cents, ...CashFlowSection }),
    investing: Type.Object(CashFlowSection),
    financing: Type.Object(CashFlowSection),
    netChangeInCashCents: Cents,
    cashAtStartCents: Cents,
    cashAtEndCents: Cents,
  },
  {
    title: 'CashFlowStatement',
    description:
      'Indirect method, from account subtypes: net income adjusted by the change of receivables, other current ' +
      'assets, payables, cards and other current liabilities (operating); of fixed and other assets (investing); of ' +
      'long-term liabilities and equity (financing). Cash is the bank accounts; the sections add up to its change.',
  },
);

export const PacketQuery = Type.Object({
  startDate: Type.Optional(IsoDate('First day of the period. Default: the start of the fiscal year of endDate.')),
  endDate: Type.Optional(IsoDate('Last day of the period. Default: today, UTC.')),
  comparePriorPeriod: Type.Optional(
    Type.Boolean({ default: true, description: 'Add the period of the same length just before (default true).' }),
  ),
  comparePriorYear: Type.Optional(
    Type.Boolean({ default: true, description: 'Add the same period a year earlier (default true).' }),
  ),
});

export const FinancialPacket = Type.Object(
  {
    organization: Type.Object({ id: Uuid(), name: Type.String() }),
    period: Period,
    comparisons: Type.Object({ priorPeriod: Nullable(Period), priorYear: Nullable(Period) }),
    profitAndLoss: Type.Object({
      current: ProfitAndLoss,
      priorPeriod: Type.Union([ProfitAndLoss, Type.Null()]),
      priorYear: Type.Union([ProfitAndLoss, Type.Null()]),
    }),
    balanceSheet: Type.Object({
      current: BalanceSheet,
      priorPeriod: Type.Union([BalanceSheet, Type.Null()], { description: 'As of the day before startDate.' }),
      priorYear: Type.Union([BalanceSheet, Type.Null()], { description: 'As of endDate a year earlier.' }),
    }),
    cashFlow: CashFlow,
    trialBalance: Type.Union([TrialBalance], { description: 'From the beginning of the books through endDate.' }),
    arAging: Type.Union([AgingReport], { description: 'As of endDate.' }),
    apAging: Type.Union([AgingReport], { description: 'As of endDate.' }),
    bankReconciliation: Type.Union([ReconciliationStatusReport], { description: 'As of endDate.' }),
    ratios: Type.Object({
      currentRatio: Ratio('Current assets / current liabilities; null without current liabilities.'),
      quickRatio: Ratio('(Bank + receivables) / current liabilities.'),
      grossMarginPct: Ratio('Gross profit / income, in percent; null without income.'),
      netMarginPct: Ratio('Net income / (income + other income), in percent.'),
      debtToEquity: Ratio('Total liabilities / total equity; null when equity is zero.'),
      workingCapitalCents: Cents,
    }),
    generatedAt: Type.String({ format: 'date-time' }),
  },
  { title: 'FinancialPacket' },
);

const CURRENT_ASSETS: readonly AccountSubtype[] = ['bank', 'accounts_receivable', 'other_current_asset'];
const QUICK_ASSETS: readonly AccountSubtype[] = ['bank', 'accounts_receivable'];
const CURRENT_LIABILITIES: readonly AccountSubtype[] = ['accounts_payable', 'credit_card', 'other_current_liability'];

const round = (n: number) => Math.round(n * 10_000) / 10_000;
const ratio = (a: number, b: number) => (b === 0 ? null : round(a / b));

function ratiosOf(bs: BalanceSheetReport, pnl: ProfitAndLossReport) {
  const total = (rows: BalanceSheetReport['assets']['accounts'], subtypes: readonly AccountSubtype[]) =>
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
export async function financialPacket(
  db: Parameters<typeof profitAndLoss>[0],
  organization: { id: string; name: string; fiscalYearStartMonth: number },
  query: { startDate?: string; endDate?: string; comparePriorPeriod?: boolean; comparePriorYear?: boolean },
) {
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
  const [pnl, pnlPrior, pnlYear, bs, bsPrior, bsYear, cashFlow, tb, ar, ap, bank] = await Promise.all([
    profitAndLoss(db, orgId, { startDate, endDate }),
    priorPeriod ? profitAndLoss(db, orgId, priorPeriod) : null,
    priorYear ? profitAndLoss(db, orgId, priorYear) : null,
    balanceSheet(db, orgId, { asOf: endDate }),
    priorPeriod ? balanceSheet(db, orgId, { asOf: priorPeriod.endDate }) : null,
    priorYear ? balanceSheet(db, orgId, { asOf: priorYear.endDate }) : null,
    cashFlowStatement(db, orgId, { startDate, endDate }),
    trialBalance(db, orgId, { endDate }),
    agingReport(db, orgId, 'receivable', endDate),
    agingReport(db, orgId, 'payable', endDate),
    reconciliationStatus(db, orgId, endDate),
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
    generatedAt: new Date().toISOString(),
  };
}

export const packetRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/reports/financial-packet',
    {
      config: { scope: 'reports:read', organization: 'header' },
      schema: {
        tags: ['reports'],
        summary: 'Month-end financial packet',
        description:
          'One document: profit and loss with prior-period and prior-year columns, the comparative balance sheet, ' +
          'the cash-flow statement (indirect method), the trial balance, AR and AP aging, the bank reconciliation ' +
          'status and key ratios. Each part is the standalone report for the same dates (the balance sheet as of ' +
          'endDate, the day before startDate and endDate a year earlier; the agings and bank status as of endDate).',
        querystring: PacketQuery,
        response: { 200: ReportOf(FinancialPacket), ...errorResponses(400) },
      },
    },
    async (request) => ({
      data: await financialPacket(app.database.db, request.organization, request.query),
    }),
  );
};
