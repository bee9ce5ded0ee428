/**
 * The accounting-platform adapter: what the agent gateway needs from a client's accounting platform, in that
 * platform's own JSON shapes (QuickBooks Online v3: `Id`, `SyncToken`, `MetaData`, `Line[]`, `...Ref`). The
 * embedded adapter presents this service's own books; an adapter for QuickBooks Online talks to Intuit over HTTP.
 * Both answer the same calls with the same shapes, so the gateway's routes do not know which one they reach.
 */

/** A record in the platform's shape. */
export interface PlatformRecord {
  Id: string;
  SyncToken: string;
  MetaData: { CreateTime: string; LastUpdatedTime: string };
  [field: string]: unknown;
}

/** Who acts, for the books' own audit trail, and on which company. */
export interface PlatformContext {
  firmId: string;
  organizationId: string;
  acctCompanyId: string;
  actor: { kind: string; id: string };
  requestId?: string | null | undefined;
  now?: Date | undefined;
  /** The most lines a general ledger report may list (REPORT_TOO_LARGE beyond); unset, the ledger's default. */
  generalLedgerMaxLines?: number | undefined;
  /**
   * A link that downloads one of the company's attachments without a credential for a short time (an Attachable's
   * `TempDownloadUri`); unset, reads carry none.
   */
  downloadLink?: ((attachmentId: string) => string) | undefined;
}

export interface ListOptions {
  /** 1-based, as the platform counts. */
  startPosition: number;
  maxResults: number;
}

export interface RecordPage {
  records: PlatformRecord[];
  startPosition: number;
  maxResults: number;
  totalCount: number;
}

/** A balanced journal line a write posts (or would post, on a dry run). */
export interface JournalEffectLine {
  accountId: string;
  debit: number;
  credit: number;
  description: string | null;
}

export interface WriteResult {
  record: PlatformRecord;
  /** The SyncToken the record had before an update or delete. */
  syncTokenBefore: string | null;
  /** The journal lines the write posted: what a dry run shows before it is rolled back. */
  journal: JournalEffectLine[];
  /** The register rows the write added to a bank or card account's register (a payment through one). */
  bankTransactionIds?: string[];
}

export type PlatformOperation = 'read' | 'create' | 'update' | 'delete';

export type QueryValue = string | number | boolean;
export type Comparison = '=' | '!=' | '<' | '<=' | '>' | '>=';

export type Condition =
  | { field: string; op: Comparison; value: QueryValue }
  | { field: string; op: 'IN'; values: QueryValue[] }
  | { field: string; op: 'LIKE'; value: string };

/** A query in the platform's language, parsed and checked against the coverage registry (field names canonical). */
export interface PlatformQuery {
  entity: string;
  select: '*' | 'count' | string[];
  where: Condition[];
  orderBy: { field: string; direction: 'ASC' | 'DESC' }[];
  startPosition: number;
  maxResults: number;
}

/** The platform's answer: `{QueryResponse: {<Entity>: [...], startPosition, maxResults, totalCount}}`. */
export interface QueryResult {
  QueryResponse: Record<string, unknown>;
}

export const REPORT_NAMES = ['profit-loss', 'balance-sheet', 'trial-balance', 'general-ledger'] as const;
export type ReportName = (typeof REPORT_NAMES)[number];

/** Report dates: `endDate` defaults to today, `startDate` to the start of the fiscal year (or of the books). */
export interface ReportParams {
  startDate?: string | undefined;
  endDate?: string | undefined;
  accountId?: string | undefined;
}

/** One company on one platform, opened for the duration of a request. */
export interface PlatformAdapter {
  /** Entity names (`Invoice`, `Account`...) and the operations this adapter supports on each. */
  readonly supported: ReadonlyMap<string, ReadonlySet<PlatformOperation>>;
  companyInfo(): Promise<PlatformRecord>;
  list(entity: string, options: ListOptions): Promise<RecordPage>;
  get(entity: string, id: string): Promise<PlatformRecord>;
  create(entity: string, payload: Record<string, unknown>): Promise<WriteResult>;
  /** A sparse update: fields left out keep their values. `payload.SyncToken` must be the current one. */
  update(entity: string, id: string, payload: Record<string, unknown>): Promise<WriteResult>;
  delete(entity: string, id: string, syncToken: string): Promise<WriteResult>;
  query(query: PlatformQuery): Promise<QueryResult>;
  /** A report in the platform's report JSON: `Header`, `Columns`, `Rows` with `Summary`. */
  report(name: ReportName, params: ReportParams): Promise<Record<string, unknown>>;
  /**
   * The same report read as it is sent, where the adapter can (the embedded general ledger, whose size grows with the
   * books); undefined where it cannot.
   */
  reportStream?(name: ReportName, params: ReportParams): Promise<StreamedReport | undefined>;
}

/**
 * A report in the platform's report JSON, its sections read one after another and each section's rows a page at a
 * time: `{...head, Rows: {Row: [{...section, Rows: {Row: [...rows]}, Summary}]}}`. `close` must be called.
 */
export interface StreamedReport {
  /** `Header` and `Columns`. */
  head: Record<string, unknown>;
  sections: AsyncIterable<{
    /** `type` and `Header`. */
    section: Record<string, unknown>;
    rows: AsyncIterable<Record<string, unknown>[]>;
    summary: Record<string, unknown>;
  }>;
  close(): Promise<void>;
}
