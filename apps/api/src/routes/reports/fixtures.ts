import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { TestApp } from '../../testing';

/** A year of activity and a quarter's (2026-04 to 2026-06): owner money, a loan, equipment, sales, bills, cash. */
export async function seedQuarter(t: TestApp): Promise<void> {
  const entry = async (date: string, lines: [string, 'debit' | 'credit', number][]) => {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/journal-entries',
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() },
      payload: {
        txnDate: date,
        lines: lines.map(([code, postingType, amount]) => ({ accountId: t.account(code), postingType, amount })),
      },
    });
    expect(res.statusCode, res.body).toBe(201);
  };
  // A year of activity and this quarter's: owner money, a loan, equipment, sales on credit, bills, cash sales.
  await entry('2025-03-10', [
    ['1000', 'debit', 5_000_000],
    ['3000', 'credit', 5_000_000],
  ]);
  await entry('2025-05-02', [
    ['4000', 'credit', 800_000],
    ['1000', 'debit', 800_000],
  ]);
  await entry('2026-04-03', [
    ['1000', 'debit', 2_000_000],
    ['2700', 'credit', 2_000_000],
  ]);
  await entry('2026-04-08', [
    ['1500', 'debit', 1_200_000],
    ['1000', 'credit', 1_200_000],
  ]);
  await entry('2026-05-12', [
    ['1200', 'debit', 900_000],
    ['4000', 'credit', 900_000],
  ]);
  await entry('2026-05-20', [
    ['6400', 'debit', 250_000],
    ['2000', 'credit', 250_000],
  ]);
  await entry('2026-06-15', [
    ['1000', 'debit', 400_000],
    ['1200', 'credit', 400_000],
  ]);
  await entry('2026-06-20', [
    ['5000', 'debit', 300_000],
    ['1000', 'credit', 300_000],
  ]);
  await entry('2026-01-20', [
    ['4000', 'credit', 150_000],
    ['1000', 'debit', 150_000],
  ]);
}

/** The text of every page of a PDF, read back with pdf.js. */
export async function pdfText(bytes: Buffer): Promise<string[]> {
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const doc = await pdfjs.getDocument({ data: new Uint8Array(bytes), useSystemFonts: true }).promise;
  const pages: string[] = [];
  for (let i = 1; i <= doc.numPages; i++) {
    const content = await (await doc.getPage(i)).getTextContent();
    pages.push(content.items.map((item) => ('str' in item ? item.str : '')).join(' '));
  }
  return pages;
}
