export * from './export';
export * from './general-ledger-json';
export * from './packet';
export { csvCell, csvStream, pdfStream, xlsxStream } from './render';
export * from './statements';
