export {
  isConnectionLost,
  openDatabase,
  openSnapshot,
  pgErrorOf,
  POOL_MODES,
  preparedStatement,
  rowsOf,
} from './connection';
export type { Database, DatabaseOptions, Db, Executor, PoolMode, StatementValues, Tx } from './connection';
export { readAll } from './read-all';
export {
  API_KEYS,
  deleteExpiredRecord,
  FIRM_KEYS,
  idempotencyInProgress,
  idempotencyLockKey,
  isKeyTaken,
  keyIsFreeSql,
  keyRecordSql,
  liveRecordQuery,
  purgeExpiredIdempotencyKeys,
  replayIfUsed,
  replayOf,
  runOnce,
  runOnceCreation,
  runOnceRemote,
} from './idempotency';
export type { IdempotencyKey, IdempotentOutcome, StoredResponse } from './idempotency';
// Every table: the tenancy test reads them all from here, as drizzle-kit reads schema/index.
export * from './schema/index';
export { claimDataDir, DataDirInUseError, runInOwner } from './owner';
export type { DataDirOwner } from './owner';
export { DatabaseStatus } from './status';
export { DISTRIBUTION } from './distribution';
export type { Placement } from './distribution';
