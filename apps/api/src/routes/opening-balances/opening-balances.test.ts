import { randomUUID } from 'node:crypto';
import { accounts, journalEntries } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;

beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

/** A new company of the demo firm with the standard chart and no history. */
async function newCompany(): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/companies',
    headers: { ...t.auth, 'idempotency-key': randomUUID() },
    payload: { name: `Opening ${randomUUID()}` },
  });
  expect(res.statusCode).toBe(201);
  return res.json().data.id;
}

const openingUrl = (companyId: string, query = '') => `/api/v1/companies/${companyId}/opening-balances${query}`;

const postJson = (companyId: string, payload: object, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: openingUrl(companyId),
    headers: { ...t.auth, 'idempotency-key': randomUUID(), ...headers },
    payload,
  });

const postCsv = (companyId: string, csv: string, query: string, headers: Record<string, string> = {}) =>
  t.app.inject({
    method: 'POST',
    url: openingUrl(companyId, query),
    headers: { ...t.auth, 'idempotency-key': randomUUID(), 'content-type': 'text/csv', ...headers },
    payload: csv,
  });

/** The company's trial balance as { code: signed cents }. */
async function trialBalance(companyId: string): Promise<Record<string, number>> {
  const res = await t.app.inject({
    method: 'GET',
    url: `/api/v1/companies/${companyId}/reports/trial-balance?endDate=2099-12-31`,
    headers: t.auth,
  });
  expect(res.statusCode).toBe(200);
  const rows = res.json().data.rows as { code: string; debitCents: number; creditCents: number }[];
  return Object.fromEntries(rows.map((r) => [r.code, r.debitCents - r.creditCents]));
}

const counts = async (companyId: string) => {
  const db = t.database.db;
  const [a] = await db.select({ n: count() }).from(accounts).where(eq(accounts.organizationId, companyId));
  const [e] = await db.select({ n: count() }).from(journalEntries).where(eq(journalEntries.organizationId, companyId));
  return { accounts: a?.n, entries: e?.n };
};

describe('POST /companies/{companyId}/opening-balances', () => {
  it('JSON: posts one opening entry; the trial balance afterwards is the input', async () => {
    const id = await newCompany();
    const res = await postJson(id, {
      date: '2026-01-01',
      lines: [
        { accountCode: '1000', debit: '12500.50' },
        { account: 'Accounts Receivable', debit: '2000' },
        { accountName: 'accounts payable', credit: '4500.50' },
        { accountCode: '3000', credit: '10000' },
      ],
    });
    expect(res.statusCode).toBe(201);
    const data = res.json().data;
    expect(data.entry).toMatchObject({ source: 'opening_balance', status: 'posted', date: '2026-01-01' });
    expect(data.entry.lines).toHaveLength(4);
    expect(data.createdAccounts).toEqual([]);
    expect(data.difference).toEqual({ cents: 0, side: null, account: null });
    expect(data.booksClosedThrough).toBeNull();
    expect(await trialBalance(id)).toEqual({ '1000': 1250050, '1200': 200000, '2000': -450050, '3000': -1000000 });
  });

  it('CSV: reads the file with the options as query parameters', async () => {
    const id = await newCompany();
    const csv = 'code,name,debit,credit,type\n1000,,300.00,,\n1999,Float,50,,bank\n2000,,,"350.00",\n';
    const res = await postCsv(id, csv, '?date=2026-04-01&createMissingAccounts=true');
    expect(res.statusCode).toBe(201);
    const data = res.json().data;
    expect(
      data.createdAccounts.map((a: { code: string; name: string; subtype: string }) => [a.code, a.name, a.subtype]),
    ).toEqual([['1999', 'Float', 'bank']]);
    expect(await trialBalance(id)).toEqual({ '1000': 30000, '1999': 5000, '2000': -35000 });

    const noDate = await postCsv(await newCompany(), csv, '');
    expect(noDate.statusCode).toBe(400);
    expect(noDate.json().error.details).toEqual([
      { field: 'querystring.date', message: 'is required with a CSV body' },
    ]);
  });

  it('posts the difference to opening balance equity and reports it', async () => {
    const id = await newCompany();
    const res = await postJson(id, {
      date: '2026-01-01',
      lines: [
        { accountCode: '1000', debit: '100' },
        { accountCode: '2000', credit: '30.25' },
      ],
    });
    expect(res.statusCode).toBe(201);
    const { difference, createdAccounts } = res.json().data;
    expect(difference).toMatchObject({
      cents: 6975,
      side: 'credit',
      account: { code: '3050', name: 'Opening balance equity' },
    });
    expect(createdAccounts.map((a: { code: string; type: string }) => [a.code, a.type])).toEqual([['3050', 'equity']]);
    expect(await trialBalance(id)).toEqual({ '1000': 10000, '2000': -3025, '3050': -6975 });
  });

  it('creates missing accounts with the type of their code range, and refuses one whose type it cannot tell', async () => {
    const id = await newCompany();
    const before = await counts(id);
    const refused = await postJson(id, {
      date: '2026-01-01',
      createMissingAccounts: true,
      lines: [
        { accountCode: '1590', debit: '10' },
        { accountCode: 'CASH', debit: '10' },
      ],
    });
    expect(refused.statusCode).toBe(422);
    expect(refused.json().error.details).toEqual([
      expect.objectContaining({ row: 2, column: 'accountCode', reason: 'type_unknown', field: 'lines[1].accountCode' }),
    ]);
    expect(await counts(id)).toEqual(before);

    const res = await postJson(id, {
      date: '2026-01-01',
      createMissingAccounts: true,
      lines: [
        { accountCode: '1590', debit: '10' },
        { accountCode: '2500', credit: '4' },
        { accountCode: '4500', credit: '3' },
        { accountCode: '5500', debit: '1' },
        { accountCode: '7500', debit: '1' },
        { accountCode: 'CASH', debit: '1', type: 'asset' },
        { accountCode: '3500', credit: '6' },
      ],
    });
    expect(res.statusCode).toBe(201);
    const types = Object.fromEntries(
      res
        .json()
        .data.createdAccounts.map((a: { code: string; type: string; subtype: string }) => [
          a.code,
          `${a.type}/${a.subtype}`,
        ]),
    );
    expect(types).toEqual({
      '1590': 'asset/other_current_asset',
      '2500': 'liability/other_current_liability',
      '4500': 'income/income',
      '5500': 'expense/cost_of_sales',
      '7500': 'expense/expense',
      CASH: 'asset/other_current_asset',
      '3500': 'equity/equity',
    });
  });

  it('an unknown account without createMissingAccounts is a row error', async () => {
    const id = await newCompany();
    const res = await postJson(id, { date: '2026-01-01', lines: [{ accountCode: '1234', debit: '1' }] });
    expect(res.statusCode).toBe(422);
    expect(res.json().error).toMatchObject({
      code: 'OPENING_BALANCES_INVALID',
      retryable: false,
      details: [expect.objectContaining({ row: 1, column: 'accountCode', reason: 'unknown_account' })],
    });
  });

  it('reports every bad row together and writes nothing', async () => {
    const id = await newCompany();
    const close = await t.app.inject({
      method: 'PATCH',
      url: `/api/v1/companies/${id}/books`,
      headers: t.auth,
      payload: { booksClosedThrough: '2026-01-31' },
    });
    expect(close.statusCode).toBe(200);
    const before = await counts(id);
    const csv = [
      'code,debit,credit,type',
      'NEW1,10,,', // type unknown
      '1000,abc,,', // bad amount
      '1010,-5,,', // negative
      '1200,5,5,', // both
      '1000,1,,', // duplicate of row 3
      '9999,1,,', // unknown account with the flag off... created (flag on) with expense type
      '2000,,1.001,', // too many decimals
      '1500,1,,planet', // bad type
    ].join('\n');
    const res = await postCsv(id, csv, '?date=2026-01-15&createMissingAccounts=true');
    expect(res.statusCode).toBe(422);
    const error = res.json().error;
    expect(error.code).toBe('OPENING_BALANCES_INVALID');
    expect(
      error.details.map((d: { row?: number; column: string; reason: string }) => [d.row ?? null, d.column, d.reason]),
    ).toEqual([
      [null, 'date', 'period_closed'],
      [2, 'code', 'type_unknown'],
      [3, 'debit', 'bad_amount'],
      [4, 'debit', 'bad_amount'],
      [5, 'credit', 'debit_and_credit'],
      [6, 'code', 'duplicate_account'],
      [8, 'credit', 'bad_amount'],
      [9, 'type', 'bad_type'],
    ]);
    expect(await counts(id)).toEqual(before);
  });

  it('a second opening is 409 OPENING_BALANCES_EXIST; replace voids the first and posts the new one', async () => {
    const id = await newCompany();
    const first = await postJson(id, {
      date: '2026-01-01',
      lines: [
        { accountCode: '1000', debit: '100' },
        { accountCode: '3000', credit: '100' },
      ],
    });
    expect(first.statusCode).toBe(201);
    const again = await postJson(id, { date: '2026-01-01', lines: [{ accountCode: '1000', debit: '5' }] });
    expect(again.statusCode).toBe(409);
    expect(again.json().error.code).toBe('OPENING_BALANCES_EXIST');

    const replaced = await postJson(id, {
      date: '2026-01-01',
      replace: true,
      lines: [
        { accountCode: '1000', debit: '250' },
        { accountCode: '3000', credit: '250' },
      ],
    });
    expect(replaced.statusCode).toBe(201);
    const firstId = first.json().data.entry.id;
    expect(replaced.json().data.replacedEntryId).toBe(firstId);
    const [old] = await t.database.db
      .select({ status: journalEntries.status })
      .from(journalEntries)
      .where(eq(journalEntries.id, firstId));
    expect(old?.status).toBe('void');
    expect(await trialBalance(id)).toEqual({ '1000': 25000, '3000': -25000 });
  });

  it('closeBooksBefore closes the books through the day before with books:close, else 403', async () => {
    const id = await newCompany();
    const payload = {
      date: '2026-07-01',
      closeBooksBefore: true,
      lines: [
        { accountCode: '1000', debit: '1' },
        { accountCode: '3000', credit: '1' },
      ],
    };
    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['entries:read', 'entries:write'],
    });
    const before = await counts(id);
    const refused = await postJson(id, payload, { authorization: `Bearer ${key}` });
    expect(refused.statusCode).toBe(403);
    expect(refused.headers['www-authenticate']).toContain('scope="books:close"');
    expect(refused.json().error).toMatchObject({
      code: 'INSUFFICIENT_SCOPE',
      message: 'this credential lacks the scope books:close',
      details: [{ message: 'missing scope', scope: 'books:close' }],
    });
    expect(await counts(id)).toEqual(before);

    // Without closeBooksBefore the same key posts.
    const { closeBooksBefore: _, ...plain } = payload;
    const other = await newCompany();
    expect((await postJson(other, plain, { authorization: `Bearer ${key}` })).statusCode).toBe(201);

    const res = await postJson(id, payload);
    expect(res.statusCode).toBe(201);
    expect(res.json().data.booksClosedThrough).toBe('2026-06-30');
    const books = await t.app.inject({ method: 'GET', url: `/api/v1/companies/${id}/books`, headers: t.auth });
    expect(books.json().data.booksClosedThrough).toBe('2026-06-30');
  });

  it('replays a retry with the same Idempotency-Key and writes once', async () => {
    const id = await newCompany();
    const key = randomUUID();
    const payload = {
      date: '2026-01-01',
      createMissingAccounts: true,
      lines: [
        { accountCode: '1000', debit: '10' },
        { accountCode: '2600', credit: '4' },
      ],
    };
    const first = await postJson(id, payload, { 'idempotency-key': key });
    expect(first.statusCode).toBe(201);
    const retry = await postJson(id, payload, { 'idempotency-key': key });
    expect(retry.statusCode).toBe(201);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json()).toEqual(first.json());
    expect((await counts(id)).entries).toBe(1);
    const reused = await postJson(id, { ...payload, replace: true }, { 'idempotency-key': key });
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');

    // A CSV request too: the same file and options replay, other options are another request.
    const csvCompany = await newCompany();
    const csvKey = randomUUID();
    const file = 'code,debit,credit\n1000,7,\n3000,,7\n';
    const once = await postCsv(csvCompany, file, '?date=2026-01-01', { 'idempotency-key': csvKey });
    expect(once.statusCode).toBe(201);
    const twice = await postCsv(csvCompany, file, '?date=2026-01-01', { 'idempotency-key': csvKey });
    expect(twice.headers['idempotent-replayed']).toBe('true');
    expect(twice.json()).toEqual(once.json());
    const otherOptions = await postCsv(csvCompany, file, '?date=2026-01-01&replace=true', {
      'idempotency-key': csvKey,
    });
    expect(otherOptions.statusCode).toBe(422);
    expect(otherOptions.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await counts(csvCompany)).entries).toBe(1);

    const missing = await t.app.inject({ method: 'POST', url: openingUrl(id), headers: t.auth, payload });
    expect(missing.statusCode).toBe(400);
    expect(missing.json().error.code).toBe('IDEMPOTENCY_KEY_REQUIRED');
  });

  it('another firm’s company is 404; an archived company is 409 COMPANY_ARCHIVED', async () => {
    const other = await createOtherFirm(t.database.db, `other-${randomUUID().slice(0, 8)}`);
    const payload = { date: '2026-01-01', lines: [{ accountCode: '1000', debit: '1' }] };
    const foreign = await postJson(other.orgId, payload);
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('ORGANIZATION_NOT_FOUND');
    expect((await counts(other.orgId)).entries).toBe(0);

    const id = await newCompany();
    const archive = await t.app.inject({ method: 'POST', url: `/api/v1/companies/${id}/archive`, headers: t.auth });
    expect(archive.statusCode).toBe(200);
    const res = await postJson(id, payload);
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('COMPANY_ARCHIVED');
  });

  it('refuses other content types and malformed bodies', async () => {
    const id = await newCompany();
    const xml = await t.app.inject({
      method: 'POST',
      url: openingUrl(id),
      headers: { ...t.auth, 'idempotency-key': randomUUID(), 'content-type': 'application/xml' },
      payload: '<x/>',
    });
    expect(xml.statusCode).toBe(415);
    const extra = await postJson(id, { date: '2026-01-01', lines: [], surprise: 1 });
    expect(extra.statusCode).toBe(400);
    const empty = await postJson(id, { date: '2026-01-01', lines: [] });
    expect(empty.statusCode).toBe(422);
    expect(empty.json().error.details[0].reason).toBe('no_amounts');
    const badCsv = await postCsv(id, 'code,debit\n"1000,5\n', '?date=2026-01-01');
    expect(badCsv.statusCode).toBe(422);
    expect(badCsv.json().error.details[0].reason).toBe('bad_csv');
  });
});
