import type { Readable } from 'node:stream';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agingReport } from '@firm/documents';
import {
  balanceSheet,
  cashFlowStatement,
  checkDateRange,
  fiscalYearStart,
  openGeneralLedger,
  profitAndLoss,
  todayUtc,
  trialBalance,
} from '@firm/ledger';
import { Type } from 'typebox';
import { errorResponses } from '../../errors';
import { exportLimited } from '../../plugins/export-slots';
import { IsoDate, Uuid } from '../../schemas';
import { financialPacket } from './packet';
import { csvStream, pdfStream, xlsxStream } from './render';
import {
  agingStatement,
  balanceSheetStatement,
  cashFlowStatementOf,
  generalLedgerStatement,
  profitAndLossStatement,
  type Statement,
  trialBalanceStatement,
} from './statements';

export const EXPORT_REPORTS = [
  'trial-balance',
  'balance-sheet',
  'profit-and-loss',
  'general-ledger',
  'cash-flow',
  'ar-aging',
  'ap-aging',
  'financial-packet',
] as const;
type ExportReport = (typeof EXPORT_REPORTS)[number];

const FORMATS = {
  pdf: 'application/pdf',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  csv: 'text/csv; charset=utf-8',
} as const;

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

type Query = {
  report: ExportReport;
  format: keyof typeof FORMATS;
  startDate?: string;
  endDate?: string;
  asOf?: string;
  accountId?: string;
  comparePriorPeriod?: boolean;
  comparePriorYear?: boolean;
};

const Binary = (description: string) => ({ schema: Type.String({ format: 'binary', description }) });

/**
 * Report export: the same reports as their JSON routes, laid out as statements and drawn as PDF (pdfkit), XLSX
 * (exceljs) or CSV. The report is computed (and its parameters judged) before the first byte is sent, so a bad
 * parameter is a 400 in the documented shape; the file itself is streamed.
 */
export const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const db = () => app.database.db;

  /**
   * The statements of an export; what they read while they are drawn (the general ledger's lines) is released by the
   * functions added to `opened`.
   */
  async function statementsOf(
    q: Query,
    org: { id: string; name: string; fiscalYearStartMonth: number },
    opened: (() => Promise<void>)[],
  ): Promise<Statement[]> {
    const endDate = q.endDate ?? todayUtc();
    const startDate = q.startDate ?? fiscalYearStart(endDate, org.fiscalYearStartMonth);
    const name = org.name;
    switch (q.report) {
      case 'trial-balance':
        return [trialBalanceStatement(await trialBalance(db(), org.id, { startDate: q.startDate, endDate }), name)];
      case 'balance-sheet':
        return [
          balanceSheetStatement(
            [{ title: endDate, report: await balanceSheet(db(), org.id, { asOf: endDate }) }],
            name,
          ),
        ];
      case 'profit-and-loss':
        return [
          profitAndLossStatement(
            [{ title: 'Amount', report: await profitAndLoss(db(), org.id, { startDate, endDate }) }],
            name,
          ),
        ];
      case 'general-ledger': {
        const gl = await openGeneralLedger(
          db(),
          org.id,
          { startDate, endDate, accountId: q.accountId },
          { maxLines: app.config.GENERAL_LEDGER_MAX_LINES },
        );
        opened.push(gl.close);
        return [generalLedgerStatement(gl, name)];
      }
      case 'cash-flow':
        return [cashFlowStatementOf(await cashFlowStatement(db(), org.id, { startDate, endDate }), name)];
      case 'ar-aging':
      case 'ap-aging': {
        const side = q.report === 'ar-aging' ? 'receivable' : 'payable';
        return [agingStatement(await agingReport(db(), org.id, side, q.asOf ?? endDate), name)];
      }
      case 'financial-packet': {
        checkDateRange(startDate, endDate);
        const p = await financialPacket(db(), org, { ...q, startDate, endDate });
        const pnl = [{ title: 'Current', report: p.profitAndLoss.current }];
        if (p.profitAndLoss.priorPeriod) pnl.push({ title: 'Prior period', report: p.profitAndLoss.priorPeriod });
        if (p.profitAndLoss.priorYear) pnl.push({ title: 'Prior year', report: p.profitAndLoss.priorYear });
        const bs = [{ title: p.balanceSheet.current.asOf, report: p.balanceSheet.current }];
        if (p.balanceSheet.priorPeriod)
          bs.push({ title: p.balanceSheet.priorPeriod.asOf, report: p.balanceSheet.priorPeriod });
        if (p.balanceSheet.priorYear)
          bs.push({ title: p.balanceSheet.priorYear.asOf, report: p.balanceSheet.priorYear });
        return [
          profitAndLossStatement(pnl, name),
          balanceSheetStatement(bs, name),
          cashFlowStatementOf(p.cashFlow, name),
          trialBalanceStatement(p.trialBalance, name),
          agingStatement(p.arAging, name),
          agingStatement(p.apAging, name),
        ] satisfies Statement[];
      }
    }
  }

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
          'with their comparison columns, the cash flows, the trial balance and both agings. Sent as an attachment, ' +
          'streamed as it is drawn (a general ledger is read a page of lines at a time).\n\n' +
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
      const opened: (() => Promise<void>)[] = [];
      const release = () => {
        for (const close of opened.splice(0)) void close().catch((err: unknown) => request.log.warn({ err }));
      };
      let stream: Readable;
      try {
        const statements = await statementsOf(q, request.organization, opened);
        stream =
          q.format === 'pdf'
            ? await pdfStream(statements)
            : q.format === 'xlsx'
              ? await xlsxStream(statements)
              : csvStream(statements);
      } catch (err) {
        release();
        throw err;
      }
      // Sent whole, failed or cut off by the client: the report's reading ends with its stream.
      stream.once('close', release);
      const filename = `${q.report}-${q.endDate ?? q.asOf ?? todayUtc()}.${q.format}`;
      return reply
        .type(FORMATS[q.format])
        .header('content-disposition', `attachment; filename="${filename}"`)
        .send(stream as never);
    },
  );
};
