export {
  getImport,
  importWorkerId,
  listImportErrors,
  listImports,
  refusalOf,
  runNextImport,
  settleImport,
  startImportRunner,
} from './post';
export type { ImportView, Settled } from './post';
export { DEFAULT_IMPORT_MAX_BYTES, DEFAULT_INLINE_MAX_ROWS, discardImport, receiveImport, tooLarge } from './receive';
