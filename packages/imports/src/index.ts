export { formatCents, parseCents, parseDate } from './amounts';
export { ChartIndex } from './chart';
export { accountsCsv, csvRecords, journalCsv } from './csv';
export { HledgerParser, parseAmount } from './hledger';
export * from './post';
export * from './receive';
export type { ParsedEntry, ParsedItem, ParsedLine, RowError } from './types';
