import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { isDomainError } from '@firm/core';
import { type Db, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { generalLedger, openGeneralLedger, postTransaction } from '@firm/ledger';
import { createLedgerFixture, type LedgerFixture, postBulkEntries } from '@firm/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderFinancialPacket, renderReport } from './export';
import { generalLedgerJson } from './general-ledger-json';
import { financialPacket, type ReportCompany } from './packet';

let database: TestDatabase;
let db: Db;
let f: LedgerFixture;
let company: ReportCompany;

/** The books of a quarter (2026-04 to 2026-06) and the year before: owner money, sales, an expense. */
beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  f = await createLedgerFixture(db);
  company = { id: f.orgId, name: 'Harbour Bakery', fiscalYearStartMonth: 1 };
  const entry = (date: string, debit: string, credit: string, cents: number) =>
    db.transaction((tx) =>
      postTransaction(tx, f.ctx, f.orgId, {
        kind: 'journal_entry',
        date,
        lines: [
          { accountId: f.account(debit), debitCents: cents },
          { accountId: f.account(credit), creditCents: cents },
        ],
      }),
    );
  await entry('2025-05-02', '1000', '3000', 5_000_000);
  await entry('2025-06-10', '1000', '4000', 800_000);
  await entry('2026-05-12', '1200', '4000', 900_000);
  await entry('2026-06-20', '6400', '1000', 250_000);
});
afterAll(() => database.close());

const bytesOf = async (stream: Readable) => Buffer.concat((await stream.toArray()) as Buffer[]);

/** The domain error a call is refused with. */
async function refusal(call: () => Promise<unknown>) {
  try {
    await call();
  } catch (err) {
    if (isDomainError(err)) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('renderFinancialPacket', () => {
  const quarter = { startDate: '2026-04-01', endDate: '2026-06-30' };

  it('draws the packet of a company named by its id as a whole PDF', async () => {
    const pdf = await bytesOf(await renderFinancialPacket(db, f.orgId, quarter));
    expect(pdf.subarray(0, 5).toString()).toBe('%PDF-');
    expect(pdf.subarray(-6).toString()).toMatch(/%%EOF\s*$/);
  });

  it('says in CSV what the packet says: every statement, the comparison columns and the figures', async () => {
    const csv = (await bytesOf(await renderFinancialPacket(db, f.orgId, { ...quarter, format: 'csv' }))).toString();
    const titles = csv.split('\r\n').filter((l) => l.startsWith('Client of '));
    expect(titles.map((t) => t.replace(/^.*?: /, ''))).toEqual([
      'Profit and loss',
      'Balance sheet',
      'Cash flows',
      'Trial balance',
      'Accounts receivable aging',
      'Accounts payable aging',
      'Twelve months',
    ]);
    expect(csv).toContain('Account,Current,Prior period,Prior year\r\n');
    const p = await financialPacket(db, company, quarter);
    expect(p.profitAndLoss.current.netIncomeCents).toBe(650_000);
    expect(p.profitAndLoss.priorYear?.netIncomeCents).toBe(800_000);
    expect(csv).toContain('Net income,6500.00,0.00,8000.00\r\n');
  });

  it('reads the packet inside a transaction one query at a time, as its one connection needs', async () => {
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on('warning', onWarning);
    try {
      const inTx = await db.transaction((tx) => financialPacket(tx, company, quarter));
      const outside = await financialPacket(db, company, quarter);
      expect({ ...inTx, generatedAt: null }).toEqual({ ...outside, generatedAt: null });
      await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
    } finally {
      process.off('warning', onWarning);
    }
    expect(warnings.filter((m) => m.includes('already executing a query'))).toEqual([]);
  });

  it('leaves the comparison columns out when asked', async () => {
    const csv = (
      await bytesOf(
        await renderFinancialPacket(db, f.orgId, {
          ...quarter,
          comparePriorPeriod: false,
          comparePriorYear: false,
          format: 'csv',
        }),
      )
    ).toString();
    expect(csv).toContain('Account,Current\r\n');
    expect(csv).toContain('Net income,6500.00\r\n');
  });

  it('refuses a company that does not exist, or an id that is not one, with ORGANIZATION_NOT_FOUND', async () => {
    for (const id of [randomUUID(), 'not-an-id', '']) {
      expect((await refusal(() => renderFinancialPacket(db, id, quarter))).code, id).toBe('ORGANIZATION_NOT_FOUND');
    }
  });

  it('refuses impossible periods with VALIDATION_ERROR before a stream exists', async () => {
    for (const query of [
      { startDate: '2026-07-01', endDate: '2026-06-30' },
      { endDate: '2026-02-30' },
      { startDate: 'yesterday', endDate: '2026-06-30' },
    ]) {
      expect((await refusal(() => renderFinancialPacket(db, f.orgId, query))).code, JSON.stringify(query)).toBe(
        'VALIDATION_ERROR',
      );
    }
  });
});

describe('streamed reports', () => {
  const RANGE = { startDate: '2024-01-01', endDate: '2024-12-31' };
  let other: LedgerFixture;

  beforeAll(async () => {
    other = await createLedgerFixture(db);
    await postBulkEntries(db, other.orgId, {
      debitAccountIds: [other.account('6000'), other.account('6400')],
      creditAccountId: other.account('1000'),
      entries: 3_000,
      from: RANGE.startDate,
      days: 300,
    });
  });
  const otherCompany = () => ({ id: other.orgId, name: 'Bulk Co', fiscalYearStartMonth: 1 });

  it('writes the general ledger as JSON equal to the report read whole, inside the envelope asked for', async () => {
    const whole = await generalLedger(db, other.orgId, RANGE);
    const bare = (await bytesOf(generalLedgerJson(await openGeneralLedger(db, other.orgId, RANGE)))).toString();
    expect(JSON.parse(bare)).toEqual(whole);
    const wrapped = generalLedgerJson(await openGeneralLedger(db, other.orgId, RANGE), ['{"data":', '}']);
    expect(JSON.parse((await bytesOf(wrapped)).toString())).toEqual({ data: whole });
  });

  it('refuses a general ledger over maxLines with REPORT_TOO_LARGE before a stream exists', async () => {
    const err = await refusal(() =>
      renderReport(db, otherCompany(), { report: 'general-ledger', format: 'csv', ...RANGE }, { maxLines: 100 }),
    );
    expect(err.code).toBe('REPORT_TOO_LARGE');
  });

  it('holds no more than a page or so of a PDF its reader has not taken yet, and the whole file once read', async () => {
    // A few of the stream's buffers (Node 22 gives streams 64 KiB of them, Node 20 16 KiB): far less than the file.
    const BOUND = 192 * 1024;
    const stream = await renderReport(db, otherCompany(), { report: 'general-ledger', format: 'pdf', ...RANGE });
    try {
      const unread = () => stream.readableLength + (stream as Readable & { writableLength: number }).writableLength;
      // Until the writer stops (it waits for the reader) or has written more than a reader that never reads should hold.
      let most = 0;
      for (let still = 0; still < 10 && most < BOUND;) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        still = unread() === most ? still + 1 : 0;
        most = Math.max(most, unread());
      }
      expect(most).toBeLessThan(BOUND);
      const pdf = await bytesOf(stream);
      expect(pdf.length).toBeGreaterThan(BOUND);
      expect(pdf.subarray(-6).toString()).toMatch(/%%EOF\s*$/);
    } finally {
      // A failed check leaves no snapshot open for the tests after it.
      stream.destroy();
    }
  });

  /** Snapshots open on the database (Postgres: transactions reading or waiting for their next page; none embedded). */
  const openSnapshots = async () =>
    Number(
      rowsOf<{ n: number | string }>(
        await db.execute(sql`
          select count(*) as n from pg_stat_activity
          where datname = current_database() and xact_start is not null and pid <> pg_backend_pid()`),
      )[0]?.n,
    );

  it('stops drawing when its reader goes away, and releases the snapshot it was reading', async () => {
    for (const format of ['pdf', 'xlsx', 'csv'] as const) {
      const stream = await renderReport(db, otherCompany(), { report: 'general-ledger', format, ...RANGE });
      if (process.env.DATABASE_URL) expect(await openSnapshots(), format).toBe(1);
      const closed = new Promise((resolve) => stream.once('close', resolve));
      for await (const _ of stream) break; // the first chunk, then the reader is gone
      await closed;
      expect(stream.destroyed, format).toBe(true);
      for (let i = 0; i < 100 && (await openSnapshots()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await openSnapshots(), format).toBe(0);
    }
  });

  it('releases the snapshot of a file read to its end', async () => {
    const stream = await renderReport(db, otherCompany(), { report: 'general-ledger', format: 'csv', ...RANGE });
    const csv = (await bytesOf(stream)).toString();
    expect(csv.split('\r\n').filter((l) => l.includes('Bulk entry'))).toHaveLength(6_000);
    for (let i = 0; i < 100 && (await openSnapshots()) > 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await openSnapshots()).toBe(0);
  });
});
