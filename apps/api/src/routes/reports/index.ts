import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Organization } from '@firm/identity';
import { balanceSheet, fiscalYearStart, openGeneralLedger, profitAndLoss, todayUtc, trialBalance } from '@firm/ledger';
import { generalLedgerJson } from '@firm/reports';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { TSchema } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { exportLimited } from '../../plugins/export-slots';
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
  run(request: FastifyRequest, query: Period, reply: FastifyReply): Promise<unknown>;
  /** Reports whose size grows with the books: capped, streamed, and counted as exports. */
  large?: boolean;
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
    description:
      'Per account: opening balance, each posted line with its running balance, closing balance.\n\n' +
      'Whole, not in pages: a range of more than GENERAL_LEDGER_MAX_LINES posted lines (50,000 by default) is ' +
      'refused with 422 REPORT_TOO_LARGE before any line is read (details[0] gives lineCount and maxLines); narrow ' +
      'it with a shorter date range or accountId. Within the limit the report is streamed as it is read, a page of ' +
      'lines at a time, from one snapshot of the books. It counts as an export: each credential may run ' +
      'EXPORTS_PER_CREDENTIAL exports and general ledgers at once (2 by default), each server process ' +
      'EXPORTS_PER_PROCESS (4); beyond either, 429 RATE_LIMITED with Retry-After.',
    query: GeneralLedgerQuery,
    response: GeneralLedger,
    large: true,
    run: async (request, query, reply) => {
      const gl = await openGeneralLedger(
        request.server.database.db,
        request.organization.id,
        { ...period(request.organization, query), accountId: query.accountId },
        { maxLines: request.server.config.GENERAL_LEDGER_MAX_LINES },
      );
      return reply.type('application/json; charset=utf-8').send(generalLedgerJson(gl, ['{"data":', '}']));
    },
  },
];

const tags = ['reports'];

export const reportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  for (const report of REPORTS) {
    const responses = {
      200: ReportOf(report.response),
      ...errorResponses(400),
      ...(report.large ? { ...errorResponses(422), 429: exportLimited } : {}),
    };
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const data = await report.run(request, request.query as Period, reply);
      return report.large ? data : { data };
    };
    app.get(
      `/reports/${report.path}`,
      {
        config: { scope: 'reports:read', organization: 'header', exportSlot: report.large ?? false },
        schema: {
          tags,
          summary: report.summary,
          description: report.description,
          querystring: report.query,
          response: responses,
        },
      },
      handler,
    );
    app.get(
      `/companies/:companyId/reports/${report.path}`,
      {
        config: { scope: 'reports:read', organization: 'path', exportSlot: report.large ?? false },
        schema: {
          tags,
          summary: `${report.summary} (company path)`,
          description: report.description,
          params: CompanyParams,
          querystring: report.query,
          response: responses,
        },
      },
      handler,
    );
  }
};
