export { REPORT_NAMES } from './types';
export type {
  Comparison,
  Condition,
  JournalEffectLine,
  PlatformAdapter,
  PlatformOperation,
  PlatformQuery,
  PlatformRecord,
  QueryValue,
  RecordPage,
  ReportName,
  ReportParams,
  StreamedReport,
  WriteResult,
} from './types';
export { createEmbeddedPlatform, EMBEDDED_ENTITIES } from './embedded/index';
export { queryFieldsOf, queryFieldTypesOf } from './embedded/query';
export { LITERAL_EXPECTED, literalOf } from './literals';
export type { QueryFieldType } from './literals';
