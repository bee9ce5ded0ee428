import { PassThrough, Readable } from 'node:stream';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { CHART_SIZE, chartSvg } from './charts';
import { kindsOf, type Row, type Statement } from './statements';

/**
 * exceljs and pdfkit are loaded on the first export, not at start: a process that never exports (most of them, the
 * worker, the CLI) does not carry them.
 */
const exceljs = () => import('exceljs').then((m) => m.default);
const pdfkit = () => import('pdfkit').then((m) => m.default);
const svgToPdf = () => import('svg-to-pdfkit').then((m) => m.default);

/** The parts of pdfkit's standard (AFM) font that measuring and drawing text call for every pair of glyphs. */
interface AfmFont {
  kernPairs: Record<string, number>;
  glyphWidths: Record<string, number>;
  getKernPair(left: string, right: string): number;
  widthOfGlyph(glyph: string): number;
  [KERNING]?: Map<string, Map<string, number>>;
  [WIDTHS]?: Map<string, number>;
}
const KERNING = Symbol('kerning by glyph');
const INDEXED = Symbol('kerning indexed');
const WIDTHS = Symbol('widths by glyph');

/**
 * pdfkit's standard fonts look each pair of glyphs up in their kerning table by a string made for the lookup
 * (`kernPairs[left + '\0' + right]`), and each glyph's width in an object of some 300 names, for every glyph of every
 * text measured or drawn: a third of a long export's time. This makes the same lookups in the same tables indexed by
 * glyph, built once per font. Nothing changes on the page; a pdfkit whose fonts are made otherwise is left alone.
 */
export function indexFontMetrics(doc: PDFKit.PDFDocument): void {
  const font = (doc as unknown as { _font?: { font?: Partial<AfmFont> } })._font?.font;
  const proto = font && (Object.getPrototypeOf(font) as Partial<AfmFont> & { [INDEXED]?: true });
  if (
    !proto ||
    typeof proto.getKernPair !== 'function' ||
    typeof proto.widthOfGlyph !== 'function' ||
    typeof font.kernPairs !== 'object' ||
    typeof font.glyphWidths !== 'object' ||
    proto[INDEXED]
  ) {
    return;
  }
  proto[INDEXED] = true;
  proto.getKernPair = function (this: AfmFont, left: string, right: string): number {
    let table = this[KERNING];
    if (!table) {
      table = new Map();
      for (const [pair, amount] of Object.entries(this.kernPairs)) {
        const [l, r] = pair.split('\0') as [string, string];
        let row = table.get(l);
        if (!row) table.set(l, (row = new Map()));
        row.set(r, amount);
      }
      this[KERNING] = table;
    }
    return table.get(left)?.get(right) ?? 0;
  };
  proto.widthOfGlyph = function (this: AfmFont, glyph: string): number {
    const widths = (this[WIDTHS] ??= new Map(Object.entries(this.glyphWidths)));
    return widths.get(glyph) || 0;
  };
}

/**
 * Statements drawn as CSV, XLSX (exceljs, streamed: rows are written out as they are added) and PDF (pdfkit,
 * streamed page by page). Money is cents in the model: two decimals everywhere it is shown. Rows are drawn as they
 * arrive, and the XLSX and PDF writers give the event loop back every few hundred rows and wait while the reader is
 * behind, so a long export holds neither the process's other requests nor more than a page or so of output.
 */

/** Rows (or general-ledger lines) a CSV, XLSX or JSON writer writes between turns of the event loop. */
export const BREATHE_ROWS = 500;

/**
 * Lets other work run, and waits while what was written has not been read (or until the reader is gone); false once
 * the stream is destroyed, when the writer should stop.
 */
async function breathe(out: PassThrough): Promise<boolean> {
  await nextTurn();
  if (out.writableNeedDrain && !out.destroyed) {
    await new Promise<void>((resolve) => {
      const done = () => {
        out.off('drain', done);
        out.off('close', done);
        resolve();
      };
      out.on('drain', done);
      out.on('close', done);
    });
  }
  return !out.destroyed;
}

const decimal = (cents: number) => {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
};

// ---------------------------------------------------------------- CSV

/**
 * Text a spreadsheet would run as a formula: its first character after any blanks is =, +, -, @, a tab or a carriage
 * return (spreadsheets skip the blanks, and indentation puts them in front of names and descriptions that come from
 * third parties, such as bank-feed descriptions).
 */
const FORMULA_START = /^[ \u00a0]*[=+\-@\t\r]/;

/** RFC 4180 quoting; a text cell a spreadsheet would run as a formula is prefixed with an apostrophe. */
export function csvCell(value: string | number | null, kind: 'text' | 'money' | 'date'): string {
  if (value === null) return '';
  if (kind === 'money' && typeof value === 'number') return decimal(value);
  let text = String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** One CSV of the statements: for each, its title, its period, its column headings, its rows; a blank line between. */
export function csvStream(statements: Statement[]): Readable {
  return Readable.from(
    (async function* () {
      for (const [i, s] of statements.entries()) {
        if (i > 0) yield '\r\n';
        yield `${csvCell(s.title, 'text')}\r\n${csvCell(s.subtitle, 'text')}\r\n`;
        yield `${s.columns.map((c) => csvCell(c.title, 'text')).join(',')}\r\n`;
        let written = 0;
        for await (const row of s.rows) {
          if (++written % BREATHE_ROWS === 0) await nextTurn();
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
      let written = 0;
      for await (const row of s.rows) {
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
        if (++written % BREATHE_ROWS === 0 && !(await breathe(out))) return;
      }
      sheet.commit();
    }
    await workbook.commit();
  })().catch((err: unknown) => out.destroy(err as Error));
  return out;
}

// ---------------------------------------------------------------- PDF

const PAGE = { size: 'A4' as const, margin: 48 };
const WIDTH = 595.28; // A4
const LEFT = PAGE.margin;
const RIGHT = WIDTH - PAGE.margin;
const LINE_HEIGHT = 14;

const accounting = (cents: number) => {
  const [whole, frac] = decimal(Math.abs(cents)).split('.') as [string, string];
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return cents < 0 ? `(${grouped}.${frac})` : `${grouped}.${frac}`;
};

/**
 * Where rows go on the pages of a statement, from their kinds alone: one function places them both when the pages
 * are counted (before the first is drawn) and when they are drawn, so the count is the drawing's. `top` is where the
 * first row of a page goes, under the statement's heading; each call answers the row's y and whether it starts a page.
 */
function placer(top: number, bottom: number) {
  let y = top;
  return (kind: Row['kind']): { y: number; newPage: boolean } => {
    const extra = kind === 'total' ? 6 : kind === 'heading' ? 4 : 0;
    let newPage = false;
    if (y + LINE_HEIGHT + extra > bottom) {
      y = top;
      newPage = true;
    }
    if (kind === 'heading') y += 4;
    if (kind === 'subtotal' || kind === 'total') y += 3;
    const at = y;
    y += LINE_HEIGHT + extra;
    return { y: at, newPage };
  };
}

/**
 * A PDF statement layout: each statement starts a page with the company and title, the period and the column
 * headings, which repeat on every page it runs to; headings, indented account lines, subtotals over a rule, totals
 * over a rule and under a double one; "Page n of N" at the foot of every page. Pages are written out as they are
 * finished (nothing is kept to number them afterwards: the pages are counted from the kinds of the rows first).
 */
export async function pdfStream(statements: Statement[]): Promise<Readable> {
  const PDFDocument = await pdfkit();
  const doc = new PDFDocument({ size: PAGE.size, margin: PAGE.margin, bufferPages: false, autoFirstPage: false });
  const out = new PassThrough();
  doc.on('data', (chunk: Buffer) => out.write(chunk));
  doc.on('end', () => out.end());
  doc.info.Title = statements[0]?.title ?? 'Report';
  indexFontMetrics(doc.font('Helvetica'));

  const footer = (text: string) => {
    const bottomMargin = doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    doc
      .font('Helvetica')
      .fontSize(8)
      .text(text, LEFT, doc.page.height - PAGE.margin, { width: RIGHT - LEFT, align: 'right', lineBreak: false });
    doc.page.margins.bottom = bottomMargin;
  };

  const columnsOf = (s: Statement) => {
    const others = s.columns.length - 1;
    const otherWidth = Math.min(90, (RIGHT - LEFT - 180) / Math.max(others, 1));
    const firstWidth = RIGHT - LEFT - otherWidth * others;
    return s.columns.map((c, i) => ({
      ...c,
      x: i === 0 ? LEFT : LEFT + firstWidth + otherWidth * (i - 1),
      width: i === 0 ? firstWidth : otherWidth,
    }));
  };

  /** Rows' cells are measured at 9 points, in this font: widths of texts seen before are not measured again. */
  let font = 'Helvetica';
  const widths = new Map<string, number>();
  const widthOf = (text: string): number => {
    const key = `${font}|${text}`;
    let width = widths.get(key);
    if (width === undefined) {
      if (widths.size >= 20_000) widths.clear();
      width = doc.widthOfString(text);
      widths.set(key, width);
    }
    return width;
  };
  /**
   * The text, cut to `width` at the current font and ended with an ellipsis when it does not fit. Cells are placed by
   * their measured width rather than through pdfkit's line wrapper, which is most of the time a long report takes.
   */
  const fitted = (text: string, width: number): { text: string; width: number } => {
    const whole = widthOf(text);
    if (whole <= width) return { text, width: whole };
    let fits = 0;
    let over = text.length;
    while (over - fits > 1) {
      const mid = (fits + over) >> 1;
      if (doc.widthOfString(`${text.slice(0, mid)}…`) <= width) fits = mid;
      else over = mid;
    }
    const cut = `${text.slice(0, fits).trimEnd()}…`;
    return { text: cut, width: doc.widthOfString(cut) };
  };

  /** The heading's lines, measured once: the title may wrap. */
  const headingOf = (s: Statement) => {
    const titleHeight = doc
      .font('Helvetica-Bold')
      .fontSize(14)
      .heightOfString(s.title, { width: RIGHT - LEFT });
    const subtitleY = PAGE.margin + titleHeight + 2;
    const subtitleHeight = doc
      .font('Helvetica')
      .fontSize(10)
      .heightOfString(s.subtitle, { width: RIGHT - LEFT });
    const columnsY = subtitleY + subtitleHeight + 10;
    return { subtitleY, columnsY, top: columnsY + LINE_HEIGHT + 2 };
  };

  /**
   * Charts one under the other, scaled to the width between the margins. Their text is set in the standard fonts
   * pdfkit carries (Helvetica), never a font of the machine, so the page is the same wherever it is drawn.
   */
  const drawCharts = async (charts: NonNullable<Statement['charts']>, top: number) => {
    const SVGtoPDF = await svgToPdf();
    const width = RIGHT - LEFT;
    const height = (width * CHART_SIZE.height) / CHART_SIZE.width;
    for (const [i, chart] of charts.entries()) {
      SVGtoPDF(doc, await chartSvg(chart), LEFT, top + i * (height + 24), {
        width,
        height,
        fontCallback: (_family, bold) => (bold ? 'Helvetica-Bold' : 'Helvetica'),
      });
    }
  };

  const draw = async () => {
    // A page to measure headings on; it becomes the first page.
    doc.addPage();
    const bottom = doc.page.height - PAGE.margin - 24;
    const headings = statements.map(headingOf);
    let pageCount = 0;
    statements.forEach((s, i) => {
      const place = placer((headings[i] as ReturnType<typeof headingOf>).top, bottom);
      pageCount += s.charts?.length ? 2 : 1;
      for (const kind of kindsOf(s)) if (place(kind).newPage) pageCount++;
    });
    let page = 0;
    const startPage = () => {
      if (page > 0) doc.addPage();
      page++;
      footer(`Page ${page} of ${Math.max(pageCount, page)}`);
    };
    if (statements.length === 0) startPage();

    for (const [i, s] of statements.entries()) {
      const cols = columnsOf(s);
      const heading = headings[i] as ReturnType<typeof headingOf>;
      const title = () => {
        startPage();
        doc
          .font('Helvetica-Bold')
          .fontSize(14)
          .text(s.title, LEFT, PAGE.margin, { width: RIGHT - LEFT });
        doc
          .font('Helvetica')
          .fontSize(10)
          .text(s.subtitle, LEFT, heading.subtitleY, { width: RIGHT - LEFT });
      };
      if (s.charts?.length) {
        title();
        await drawCharts(s.charts, heading.columnsY);
      }
      const header = () => {
        title();
        doc.font('Helvetica-Bold').fontSize(9);
        for (const c of cols) {
          doc.text(c.title, c.x, heading.columnsY, {
            width: c.width - 4,
            align: c.kind === 'money' ? 'right' : 'left',
            lineBreak: false,
          });
        }
        const rule = heading.columnsY + LINE_HEIGHT - 2;
        doc.moveTo(LEFT, rule).lineTo(RIGHT, rule).lineWidth(0.8).stroke();
      };
      header();
      const place = placer(heading.top, bottom);
      for await (const row of s.rows) {
        const { y, newPage } = place(row.kind);
        if (newPage) {
          // The page just finished has been written out: let other requests run, and wait for a slow reader.
          if (!(await breathe(out))) return;
          header();
        }
        font = row.kind === 'line' ? 'Helvetica' : 'Helvetica-Bold';
        doc.font(font).fontSize(9);
        cols.forEach((c, j) => {
          const v = row.cells[j];
          if (v === null || v === undefined) return;
          const indent = j === 0 ? row.indent * 12 : 0;
          const room = c.width - 4 - indent;
          const { text, width } = fitted(c.kind === 'money' && typeof v === 'number' ? accounting(v) : String(v), room);
          doc.text(text, c.kind === 'money' ? c.x + indent + room - width : c.x + indent, y, { lineBreak: false });
        });
        if (row.kind === 'subtotal' || row.kind === 'total') {
          for (const c of cols.filter((x) => x.kind === 'money')) {
            doc
              .moveTo(c.x + 8, y - 3)
              .lineTo(c.x + c.width - 4, y - 3)
              .lineWidth(0.5)
              .stroke();
            if (row.kind === 'total') {
              for (const dy of [LINE_HEIGHT - 2, LINE_HEIGHT]) {
                doc
                  .moveTo(c.x + 8, y + dy)
                  .lineTo(c.x + c.width - 4, y + dy)
                  .lineWidth(0.5)
                  .stroke();
              }
            }
          }
        }
      }
    }
    doc.end();
  };
  void draw().catch((err: unknown) => out.destroy(err as Error));
  return out;
}
