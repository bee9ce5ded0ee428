import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { financialPacket } from '@firm/reports';
import { errorResponses } from '../../errors/responses';
import { FinancialPacket, PacketQuery, ReportOf } from './schemas';

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
          "status, key ratios and the twelve months ending with endDate's (income, expenses, net income and cash " +
          'at each month end). Each part is the standalone report for the same dates (the balance sheet as of ' +
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
