import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errorResponses } from '../../errors/responses';
import { exportLimited } from '../../plugins/export-slots';
import { actorOf, sendReport, tags } from './hooks';
import { ReportParams, ReportQuery, ReportResponse } from './schemas';

/** The client's financial reports, in the platform's report JSON. */
export const reportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/acct/clients/:clientId/reports/:reportName',
    {
      config: { scope: 'acct:reports:read', organization: 'client', audit: 'reports.read' },
      schema: {
        tags,
        summary: 'A financial report',
        description:
          "In the platform's report JSON. Dates: start_date/end_date (or startDate/endDate); end defaults to today, " +
          'start to the fiscal-year start (profit-loss, general-ledger) or the beginning of the books (trial-balance). ' +
          "Every figure is the partner API's report for the same company and dates.\n\n" +
          'general-ledger lists at most GENERAL_LEDGER_MAX_LINES posted lines (50,000 by default), as the partner ' +
          "API's: a range with more is refused with 422 REPORT_TOO_LARGE (details[0] gives lineCount and maxLines); " +
          'ask for a shorter period or one account (accountId). It also counts as an export: each credential may ' +
          'run EXPORTS_PER_CREDENTIAL of them at once (2 by default), each server process EXPORTS_PER_PROCESS (4); ' +
          'beyond either, 429 RATE_LIMITED with Retry-After. The same holds for reports/GeneralLedger through the ' +
          'pass-through.',
        params: ReportParams,
        querystring: ReportQuery,
        response: { 200: ReportResponse, ...errorResponses(422), 429: exportLimited },
      },
    },
    async (request, reply) => {
      const q = request.query;
      if (request.params.reportName === 'general-ledger') request.server.takeExportSlot(request, reply);
      request.agentAudit.entityType = request.params.reportName;
      return sendReport(reply, app.gateway.platform(actorOf(request), request.client), request.params.reportName, {
        startDate: q.start_date ?? q.startDate,
        endDate: q.end_date ?? q.endDate,
        accountId: q.accountId,
      });
    },
  );
};
