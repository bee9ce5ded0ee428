import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { parseCents, parseDate } from './amounts';
import { ChartIndex } from './chart';
import { accountsCsv, csvFailure, csvRecords, journalCsv } from './csv';
import { HledgerParser, parseAmount } from './hledger';
import type { ParsedEntry, ParsedItem } from './types';

function hledger(text: string): ParsedItem[] {
  const parser = new HledgerParser();
  const items = text.split('\n').flatMap((line, i) => parser.push(line, i + 1));
  return [...items, ...parser.end()];
}

const entries = (items: ParsedItem[]) => items.flatMap((i) => ('entry' in i ? [i.entry] : []));

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

describe('parseCents', () => {
  it('reads decimal strings as exact cents', () => {
    expect(parseCents('12')).toEqual({ cents: 1200 });
    expect(parseCents('12.5')).toEqual({ cents: 1250 });
    expect(parseCents('0.07')).toEqual({ cents: 7 });
    expect(parseCents('-3.07')).toEqual({ cents: -307 });
    expect(parseCents('1,234,567.89')).toEqual({ cents: 123_456_789 });
    // Binary floating point would make this 1.0049999...
    expect(parseCents('1.01')).toEqual({ cents: 101 });
    expect(parseCents('90071992547409.91')).toEqual({ cents: Number.MAX_SAFE_INTEGER });
  });

  it('refuses more than two decimal places, words, blanks, bad grouping and amounts past 2^53-1 cents', () => {
    expect(parseCents('1.005')).toEqual({ error: '"1.005" has more than 2 decimal places' });
    expect(parseCents('abc')).toMatchObject({ error: expect.stringMatching(/not a decimal/) });
    expect(parseCents('')).toEqual({ error: 'is empty' });
    expect(parseCents('1,23')).toMatchObject({ error: expect.stringMatching(/not a decimal/) });
    expect(parseCents('1e5')).toMatchObject({ error: expect.stringMatching(/not a decimal/) });
    expect(parseCents('90071992547409.92')).toMatchObject({ error: expect.stringMatching(/too large/) });
  });
});

describe('parseDate', () => {
  it('takes calendar dates written with -, / or .', () => {
    expect(parseDate('2024-02-29')).toEqual({ date: '2024-02-29' });
    expect(parseDate('2024/03/01')).toEqual({ date: '2024-03-01' });
    expect(parseDate('2024.03.01')).toEqual({ date: '2024-03-01' });
  });
  it('refuses days not on the calendar and other shapes', () => {
    expect(parseDate('2023-02-29')).toMatchObject({ error: expect.stringMatching(/not a date on the calendar/) });
    expect(parseDate('03/01/2024')).toMatchObject({ error: expect.stringMatching(/not a date/) });
    expect(parseDate('0000-01-01')).toMatchObject({ error: expect.stringMatching(/calendar/) });
  });
});

describe('the hledger parser', () => {
  it('reads a transaction with status, code, description, comments and an elided amount', () => {
    const [entry] = entries(
      hledger(
        [
          '; a comment',
          '# another',
          'account Expenses:Rent',
          'commodity $1,000.00',
          '',
          '2024-01-05=2024-01-06 * (INV-7) Office rent   ; paid',
          '    ; a posting comment',
          '    Expenses:Rent        $1,200.00  ; january',
          '    * Assets:Business Checking',
        ].join('\n'),
      ),
    );
    expect(entry).toEqual({
      line: 6,
      reference: 'INV-7',
      referenceColumn: 'code',
      date: '2024-01-05',
      memo: 'Office rent',
      payeeName: null,
      lines: [
        { line: 8, account: 'Expenses:Rent', amountCents: 120_000, description: 'january' },
        { line: 9, account: 'Assets:Business Checking', amountCents: -120_000, description: null },
      ],
      rows: 2,
      errors: [],
    } satisfies ParsedEntry);
  });

  it('reads the amount forms: $x, -$x, $-x, x USD, USD x, plain, with a tab before the amount', () => {
    expect(parseAmount('$1,234.56')).toEqual({ cents: 123_456 });
    expect(parseAmount('-$5')).toEqual({ cents: -500 });
    expect(parseAmount('$-5.10')).toEqual({ cents: -510 });
    expect(parseAmount('12.50 USD')).toEqual({ cents: 1250 });
    expect(parseAmount('USD 12.50')).toEqual({ cents: 1250 });
    expect(parseAmount('7')).toEqual({ cents: 700 });
    expect(parseAmount('10 EUR')).toMatchObject({ error: expect.stringMatching(/other commodities/) });
    expect(parseAmount('$1 @ 2 EUR')).toMatchObject({ error: expect.stringMatching(/prices/) });
    expect(parseAmount('$1 = $5')).toMatchObject({ error: expect.stringMatching(/assertions/) });
    expect(parseAmount('$1.001')).toMatchObject({ error: expect.stringMatching(/more than 2 decimal/) });
    const [entry] = entries(hledger('2024-01-01 x\n\tA\t$1\n\tB\t$-1'));
    expect(entry?.lines.map((l) => [l.account, l.amountCents])).toEqual([
      ['A', 100],
      ['B', -100],
    ]);
  });

  it('derives the same reference from the same text, numbering repeats of a day, and another for other text', () => {
    const text = '2024-01-01 Coffee\n  A  $1\n  B\n\n2024-01-01 Coffee\n  A  $1\n  B\n\n2024-01-01 Tea\n  A  $1\n  B';
    const refs = entries(hledger(text)).map((e) => e.reference);
    expect(refs[0]).toMatch(/^hl:2024-01-01:[0-9a-f]{12}$/);
    expect(refs[1]).toBe(`${refs[0]}:2`);
    expect(refs[2]).not.toBe(refs[0]);
    expect(entries(hledger(text)).map((e) => e.reference)).toEqual(refs);
  });

  it('reports what is wrong: two elided amounts, one posting, a bad date, virtual postings, stray lines', () => {
    const items = hledger(
      [
        '2024-01-01 Two elided',
        '  A',
        '  B',
        '2024-01-02 One posting',
        '  A  $1',
        '2024-13-01 Bad date',
        '  A  $1',
        '  B  $-1',
        '2024-01-03 Virtual',
        '  (A)  $1',
        '  B',
        'nonsense here',
        '  Orphan  $1',
      ].join('\n'),
    );
    const errors = items.flatMap((i) => ('entry' in i ? i.entry.errors : [i.stray]));
    expect(errors.map((e) => [e.line, e.column])).toEqual([
      [3, 'amount'],
      [4, null],
      [6, 'date'],
      [10, 'account'],
      [12, null],
      [13, null],
    ]);
  });
});

describe('the journal CSV reader', () => {
  it('groups consecutive rows of one reference into an entry and checks each row', async () => {
    const csv = [
      '\uFEFFDate,Reference,Description,Account Code,Debit,Credit,Payee,Line Memo',
      '2024-01-01,R1,Rent,6400,"1,000.00",,Landlord,jan',
      '2024-01-01,R1,,1000,,1000,,',
      '',
      '2024-01-02,R2,Bad,6400,1.001,,,',
      '2024-01-03,R2,Bad,1000,,,,',
      '2024-01-02,R3,Both,1000,1,1,,',
    ].join('\r\n');
    const items = await collect(journalCsv(csvRecords(Readable.from([csv]))));
    const [r1, r2, r3] = entries(items);
    expect(r1).toMatchObject({
      line: 2,
      reference: 'R1',
      date: '2024-01-01',
      memo: 'Rent',
      payeeName: 'Landlord',
      rows: 2,
      errors: [],
      lines: [
        { line: 2, account: '6400', amountCents: 100_000, description: 'jan' },
        { line: 3, account: '1000', amountCents: -100_000, description: null },
      ],
    });
    expect(r2?.errors.map((e) => [e.line, e.column])).toEqual([
      [5, 'debit'],
      [6, 'debit'],
      [6, 'date'],
    ]);
    expect(r3?.errors).toEqual([{ line: 7, column: 'credit', message: 'a line has a debit or a credit, not both' }]);
  });

  it('reads a quoted field across lines and names the header it lacks', async () => {
    const quoted =
      'date,reference,memo,account,debit,credit\n2024-01-01,R1,"two\nlines",1000,1,\n2024-01-01,R1,,6400,,1';
    const [entry] = entries(await collect(journalCsv(csvRecords(Readable.from([quoted])))));
    expect(entry?.memo).toBe('two\nlines');
    const missing = await collect(journalCsv(csvRecords(Readable.from(['date,account,debit\n']))));
    expect(missing.map((i) => ('stray' in i ? i.stray.column : null))).toEqual(['reference', 'credit']);
  });
});

describe('a CSV that cannot be read', () => {
  it('stops at a record of more than 64 KB, saying where', async () => {
    const csv = `date,reference,memo,account,debit,credit\n2024-01-01,R,${'x'.repeat(70_000)},1000,1,\n`;
    const failure = await collect(journalCsv(csvRecords(Readable.from([csv])))).then(
      () => null,
      (err: unknown) => csvFailure(err),
    );
    expect(failure).toMatchObject({ line: 2, column: null, message: expect.stringMatching(/not valid CSV/) });
  });
});

describe('the accounts CSV reader', () => {
  it('reads rows, checking type and subtype names', async () => {
    const csv = 'Code,Name,Type,Subtype,Description\n1000,Cash,Asset,Bank,\n2000,Card,liability,,x\n3000,Odd,thing,,\n';
    const items = await collect(accountsCsv(csvRecords(Readable.from([csv]))));
    expect(items).toEqual([
      { row: { line: 2, code: '1000', name: 'Cash', type: 'asset', subtype: 'bank', description: null } },
      { row: { line: 3, code: '2000', name: 'Card', type: 'liability', subtype: null, description: 'x' } },
      { stray: { line: 4, column: 'type', message: expect.stringMatching(/"thing" is not one of/) } },
    ]);
  });
});

describe('the chart index', () => {
  const chart = new ChartIndex([
    { id: 'a', code: '6400', name: 'Rent', archived: false },
    { id: 'b', code: '1000', name: 'Business Checking', archived: false },
    { id: 'c', code: '6401', name: 'Fees', archived: false },
    { id: 'd', code: '6402', name: 'fees', archived: false },
    { id: 'e', code: '9000', name: 'Old', archived: true },
  ]);
  it('finds an account by code, by full name (any case) or by the last segment of a colon path', () => {
    expect(chart.resolve('6400')).toEqual({ id: 'a' });
    expect(chart.resolve('business checking')).toEqual({ id: 'b' });
    expect(chart.resolve('Expenses:Rent')).toEqual({ id: 'a' });
    expect(chart.resolve('Assets:1000')).toEqual({ id: 'b' });
    expect(chart.resolve('Assets:Bank:Business Checking')).toEqual({ id: 'b' });
  });
  it('refuses an unknown, ambiguous or archived account', () => {
    expect(chart.resolve('Nowhere')).toMatchObject({ error: expect.stringMatching(/no account "Nowhere"/) });
    expect(chart.resolve('Expenses:Fees')).toMatchObject({ error: expect.stringMatching(/2 accounts \(6401, 6402\)/) });
    expect(chart.resolve('9000')).toMatchObject({ error: expect.stringMatching(/archived/) });
  });
});
