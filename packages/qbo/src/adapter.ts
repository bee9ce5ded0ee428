import { createHash } from 'node:crypto';
import { DomainError, isDomainError } from '@firm/core';
import {
  EMBEDDED_ENTITIES,
  type PlatformAdapter,
  type PlatformOperation,
  type PlatformQuery,
  type PlatformRecord,
  type QueryValue,
  type ReportName,
  type WriteResult,
} from '@firm/platform';
import type { QboHttp } from './http';

/** QBO's report names for the gateway's. */
const REPORTS: Record<ReportName, string> = {
  'profit-loss': 'ProfitAndLoss',
  'balance-sheet': 'BalanceSheet',
  'trial-balance': 'TrialBalance',
  'general-ledger': 'GeneralLedger',
};

/** A value in QBO's query language: strings quoted, with quotes and backslashes escaped. */
export function queryLiteral(value: QueryValue): string {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  return `'${value.replaceAll('\\', '\\\\').replaceAll("'", "\\'")}'`;
}

/** The query's WHERE and ORDER BY clauses, kept whole on every page so that paging never drops a filter. */
function clauses(query: Pick<PlatformQuery, 'where' | 'orderBy'>): string {
  const where = query.where.map((c) =>
    c.op === 'IN'
      ? `${c.field} IN (${c.values.map(queryLiteral).join(', ')})`
      : `${c.field} ${c.op} ${queryLiteral(c.value)}`,
  );
  const order = query.orderBy.map((o) => `${o.field} ${o.direction}`);
  return [
    where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '',
    order.length > 0 ? ` ORDERBY ${order.join(', ')}` : '',
  ].join('');
}

/** The query text for QBO: the select list, the entity, every filter and order, and the page. */
export function queryText(query: PlatformQuery): string {
  const select = query.select === '*' ? '*' : query.select === 'count' ? 'COUNT(*)' : query.select.join(', ');
  const page = query.select === 'count' ? '' : ` STARTPOSITION ${query.startPosition} MAXRESULTS ${query.maxResults}`;
  return `SELECT ${select} FROM ${query.entity}${clauses(query)}${page}`;
}

const pathOf = (entity: string) => entity.toLowerCase();

/** A requestid (UUID-shaped, as QBO takes) that is the same for the same key and write. */
export function derivedRequestId(key: string, write: string): string {
  const h = createHash('sha256').update(`${key}\n${write}`).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function recordOf(body: unknown, entity: string): PlatformRecord {
  const record = (body as Record<string, unknown> | null)?.[entity];
  if (typeof record !== 'object' || record === null) {
    throw new DomainError('PLATFORM_ERROR', `QuickBooks answered without the ${entity}`, [
      { message: `no ${entity} in the answer`, platform: 'qbo' },
    ]);
  }
  return record as PlatformRecord;
}

export interface QboPlatformOptions {
  realmId: string;
  /**
   * What makes a write the same write when it is asked again (the caller's idempotency key, scoped): each write's
   * requestid is derived from it, so QBO answers a repeated request with the record it kept. Null: a fresh one.
   */
  requestKey?: string | null;
  /** Writes are checked against QBO (the entity, the current SyncToken) but not sent. */
  dryRun?: boolean;
  /**
   * The files received for this client (its own attachments store), by id: what an Attachable create uploads to QBO.
   * Null for an id that is not one of this company's files. Without it, Attachables are read, not created.
   */
  files?: QboFiles;
}

/** A file received into our own store, ready to be uploaded; its bytes are read only when it is sent. */
export interface QboFile {
  fileName: string;
  contentType: string;
  sizeBytes: number;
  bytes: () => Promise<Uint8Array>;
}

export interface QboFiles {
  open(id: string): Promise<QboFile | null>;
}

const invalid = (field: string, message: string) =>
  new DomainError('VALIDATION_ERROR', `payload.${field} ${message}`, [{ field: `payload.${field}`, message }]);

/** An Attachable create's `AttachableRef`, checked: at least one `EntityRef` with a type and a value. */
function attachableRefsOf(payload: Record<string, unknown>): unknown[] {
  const refs = payload.AttachableRef;
  if (!Array.isArray(refs) || refs.length === 0) throw invalid('AttachableRef', 'must name at least one record');
  refs.forEach((ref: unknown, i) => {
    const entityRef = (ref as Record<string, unknown> | null)?.EntityRef as Record<string, unknown> | undefined;
    if (typeof entityRef?.type !== 'string' || typeof entityRef.value !== 'string' || entityRef.value === '') {
      throw invalid(`AttachableRef[${i}].EntityRef`, 'must have a type and a value');
    }
  });
  return refs;
}

/** The Attachable of an upload's answer (`AttachableResponse[0].Attachable`; a Fault there was thrown already). */
function uploadedOf(body: unknown): PlatformRecord {
  const items = (body as { AttachableResponse?: unknown } | null)?.AttachableResponse;
  return recordOf(Array.isArray(items) ? items[0] : null, 'Attachable');
}

/**
 * A client's QuickBooks Online company as an accounting platform: the same calls and shapes as the embedded
 * platform, over QBO's v3 API. A stale SyncToken is 409 STALE_SYNC_TOKEN with the record as it is now in
 * details[0].current. A dry run reads what it needs (the record, for an update or delete) and sends no write.
 */
export function createQboPlatform(http: QboHttp, options: QboPlatformOptions): PlatformAdapter {
  const requestId = (write: string) => (options.requestKey ? derivedRequestId(options.requestKey, write) : undefined);
  const supported = new Map(
    [...EMBEDDED_ENTITIES].map(([name, h]) => [name, new Set(h.operations)] as [string, Set<PlatformOperation>]),
  );
  // An Attachable's file reaches QBO through its multipart upload endpoint, from the files received for the client:
  // without them, Attachables are read, not created.
  const files = options.files;
  if (!files) {
    supported.set('Attachable', new Set([...(supported.get('Attachable') ?? [])].filter((op) => op === 'read')));
  }
  const check = (entity: string, operation: PlatformOperation) => {
    const ops = supported.get(entity);
    if (!ops) throw new DomainError('ENTITY_NOT_COVERED', `the platform has no entity ${entity}`);
    if (!ops.has(operation)) {
      throw new DomainError('OPERATION_NOT_SUPPORTED', `${entity} does not support ${operation}`, [
        { field: 'entity', message: `${operation} is not an operation of ${entity}` },
      ]);
    }
  };
  const get = async (entity: string, id: string) => {
    check(entity, 'read');
    if (entity === 'CompanyInfo') {
      if (id !== options.realmId) throw new DomainError('RECORD_NOT_FOUND', 'No such CompanyInfo');
      return recordOf(await http.request({ method: 'GET', path: `companyinfo/${encodeURIComponent(id)}` }), entity);
    }
    return recordOf(await http.request({ method: 'GET', path: `${pathOf(entity)}/${encodeURIComponent(id)}` }), entity);
  };
  /** Turns a stale-token fault into the gateway's 409 with the current record. */
  const withCurrent = async <T>(entity: string, id: string, write: () => Promise<T>): Promise<T> => {
    try {
      return await write();
    } catch (err) {
      if (!isDomainError(err) || err.code !== 'STALE_SYNC_TOKEN') throw err;
      const current = await get(entity, id).catch(() => null);
      throw new DomainError('STALE_SYNC_TOKEN', err.message, [
        { message: 'SyncToken is not the current one', field: 'SyncToken', current },
      ]);
    }
  };
  const staleUnless = (record: PlatformRecord, syncToken: unknown) => {
    if (String(syncToken) !== record.SyncToken) {
      throw new DomainError('STALE_SYNC_TOKEN', `the ${record.Id} SyncToken is ${record.SyncToken}`, [
        { message: 'SyncToken is not the current one', field: 'SyncToken', current: record },
      ]);
    }
  };
  const query = async (q: PlatformQuery) => {
    const body = (await http.request({ method: 'GET', path: 'query', query: { query: queryText(q) } })) as {
      QueryResponse?: Record<string, unknown>;
    };
    return body.QueryResponse ?? {};
  };
  const count = async (q: Pick<PlatformQuery, 'entity' | 'where'>) =>
    Number((await query({ ...q, select: 'count', orderBy: [], startPosition: 1, maxResults: 1 })).totalCount ?? 0);

  /**
   * An Attachable: the received file `payload.Id` names, uploaded with its `AttachableRef` (and `Note`) as QBO's
   * multipart upload (`file_metadata_01`, `file_content_01`) under the write's requestid, so a retried upload is one
   * Attachable there.
   */
  const uploadAttachable = async (store: QboFiles, payload: Record<string, unknown>): Promise<WriteResult> => {
    const id = payload.Id;
    if (typeof id !== 'string' || id === '') {
      throw invalid('Id', 'must name a file already received (POST /api/v1/attachments or attach_file)');
    }
    const refs = attachableRefsOf(payload);
    if (payload.Note !== undefined && typeof payload.Note !== 'string') throw invalid('Note', 'must be text');
    const file = await store.open(id);
    if (!file) throw new DomainError('RECORD_NOT_FOUND', 'no such Attachable');
    const metadata = {
      AttachableRef: refs,
      FileName: file.fileName,
      ContentType: file.contentType,
      ...(payload.Note !== undefined ? { Note: payload.Note } : {}),
    };
    if (options.dryRun) {
      const at = new Date().toISOString();
      return {
        record: {
          ...metadata,
          Size: file.sizeBytes,
          Id: '',
          SyncToken: '0',
          MetaData: { CreateTime: at, LastUpdatedTime: at },
        },
        syncTokenBefore: null,
        journal: [],
      };
    }
    const form = new FormData();
    form.append(
      'file_metadata_01',
      new Blob([JSON.stringify(metadata)], { type: 'application/json' }),
      'attachment.json',
    );
    form.append('file_content_01', new Blob([await file.bytes()], { type: file.contentType }), file.fileName);
    const body = await http.request({
      method: 'POST',
      path: 'upload',
      form,
      requestId: requestId('create Attachable'),
    });
    return { record: uploadedOf(body), syncTokenBefore: null, journal: [] };
  };

  return {
    supported,
    companyInfo: () => get('CompanyInfo', options.realmId),
    async list(entity, { startPosition, maxResults }) {
      check(entity, 'read');
      const page = await query({ entity, select: '*', where: [], orderBy: [], startPosition, maxResults });
      const records = (page[entity] as PlatformRecord[] | undefined) ?? [];
      return { records, startPosition, maxResults, totalCount: await count({ entity, where: [] }) };
    },
    get,
    async create(entity, payload): Promise<WriteResult> {
      check(entity, 'create');
      if (entity === 'Attachable' && files) return uploadAttachable(files, payload);
      if (options.dryRun) {
        const at = new Date().toISOString();
        return {
          record: { ...payload, Id: '', SyncToken: '0', MetaData: { CreateTime: at, LastUpdatedTime: at } },
          syncTokenBefore: null,
          journal: [],
        };
      }
      const body = await http.request({
        method: 'POST',
        path: pathOf(entity),
        body: payload,
        requestId: requestId(`create ${entity}`),
      });
      return { record: recordOf(body, entity), syncTokenBefore: null, journal: [] };
    },
    async update(entity, id, payload): Promise<WriteResult> {
      check(entity, 'update');
      const syncTokenBefore = String(payload.SyncToken ?? '');
      if (options.dryRun) {
        const current = await get(entity, id);
        staleUnless(current, payload.SyncToken);
        return { record: { ...current, ...payload, Id: id }, syncTokenBefore, journal: [] };
      }
      const body = await withCurrent(entity, id, () =>
        http.request({
          method: 'POST',
          path: pathOf(entity),
          body: { ...payload, Id: id, sparse: true },
          requestId: requestId(`update ${entity} ${id}`),
        }),
      );
      return { record: recordOf(body, entity), syncTokenBefore, journal: [] };
    },
    async delete(entity, id, syncToken): Promise<WriteResult> {
      check(entity, 'delete');
      const current = await get(entity, id);
      staleUnless(current, syncToken);
      if (!options.dryRun) {
        await withCurrent(entity, id, () =>
          http.request({
            method: 'POST',
            path: pathOf(entity),
            query: { operation: 'delete' },
            body: { Id: id, SyncToken: syncToken },
            requestId: requestId(`delete ${entity} ${id}`),
          }),
        );
      }
      return { record: current, syncTokenBefore: syncToken, journal: [] };
    },
    async query(q) {
      check(q.entity, 'read');
      const page = await query(q);
      if (q.select === 'count') return { QueryResponse: { totalCount: Number(page.totalCount ?? 0) } };
      const records = (page[q.entity] as unknown[] | undefined) ?? [];
      return {
        QueryResponse: {
          [q.entity]: records,
          startPosition: q.startPosition,
          maxResults: records.length,
          totalCount: await count(q),
        },
      };
    },
    async report(name, params) {
      const body = await http.request({
        method: 'GET',
        path: `reports/${REPORTS[name]}`,
        query: {
          start_date: params.startDate,
          end_date: params.endDate,
          account: params.accountId,
        },
      });
      return body as Record<string, unknown>;
    },
  };
}
