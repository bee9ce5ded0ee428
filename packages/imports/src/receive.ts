import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { type Readable, Transform, type TransformCallback } from 'node:stream';
import { accountTypeFromCode, DEFAULT_SUBTYPE, DomainError, isStorableText, newId, subtypeBelongsTo } from '@firm/core';
import { type Db, rowsOf } from '@firm/db';
import { chartAccounts, companyBooksClosedThrough, importedReferenceExists, type LedgerContext } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { formatCents } from './amounts';
import { ChartIndex } from './chart';
import { type AccountRow, accountsCsv, csvFailure, csvRecords, journalCsv } from './csv';
import { HledgerParser } from './hledger';
import type { ParsedEntry, ParsedItem, RowError } from './types';

export type ImportKind = 'journal' | 'accounts';
export type ImportFormat = 'csv' | 'hledger';
export type ImportAtomicity = 'file' | 'entry';

export interface ImportOptions {
  kind: ImportKind;
  format: ImportFormat;
  atomicity: ImportAtomicity;
  /** Larger files are refused (PAYLOAD_TOO_LARGE) as soon as they pass it. */
  maxBytes: number;
  /** Told how many bytes of the file have been read, now and then while it is read and checked. */
  onRead?: (bytes: number) => void;
}

/** IMPORT_MAX_BYTES unless configured: 200 MB. */
export const DEFAULT_IMPORT_MAX_BYTES = 200 * 1024 * 1024;
/** IMPORT_INLINE_MAX_ROWS unless configured. */
export const DEFAULT_INLINE_MAX_ROWS = 5000;

/** How many refused rows an import lists (its error_count counts them all). */
export const MAX_LISTED_ERRORS = 1000;
/** The most accounts one chart file may create. */
export const MAX_CHART_ROWS = 10_000;
/** Staged rows are written this many at a time while the file is read. */
const STAGE_BATCH = 2000;

/** An account row that passed its checks, with its type decided. */
export interface AccountToCreate extends AccountRow {
  type: NonNullable<AccountRow['type']>;
  subtype: NonNullable<AccountRow['subtype']>;
}

/**
 * A file read to its end: the import row (still `receiving`) and, for a journal, its good entries staged in
 * import_rows; for a chart, its good rows. Nothing of the books is written yet.
 */
export interface ReceivedImport {
  id: string;
  organizationId: string;
  options: ImportOptions;
  sha256: string;
  bytes: number;
  totalRows: number;
  totalEntries: number;
  /** Rows staged in good entries (journal) or good account rows (chart). */
  goodRows: number;
  goodEntries: number;
  failedRows: number;
  /** The first MAX_LISTED_ERRORS refused rows, in line order. */
  errors: RowError[];
  errorCount: number;
  accounts: AccountToCreate[];
}

/** Counts the bytes and hashes them on the way through; past `maxBytes` it fails with PAYLOAD_TOO_LARGE. */
class FileMeter extends Transform {
  bytes = 0;
  private readonly hash = createHash('sha256');
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      done(tooLarge(this.maxBytes));
      return;
    }
    this.hash.update(chunk);
    done(null, chunk);
  }
  digest(): string {
    return this.hash.digest('hex');
  }
}

export const tooLarge = (maxBytes: number) =>
  new DomainError('PAYLOAD_TOO_LARGE', `an imported file may have at most ${maxBytes} bytes`);

/** Text with NUL shown as `\0` and lone surrogates as U+FFFD, as Postgres can store it. */
const storable = (text: string): string =>
  text
    .replaceAll('\u0000', '\\0')
    .replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');

/** Keeps the first MAX_LISTED_ERRORS errors and counts all of them. */
class ErrorList {
  list: RowError[] = [];
  count = 0;
  add(...errors: RowError[]): void {
    for (const raw of errors) {
      // Messages quote the file, which may hold what Postgres cannot store (NUL, a lone surrogate).
      const e = { ...raw, message: storable(raw.message) };
      this.count++;
      if (this.list.length < MAX_LISTED_ERRORS * 2) this.list.push(e);
      if (this.list.length >= MAX_LISTED_ERRORS * 2) this.trim();
    }
  }
  /** Adds `total` errors of which only `listed` are given (the first ones in line order). */
  addCounted(listed: RowError[], total: number): void {
    this.add(...listed);
    this.count += total - listed.length;
  }
  trim(): void {
    this.list.sort((a, b) => a.line - b.line || (a.column ?? '').localeCompare(b.column ?? ''));
    this.list.length = Math.min(this.list.length, MAX_LISTED_ERRORS);
  }
}

interface StagedRow {
  entryNo: number;
  lineNo: number;
  line: number;
  entryId: string;
  lineId: string;
  date: string;
  reference: string;
  memo: string | null;
  payeeName: string | null;
  accountId: string;
  description: string | null;
  amountCents: number;
}

async function insertStaged(db: Db, importId: string, organizationId: string, rows: StagedRow[]): Promise<void> {
  if (rows.length === 0) return;
  const col = <K extends keyof StagedRow>(k: K) => sql.param(rows.map((r) => r[k]));
  await db.execute(sql`
    insert into import_rows (import_id, organization_id, entry_no, line_no, line, entry_id, line_id, entry_date,
                             reference, memo, payee_name, account_id, description, amount_cents)
    select ${importId}, ${organizationId}, v.*
    from unnest(${col('entryNo')}::int[], ${col('lineNo')}::int[], ${col('line')}::int[], ${col('entryId')}::uuid[],
                ${col('lineId')}::uuid[], ${col('date')}::date[], ${col('reference')}::text[], ${col('memo')}::text[],
                ${col('payeeName')}::text[], ${col('accountId')}::uuid[], ${col('description')}::text[],
                ${col('amountCents')}::bigint[]) as v`);
}

/** The items of an hledger journal stream, read a line at a time (the reader is attached at once). */
function hledgerItems(input: Readable): AsyncGenerator<ParsedItem> {
  const reader = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  input.on('error', () => reader.close());
  return (async function* () {
    const parser = new HledgerParser();
    let line = 0;
    for await (const text of reader) {
      line++;
      yield* parser.push(line === 1 ? text.replace(/^\uFEFF/, '') : text, line);
    }
    // A stream that failed (too large, cut off) ends the lines early: that is its error, not the file's end.
    if (input.errored) throw input.errored;
    yield* parser.end();
  })();
}

/**
 * Reads an imported file as it arrives (never whole in memory), parses it (csv-parse for CSV, `HledgerParser` for
 * hledger), and checks every row against the company's books: the accounts it names, the closed period, each
 * entry's balance, references repeated in the file or already imported. Every refused row is collected (the first
 * thousand listed), nothing stops at the first. A journal's good entries are staged in import_rows with the ids they
 * will be posted under; the import row stays `receiving` until `settleImport` decides what becomes of it.
 *
 * A file past `maxBytes` is PAYLOAD_TOO_LARGE, and a failure while reading leaves nothing behind.
 */
export async function receiveImport(
  db: Db,
  ctx: LedgerContext,
  organizationId: string,
  options: ImportOptions,
  input: Readable,
): Promise<ReceivedImport> {
  const org = await companyBooksClosedThrough(db, ctx.firmId, organizationId);
  if (!org) throw new DomainError('ORGANIZATION_NOT_FOUND', 'no such company');
  const id = newId();
  await db.execute(sql`
    insert into imports (id, firm_id, organization_id, kind, format, atomicity, status, created_by_kind, created_by_id,
                         request_id, created_at, updated_at)
    values (${id}, ${ctx.firmId}, ${organizationId}, ${options.kind}, ${options.format}, ${options.atomicity},
            'receiving', ${ctx.actor.kind}, ${ctx.actor.id}, ${ctx.requestId ?? null}, now(), now())`);
  try {
    return await read(db, id, organizationId, org.books_closed_through, options, input);
  } catch (err) {
    await discardImport(db, organizationId, id);
    throw err;
  }
}

async function read(
  db: Db,
  id: string,
  organizationId: string,
  closedThrough: string | null,
  options: ImportOptions,
  input: Readable,
): Promise<ReceivedImport> {
  const chart = await ChartIndex.load(db, organizationId);
  const existingCodes = new Set((await chartAccounts(db, organizationId)).map((r) => r.code));
  const meter = new FileMeter(options.maxBytes);
  input.on('error', (err) => meter.destroy(err));
  // A client that goes away mid-file ends the read rather than leaving it waiting.
  input.on('close', () => {
    if (!input.readableEnded)
      meter.destroy(new DomainError('VALIDATION_ERROR', 'the file ended before it was sent whole'));
  });
  const source = input.pipe(meter);
  const errors = new ErrorList();
  const result = {
    totalRows: 0,
    totalEntries: 0,
    goodRows: 0,
    goodEntries: 0,
    failedRows: 0,
    accounts: [] as AccountToCreate[],
  };
  try {
    if (options.kind === 'accounts') {
      await readAccounts(existingCodes, csvRecords(source), errors, result);
    } else {
      const items = options.format === 'csv' ? journalCsv(csvRecords(source)) : hledgerItems(source);
      let staged: StagedRow[] = [];
      for await (const item of items) {
        if ('stray' in item) {
          result.totalRows++;
          result.failedRows++;
          errors.add(item.stray);
          continue;
        }
        const entry = item.entry;
        result.totalRows += entry.rows;
        result.totalEntries++;
        const rows = checkEntry(entry, chart, closedThrough, result.goodEntries + 1);
        if (entry.errors.length > 0 || !rows) {
          result.failedRows += entry.rows;
          errors.add(...entry.errors);
          continue;
        }
        result.goodEntries++;
        result.goodRows += rows.length;
        staged.push(...rows);
        if (staged.length >= STAGE_BATCH) {
          await insertStaged(db, id, organizationId, staged);
          staged = [];
          options.onRead?.(meter.bytes);
          // A file still arriving is not abandoned (purgeAbandonedImports), however long it takes.
          await db.execute(
            sql`update imports set updated_at = now() where organization_id = ${organizationId} and id = ${id}`,
          );
        }
      }
      await insertStaged(db, id, organizationId, staged);
    }
  } catch (err) {
    const failure = csvFailure(err);
    if (!failure) throw err;
    errors.add(failure);
    result.failedRows = result.totalRows - result.goodRows;
  }
  // Whatever the parser left unread still counts toward the file's size and hash.
  if (meter.readableFlowing !== true) meter.resume();
  await new Promise<void>((resolve, reject) => {
    if (meter.errored) reject(meter.errored);
    else if (meter.writableFinished) resolve();
    else {
      meter.once('finish', resolve);
      meter.once('error', reject);
    }
  });
  options.onRead?.(meter.bytes);
  if (options.kind === 'journal') await checkReferences(db, id, organizationId, errors, result);
  if (result.totalRows === 0 && errors.count === 0) {
    errors.add({ line: 1, column: null, message: 'the file has no rows to import' });
  }
  errors.trim();
  const sha256 = meter.digest();
  await db.execute(sql`
    update imports set file_sha256 = ${sha256}, file_bytes = ${meter.bytes}, total_rows = ${result.totalRows},
      total_entries = ${result.totalEntries}, failed_rows = ${result.failedRows}, error_count = ${errors.count},
      error_summary = ${errors.count > 0 ? `${errors.count} row error(s); the first is on line ${errors.list[0]?.line}: ${errors.list[0]?.message}` : null},
      updated_at = now()
    where organization_id = ${organizationId} and id = ${id}`);
  if (errors.list.length > 0) {
    const list = errors.list;
    await db.execute(sql`
      insert into import_row_errors (import_id, organization_id, seq, line, "column", message)
      select ${id}, ${organizationId}, v.seq, v.line, v.col, v.message
      from unnest(${sql.param(list.map((_, i) => i + 1))}::int[], ${sql.param(list.map((e) => e.line))}::int[],
                  ${sql.param(list.map((e) => e.column))}::text[], ${sql.param(list.map((e) => e.message))}::text[])
        as v(seq, line, col, message)`);
  }
  return {
    id,
    organizationId,
    options,
    sha256,
    bytes: meter.bytes,
    ...result,
    errors: errors.list,
    errorCount: errors.count,
  };
}

/**
 * An entry's rows ready to stage, or null when it is refused (its errors then say why): each account is one the
 * chart has and is active, the date is after the books-closed date, there are two lines or more and they balance.
 */
function checkEntry(
  entry: ParsedEntry,
  chart: ChartIndex,
  closedThrough: string | null,
  entryNo: number,
): StagedRow[] | null {
  const errs = entry.errors;
  const unstorable = (line: number, column: string, value: string | null) => {
    if (value !== null && !isStorableText(value)) {
      errs.push({ line, column, message: 'holds a NUL character or an unpaired surrogate, which cannot be stored' });
    }
  };
  unstorable(entry.line, entry.referenceColumn, entry.reference);
  unstorable(entry.line, 'memo', entry.memo);
  unstorable(entry.line, 'contact', entry.payeeName);
  for (const l of entry.lines) unstorable(l.line, 'line_memo', l.description);
  if (entry.date !== '' && closedThrough !== null && entry.date <= closedThrough) {
    errs.push({
      line: entry.line,
      column: 'date',
      message: `the books are closed through ${closedThrough}; entry ${entry.reference} is dated ${entry.date}`,
    });
  }
  const accountIds: string[] = [];
  for (const l of entry.lines) {
    const found = chart.resolve(l.account);
    if ('error' in found) errs.push({ line: l.line, column: 'account', message: found.error });
    else accountIds.push(found.id);
  }
  if (errs.length > 0) return null;
  if (entry.lines.length < 2) {
    errs.push({
      line: entry.line,
      column: entry.referenceColumn,
      message: `entry ${entry.reference} has fewer than two lines`,
    });
    return null;
  }
  let debits = 0;
  let credits = 0;
  for (const l of entry.lines) {
    if (l.amountCents > 0) debits += l.amountCents;
    else credits -= l.amountCents;
  }
  if (debits !== credits) {
    errs.push({
      line: entry.line,
      column: entry.referenceColumn,
      message: `entry ${entry.reference} does not balance: debits ${formatCents(debits)}, credits ${formatCents(credits)}`,
    });
    return null;
  }
  const entryId = newId();
  return entry.lines.map((l, i) => ({
    entryNo,
    lineNo: i + 1,
    line: l.line,
    entryId,
    lineId: newId(),
    date: entry.date,
    reference: entry.reference,
    memo: entry.memo,
    payeeName: entry.payeeName,
    accountId: accountIds[i] as string,
    description: l.description,
    amountCents: l.amountCents,
  }));
}

/**
 * References that the staged entries repeat (an entry whose reference an earlier entry of the file has) or that an
 * earlier import of the company posted. Such entries are refused and leave the staging.
 */
async function checkReferences(
  db: Db,
  id: string,
  organizationId: string,
  errors: ErrorList,
  result: { goodRows: number; goodEntries: number; failedRows: number },
): Promise<void> {
  // One statement finds the refused entries, drops their staged rows, and returns their number and the first
  // MAX_LISTED_ERRORS of them: a file whose every entry was imported before costs no more memory than any other.
  const [found] = rowsOf<{
    entries: number;
    rows: number;
    sample: { line: number; reference: string; first_line: number | null }[] | string | null;
  }>(
    await db.execute(sql`
      with entries as (
        select entry_no, reference, min(line) as line, count(*)::int as rows
        from import_rows where organization_id = ${organizationId} and import_id = ${id}
        group by entry_no, reference
      ),
      ranked as (
        select e.*, first_value(line) over (partition by reference order by entry_no) as first_line,
               row_number() over (partition by reference order by entry_no) as n
        from entries e
      ),
      refused as (
        select entry_no, line, reference, rows, case when n > 1 then first_line end as first_line
        from ranked r
        where n > 1 or ${importedReferenceExists(organizationId, sql`r.reference`)}
      ),
      dropped as (
        delete from import_rows d using refused f
        where d.organization_id = ${organizationId} and d.import_id = ${id} and d.entry_no = f.entry_no
      )
      select (select count(*)::int from refused) as entries,
             (select coalesce(sum(rows), 0)::int from refused) as rows,
             (select json_agg(s) from (select line, reference, first_line from refused order by line
                                       limit ${MAX_LISTED_ERRORS}) s) as sample`),
  );
  if (!found || found.entries === 0) return;
  const sample = (typeof found.sample === 'string' ? JSON.parse(found.sample) : (found.sample ?? [])) as {
    line: number;
    reference: string;
    first_line: number | null;
  }[];
  errors.addCounted(
    sample.map((r) => ({
      line: r.line,
      column: 'reference',
      message:
        r.first_line !== null
          ? `reference ${r.reference} is used again (first on line ${r.first_line})`
          : `reference ${r.reference} was already imported into this company`,
    })),
    found.entries,
  );
  result.goodRows -= found.rows;
  result.goodEntries -= found.entries;
  result.failedRows += found.rows;
}

const ACCOUNT_CODE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,19}$/;

/** A chart file's rows, checked: code format and uniqueness (in the file and the chart), name, type and subtype. */
async function readAccounts(
  existing: ReadonlySet<string>,
  records: ReturnType<typeof csvRecords>,
  errors: ErrorList,
  result: { totalRows: number; goodRows: number; failedRows: number; accounts: AccountToCreate[] },
): Promise<void> {
  const seen = new Map<string, number>();
  const failedLines = new Set<number>();
  for await (const item of accountsCsv(records)) {
    if ('stray' in item) {
      if (!failedLines.has(item.stray.line)) {
        failedLines.add(item.stray.line);
        result.totalRows++;
        result.failedRows++;
      }
      errors.add(item.stray);
      continue;
    }
    const row = item.row;
    result.totalRows++;
    // A chart's rows are kept in memory until they are written: a bound keeps a stray large file from filling it.
    if (result.accounts.length >= MAX_CHART_ROWS) {
      errors.add({ line: row.line, column: null, message: `a chart of accounts has at most ${MAX_CHART_ROWS} rows` });
      result.failedRows++;
      return;
    }
    const errs: RowError[] = [];
    const line = row.line;
    if (!ACCOUNT_CODE.test(row.code)) {
      errs.push({
        line,
        column: 'code',
        message: row.code === '' ? 'is empty' : `"${row.code}" is not a code (letters, digits, . _ -, at most 20)`,
      });
    } else if (existing.has(row.code)) {
      errs.push({ line, column: 'code', message: `the chart already has an account ${row.code}` });
    } else if (seen.has(row.code)) {
      errs.push({
        line,
        column: 'code',
        message: `code ${row.code} is used again (first on line ${seen.get(row.code)})`,
      });
    }
    if (ACCOUNT_CODE.test(row.code) && !seen.has(row.code)) seen.set(row.code, line);
    if (row.name === '') errs.push({ line, column: 'name', message: 'is empty' });
    for (const [column, value] of [
      ['name', row.name],
      ['description', row.description],
    ] as const) {
      if (value !== null && !isStorableText(value)) {
        errs.push({ line, column, message: 'holds a NUL character or an unpaired surrogate, which cannot be stored' });
      }
    }
    let type = row.type;
    let subtype = row.subtype;
    if (!type) {
      const implied = accountTypeFromCode(row.code);
      if (!implied) {
        errs.push({ line, column: 'type', message: `is empty and code "${row.code}" does not tell the type; give it` });
      } else {
        type = implied.type;
        subtype ??= implied.subtype;
      }
    }
    if (type) {
      subtype ??= DEFAULT_SUBTYPE[type];
      if (!subtypeBelongsTo(type, subtype)) {
        errs.push({ line, column: 'subtype', message: `${subtype} is not a subtype of ${type}` });
      }
    }
    if (errs.length > 0 || !type || !subtype) {
      result.failedRows++;
      errors.add(...errs);
      continue;
    }
    result.goodRows++;
    result.accounts.push({ ...row, type, subtype });
  }
}

/** Drops an import that was never settled (its file refused, or a request that failed), with its staged rows. */
export async function discardImport(db: Db, organizationId: string, id: string): Promise<void> {
  await db.execute(sql`delete from imports where organization_id = ${organizationId} and id = ${id}
    and status = 'receiving'`);
}

/** IMPORT_INVALID listing a received file's refused rows. */
export function invalidImport(received: Pick<ReceivedImport, 'errors' | 'errorCount' | 'totalRows'>): DomainError {
  const listed = received.errors.length;
  return new DomainError(
    'IMPORT_INVALID',
    `${received.errorCount} error(s) in the file` +
      (listed < received.errorCount ? `; the first ${listed} are listed` : '') +
      '; nothing was imported',
    received.errors.map((e) => ({
      field: e.column ? `line ${e.line}, ${e.column}` : `line ${e.line}`,
      line: e.line,
      column: e.column,
      message: e.message,
    })),
  );
}
