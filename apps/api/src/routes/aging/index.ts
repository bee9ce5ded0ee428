import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { type AgingSide, agingReport, contactStatement } from '@firm/documents';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import {
  AGING_RULES,
  AgingQuery,
  AgingReport,
  CompanyParams,
  CompanyStatementParams,
  Statement,
  StatementParams,
} from './schemas';

const today = () => new Date().toISOString().slice(0, 10);
const tags = ['reports'];
const REPORTS: { path: string; side: AgingSide; summary: string }[] = [
  { path: 'ar-aging', side: 'receivable', summary: 'Accounts receivable aging' },
  { path: 'ap-aging', side: 'payable', summary: 'Accounts payable aging' },
];

export const agingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;
  for (const report of REPORTS) {
    for (const form of ['header', 'path'] as const) {
      app.get(
        form === 'header' ? `/reports/${report.path}` : `/companies/:companyId/reports/${report.path}`,
        {
          config: { scope: 'reports:read', organization: form },
          schema: {
            tags,
            summary: `${report.summary}${form === 'path' ? ' (company path)' : ''}`,
            description: AGING_RULES,
            ...(form === 'path' ? { params: CompanyParams } : {}),
            querystring: AgingQuery,
            response: { 200: Type.Object({ data: AgingReport }), ...errorResponses(400) },
          },
        },
        async (request) => ({
          data: await agingReport(db(), request.organization.id, report.side, request.query.asOf ?? today()),
        }),
      );
    }
  }

  for (const form of ['header', 'path'] as const) {
    app.get(
      form === 'header' ? '/contacts/:id/statement' : '/companies/:companyId/contacts/:id/statement',
      {
        config: { scope: 'reports:read', organization: form },
        schema: {
          tags,
          summary: `Statement of a contact's open documents${form === 'path' ? ' (company path)' : ''}`,
          description:
            'Open invoices, bills, credits and unapplied payments of one contact as of asOf, oldest due first.',
          params: form === 'path' ? CompanyStatementParams : StatementParams,
          querystring: AgingQuery,
          response: { 200: Type.Object({ data: Statement }), ...errorResponses(400) },
        },
      },
      async (request) => ({
        data: await contactStatement(
          db(),
          request.organization.id,
          (request.params as { id: string }).id,
          request.query.asOf ?? today(),
        ),
      }),
    );
  }
};
