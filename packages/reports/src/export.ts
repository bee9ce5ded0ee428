import type { Readable } from 'node:stream';
import { DomainError, isUuid } from '@firm/core';
import { type Executor } from '@firm/db';
import { agingReport } from '@firm/documents';
import {
  balanceSheet,
  cashFlowStatement,
  companyById,
  fiscalYearStart,
  openGeneralLedger,
  profitAndLoss,
  todayUtc,
  trialBalance,
} from '@firm/ledger';
import {} from 'drizzle-orm';
import { financialPacket, type PacketQuery, packetStatements, type ReportCompany } from './packet';
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
export type ExportReport = (typeof EXPORT_REPORTS)[number];

/** The file formats, with the content type each is sent as. */
export const EXPORT_FORMATS = {
  pdf: 'application/pdf',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  csv: 'text/csv; charset=utf-8',
} as const;
export type ExportFormat = keyof typeof EXPORT_FORMATS;

/** A report and its own parameters, as on its JSON route. */
export interface ReportRequest extends PacketQuery {
  report: ExportReport;
  /** The agings: the date they are as of. Default: endDate, else today. */
  asOf?: string | undefined;
  /** General ledger: only this account. */
  accountId?: string | undefined;
}

export interface ReportLimits {
  /** The general ledger's most lines (GENERAL_LEDGER_MAX_LINES); beyond, REPORT_TOO_LARGE before anything is read. */
  maxLines?: number | undefined;
}

/** Statements, and the release of what they read while they are drawn (the general ledger's snapshot). */
export interface OpenedStatements {
  statements: Statement[];
  close(): Promise<void>;
}

const nothingToClose = async () => {};

/**
 * The statements of a report. They are computed (and the parameters judged) here, before anything is drawn, so a bad
 * parameter is refused before the first byte of a file; only the general ledger's lines are read while it is drawn,
 * until `close`.
 */
export async function openStatements(
  db: Executor,
  company: ReportCompany,
  q: ReportRequest,
  limits: ReportLimits = {},
): Promise<OpenedStatements> {
  const endDate = q.endDate ?? todayUtc();
  const startDate = q.startDate ?? fiscalYearStart(endDate, company.fiscalYearStartMonth);
  const name = company.name;
  const of = (...statements: Statement[]) => ({ statements, close: nothingToClose });
  switch (q.report) {
    case 'trial-balance':
      return of(trialBalanceStatement(await trialBalance(db, company.id, { startDate: q.startDate, endDate }), name));
    case 'balance-sheet':
      return of(
        balanceSheetStatement(
          [{ title: endDate, report: await balanceSheet(db, company.id, { asOf: endDate }) }],
          name,
        ),
      );
    case 'profit-and-loss':
      return of(
        profitAndLossStatement(
          [{ title: 'Amount', report: await profitAndLoss(db, company.id, { startDate, endDate }) }],
          name,
        ),
      );
    case 'general-ledger': {
      const gl = await openGeneralLedger(
        db,
        company.id,
        { startDate, endDate, accountId: q.accountId },
        { maxLines: limits.maxLines },
      );
      return { statements: [generalLedgerStatement(gl, name)], close: gl.close };
    }
    case 'cash-flow':
      return of(cashFlowStatementOf(await cashFlowStatement(db, company.id, { startDate, endDate }), name));
    case 'ar-aging':
    case 'ap-aging': {
      const side = q.report === 'ar-aging' ? 'receivable' : 'payable';
      return of(agingStatement(await agingReport(db, company.id, side, q.asOf ?? endDate), name));
    }
    case 'financial-packet':
      return of(...packetStatements(await financialPacket(db, company, { ...q, startDate, endDate }), name));
  }
}

/** Statements drawn as one file of the format, streamed as it is drawn. */
export async function renderStatements(statements: Statement[], format: ExportFormat): Promise<Readable> {
  if (format === 'pdf') return pdfStream(statements);
  if (format === 'xlsx') return xlsxStream(statements);
  return csvStream(statements);
}

export interface RenderOptions extends ReportLimits {
  /** Told of a failure to release what the report read (the file itself is whole by then). */
  onCloseError?: (err: unknown) => void;
}

/**
 * A report as a file of the format: computed first (a bad parameter throws before the stream exists), then streamed
 * as it is drawn; the writers give the event loop back between pages and wait while the reader is behind. What the
 * report reads is released when the stream closes, whether it was read to its end, failed or was destroyed.
 */
export async function renderReport(
  db: Executor,
  company: ReportCompany,
  request: ReportRequest & { format: ExportFormat },
  options: RenderOptions = {},
): Promise<Readable> {
  const opened = await openStatements(db, company, request, options);
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    void opened.close().catch((err: unknown) => options.onCloseError?.(err));
  };
  let stream: Readable;
  try {
    stream = await renderStatements(opened.statements, request.format);
  } catch (err) {
    release();
    throw err;
  }
  stream.once('close', release);
  return stream;
}

/**
 * The month-end financial packet of a company as a file (PDF unless another format is asked for): its profit and loss
 * and balance sheet with their comparison columns, the cash flows, the trial balance and both agings, each the
 * standalone report for the same dates. ORGANIZATION_NOT_FOUND when there is no such company; the stream can be
 * piped to storage, or collected with `Buffer.concat(await stream.toArray())`.
 */
export async function renderFinancialPacket(
  db: Executor,
  organizationId: string,
  query: PacketQuery & { format?: ExportFormat } = {},
): Promise<Readable> {
  const company = isUuid(organizationId) ? await companyById(db, organizationId) : undefined;
  if (!company) throw new DomainError('ORGANIZATION_NOT_FOUND', 'organization not found');
  return renderReport(db, company, { ...query, report: 'financial-packet', format: query.format ?? 'pdf' });
}
