import { PassThrough, Readable } from 'node:stream';
import type { Row, Statement } from './statements';

/**
 * exceljs and pdfkit are loaded on the first export, not at start: a process that never exports (most of them, the
 * worker, the CLI) does not carry them.
 */
const exceljs = () => import('exceljs').then((m) => m.default);
const pdfkit = () => import('pdfkit').then((m) => m.default);

/**
 * Statements drawn as CSV, XLSX (exceljs, streamed: rows are written out as they are added) and PDF (pdfkit,
 * streamed page by page). Money is cents in the model: two decimals everywhere it is shown.
 */

const decimal = (cents: number) => {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
};

// ---------------------------------------------------------------- CSV

/** RFC 4180 quoting; text a spreadsheet would run as a formula (=, +, -, @) is prefixed with an apostrophe. */
function csvCell(value: string | number | null, kind: 'text' | 'money' | 'date'): string {
  if (value === null) return '';
  if (kind === 'money' && typeof value === 'number') return decimal(value);
  let text = String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV of the statements: for each, its title, its period, its column headings, its rows; a blank line between. */
export function csvStream(statements: Statement[]): Readable {
  return Readable.from(
    (function* () {
      for (const [i, s] of statements.entries()) {
        if (i > 0) yield '\r\n';
        yield `${csvCell(s.title, 'text')}\r\n${csvCell(s.subtitle, 'text')}\r\n`;
        yield `${s.columns.map((c) => csvCell(c.title, 'text')).join(',')}\r\n`;
        for (const row of s.rows) {
          yield `${row.cells.map((v, j) => csvCell(j === 0 ? `${'  '.repeat(row.indent)}${v ?? ''}` : v, s.columns[j]?.kind ?? 'text')).join(',')}\r\n`;
        }
      }
    })(),
    { objectMode: false },
  );
}

// ---------------------------------------------------------------- XLSX

const MONEY_FORMAT = '#,##0.00;[Red]-#,##0.00';
const FIRST_ROW = 5;

const columnLetter = (index: number): string => {
  let n = index + 1;
  let out = '';
  while (n > 0) {
    const m = (n - 1) % 26;
    out = String.fromCharCode(65 + m) + out;
    n = Math.floor((n - 1) / 26);
  }
  return out;
};

/** The formula of a subtotal or total cell in a column, over the sheet rows of the statement rows it adds. */
function formulaOf(row: Row, column: string): string | null {
  if (!row.sum) return null;
  if ('from' in row.sum) return `SUM(${column}${row.sum.from + FIRST_ROW}:${column}${row.sum.to + FIRST_ROW})`;
  return row.sum.rows.map((r, i) => `${r.sign < 0 ? '-' : i > 0 ? '+' : ''}${column}${r.row + FIRST_ROW}`).join('');
}

/** A workbook with one sheet per statement; amounts are numbers with a currency format, totals are formulas. */
export async function xlsxStream(statements: Statement[]): Promise<Readable> {
  const ExcelJS = await exceljs();
  const out = new PassThrough();
  const workbook = new ExcelJS.stream.xlsx.WorkbookWriter({ stream: out, useStyles: true, useSharedStrings: false });
  const names = new Set<string>();
  void (async () => {
    for (const s of statements) {
      let name = s.title
        .replace(/^.*?: /, '')
        .replace(/[\\/?*[\]:]/g, ' ')
        .slice(0, 28);
      for (let n = 2; names.has(name); n++) name = `${name.slice(0, 26)} ${n}`;
      names.add(name);
      const sheet = workbook.addWorksheet(name);
      sheet.columns = s.columns.map((c, i) => ({ width: i === 0 ? 44 : c.kind === 'money' ? 16 : 14 }));
      sheet.addRow([s.title]).font = { bold: true, size: 14 };
      sheet.addRow([s.subtitle]).commit();
      sheet.addRow([]).commit();
      const header = sheet.addRow(s.columns.map((c) => c.title));
      header.font = { bold: true };
      header.commit();
      for (const row of s.rows) {
        const values = row.cells.map((v, j) => {
          const kind = s.columns[j]?.kind;
          if (kind !== 'money' || v === null || typeof v !== 'number') return v;
          const formula = formulaOf(row, columnLetter(j));
          return formula ? { formula, result: v / 100 } : v / 100;
        });
        const added = sheet.addRow(values);
        added.getCell(1).alignment = { indent: row.indent };
        s.columns.forEach((c, j) => {
          if (c.kind === 'money') added.getCell(j + 1).numFmt = MONEY_FORMAT;
        });
        if (row.kind !== 'line') added.font = { bold: true };
        if (row.kind === 'total') {
          s.columns.forEach((c, j) => {
            if (c.kind === 'money')
              added.getCell(j + 1).border = { top: { style: 'thin' }, bottom: { style: 'double' } };
          });
        }
        added.commit();
      }
      sheet.commit();
    }
    await workbook.commit();
  })().catch((err: unknown) => out.destroy(err as Error));
  return out;
}

// ---------------------------------------------------------------- PDF

const PAGE = { size: 'A4' as const, margin: 48 };
/** Up to this many rows a PDF numbers its pages "n of N" (kept in memory until the end); beyond, "n" (streamed). */
export const PDF_BUFFERED_ROWS = 20_000;
const accounting = (cents: number) => {
  const [whole, frac] = decimal(Math.abs(cents)).split('.') as [string, string];
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return cents < 0 ? `(${grouped}.${frac})` : `${grouped}.${frac}`;
};

/**
 * A PDF statement layout: each statement starts a page with the company and title, the period and the column
 * headings, which repeat on every page it runs to; headings, indented account lines, subtotals over a rule, totals
 * over a rule and under a double one; page numbers "Page n of N" at the foot of every page.
 */
export async function pdfStream(statements: Statement[]): Promise<Readable> {
  const PDFDocument = await pdfkit();
  // "Page n of N" needs every page kept until the end; a very long report is streamed page by page instead, and its
  // pages say "Page n".
  const buffered = statements.reduce((n, s) => n + s.rows.length, 0) <= PDF_BUFFERED_ROWS;
  const doc = new PDFDocument({ size: PAGE.size, margin: PAGE.margin, bufferPages: buffered, autoFirstPage: false });
  let pages = 0;
  const footer = (text: string) => {
    const bottomMargin = doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    doc
      .font('Helvetica')
      .fontSize(8)
      .text(text, left, doc.page.height - PAGE.margin, { width: right - left, align: 'right', lineBreak: false });
    doc.page.margins.bottom = bottomMargin;
  };
  doc.info.Title = statements[0]?.title ?? 'Report';
  const width = 595.28; // A4
  const left = PAGE.margin;
  const right = width - PAGE.margin;
  const lineHeight = 14;

  const columnsOf = (s: Statement) => {
    const others = s.columns.length - 1;
    const otherWidth = Math.min(90, (right - left - 180) / Math.max(others, 1));
    const firstWidth = right - left - otherWidth * others;
    return s.columns.map((c, i) => ({
      ...c,
      x: i === 0 ? left : left + firstWidth + otherWidth * (i - 1),
      width: i === 0 ? firstWidth : otherWidth,
    }));
  };

  for (const s of statements) {
    const cols = columnsOf(s);
    const header = () => {
      doc.addPage();
      pages++;
      if (!buffered) footer(`Page ${pages}`);
      doc
        .font('Helvetica-Bold')
        .fontSize(14)
        .text(s.title, left, PAGE.margin, { width: right - left });
      doc
        .font('Helvetica')
        .fontSize(10)
        .text(s.subtitle, left, doc.y + 2, { width: right - left });
      const y = doc.y + 10;
      doc.font('Helvetica-Bold').fontSize(9);
      for (const c of cols) {
        doc.text(c.title, c.x, y, {
          width: c.width - 4,
          align: c.kind === 'money' ? 'right' : 'left',
          lineBreak: false,
        });
      }
      doc
        .moveTo(left, y + lineHeight - 2)
        .lineTo(right, y + lineHeight - 2)
        .lineWidth(0.8)
        .stroke();
      return y + lineHeight + 2;
    };
    let y = header();
    const bottom = doc.page.height - PAGE.margin - 24;
    for (const row of s.rows) {
      const extra = row.kind === 'total' ? 6 : row.kind === 'heading' ? 4 : 0;
      if (y + lineHeight + extra > bottom) y = header();
      if (row.kind === 'heading') y += 4;
      if (row.kind === 'subtotal' || row.kind === 'total') y += 3;
      doc.font(row.kind === 'line' ? 'Helvetica' : 'Helvetica-Bold').fontSize(9);
      cols.forEach((c, j) => {
        const v = row.cells[j];
        if (v === null || v === undefined) return;
        const text = c.kind === 'money' && typeof v === 'number' ? accounting(v) : String(v);
        const indent = j === 0 ? row.indent * 12 : 0;
        doc.text(text, c.x + indent, y, {
          width: c.width - 4 - indent,
          align: c.kind === 'money' ? 'right' : 'left',
          lineBreak: false,
          ellipsis: true,
          height: lineHeight,
        });
      });
      if (row.kind === 'subtotal' || row.kind === 'total') {
        for (const c of cols.filter((x) => x.kind === 'money')) {
          doc
            .moveTo(c.x + 8, y - 3)
            .lineTo(c.x + c.width - 4, y - 3)
            .lineWidth(0.5)
            .stroke();
          if (row.kind === 'total') {
            for (const dy of [lineHeight - 2, lineHeight]) {
              doc
                .moveTo(c.x + 8, y + dy)
                .lineTo(c.x + c.width - 4, y + dy)
                .lineWidth(0.5)
                .stroke();
            }
          }
        }
      }
      y += lineHeight + extra;
    }
  }
  if (statements.length === 0) doc.addPage();
  if (buffered) {
    const range = doc.bufferedPageRange();
    for (let i = range.start; i < range.start + range.count; i++) {
      doc.switchToPage(i);
      footer(`Page ${i + 1} of ${range.count}`);
    }
  }
  doc.end();
  return doc as unknown as Readable;
}
