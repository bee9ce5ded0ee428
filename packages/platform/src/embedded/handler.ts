import type { Executor, Tx } from '@firm/db';
import type {
  ListOptions,
  PlatformContext,
  PlatformOperation,
  PlatformRecord,
  RecordPage,
  WriteResult,
} from '../types';
import type { Payload } from './common';
import type { QuerySource } from './query';

/** How the embedded platform presents one entity: reads over any executor, writes inside the caller's transaction. */
export interface EntityHandler {
  /** The table whose rows are this entity's records (their versions are its SyncTokens). */
  table: string;
  operations: readonly PlatformOperation[];
  list(db: Executor, ctx: PlatformContext, options: ListOptions): Promise<RecordPage>;
  get(db: Executor, ctx: PlatformContext, id: string): Promise<PlatformRecord>;
  /** Several records in a few statements (a query page); the ids that are not records are left out. */
  getMany?(db: Executor, ctx: PlatformContext, ids: readonly string[]): Promise<PlatformRecord[]>;
  create?(tx: Tx, ctx: PlatformContext, payload: Payload): Promise<WriteResult>;
  update?(tx: Tx, ctx: PlatformContext, id: string, payload: Payload): Promise<WriteResult>;
  delete?(tx: Tx, ctx: PlatformContext, id: string, syncToken: string): Promise<WriteResult>;
  /** What queries read; unset, the entity cannot be queried. */
  query?: QuerySource;
}
