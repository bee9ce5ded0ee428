import { DomainError } from '@firm/core';
import { type Executor } from '@firm/db';
import {
  companyOfFirm,
  balanceSheet,
  fiscalYearStart,
  openGeneralLedger,
  profitAndLoss,
  todayUtc,
  trialBalance,
  type BalanceSection,
  type ProfitAndLossSection,
} from '@firm/ledger';
import {} from 'drizzle-orm';
import type { PlatformContext, ReportName, ReportParams, StreamedReport } from '../types';

/** Money as the platform's reports write it: a decimal string with two places, exact from integer cents. */
export function money(cents: number): string {
  const abs = Math.abs(cents);
  return `${cents < 0 ? '-' : ''}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

type Row = Record<string, unknown>;
const cell = (value: string, id?: string) => (id ? { value, id } : { value });
const data = (cells: ReturnType<typeof cell>[]): Row => ({ type: 'Data', ColData: cells });
const sectionRow = (group: string, title: string, rows: Row[], summary: ReturnType<typeof cell>[]): Row => ({
  type: 'Section',
  group,
  Header: { ColData: [cell(title), ...summary.slice(1).map(() => cell(''))] },
  Rows: { Row: rows },
  Summary: { ColData: summary },
});

function header(name: string, currency: string, start: string | null, end: string) {
  return {
    Time: new Date().toISOString(),
    ReportName: name,
    ReportBasis: 'Accrual',
    ...(start ? { StartPeriod: start } : {}),
    EndPeriod: end,
    Currency: currency,
    Option: [{ Name: 'NoReportData', Value: 'false' }],
  };
}

const moneyColumns = (...titles: string[]) => ({
  Column: [{ ColTitle: '', ColType: 'Account' }, ...titles.map((t) => ({ ColTitle: t, ColType: 'Money' }))],
});

function accountSection(group: string, title: string, s: BalanceSection | ProfitAndLossSection): Row {
  const rows = (s.accounts as { accountId: string; name: string; balanceCents?: number; amountCents?: number }[]).map(
    (a) => data([cell(a.name, a.accountId), cell(money(a.balanceCents ?? a.amountCents ?? 0))]),
  );
  return sectionRow(group, title, rows, [cell(`Total ${title}`), cell(money(s.totalCents))]);
}

async function organizationOf(db: Executor, ctx: PlatformContext) {
  const org = await companyOfFirm(db, ctx.firmId, ctx.organizationId);
  if (!org) throw new DomainError('RECORD_NOT_FOUND', 'no such company');
  return org;
}

/**
 * The ledger's reports in the platform's report JSON (`Header`, `Columns`, `Rows` with `Summary`). Every figure is
 * the ledger report's own, for the same organization and dates, so it equals the partner API's.
 */
export async function report(
  db: Executor,
  ctx: PlatformContext,
  name: ReportName,
  params: ReportParams,
): Promise<Record<string, unknown>> {
  const org = await organizationOf(db, ctx);
  const endDate = params.endDate ?? todayUtc();
  const periodStart = params.startDate ?? fiscalYearStart(endDate, org.fiscalYearStartMonth);
  const orgId = ctx.organizationId;
  switch (name) {
    case 'profit-loss': {
      const r = await profitAndLoss(db, orgId, { startDate: periodStart, endDate });
      return {
        Header: header('ProfitAndLoss', org.currency, r.startDate, r.endDate),
        Columns: moneyColumns('Total'),
        Rows: {
          Row: [
            accountSection('Income', 'Income', r.income),
            accountSection('COGS', 'Cost of Goods Sold', r.costOfSales),
            {
              type: 'Section',
              group: 'GrossProfit',
              Summary: { ColData: [cell('Gross Profit'), cell(money(r.grossProfitCents))] },
            },
            accountSection('Expenses', 'Expenses', r.expenses),
            accountSection('OtherIncome', 'Other Income', r.otherIncome),
            accountSection('OtherExpenses', 'Other Expenses', r.otherExpenses),
            {
              type: 'Section',
              group: 'NetIncome',
              Summary: { ColData: [cell('Net Income'), cell(money(r.netIncomeCents))] },
            },
          ],
        },
      };
    }
    case 'balance-sheet': {
      const r = await balanceSheet(db, orgId, { asOf: endDate });
      const equityRows = [
        ...r.equity.accounts.map((a) => data([cell(a.name, a.accountId), cell(money(a.balanceCents))])),
        data([cell('Retained Earnings'), cell(money(r.equity.retainedEarningsCents))]),
        data([cell('Net Income'), cell(money(r.equity.currentYearEarningsCents))]),
      ];
      return {
        Header: header('BalanceSheet', org.currency, null, r.asOf),
        Columns: moneyColumns('Total'),
        Rows: {
          Row: [
            accountSection('TotalAssets', 'Assets', r.assets),
            accountSection('Liabilities', 'Liabilities', r.liabilities),
            sectionRow('Equity', 'Equity', equityRows, [cell('Total Equity'), cell(money(r.equity.totalCents))]),
            {
              type: 'Section',
              group: 'TotalLiabilitiesAndEquity',
              Summary: {
                ColData: [cell('Total Liabilities and Equity'), cell(money(r.totalLiabilitiesAndEquityCents))],
              },
            },
          ],
        },
      };
    }
    case 'trial-balance': {
      const r = await trialBalance(db, orgId, { startDate: params.startDate, endDate });
      return {
        Header: header('TrialBalance', org.currency, r.startDate, r.endDate),
        Columns: moneyColumns('Debit', 'Credit'),
        Rows: {
          Row: [
            ...r.rows.map((a) =>
              data([
                cell(a.name, a.accountId),
                cell(a.debitCents ? money(a.debitCents) : ''),
                cell(a.creditCents ? money(a.creditCents) : ''),
              ]),
            ),
            {
              type: 'Section',
              group: 'GrandTotal',
              Summary: {
                ColData: [cell('TOTAL'), cell(money(r.totalDebitCents)), cell(money(r.totalCreditCents))],
              },
            },
          ],
        },
      };
    }
    case 'general-ledger':
      return wholeReport(await generalLedgerReport(db, ctx, org, periodStart, endDate, params));
  }
}

/** A streamed report gathered into one value. */
async function wholeReport(report: StreamedReport): Promise<Record<string, unknown>> {
  try {
    const sections: Row[] = [];
    for await (const { section, rows, summary } of report.sections) {
      const all: Row[] = [];
      for await (const page of rows) all.push(...page);
      sections.push({ ...section, Rows: { Row: all }, Summary: summary });
    }
    return { ...report.head, Rows: { Row: sections } };
  } finally {
    await report.close();
  }
}

/**
 * The general ledger in the platform's shape, read from the ledger's pages as it is sent: one section per account,
 * its beginning balance, its lines and its total.
 */
async function generalLedgerReport(
  db: Executor,
  ctx: PlatformContext,
  org: { currency: string },
  startDate: string,
  endDate: string,
  params: ReportParams,
): Promise<StreamedReport> {
  const gl = await openGeneralLedger(
    db,
    ctx.organizationId,
    { startDate, endDate, accountId: params.accountId },
    { maxLines: ctx.generalLedgerMaxLines },
  );
  return {
    head: {
      Header: header('GeneralLedger', org.currency, gl.startDate, gl.endDate),
      Columns: {
        Column: [
          { ColTitle: 'Date', ColType: 'tx_date' },
          { ColTitle: 'Memo/Description', ColType: 'memo' },
          { ColTitle: 'Debit', ColType: 'debt_amt' },
          { ColTitle: 'Credit', ColType: 'credit_amt' },
          { ColTitle: 'Balance', ColType: 'rbal_nat_amount' },
        ],
      },
    },
    sections: (async function* () {
      for (const a of gl.accounts) {
        yield {
          section: {
            type: 'Section',
            Header: { ColData: [cell(a.name, a.accountId), cell(''), cell(''), cell(''), cell('')] },
          },
          rows: (async function* () {
            yield [
              data([
                cell(gl.startDate),
                cell('Beginning Balance'),
                cell(''),
                cell(''),
                cell(money(a.openingBalanceCents)),
              ]),
            ];
            for await (const page of gl.pages(a)) {
              yield page.map((l) =>
                data([
                  cell(l.date, l.entryId),
                  cell(l.description ?? l.memo ?? ''),
                  cell(l.debitCents ? money(l.debitCents) : ''),
                  cell(l.creditCents ? money(l.creditCents) : ''),
                  cell(money(l.runningBalanceCents)),
                ]),
              );
            }
          })(),
          summary: {
            ColData: [cell(`Total for ${a.name}`), cell(''), cell(''), cell(''), cell(money(a.closingBalanceCents))],
          },
        };
      }
    })(),
    close: gl.close,
  };
}

/** The reports the embedded platform sends as they are read: the general ledger. */
export async function reportStream(
  db: Executor,
  ctx: PlatformContext,
  name: ReportName,
  params: ReportParams,
): Promise<StreamedReport | undefined> {
  if (name !== 'general-ledger') return undefined;
  const org = await organizationOf(db, ctx);
  const endDate = params.endDate ?? todayUtc();
  const startDate = params.startDate ?? fiscalYearStart(endDate, org.fiscalYearStartMonth);
  return generalLedgerReport(db, ctx, org, startDate, endDate, params);
}
