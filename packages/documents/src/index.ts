export * from './aging';
export * from './contacts';
export * from './documents';
export * from './items';
export * from './payments';
export { divideHalfEven, lineAmountCents, lineTaxCents } from './rounding';
export * from './lookups';
