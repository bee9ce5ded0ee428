import { DomainError } from '@firm/core';
import type { Executor } from '@firm/db';
import type {
  ListOptions,
  PlatformAdapter,
  PlatformContext,
  PlatformOperation,
  PlatformRecord,
  RecordPage,
  WriteResult,
} from '../types';
import { accountHandler } from './accounts';
import { attachableHandler } from './attachables';
import { recordNotFound } from './common';
import { companyInfo } from './company';
import { customerHandler, vendorHandler } from './contacts';
import { documentHandlers } from './documents';
import { entryHandlers } from './entries';
import type { EntityHandler } from './handler';
import { itemHandler } from './items';
import { paymentHandlers } from './payments';
import { taxHandlers } from './taxes';
import { runQuery } from './query';
import { report, reportStream } from './reports';

const companyHandler: EntityHandler = {
  table: 'organizations',
  operations: ['read'],
  async list(db, ctx, options) {
    const all = options.startPosition === 1 ? [await companyInfo(db, ctx)] : [];
    return {
      records: all.slice(0, options.maxResults),
      startPosition: options.startPosition,
      maxResults: 1,
      totalCount: 1,
    };
  },
  async get(db, ctx, id) {
    if (id !== ctx.acctCompanyId) throw recordNotFound('CompanyInfo');
    return companyInfo(db, ctx);
  },
};

/** Every entity the embedded platform presents, by the platform's name for it. */
export const EMBEDDED_ENTITIES: ReadonlyMap<string, EntityHandler> = new Map<string, EntityHandler>([
  ['Account', accountHandler],
  ['Customer', customerHandler],
  ['Vendor', vendorHandler],
  ['Item', itemHandler],
  ...taxHandlers,
  ...documentHandlers,
  ...paymentHandlers,
  ...entryHandlers,
  ['CompanyInfo', companyHandler],
  ['Attachable', attachableHandler],
]);

const unsupported = (entity: string, operation: PlatformOperation) =>
  new DomainError('OPERATION_NOT_SUPPORTED', `${entity} does not support ${operation}`, [
    { field: 'entity', message: `${operation} is not an operation of ${entity}` },
  ]);

function handlerOf(entity: string, operation: PlatformOperation): EntityHandler {
  const handler = EMBEDDED_ENTITIES.get(entity);
  if (!handler) throw new DomainError('ENTITY_NOT_COVERED', `the platform has no entity ${entity}`);
  if (!handler.operations.includes(operation)) throw unsupported(entity, operation);
  return handler;
}

/**
 * This service's own books as an accounting platform. Reads run on `db`; each write runs in a transaction of its
 * own, or in a savepoint when `db` is already a transaction (so the caller's idempotency record, audit event or
 * dry-run rollback covers it). Writes go through the same domain functions as the partner API, with their rules.
 */
export function createEmbeddedPlatform(db: Executor, ctx: PlatformContext): PlatformAdapter {
  const supported = new Map(
    [...EMBEDDED_ENTITIES].map(([name, h]) => [name, new Set(h.operations)] as [string, Set<PlatformOperation>]),
  );
  return {
    supported,
    companyInfo: () => companyInfo(db, ctx),
    list: async (entity: string, options: ListOptions): Promise<RecordPage> =>
      handlerOf(entity, 'read').list(db, ctx, options),
    get: async (entity: string, id: string): Promise<PlatformRecord> => handlerOf(entity, 'read').get(db, ctx, id),
    async create(entity, payload): Promise<WriteResult> {
      const h = handlerOf(entity, 'create');
      return db.transaction((tx) => (h.create as NonNullable<EntityHandler['create']>)(tx, ctx, payload));
    },
    async update(entity, id, payload): Promise<WriteResult> {
      const h = handlerOf(entity, 'update');
      return db.transaction((tx) => (h.update as NonNullable<EntityHandler['update']>)(tx, ctx, id, payload));
    },
    async delete(entity, id, syncToken): Promise<WriteResult> {
      const h = handlerOf(entity, 'delete');
      return db.transaction((tx) => (h.delete as NonNullable<EntityHandler['delete']>)(tx, ctx, id, syncToken));
    },
    query: async (query) => runQuery(db, ctx, handlerOf(query.entity, 'read'), query),
    report: (name, params) => report(db, ctx, name, params),
    reportStream: (name, params) => reportStream(db, ctx, name, params),
  };
}
