export { EXPORT_FORMATS, EXPORT_REPORTS, renderReport } from './export';
export type { ExportFormat, ReportRequest } from './export';
export { generalLedgerJson } from './general-ledger-json';
export { financialPacket } from './packet';
export { pdfStream, xlsxStream } from './render';
export { kindsOf, trialBalanceStatement } from './statements';
