import type { Readable } from 'node:stream';
import { ACCOUNT_SUBTYPE_LIST, ACCOUNT_TYPES, type AccountSubtype, type AccountType } from '@firm/core';
import { parse } from 'csv-parse';
import { parseCents, parseDate } from './amounts';
import type { ParsedEntry, ParsedItem, RowError } from './types';

/** A record of the file with the line it ends on. */
export interface CsvRecord {
  line: number;
  values: string[];
}

/**
 * The records of a CSV stream, parsed by csv-parse as they arrive (a BOM and blank lines are skipped). The parser is
 * attached at once, so an error of the stream before the first record is read still ends the records.
 */
export function csvRecords(input: Readable): AsyncGenerator<CsvRecord> {
  const parser = input.pipe(
    // A record of more than 64 KB is no journal line: refused rather than held in memory whole.
    parse({ bom: true, skip_empty_lines: true, relax_column_count: true, info: true, max_record_size: 65_536 }),
  );
  input.on('error', (err) => parser.destroy(err));
  return (async function* () {
    for await (const item of parser as AsyncIterable<{ record: string[]; info: { lines: number } }>) {
      yield { line: item.info.lines, values: item.record };
    }
  })();
}

/** A CSV file that cannot be read as CSV at all (an unclosed quote): the line csv-parse stopped at. */
export function csvFailure(err: unknown): RowError | null {
  const e = err as { code?: string; lines?: number; message?: string };
  if (typeof e?.code !== 'string' || !e.code.startsWith('CSV_')) return null;
  return { line: e.lines ?? 1, column: null, message: `the file is not valid CSV: ${e.message ?? e.code}` };
}

const normal = (name: string) =>
  name
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');

/** Reads the header record: where each named column is, with the names each may go by. */
function columnsOf<K extends string>(
  header: CsvRecord,
  names: Record<K, readonly string[]>,
  required: readonly NoInfer<K>[],
): { at: Record<K, number>; errors: RowError[] } {
  const found = header.values.map(normal);
  const at = {} as Record<K, number>;
  const errors: RowError[] = [];
  for (const key of Object.keys(names) as K[]) {
    at[key] = found.findIndex((n) => (names[key] as readonly string[]).includes(n));
    if (at[key] < 0 && required.includes(key)) {
      errors.push({ line: header.line, column: key, message: `the header has no ${key} column` });
    }
  }
  return { at, errors };
}

/**
 * The records under a header: each with its line and its named columns' trimmed values ('' for a column the header
 * lacks), or, when the header lacks a required column, one stray per missing column and nothing more.
 */
async function* rowsUnder<K extends string>(
  records: AsyncIterable<CsvRecord>,
  names: Record<K, readonly string[]>,
  required: readonly NoInfer<K>[],
): AsyncGenerator<{ stray: RowError } | { line: number; value: (column: K) => string }> {
  let columns: Record<K, number> | null = null;
  for await (const record of records) {
    if (!columns) {
      const { at, errors } = columnsOf(record, names, required);
      if (errors.length > 0) {
        for (const stray of errors) yield { stray };
        return;
      }
      columns = at;
      continue;
    }
    const at = columns;
    yield { line: record.line, value: (c: K) => (at[c] < 0 ? '' : (record.values[at[c]] ?? '').trim()) };
  }
}

const JOURNAL_COLUMNS = {
  date: ['date', 'entry_date', 'txn_date'],
  reference: ['reference', 'ref', 'entry', 'entry_reference', 'number', 'no'],
  memo: ['memo', 'description', 'entry_memo'],
  account: ['account', 'account_code', 'account_name'],
  debit: ['debit', 'debits', 'dr'],
  credit: ['credit', 'credits', 'cr'],
  contact: ['contact', 'payee', 'name'],
  lineMemo: ['line_memo', 'line_description', 'line'],
} as const;

/**
 * The entries of a journal CSV: a header, then one line per record, `date, reference, memo, account, debit, credit`
 * and optionally `contact` and `line_memo`. Consecutive records with one reference are one entry, dated by its first
 * record; a reference that comes back after another entry is a duplicate. Amounts are decimal strings of at most two
 * decimal places, exactly one of debit and credit on each record.
 */
export async function* journalCsv(records: AsyncIterable<CsvRecord>): AsyncGenerator<ParsedItem> {
  let entry: ParsedEntry | null = null;
  for await (const row of rowsUnder(records, JOURNAL_COLUMNS, ['date', 'reference', 'account', 'debit', 'credit'])) {
    if ('stray' in row) {
      yield row;
      continue;
    }
    const { line, value } = row;
    const errors: RowError[] = [];
    const reference = value('reference');
    const date = parseDate(value('date'));
    if ('error' in date) errors.push({ line, column: 'date', message: date.error });
    if (reference === '') errors.push({ line, column: 'reference', message: 'is empty' });
    const account = value('account');
    if (account === '') errors.push({ line, column: 'account', message: 'is empty' });
    const amount = amountOf(value('debit'), value('credit'), line, errors);

    if (!entry || entry.reference !== reference || reference === '') {
      if (entry) yield { entry };
      entry = {
        line,
        reference,
        referenceColumn: 'reference',
        date: 'date' in date ? date.date : '',
        memo: value('memo') || null,
        payeeName: value('contact') || null,
        lines: [],
        rows: 0,
        errors: [],
      };
    } else if ('date' in date && entry.date !== '' && date.date !== entry.date) {
      errors.push({
        line,
        column: 'date',
        message: `${date.date} differs from ${entry.date}, the date of entry ${reference} (line ${entry.line})`,
      });
    }
    entry.rows++;
    entry.memo ??= value('memo') || null;
    entry.payeeName ??= value('contact') || null;
    entry.errors.push(...errors);
    // A line whose amount is wrong still has its account checked: every fault of a row is reported at once.
    if (account !== '') {
      entry.lines.push({ line, account, amountCents: amount ?? 0, description: value('lineMemo') || null });
    }
  }
  if (entry) yield { entry };
}

/** A record's signed amount (debits positive), or null with the reason added to `errors`. */
function amountOf(debit: string, credit: string, line: number, errors: RowError[]): number | null {
  if (debit === '' && credit === '') {
    errors.push({ line, column: 'debit', message: 'a line needs a debit or a credit' });
    return null;
  }
  if (debit !== '' && credit !== '') {
    errors.push({ line, column: 'credit', message: 'a line has a debit or a credit, not both' });
    return null;
  }
  const column = debit !== '' ? 'debit' : 'credit';
  const parsed = parseCents(debit || credit);
  if ('error' in parsed) {
    errors.push({ line, column, message: parsed.error });
    return null;
  }
  if (parsed.cents <= 0) {
    errors.push({ line, column, message: 'must be more than zero' });
    return null;
  }
  return column === 'debit' ? parsed.cents : -parsed.cents;
}

const ACCOUNT_COLUMNS = {
  code: ['code', 'account_code', 'number', 'account_number'],
  name: ['name', 'account_name', 'account'],
  type: ['type', 'account_type'],
  subtype: ['subtype', 'detail_type', 'account_subtype'],
  description: ['description', 'memo'],
} as const;

/** A row of a chart of accounts file, as given (type and subtype still to be decided). */
export interface AccountRow {
  line: number;
  code: string;
  name: string;
  type: AccountType | null;
  subtype: AccountSubtype | null;
  description: string | null;
}

/**
 * The rows of a chart of accounts CSV: a header, then `code, name, type, subtype, description`. Type and subtype are
 * checked against the account types here; a blank type is left for the import to derive from the code.
 */
export async function* accountsCsv(
  records: AsyncIterable<CsvRecord>,
): AsyncGenerator<{ row: AccountRow } | { stray: RowError }> {
  for await (const row of rowsUnder(records, ACCOUNT_COLUMNS, ['code', 'name'])) {
    if ('stray' in row) {
      yield row;
      continue;
    }
    const { line, value } = row;
    const typeText = normal(value('type'));
    const subtypeText = normal(value('subtype'));
    const errors: RowError[] = [];
    if (typeText !== '' && !(ACCOUNT_TYPES as string[]).includes(typeText)) {
      errors.push({ line, column: 'type', message: `"${value('type')}" is not one of ${ACCOUNT_TYPES.join(', ')}` });
    }
    if (subtypeText !== '' && !(ACCOUNT_SUBTYPE_LIST as string[]).includes(subtypeText)) {
      errors.push({ line, column: 'subtype', message: `"${value('subtype')}" is not an account subtype` });
    }
    if (errors.length > 0) {
      for (const stray of errors) yield { stray };
      continue;
    }
    yield {
      row: {
        line,
        code: value('code'),
        name: value('name'),
        type: (typeText || null) as AccountType | null,
        subtype: (subtypeText || null) as AccountSubtype | null,
        description: value('description') || null,
      },
    };
  }
}
