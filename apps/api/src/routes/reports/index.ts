import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Organization } from '@firm/identity';
import { balanceSheet, fiscalYearStart, generalLedger, profitAndLoss, todayUtc, trialBalance } from '@firm/ledger';
import type { FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { errorResponses } from '../../errors';
import { CompanyParams } from '../../schemas';
import {
  BalanceSheet,
  GeneralLedger,
  GeneralLedgerQuery,
  ProfitAndLoss,
  ReportOf,
  ReportQuery,
  TrialBalance,
} from './schemas';

interface Period {
  startDate?: string | undefined;
  endDate?: string | undefined;
  accountId?: string | undefined;
}

/** Default end: today; default start: the first day of the fiscal year that contains the end. */
const period = (organization: Organization, query: Period) => {
  const endDate = query.endDate ?? todayUtc();
  return { endDate, startDate: query.startDate ?? fiscalYearStart(endDate, organization.fiscalYearStartMonth) };
};

interface Report {
  path: string;
  summary: string;
  description: string;
  query: TSchema;
  response: TSchema;
  run(request: FastifyRequest, query: Period): Promise<unknown>;
}

const REPORTS: Report[] = [
  {
    path: 'trial-balance',
    summary: 'Trial balance',
    description:
      'Net posted activity per account from startDate (default: the beginning of the books) through endDate.',
    query: ReportQuery,
    response: TrialBalance,
    run: (request, query) =>
      trialBalance(request.server.database.db, request.organization.id, {
        startDate: query.startDate,
        endDate: query.endDate ?? todayUtc(),
      }),
  },
  {
    path: 'balance-sheet',
    summary: 'Balance sheet',
    description:
      'Assets, liabilities and equity as of endDate; net income is rolled into equity as current-year earnings ' +
      '(from the fiscal-year start) and retained earnings (everything before).',
    query: ReportQuery,
    response: BalanceSheet,
    run: (request, query) =>
      balanceSheet(request.server.database.db, request.organization.id, { asOf: query.endDate ?? todayUtc() }),
  },
  {
    path: 'profit-and-loss',
    summary: 'Profit and loss',
    description: 'Income, cost of sales, expenses and net income of the posted entries dated in the period.',
    query: ReportQuery,
    response: ProfitAndLoss,
    run: (request, query) =>
      profitAndLoss(request.server.database.db, request.organization.id, period(request.organization, query)),
  },
  {
    path: 'general-ledger',
    summary: 'General ledger',
    description: 'Per account: opening balance, each posted line with its running balance, closing balance.',
    query: GeneralLedgerQuery,
    response: GeneralLedger,
    run: (request, query) =>
      generalLedger(request.server.database.db, request.organization.id, {
        ...period(request.organization, query),
        accountId: query.accountId,
      }),
  },
];

const tags = ['reports'];

export const reportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const report of REPORTS) {
    app.get(
      `/reports/${report.path}`,
      {
        config: { scope: 'reports:read', organization: 'header' },
        schema: {
          tags,
          summary: report.summary,
          description: report.description,
          querystring: report.query,
          response: { 200: ReportOf(report.response), ...errorResponses(400) },
        },
      },
      async (request) => ({ data: await report.run(request, request.query as Period) }),
    );
    app.get(
      `/companies/:companyId/reports/${report.path}`,
      {
        config: { scope: 'reports:read', organization: 'path' },
        schema: {
          tags,
          summary: `${report.summary} (company path)`,
          description: report.description,
          params: CompanyParams,
          querystring: report.query,
          response: { 200: ReportOf(report.response), ...errorResponses(400) },
        },
      },
      async (request) => ({ data: await report.run(request, request.query as Period) }),
    );
  }
};
