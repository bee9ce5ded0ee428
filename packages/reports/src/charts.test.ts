/**
 * The packet's twelve months: the figures against the books, and the chart page of the PDF.
 *
 * The visual check draws the chart page to PNG with poppler's `pdftoppm` (CI installs poppler-utils, see .ci/run) and
 * compares it with testdata/packet-charts.png through pixelmatch, allowing a small share of differing pixels (glyph
 * edges move with the rasteriser's version). When the reference is missing, or with UPDATE_REFERENCE_IMAGES=1, the
 * test writes the reference instead of comparing: look at the image before committing it.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { promisify } from 'node:util';
import type { Db } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { cashFlowStatement, monthlyTrend, postTransaction, profitAndLoss } from '@firm/ledger';
import { createLedgerFixture, type LedgerFixture } from '@firm/ledger/testing';
import pixelmatch from 'pixelmatch';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderFinancialPacket } from './export';
import { financialPacket } from './packet';

const REFERENCE = new URL('testdata/packet-charts.png', import.meta.url).pathname;
const PDFTOPPM = '/usr/bin/pdftoppm';
/** The share of pixels that may differ from the reference: text edges, not a bar or a line. */
const TOLERANCE = 0.001;

let database: TestDatabase;
let db: Db;
let f: LedgerFixture;

/** Cash sales of July 2025 to June 2026, in cents. */
const SALES = [
  300_000, 250_000, 420_000, 380_000, 510_000, 460_000, 500_000, 390_000, 440_000, 610_000, 580_000, 650_000,
];
const MONTHS = ['2025-07', '2025-08', '2025-09', '2025-10', '2025-11', '2025-12'].concat([
  '2026-01',
  '2026-02',
  '2026-03',
  '2026-04',
  '2026-05',
  '2026-06',
]);
const END = '2026-06-15';

/**
 * Owner money and a sale before the twelve months; in each month a cash sale and the rent; an advertising bill on the
 * card in September, interest into savings on 30 November, a sale on credit on 31 January, and rent after END. Another
 * company's books move in the same months.
 */
beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  // A fixed name: the page's heading is in the reference image.
  f = await createLedgerFixture(db, { slug: 'harbour-bakery' });
  const other = await createLedgerFixture(db);
  const entry = (books: LedgerFixture, date: string, debit: string, credit: string, cents: number) =>
    db.transaction((tx) =>
      postTransaction(tx, books.ctx, books.orgId, {
        kind: 'journal_entry',
        date,
        lines: [
          { accountId: books.account(debit), debitCents: cents },
          { accountId: books.account(credit), creditCents: cents },
        ],
      }),
    );
  await entry(f, '2025-05-02', '1000', '3000', 5_000_000);
  await entry(f, '2025-06-30', '1000', '4000', 100_000);
  for (const [i, month] of MONTHS.entries()) {
    await entry(f, `${month}-01`, '6400', '1000', 180_000);
    await entry(f, `${month}-10`, '1000', '4000', SALES[i] as number);
    await entry(other, `${month}-10`, '1000', '4000', 999_900);
  }
  await entry(f, '2025-09-05', '6000', '2100', 400_000);
  await entry(f, '2025-11-30', '1010', '4900', 2_500);
  await entry(f, '2026-01-31', '1200', '4000', 500_000);
  await entry(f, '2026-06-20', '6400', '1000', 70_000);
});
afterAll(() => database.close());

const bytesOf = async (stream: Readable) => Buffer.concat((await stream.toArray()) as Buffer[]);

describe('the twelve months', () => {
  it('are the books month by month: income, expenses, net income and cash at each month end', async () => {
    const months = await monthlyTrend(db, f.orgId, { endDate: END });
    expect(months.map((m) => m.month)).toEqual(MONTHS);
    expect(months.map((m) => m.incomeCents)).toEqual([
      300_000, 250_000, 420_000, 380_000, 512_500, 460_000, 1_000_000, 390_000, 440_000, 610_000, 580_000, 650_000,
    ]);
    expect(months.map((m) => m.expensesCents)).toEqual([
      180_000, 180_000, 580_000, 180_000, 180_000, 180_000, 180_000, 180_000, 180_000, 180_000, 180_000, 180_000,
    ]);
    expect(months.map((m) => m.netIncomeCents)).toEqual([
      120_000, 70_000, -160_000, 200_000, 332_500, 280_000, 820_000, 210_000, 260_000, 430_000, 400_000, 470_000,
    ]);
    expect(months.map((m) => m.cashAtEndCents)).toEqual([
      5_220_000, 5_290_000, 5_530_000, 5_730_000, 6_062_500, 6_342_500, 6_662_500, 6_872_500, 7_132_500, 7_562_500,
      7_962_500, 8_432_500,
    ]);
    expect(months.at(-1)).toMatchObject({ startDate: '2026-06-01', endDate: END });
    expect(months[7]).toMatchObject({ startDate: '2026-02-01', endDate: '2026-02-28' });
  });

  it('say for each month what the profit and loss and the cash-flow statement of that month say', async () => {
    for (const endDate of [END, '2026-06-30', '2026-05-31']) {
      const months = await monthlyTrend(db, f.orgId, { endDate });
      for (const m of months) {
        const range = { startDate: m.startDate, endDate: m.endDate };
        const [pnl, cash] = await Promise.all([
          profitAndLoss(db, f.orgId, range),
          cashFlowStatement(db, f.orgId, range),
        ]);
        expect(m.netIncomeCents, `${endDate} ${m.month}`).toBe(pnl.netIncomeCents);
        expect(m.incomeCents, `${endDate} ${m.month}`).toBe(pnl.income.totalCents + pnl.otherIncome.totalCents);
        expect(m.cashAtEndCents, `${endDate} ${m.month}`).toBe(cash.cashAtEndCents);
      }
    }
  });

  it('are in the packet and in its CSV, after the statements it had', async () => {
    const packet = await financialPacket(
      db,
      { id: f.orgId, name: 'Harbour Bakery', fiscalYearStartMonth: 1 },
      {
        endDate: END,
      },
    );
    expect(packet.monthlyTrend).toEqual(await monthlyTrend(db, f.orgId, { endDate: END }));
    const csv = (await bytesOf(await renderFinancialPacket(db, f.orgId, { endDate: END, format: 'csv' }))).toString();
    const trend = csv.slice(csv.indexOf(': Twelve months\r\n'));
    expect(trend).toContain('2025-07-01 to 2026-06-15\r\nMonth,Income,Expenses,Net income,Cash at month end\r\n');
    expect(trend).toContain('  2025-09,4200.00,5800.00,-1600.00,55300.00\r\n');
    expect(trend).toContain('  2026-06,6500.00,1800.00,4700.00,84325.00\r\n');
  });
});

/** The numbers (from 1) of the pages of a PDF whose text contains `text`, read back with pdf.js. */
async function pagesWith(pdf: Buffer, text: string): Promise<number[]> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const doc = await pdfjs.getDocument({ data: new Uint8Array(pdf), useSystemFonts: true }).promise;
  const found: number[] = [];
  for (let i = 1; i <= doc.numPages; i++) {
    const content = await (await doc.getPage(i)).getTextContent();
    if (content.items.some((item) => 'str' in item && item.str.includes(text))) found.push(i);
  }
  return found;
}

/** One page of a PDF as a PNG, drawn by pdftoppm at 60 dpi. */
async function pageAsPng(pdf: Buffer, page: number): Promise<PNG> {
  const dir = await mkdtemp(join(tmpdir(), 'packet-charts-'));
  try {
    await writeFile(join(dir, 'packet.pdf'), pdf);
    const args = ['-png', '-r', '60', '-f', String(page), '-l', String(page), '-singlefile'];
    await promisify(execFile)(PDFTOPPM, [...args, join(dir, 'packet.pdf'), join(dir, 'page')]);
    return PNG.sync.read(await readFile(join(dir, 'page.png')));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const hasPdftoppm = existsSync(PDFTOPPM);
if (!hasPdftoppm)
  console.warn(`charts.test.ts: visual check SKIPPED, ${PDFTOPPM} is missing (apt-get install poppler-utils)`);

// CI installs poppler-utils (.ci/run): there a missing pdftoppm fails the run instead of skipping the check quietly.
describe.runIf(process.env.CI === 'true')('the visual check on CI', () => {
  it('has pdftoppm', () => expect(hasPdftoppm).toBe(true));
});

describe.skipIf(!hasPdftoppm)('the chart page', () => {
  it('looks like the reference image', async () => {
    const pdf = await bytesOf(await renderFinancialPacket(db, f.orgId, { endDate: END }));
    const [page] = await pagesWith(pdf, 'Cash balance at month end');
    expect(page).toBeDefined();
    const actual = await pageAsPng(pdf, page as number);
    if (!existsSync(REFERENCE) || process.env.UPDATE_REFERENCE_IMAGES === '1') {
      await writeFile(REFERENCE, PNG.sync.write(actual));
      console.warn(`charts.test.ts: wrote ${REFERENCE}`);
      return;
    }
    const expected = PNG.sync.read(await readFile(REFERENCE));
    expect([actual.width, actual.height]).toEqual([expected.width, expected.height]);
    const differing = pixelmatch(actual.data, expected.data, null, actual.width, actual.height, { threshold: 0.1 });
    expect(differing / (actual.width * actual.height), `${differing} pixels differ`).toBeLessThan(TOLERANCE);
  });
});
