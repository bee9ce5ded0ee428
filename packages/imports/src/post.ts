import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { decodeCursor, DomainError, isUuid, type Page, startRounds, toPage } from '@firm/core';
import { type Db, type Executor, pgErrorOf, rowsOf, type Tx } from '@firm/db';
import {
  createAccount,
  firstStagedArchivedAccount,
  type LedgerContext,
  ledgerErrorOf,
  postStagedEntries,
  recordEvent,
  rethrowLedgerError,
} from '@firm/ledger';
import { sql } from 'drizzle-orm';
import {
  type ImportAtomicity,
  type ImportFormat,
  type ImportKind,
  invalidImport,
  type ReceivedImport,
} from './receive';
import type { RowError } from './types';

/** An import as the API shows it. */
export interface ImportView {
  id: string;
  companyId: string;
  kind: ImportKind;
  format: ImportFormat;
  atomicity: ImportAtomicity;
  /** Never `receiving`: an import whose file is still arriving is not shown. */
  status: 'queued' | 'running' | 'completed' | 'failed';
  fileSha256: string | null;
  fileBytes: number;
  totalRows: number;
  totalEntries: number;
  doneRows: number;
  failedRows: number;
  entriesPosted: number;
  accountsCreated: number;
  errorCount: number;
  errorSummary: string | null;
  /** Rows posted per second of the run so far (or of the whole run, once finished); null before it starts. */
  rowsPerSecond: number | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
}

interface ImportRow {
  id: string;
  firm_id: string;
  organization_id: string;
  kind: ImportKind;
  format: ImportFormat;
  atomicity: ImportAtomicity;
  status: ImportView['status'] | 'receiving';
  file_sha256: string | null;
  file_bytes: string | number;
  total_rows: number;
  total_entries: number;
  done_rows: number;
  failed_rows: number;
  entries_posted: number;
  accounts_created: number;
  posted_through_entry: number;
  error_count: number;
  error_summary: string | null;
  created_by_kind: string;
  created_by_id: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  now: string;
}

const COLUMNS = sql`i.id, i.firm_id, i.organization_id, i.kind, i.format, i.atomicity, i.status, i.file_sha256,
  i.file_bytes, i.total_rows, i.total_entries, i.done_rows, i.failed_rows, i.entries_posted, i.accounts_created,
  i.posted_through_entry, i.error_count, i.error_summary, i.created_by_kind, i.created_by_id,
  to_char(i.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as created_at,
  to_char(i.started_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as started_at,
  to_char(i.finished_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as finished_at,
  to_char(clock_timestamp() at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as now`;

function present(r: ImportRow): ImportView {
  let rowsPerSecond: number | null = null;
  if (r.started_at) {
    const seconds = (Date.parse(r.finished_at ?? r.now) - Date.parse(r.started_at)) / 1000;
    rowsPerSecond = Math.round(r.done_rows / Math.max(seconds, 0.001));
  }
  return {
    id: r.id,
    companyId: r.organization_id,
    kind: r.kind,
    format: r.format,
    atomicity: r.atomicity,
    status: r.status === 'receiving' ? 'queued' : r.status,
    fileSha256: r.file_sha256,
    fileBytes: Number(r.file_bytes),
    totalRows: r.total_rows,
    totalEntries: r.total_entries,
    doneRows: r.done_rows,
    failedRows: r.failed_rows,
    entriesPosted: r.entries_posted,
    accountsCreated: r.accounts_created,
    errorCount: r.error_count,
    errorSummary: r.error_summary,
    rowsPerSecond,
    createdAt: r.created_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
  };
}

async function readImport(db: Executor, organizationId: string, id: string, lock = false): Promise<ImportRow | null> {
  if (!isUuid(id)) return null;
  const [row] = rowsOf<ImportRow>(
    await db.execute(sql`select ${COLUMNS} from imports i where i.organization_id = ${organizationId} and i.id = ${id}
      ${lock ? sql`for update` : sql``}`),
  );
  return row ?? null;
}

const notFound = () => new DomainError('IMPORT_NOT_FOUND', 'no such import in this company');

/** An import of the company with the first page of its refused rows; another company's is IMPORT_NOT_FOUND. */
export async function getImport(
  db: Executor,
  organizationId: string,
  id: string,
): Promise<ImportView & { errors: RowError[] }> {
  const row = await readImport(db, organizationId, id);
  if (!row || row.status === 'receiving') throw notFound();
  return { ...present(row), errors: await importErrors(db, organizationId, id, 100) };
}

/** An import's refused rows in line order (the first thousand are kept), a page at a time. */
export async function listImportErrors(
  db: Executor,
  organizationId: string,
  id: string,
  options: { limit: number; cursor?: string | undefined },
): Promise<Page<RowError>> {
  const row = await readImport(db, organizationId, id);
  if (!row || row.status === 'receiving') throw notFound();
  const after = options.cursor ? Number(decodeCursor(options.cursor, ['int'])[0]) : 0;
  const rows = rowsOf<RowError & { seq: number }>(
    await db.execute(sql`select seq, line, "column", message from import_row_errors
      where organization_id = ${organizationId} and import_id = ${id} and seq > ${after}
      order by seq limit ${options.limit + 1}`),
  );
  const page = toPage(rows, options.limit, (r) => [r.seq]);
  return {
    data: page.data.map(({ line, column, message }) => ({ line, column, message })),
    nextCursor: page.nextCursor,
  };
}

async function importErrors(db: Executor, organizationId: string, id: string, limit: number): Promise<RowError[]> {
  return rowsOf<RowError>(
    await db.execute(sql`select line, "column", message from import_row_errors
      where organization_id = ${organizationId} and import_id = ${id} order by seq limit ${limit}`),
  );
}

/** The company's imports, newest first. */
export async function listImports(
  db: Executor,
  organizationId: string,
  options: { limit: number; cursor?: string | undefined },
): Promise<Page<ImportView>> {
  const before = options.cursor ? decodeCursor(options.cursor, ['timestamp', 'uuid']).map(String) : null;
  const rows = rowsOf<ImportRow & { created_at_exact: string }>(
    await db.execute(sql`select ${COLUMNS},
        to_char(i.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_exact
      from imports i
      where i.organization_id = ${organizationId} and i.status <> 'receiving'
        ${before ? sql`and (i.created_at, i.id) < (${before[0]}::timestamptz, ${before[1]}::uuid)` : sql``}
      order by i.created_at desc, i.id desc
      limit ${options.limit + 1}`),
  );
  const page = toPage(rows, options.limit, (r) => [r.created_at_exact, r.id]);
  return { data: page.data.map(present), nextCursor: page.nextCursor };
}

/** The context an import's work runs under: its maker, as the request that made it. */
const contextOf = (row: Pick<ImportRow, 'firm_id' | 'created_by_kind' | 'created_by_id'>): LedgerContext => ({
  firmId: row.firm_id,
  actor: { kind: row.created_by_kind, id: row.created_by_id },
  requestId: null,
});

/** The import that already brought this file into the company (same kind and SHA-256, not failed), if one did. */
export async function earlierImportOf(
  db: Executor,
  received: Pick<ReceivedImport, 'id' | 'organizationId' | 'sha256' | 'options'>,
): Promise<string | null> {
  const [earlier] = rowsOf<{ id: string }>(
    await db.execute(sql`select id from imports where organization_id = ${received.organizationId}
      and kind = ${received.options.kind} and file_sha256 = ${received.sha256}
      and status in ('queued', 'running', 'completed') and id <> ${received.id}
      order by created_at limit 1`),
  );
  return earlier?.id ?? null;
}

/**
 * Why a received file is refused as a whole (IMPORT_INVALID listing its bad rows), or null: bad rows under
 * atomicity=file, or no good row at all. The same file imported before is never refused: that import answers it
 * (its references being imported is no fault of the file).
 */
export async function refusalOf(db: Executor, received: ReceivedImport): Promise<DomainError | null> {
  const refused = received.errorCount > 0 && (received.options.atomicity === 'file' || received.goodRows === 0);
  if (!refused || (await earlierImportOf(db, received))) return null;
  return invalidImport(received);
}

/** What becomes of a received file: the import and the status the API answers with. */
export interface Settled {
  /** 200: the file was imported before (nothing new); 201: imported now; 202: queued for the worker. */
  status: 200 | 201 | 202;
  import: ImportView & { errors: RowError[] };
}

/**
 * Decides, in the caller's transaction, what becomes of a received file whose rows may be written (the caller has
 * refused a file with errors under atomicity=file): the same file imported before into the company (same kind,
 * same SHA-256, not failed) answers that import and drops this one; a chart, or a journal of at most `inlineMaxRows`
 * good rows, is written now; a larger journal is queued for the worker.
 */
export async function settleImport(
  tx: Tx,
  ctx: LedgerContext,
  received: ReceivedImport,
  options: { inlineMaxRows: number },
): Promise<Settled> {
  const { id, organizationId } = received;
  // Two uploads of one file take turns here; the second sees the first.
  await tx.execute(
    sql`select pg_advisory_xact_lock(hashtextextended(${`import|${organizationId}|${received.options.kind}|${received.sha256}`}, 0))`,
  );
  const earlier = await earlierImportOf(tx, received);
  if (earlier) {
    await tx.execute(sql`delete from imports where organization_id = ${organizationId} and id = ${id}`);
    return { status: 200, import: await getImport(tx, organizationId, earlier) };
  }
  if (received.options.kind === 'journal' && received.goodRows > options.inlineMaxRows) {
    await tx.execute(sql`update imports set status = 'queued', updated_at = now()
      where organization_id = ${organizationId} and id = ${id}`);
    return { status: 202, import: await getImport(tx, organizationId, id) };
  }
  await tx.execute(sql`update imports set status = 'running', started_at = clock_timestamp(), updated_at = now()
    where organization_id = ${organizationId} and id = ${id}`);
  if (received.options.kind === 'journal') {
    const posted = await postStagedBatch(tx, ctx, id, organizationId, 0, 2_147_483_647);
    await tx.execute(sql`update imports set done_rows = ${posted.rows}, entries_posted = ${posted.entries},
        posted_through_entry = ${posted.through} where organization_id = ${organizationId} and id = ${id}`);
  } else {
    for (const a of received.accounts) {
      await createAccount(tx, ctx, organizationId, {
        code: a.code,
        name: a.name,
        type: a.type,
        subtype: a.subtype,
        description: a.description,
      });
    }
    await tx.execute(sql`update imports set done_rows = ${received.accounts.length},
        accounts_created = ${received.accounts.length} where organization_id = ${organizationId} and id = ${id}`);
  }
  const done = await finishImport(tx, ctx, organizationId, id);
  return { status: 201, import: done };
}

/** Marks an import completed, drops its staged rows and records import.completed. */
async function finishImport(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
): Promise<ImportView & { errors: RowError[] }> {
  await tx.execute(sql`delete from import_rows where organization_id = ${organizationId} and import_id = ${id}`);
  await tx.execute(sql`update imports set status = 'completed', finished_at = clock_timestamp(), updated_at = now(),
      locked_by = null, locked_until = null
    where organization_id = ${organizationId} and id = ${id}`);
  return recordOutcome(tx, ctx, organizationId, id, 'import.completed', (view) => ({
    kind: view.kind,
    totalRows: view.totalRows,
    doneRows: view.doneRows,
    failedRows: view.failedRows,
  }));
}

/** Records how an import ended (import.completed or import.failed): the import as it now is, its first ten errors. */
async function recordOutcome(
  tx: Tx,
  ctx: LedgerContext,
  organizationId: string,
  id: string,
  action: 'import.completed' | 'import.failed',
  dataOf: (view: ImportView) => Record<string, unknown>,
): Promise<ImportView & { errors: RowError[] }> {
  const view = await getImport(tx, organizationId, id);
  const { errors, ...payload } = view;
  await recordEvent(tx, ctx, {
    organizationId,
    action,
    resourceType: 'import',
    resourceId: id,
    data: dataOf(view),
    payload: { ...payload, errors: errors.slice(0, 10) },
  });
  return view;
}

/**
 * Posts the staged entries numbered after `after` up to `through`, set-wise: their journal_entries rows (posted,
 * source `import`), their journal_lines, and their sums into account_daily_balances (whose triggers keep the
 * monthly and yearly rollups), each one INSERT ... SELECT from import_rows, in the caller's transaction. The
 * database's own rules hold as for any posting: each entry balances (checked at commit), lines are written only with
 * their entry, nothing is posted on or before the books-closed date nor into an archived company, and an imported
 * reference is unique in the company. An account archived since the file was read refuses the batch.
 */
export async function postStagedBatch(
  tx: Tx,
  ctx: LedgerContext,
  importId: string,
  organizationId: string,
  after: number,
  through: number,
): Promise<{ rows: number; entries: number; through: number }> {
  const range = sql`r.import_id = ${importId} and r.entry_no > ${after} and r.entry_no <= ${through}`;
  const staged = sql`(select * from import_rows r where r.organization_id = ${organizationId} and ${range})`;
  const archived = await firstStagedArchivedAccount(tx, staged);
  if (archived) {
    throw new DomainError(
      'INVALID_ACCOUNT',
      `account ${archived.code} (line ${archived.line}) was archived after the file was read`,
    );
  }
  const at = new Date().toISOString();
  try {
    const written = await postStagedEntries(tx, ctx, importId, staged, at);
    return { rows: written.lines, entries: written.entries, through: written.through ?? after };
  } catch (err) {
    if (pgErrorOf(err)?.constraint === 'journal_entries_import_reference') {
      throw new DomainError(
        'CONFLICT',
        'an entry of the file was imported meanwhile by another import; nothing of this batch was posted',
      );
    }
    rethrowLedgerError(err);
  }
}

/** The last entry number of the next batch after `after`: whole entries, about `batchRows` rows. */
async function nextBatchEnd(
  db: Executor,
  organizationId: string,
  importId: string,
  after: number,
  batchRows: number,
): Promise<number | null> {
  const [row] = rowsOf<{ through: number | null }>(
    await db.execute(sql`select max(entry_no) as through from (
        select entry_no from import_rows
        where organization_id = ${organizationId} and import_id = ${importId} and entry_no > ${after}
        order by entry_no, line_no limit ${batchRows}) b`),
  );
  return row?.through ?? null;
}

export interface ImportRunnerOptions {
  /** Who holds the lease (process and random part), for locked_by. */
  workerId: string;
  /** How long a claim lasts without progress before another runner may take the import over. */
  leaseMs?: number;
  /** Rows per transaction. */
  batchRows?: number;
  /** Called after each committed batch (progress). */
  onBatch?: (progress: { importId: string; doneRows: number; totalRows: number }) => void;
}

/**
 * Claims one queued import (or a running one whose lease has lapsed: its runner died) with FOR UPDATE SKIP LOCKED,
 * and posts its staged entries in transactions of about `batchRows` rows, from where `posted_through_entry` says,
 * each batch committing its entries with the import's progress and a renewed lease. A batch the database refuses
 * (the books closed meanwhile, an account archived) fails the import: what was posted stays posted, the rest is not,
 * and import.failed says why. Returns the import's id, or null when there was nothing to do.
 */
export async function runNextImport(
  db: Db,
  options: ImportRunnerOptions & {
    /** Only this import (the CLI runs the one it queued), if it is free to claim. */
    importId?: string;
  },
): Promise<string | null> {
  const leaseMs = options.leaseMs ?? 60_000;
  const batchRows = options.batchRows ?? 5000;
  const [claimed] = rowsOf<ImportRow>(
    await db.execute(sql`
      update imports i set status = 'running', locked_by = ${options.workerId},
        locked_until = now() + make_interval(secs => ${leaseMs / 1000}),
        started_at = coalesce(i.started_at, clock_timestamp()), updated_at = now()
      where i.id = (
        select id from imports
        where status in ('queued', 'running') and (locked_until is null or locked_until < now())
          ${options.importId ? sql`and id = ${options.importId}` : sql``}
        order by created_at
        limit 1
        for update skip locked)
      returning ${COLUMNS}`),
  );
  if (!claimed) return null;
  const ctx = contextOf(claimed);
  const organizationId = claimed.organization_id;
  const id = claimed.id;
  let after = claimed.posted_through_entry;
  try {
    for (;;) {
      const through = await nextBatchEnd(db, organizationId, id, after, batchRows);
      if (through === null) break;
      const progress = await db.transaction(async (tx) => {
        const posted = await postStagedBatch(tx, ctx, id, organizationId, after, through);
        const [row] = rowsOf<{ done_rows: number; total_rows: number }>(
          await tx.execute(sql`update imports set done_rows = done_rows + ${posted.rows},
              entries_posted = entries_posted + ${posted.entries}, posted_through_entry = ${through},
              locked_until = now() + make_interval(secs => ${leaseMs / 1000}), updated_at = now()
            where organization_id = ${organizationId} and id = ${id} and locked_by = ${options.workerId}
              and status = 'running'
            returning done_rows, total_rows`),
        );
        // Another runner took the import over (this one stalled past its lease): its batches are its own.
        if (!row) throw new LeaseLost();
        return row;
      });
      after = through;
      options.onBatch?.({ importId: id, doneRows: progress.done_rows, totalRows: progress.total_rows });
    }
    await db.transaction(async (tx) => {
      const row = await readImport(tx, organizationId, id, true);
      if (row?.status !== 'running') return;
      await finishImport(tx, ctx, organizationId, id);
    });
  } catch (err) {
    if (err instanceof LeaseLost) return id;
    const refusal = err instanceof DomainError ? err : ledgerErrorOf(err);
    if (!refusal) throw err;
    await failImport(db, ctx, organizationId, id, refusal);
  }
  return id;
}

class LeaseLost extends Error {}

/** Marks an import failed with the reason and records import.failed; staged rows not posted are dropped. */
async function failImport(db: Db, ctx: LedgerContext, organizationId: string, id: string, err: DomainError) {
  await db.transaction(async (tx) => {
    await tx.execute(sql`delete from import_rows where organization_id = ${organizationId} and import_id = ${id}`);
    await tx.execute(sql`update imports set status = 'failed', error_summary = ${`${err.code}: ${err.message}`},
        finished_at = clock_timestamp(), updated_at = now(), locked_by = null, locked_until = null,
        failed_rows = total_rows - done_rows
      where organization_id = ${organizationId} and id = ${id}`);
    await recordOutcome(tx, ctx, organizationId, id, 'import.failed', (view) => ({
      kind: view.kind,
      doneRows: view.doneRows,
      code: err.code,
      message: err.message,
    }));
  });
}

/**
 * Drops imports whose file stopped arriving an hour ago (the process receiving it stopped), with their staged rows.
 * A file being read touches its import every batch of staged rows.
 */
export async function purgeAbandonedImports(db: Executor): Promise<void> {
  await db.execute(sql`delete from imports where status = 'receiving' and updated_at < now() - interval '1 hour'`);
}

/** A runner's name for the lease it holds: host, process and a random part. */
export const importWorkerId = (): string => `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;

/** Runs queued imports in the background, one at a time per process, every `intervalMs` and until none is left. */
export function startImportRunner(
  db: Db,
  options: ImportRunnerOptions & { intervalMs: number; onError: (err: unknown) => void },
): { stop(): Promise<void>; poke(): void } {
  return startRounds(async (stopping) => {
    await purgeAbandonedImports(db);
    while (!stopping() && (await runNextImport(db, options)) !== null);
  }, options);
}
