import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { todayUtc } from '@firm/ledger';
import {
  EXPORT_FORMATS as FORMATS,
  EXPORT_REPORTS,
  type ExportFormat,
  renderReport,
  type ReportRequest,
} from '@firm/reports';
import { Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { exportLimited } from '../../plugins/export-slots';
import { IsoDate, Uuid } from '../../schemas';

/**
 * The parameters of every report: each is judged (a misspelled value is 400), and a name the export does not know is
 * ignored, as on every route.
 */
export const ExportQuery = Type.Object({
  report: Type.Enum([...EXPORT_REPORTS], { description: 'The report to export.' }),
  format: Type.Enum(['pdf', 'xlsx', 'csv'], { description: 'pdf, xlsx or csv.' }),
  startDate: Type.Optional(
    IsoDate('First day of the period (default: the fiscal-year start; trial balance: the beginning of the books).'),
  ),
  endDate: Type.Optional(IsoDate('Last day of the period, the as-of date of the balance sheet. Default: today.')),
  asOf: Type.Optional(IsoDate('The agings: the date they are as of. Default: endDate, else today.')),
  accountId: Type.Optional(Uuid('General ledger: only this account.')),
  comparePriorPeriod: Type.Optional(Type.Boolean({ description: 'Financial packet: as on its JSON route.' })),
  comparePriorYear: Type.Optional(Type.Boolean({ description: 'Financial packet: as on its JSON route.' })),
});

type Query = ReportRequest & { format: ExportFormat };

const Binary = (description: string) => ({ schema: Type.String({ format: 'binary', description }) });

/**
 * Report export: the same reports as their JSON routes, laid out as statements and drawn as PDF (pdfkit), XLSX
 * (exceljs) or CSV. The report is computed (and its parameters judged) before the first byte is sent, so a bad
 * parameter is a 400 in the documented shape; the file itself is streamed.
 */
export const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/reports/export',
    {
      config: { scope: 'reports:read', organization: 'header', exportSlot: true },
      schema: {
        tags: ['reports'],
        summary: 'Export a report as PDF, XLSX or CSV',
        description:
          '`report`: trial-balance, balance-sheet, profit-and-loss, general-ledger, cash-flow, ar-aging, ap-aging or ' +
          'financial-packet, with that report’s own parameters; `format`: pdf, xlsx or csv. PDF: a statement ' +
          'layout (company and title, period, column headings repeated on every page, indented accounts, subtotals ' +
          'and totals, "Page n of N"). XLSX: one sheet per statement, amounts ' +
          'as numbers in a currency format, subtotals and totals as formulas. CSV: per statement its title, period, ' +
          'headings and rows, amounts with two decimals. The packet exports its profit and loss and balance sheet ' +
          'with their comparison columns, the cash flows, the trial balance, both agings and the twelve months to ' +
          'endDate (income, expenses, net income, cash), which the PDF also charts on a page of its own. Sent as an ' +
          'attachment, streamed as it is drawn (a general ledger is read a page of lines at a time).\n\n' +
          'A general ledger of more than GENERAL_LEDGER_MAX_LINES lines (50,000 by default) is refused with 422 ' +
          'REPORT_TOO_LARGE, before anything is sent: details[0] gives lineCount and maxLines; narrow it with a ' +
          'shorter date range or accountId. Each credential may run EXPORTS_PER_CREDENTIAL exports (2 by default; ' +
          'the general-ledger JSON report counts too) at once, and each server process EXPORTS_PER_PROCESS (4) ' +
          'whoever asks: beyond either, 429 RATE_LIMITED with Retry-After.',
        querystring: ExportQuery,
        // The file types are the 200's alone: a refusal is JSON in the error shape, as on every route.
        response: {
          200: {
            description: 'The file',
            content: {
              [FORMATS.pdf]: Binary('PDF'),
              [FORMATS.xlsx]: Binary('XLSX workbook'),
              'text/csv': Binary('CSV, UTF-8, CRLF line ends'),
            },
          },
          ...errorResponses(400, 422),
          429: exportLimited,
        },
      },
    },
    async (request, reply) => {
      const q = request.query as Query;
      const stream = await renderReport(app.database.db, request.organization, q, {
        maxLines: app.config.GENERAL_LEDGER_MAX_LINES,
        onCloseError: (err) => request.log.warn({ err }),
      });
      const filename = `${q.report}-${q.endDate ?? q.asOf ?? todayUtc()}.${q.format}`;
      return reply
        .type(FORMATS[q.format])
        .header('content-disposition', `attachment; filename="${filename}"`)
        .send(stream as never);
    },
  );
};
