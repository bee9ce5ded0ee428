import { createHash } from 'node:crypto';
import { parseCents, parseDate } from './amounts';
import type { ParsedEntry, ParsedItem, RowError } from './types';

/**
 * A line parser for the plain-text journal of hledger and ledger-cli, the part of it a history import needs:
 *
 *     2024-01-05 * (INV-7) Office rent     ; a comment
 *         Expenses:Rent        $1,200.00
 *         Assets:Checking
 *
 * A transaction is a date (`-`, `/` or `.` between its parts; a secondary `=DATE` is ignored), an optional status
 * (`*` or `!`), an optional `(CODE)` and a description. Its postings are the indented lines below it: an account
 * name (single spaces allowed inside it), two or more spaces or a tab, and an amount in dollars (`$12.50`, `-$3`,
 * `$-3`, `12.50 USD`, `12.50`); one posting may leave its amount out and takes the amount that balances the others.
 * `;`, `#` and `*` start comment lines, `;` an inline comment; directives (`account`, `commodity`, `P`, `include`...)
 * are skipped. Prices (`@`), balance assertions (`=`) and virtual postings (`(acct)`, `[acct]`) are refused, since
 * the books they would write are not the books the file shows.
 *
 * The reference of a transaction is its `(CODE)`, else derived from its text: `hl:DATE:HASH`, with `:N` added for the
 * Nth identical transaction of the same date, so the same file always gives the same references.
 */
export class HledgerParser {
  private current: {
    line: number;
    date: string;
    code: string | null;
    description: string;
    text: string[];
    postings: { line: number; account: string; amountCents: number | null; comment: string | null }[];
    errors: RowError[];
    dateError: boolean;
  } | null = null;
  private seenOnDate = new Map<string, number>();
  private seenDate = '';

  /** Feeds one line (without its line break); returns what it completes. */
  push(text: string, line: number): ParsedItem[] {
    const out: ParsedItem[] = [];
    const raw = text.replace(/\r$/, '');
    if (raw.trim() === '') return out;
    const indented = /^[ \t]/.test(raw);
    if (indented) {
      const body = raw.trim();
      if (body.startsWith(';') || body.startsWith('#')) return out;
      if (!this.current) {
        out.push({ stray: { line, column: null, message: 'a posting outside a transaction' } });
        return out;
      }
      this.posting(body, line);
      return out;
    }
    // Anything at the start of a line ends the transaction being read.
    const done = this.finish();
    if (done) out.push(done);
    if (/^[;#*%|]/.test(raw)) return out;
    if (/^\d/.test(raw)) {
      this.transaction(raw, line);
      return out;
    }
    const word = raw.split(/\s/, 1)[0] as string;
    if (DIRECTIVES.has(word)) return out;
    out.push({
      stray: { line, column: null, message: `"${raw.slice(0, 40)}" is not a transaction, comment or directive` },
    });
    return out;
  }

  /** Ends the file; returns the last transaction. */
  end(): ParsedItem[] {
    const done = this.finish();
    return done ? [done] : [];
  }

  private transaction(raw: string, line: number): void {
    const noComment = stripComment(raw);
    const m = /^(\S+?)(?:=\S+)?(?:\s+([*!]))?(?:\s+\(([^)]*)\))?(?:\s+(.*))?$/.exec(noComment.trimEnd());
    const errors: RowError[] = [];
    let date = '';
    let dateError = false;
    if (!m) {
      errors.push({ line, column: 'date', message: 'a transaction line is DATE [*|!] [(CODE)] description' });
      dateError = true;
    } else {
      const parsed = parseDate(m[1] as string);
      if ('error' in parsed) {
        errors.push({ line, column: 'date', message: parsed.error });
        dateError = true;
      } else date = parsed.date;
    }
    const code = m?.[3]?.trim() || null;
    this.current = {
      line,
      date,
      code,
      description: m?.[4]?.trim() ?? '',
      text: [noComment.trim()],
      postings: [],
      errors,
      dateError,
    };
  }

  private posting(body: string, line: number): void {
    const cur = this.current as NonNullable<HledgerParser['current']>;
    const content = stripComment(body).trim();
    const comment = body.includes(';') ? body.slice(body.indexOf(';') + 1).trim() || null : null;
    if (content === '') return;
    cur.text.push(content);
    const withoutStatus = content.replace(/^[*!]\s+/, '');
    const split = /^(.*?)(?:\t|\s{2,})\s*(.*)$/.exec(withoutStatus);
    const account = (split ? split[1] : withoutStatus)?.trim() ?? '';
    const amountText = split ? (split[2] ?? '').trim() : '';
    if (/^[([]/.test(account)) {
      cur.errors.push({
        line,
        column: 'account',
        message: 'virtual postings ((account) or [account]) are not supported',
      });
      return;
    }
    if (amountText === '') {
      cur.postings.push({ line, account, amountCents: null, comment });
      return;
    }
    const amount = parseAmount(amountText);
    if ('error' in amount) {
      cur.errors.push({ line, column: 'amount', message: amount.error });
      cur.postings.push({ line, account, amountCents: 0, comment });
      return;
    }
    cur.postings.push({ line, account, amountCents: amount.cents, comment });
  }

  private finish(): ParsedItem | null {
    const cur = this.current;
    if (!cur) return null;
    this.current = null;
    const errors = cur.errors;
    // A posting already refused says what is wrong; the rules of the whole would only repeat it.
    const postingRefused = errors.some((e) => e.line !== cur.line);
    const elided = cur.postings.filter((p) => p.amountCents === null);
    if (cur.postings.length < 2 && !postingRefused) {
      errors.push({ line: cur.line, column: null, message: 'a transaction needs at least two postings' });
    }
    if (elided.length > 1) {
      for (const p of elided.slice(1)) {
        errors.push({
          line: p.line,
          column: 'amount',
          message: 'only one posting of a transaction may leave out its amount',
        });
      }
    }
    const sum = cur.postings.reduce((s, p) => s + (p.amountCents ?? 0), 0);
    const first = elided[0];
    if (first && elided.length === 1) {
      if (sum === 0 && !postingRefused) {
        errors.push({ line: first.line, column: 'amount', message: 'the amount left out would be zero' });
      }
      first.amountCents = -sum;
    }
    let reference = cur.code;
    if (!reference) {
      if (cur.date !== this.seenDate) {
        this.seenOnDate.clear();
        this.seenDate = cur.date;
      }
      const hash = createHash('sha256').update(cur.text.join('\n')).digest('hex').slice(0, 12);
      const n = (this.seenOnDate.get(hash) ?? 0) + 1;
      this.seenOnDate.set(hash, n);
      reference = `hl:${cur.date}:${hash}${n > 1 ? `:${n}` : ''}`;
    }
    const entry: ParsedEntry = {
      line: cur.line,
      reference,
      referenceColumn: 'code',
      date: cur.date,
      memo: cur.description || null,
      payeeName: null,
      lines: cur.postings.map((p) => ({
        line: p.line,
        account: p.account,
        amountCents: p.amountCents ?? 0,
        description: p.comment,
      })),
      rows: Math.max(cur.postings.length, 1),
      errors,
    };
    return { entry };
  }
}

const DIRECTIVES = new Set([
  'account',
  'alias',
  'apply',
  'assert',
  'bucket',
  'capture',
  'check',
  'comment',
  'commodity',
  'D',
  'decimal-mark',
  'define',
  'end',
  'eval',
  'include',
  'P',
  'payee',
  'tag',
  'test',
  'Y',
  'year',
  'N',
]);

/** The text before an inline `;` comment. */
function stripComment(text: string): string {
  const at = text.indexOf(';');
  return at < 0 ? text : text.slice(0, at);
}

/** A posting's amount in dollars: `$1,234.56`, `-$5`, `$-5`, `5 USD`, `USD 5`, `5`. */
export function parseAmount(text: string): { cents: number } | { error: string } {
  if (text.includes('@')) return { error: 'prices (@) are not supported; give the amount in dollars' };
  if (text.includes('=')) return { error: 'balance assertions (=) are not supported' };
  let t = text.replace(/\s+/g, '');
  let negative = false;
  if (t.startsWith('-')) {
    negative = true;
    t = t.slice(1);
  }
  if (t.startsWith('$')) t = t.slice(1);
  else if (t.startsWith('USD')) t = t.slice(3);
  else if (t.endsWith('USD')) t = t.slice(0, -3);
  if (t.startsWith('-')) {
    if (negative) return { error: `"${text}" is not an amount` };
    negative = true;
    t = t.slice(1);
  }
  if (/[^\d.,]/.test(t)) {
    return { error: `"${text}" is not an amount in dollars ($ or USD); other commodities are not supported` };
  }
  const parsed = parseCents(t);
  if ('error' in parsed) return { error: parsed.error.replace(`"${t}"`, `"${text}"`) };
  return { cents: negative && parsed.cents !== 0 ? -parsed.cents : parsed.cents };
}
