/** Why a row of a file was refused: its line (1 is the file's first), the column when one is to blame, and why. */
export interface RowError {
  line: number;
  column: string | null;
  message: string;
}

/** One line of an entry as the file gives it: the account as written (a code, a name or a colon path). */
export interface ParsedLine {
  line: number;
  account: string;
  amountCents: number;
  description: string | null;
}

/** An entry as a file gives it, before its accounts are looked up: what both formats' parsers produce. */
export interface ParsedEntry {
  /** The line it starts on. */
  line: number;
  reference: string;
  /** The column the reference comes from, for messages. */
  referenceColumn: string;
  date: string;
  memo: string | null;
  payeeName: string | null;
  lines: ParsedLine[];
  /** How many rows of the file it takes (CSV records, hledger postings): what it counts toward total_rows. */
  rows: number;
  /** What is wrong with its rows; an entry with errors is never posted. */
  errors: RowError[];
}

/** What a parser hands on: an entry, or a row that belongs to none and is wrong (it counts as one failed row). */
export type ParsedItem = { entry: ParsedEntry } | { stray: RowError };
