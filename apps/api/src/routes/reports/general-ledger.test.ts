import type { Readable } from 'node:stream';
import { createApiKey } from '@firm/identity';
import { postBulkEntries } from '@firm/ledger/testing';
import { createEmbeddedPlatform } from '@firm/platform';
import ExcelJS from 'exceljs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { pdfText } from './fixtures';

/**
 * The general ledger's limits: its size (GENERAL_LEDGER_MAX_LINES), as JSON, exported and through the agent gateway,
 * and how many exports run at once (EXPORTS_PER_CREDENTIAL, EXPORTS_PER_PROCESS).
 */
const MAX_LINES = 1_000;
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({
    config: { GENERAL_LEDGER_MAX_LINES: MAX_LINES, EXPORTS_PER_CREDENTIAL: 2, EXPORTS_PER_PROCESS: 3 },
  });
  // One entry before 2031, through the API.
  const posted = await t.app.inject({
    method: 'POST',
    url: '/api/v1/journal-entries',
    headers: { ...t.orgHeaders, 'idempotency-key': 'gl-before' },
    payload: {
      txnDate: '2030-06-30',
      lines: [
        { accountId: t.account('1000'), postingType: 'debit', amount: 500_000 },
        { accountId: t.account('3000'), postingType: 'credit', amount: 500_000 },
      ],
    },
  });
  expect(posted.statusCode, posted.body).toBe(201);
  // Exactly the limit in 2031: 500 entries, a line on one of three expense accounts and one on checking each.
  await postBulkEntries(t.database.db, t.orgId, {
    debitAccountIds: [t.account('6000'), t.account('6100'), t.account('6400')],
    creditAccountId: t.account('1000'),
    entries: MAX_LINES / 2,
    from: '2031-01-01',
    days: 365,
  });
});
afterAll(() => t.close());

const YEAR = 'startDate=2031-01-01&endDate=2031-12-31';
const ALL = 'startDate=1900-01-01&endDate=2031-12-31';
const get = (url: string, headers: Record<string, string> = t.orgHeaders) =>
  t.app.inject({ method: 'GET', url, headers });

interface Line {
  entryId: string;
  date: string;
  memo: string | null;
  description: string | null;
  debitCents: number;
  creditCents: number;
  runningBalanceCents: number;
}
interface Account {
  code: string;
  name: string;
  openingBalanceCents: number;
  lines: Line[];
  closingBalanceCents: number;
}

const decimal = (cents: number) => (cents / 100).toFixed(2);
const money = (cents: number) => {
  const abs = Math.abs(cents);
  const text = `${Math.floor(abs / 100).toLocaleString('en-US')}.${String(abs % 100).padStart(2, '0')}`;
  return cents < 0 ? `(${text})` : text;
};

type Cell = string | number | null;

/** The rows an export of the general ledger must hold, from the JSON report: label, date, entry, debit, credit, balance. */
function expectedRows(accounts: Account[]): { indent: number; cells: Cell[] }[] {
  return accounts.flatMap((a) => [
    { indent: 0, cells: [`${a.code} ${a.name}`, null, null, null, null, null] },
    { indent: 1, cells: ['Opening balance', null, null, null, null, a.openingBalanceCents] },
    ...a.lines.map((l) => ({
      indent: 1,
      cells: [
        l.description ?? l.memo ?? '',
        l.date,
        l.entryId.slice(0, 8),
        l.debitCents,
        l.creditCents,
        l.runningBalanceCents,
      ],
    })),
    { indent: 0, cells: ['Closing balance', null, null, null, null, a.closingBalanceCents] },
  ]);
}

describe('general ledger size', () => {
  it('refuses more than GENERAL_LEDGER_MAX_LINES lines with 422 REPORT_TOO_LARGE, saying how many and how to narrow', async () => {
    for (const url of [
      `/api/v1/reports/general-ledger?${ALL}`,
      `/api/v1/companies/${t.orgId}/reports/general-ledger?${ALL}`,
      `/api/v1/reports/export?report=general-ledger&format=pdf&${ALL}`,
      `/api/v1/reports/export?report=general-ledger&format=xlsx&${ALL}`,
      `/api/v1/reports/export?report=general-ledger&format=csv&${ALL}`,
    ]) {
      const res = await get(url);
      expect(res.statusCode, url).toBe(422);
      expect(res.headers['content-type'], url).toContain('application/json');
      const { error } = res.json();
      expect(error, url).toMatchObject({
        code: 'REPORT_TOO_LARGE',
        retryable: false,
        requestId: res.headers['x-request-id'],
      });
      const found = error.details[0].lineCount as number;
      expect(found).toBeGreaterThan(MAX_LINES);
      expect(error.details[0]).toMatchObject({ field: 'query', maxLines: MAX_LINES });
      expect(error.message).toBe(
        `the general ledger from 1900-01-01 to 2031-12-31 has ${found.toLocaleString('en-US')} lines, more than the ` +
          '1,000 one report may hold: ask for a shorter date range (startDate, endDate) or for one account (accountId)',
      );
    }
  });

  it('holds the agent gateway to the same limit, on its report route and through the pass-through', async () => {
    const base = `/agent/v1/acct/clients/${t.orgId}`;
    const route = await get(`${base}/reports/general-ledger?start_date=1900-01-01&end_date=2031-12-31`, t.auth);
    expect(route.statusCode).toBe(422);
    expect(route.json().error).toMatchObject({ code: 'REPORT_TOO_LARGE', details: [{ maxLines: MAX_LINES }] });
    const relayed = await t.app.inject({
      method: 'POST',
      url: `${base}/request`,
      headers: t.auth,
      payload: { path: 'reports/GeneralLedger', query: { start_date: '1900-01-01', end_date: '2031-12-31' } },
    });
    expect(relayed.statusCode).toBe(422);
    expect(relayed.json().error.code).toBe('REPORT_TOO_LARGE');
    const within = await get(`${base}/reports/general-ledger?start_date=2031-01-01&end_date=2031-12-31`, t.auth);
    expect(within.statusCode).toBe(200);
    const lines = (within.json().data.Rows.Row as { Rows: { Row: unknown[] } }[]).reduce(
      (n, section) => n + section.Rows.Row.length - 1,
      0,
    );
    expect(lines).toBe(MAX_LINES);
    // Streamed as it is read, it is the report the platform adapter gives whole.
    const whole = await createEmbeddedPlatform(t.database.db, {
      firmId: t.demo.firmId,
      organizationId: t.orgId,
      acctCompanyId: t.orgId,
      actor: { kind: 'test', id: 'test' },
      generalLedgerMaxLines: MAX_LINES,
    }).report('general-ledger', { startDate: '2031-01-01', endDate: '2031-12-31' });
    const streamed = within.json().data;
    expect(within.headers['content-type']).toContain('application/json');
    expect({ ...streamed, Header: { ...streamed.Header, Time: null } }).toEqual({
      ...whole,
      Header: { ...(whole.Header as object), Time: null },
    });
  });

  it('sends a general ledger of exactly the limit as JSON, CSV, XLSX and PDF, all equal to the JSON report', async () => {
    const json = await get(`/api/v1/reports/general-ledger?${YEAR}`);
    expect(json.statusCode).toBe(200);
    const gl = json.json().data as { startDate: string; endDate: string; accounts: Account[] };
    expect(gl.accounts.reduce((n, a) => n + a.lines.length, 0)).toBe(MAX_LINES);
    const expected = expectedRows(gl.accounts);

    const csv = await get(`/api/v1/reports/export?report=general-ledger&format=csv&${YEAR}`);
    expect(csv.statusCode).toBe(200);
    const csvRows = csv.body.split('\r\n').slice(3, -1);
    expect(csvRows).toEqual(
      expected.map(({ indent, cells }) =>
        cells
          .map((v, j) =>
            v === null ? '' : j === 0 ? `${'  '.repeat(indent)}${v}` : j >= 3 ? decimal(v as number) : String(v),
          )
          .join(','),
      ),
    );

    const xlsx = await get(`/api/v1/reports/export?report=general-ledger&format=xlsx&${YEAR}`);
    expect(xlsx.statusCode).toBe(200);
    const book = new ExcelJS.Workbook();
    await book.xlsx.load(xlsx.rawPayload as unknown as ArrayBuffer);
    const sheet = book.worksheets[0] as ExcelJS.Worksheet;
    const sheetRows: Cell[][] = [];
    for (let r = 5; r <= sheet.rowCount; r++) {
      const row = sheet.getRow(r);
      sheetRows.push(
        [1, 2, 3, 4, 5, 6].map((c) => {
          const v = row.getCell(c).value;
          if (v === null || v === undefined) return null;
          return typeof v === 'number' ? Math.round(v * 100) : String(v);
        }),
      );
    }
    expect(sheetRows).toEqual(expected.map((r) => r.cells));

    const pdf = await get(`/api/v1/reports/export?report=general-ledger&format=pdf&${YEAR}`);
    expect(pdf.statusCode).toBe(200);
    const pages = await pdfText(pdf.rawPayload);
    expect(pages.length).toBeGreaterThan(10);
    pages.forEach((page, i) => expect(page).toContain(`Page ${i + 1} of ${pages.length}`));
    // Every cell, in order.
    const text = pages.join(' ');
    let at = 0;
    for (const { cells } of expected) {
      for (const [j, v] of cells.entries()) {
        if (v === null || (j === 0 && v === '')) continue;
        const shown = j >= 3 ? money(v as number) : String(v);
        const found = text.indexOf(shown, at);
        expect(found, `${shown} after offset ${at}`).toBeGreaterThanOrEqual(0);
        at = found + shown.length;
      }
    }
  });
});

describe('exports at once', () => {
  /** A general ledger whose reader does not read: it holds its export slot until it is read to the end. */
  const held = async (headers: Record<string, string> = t.orgHeaders) => {
    const res = await t.app.inject({
      method: 'GET',
      url: `/api/v1/reports/general-ledger?${YEAR}`,
      headers,
      payloadAsStream: true,
    });
    expect(res.statusCode).toBe(200);
    return res.stream() as Readable;
  };
  const drain = async (stream: Readable) => {
    for await (const _ of stream);
    await new Promise((resolve) => setTimeout(resolve, 10));
  };

  it('runs EXPORTS_PER_CREDENTIAL per credential and EXPORTS_PER_PROCESS in all; beyond, 429 with Retry-After', async () => {
    const first = await held();
    const second = await held();
    for (const url of [
      `/api/v1/reports/export?report=trial-balance&format=csv&endDate=2031-12-31`,
      `/api/v1/reports/general-ledger?${YEAR}`,
    ]) {
      const refused = await get(url);
      expect(refused.statusCode, url).toBe(429);
      expect(refused.headers['retry-after'], url).toBe('5');
      expect(refused.json().error, url).toMatchObject({
        code: 'RATE_LIMITED',
        retryable: true,
        message: 'this credential already runs 2 exports or general ledgers at once; retry when one has finished',
      });
    }
    // Reports of a bounded size are not exports.
    expect((await get(`/api/v1/reports/trial-balance?endDate=2031-12-31`)).statusCode).toBe(200);

    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId });
    const otherKey = { authorization: `Bearer ${key}`, 'x-organization-id': t.orgId };
    const third = await held(otherKey);
    const busy = await get(`/api/v1/reports/export?report=trial-balance&format=csv&endDate=2031-12-31`, otherKey);
    expect(busy.statusCode).toBe(429);
    expect(busy.headers['retry-after']).toBe('5');
    expect(busy.json().error.message).toBe(
      'the service already runs 3 exports or general ledgers at once; retry shortly',
    );

    await drain(first);
    const again = await get(`/api/v1/reports/export?report=trial-balance&format=csv&endDate=2031-12-31`);
    expect(again.statusCode).toBe(200);
    await Promise.all([drain(second), drain(third)]);
    const after = await Promise.all([
      get(`/api/v1/reports/export?report=trial-balance&format=pdf&endDate=2031-12-31`, otherKey),
      get(`/api/v1/reports/general-ledger?${YEAR}`, otherKey),
    ]);
    expect(after.map((r) => r.statusCode)).toEqual([200, 200]);
  });

  it('documents the 422 and the 429 with its Retry-After on the export and general-ledger routes', async () => {
    const doc = (await get('/api/openapi.json', t.auth)).json();
    const resolved = (response: { $ref?: string }) =>
      response.$ref ? doc.components.responses[response.$ref.split('/').at(-1) as string] : response;
    for (const [path, op] of [
      ['/api/v1/reports/export', doc.paths['/api/v1/reports/export'].get],
      ['/api/v1/reports/general-ledger', doc.paths['/api/v1/reports/general-ledger'].get],
      [
        '/agent/v1/acct/clients/{clientId}/reports/{reportName}',
        doc.paths['/agent/v1/acct/clients/{clientId}/reports/{reportName}'].get,
      ],
    ]) {
      expect(Object.keys(op.responses), path).toEqual(expect.arrayContaining(['422', '429']));
      expect(resolved(op.responses['429']).headers['retry-after'].schema.type, path).toBe('integer');
      expect(op.description, path).toContain('GENERAL_LEDGER_MAX_LINES');
    }
    expect(doc['x-error-codes'].REPORT_TOO_LARGE).toMatchObject({ status: 422, retryable: false });
  });
});
