import { randomUUID } from 'node:crypto';
import { accounts, organizations, rowsOf } from '@firm/db';
import { STANDARD_CHART } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Readable } from 'node:stream';
import { createApiKey } from '@firm/identity';
import { runNextImport } from '@firm/imports';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: { IMPORT_MAX_BYTES: 4096, IMPORT_INLINE_MAX_ROWS: 6 } });
});
afterAll(() => t.close());

/** A new company of the demo firm with the standard chart. */
async function newCompany(name = `Client ${randomUUID().slice(0, 8)}`): Promise<string> {
  const [org] = await t.database.db.insert(organizations).values({ firmId: t.demo.firmId, name }).returning();
  const id = org?.id as string;
  await t.database.db.insert(accounts).values(STANDARD_CHART.map((a) => ({ ...a, organizationId: id })));
  return id;
}

const upload = (
  companyId: string,
  body: string,
  query = 'kind=journal&format=csv',
  headers: Record<string, string> = {},
) =>
  t.app.inject({
    method: 'POST',
    url: `/api/v1/companies/${companyId}/imports?${query}`,
    headers: { ...t.auth, 'content-type': 'text/csv', ...headers },
    payload: body,
  });

/** What the company's books hold: entries, lines, and the daily, monthly and yearly rollups summed per account. */
async function books(companyId: string) {
  const db = t.database.db;
  const [counts] = rowsOf<{ entries: number; lines: number; imports: number; staged: number }>(
    await db.execute(sql`select
      (select count(*)::int from journal_entries where organization_id = ${companyId}) as entries,
      (select count(*)::int from journal_lines where organization_id = ${companyId}) as lines,
      (select count(*)::int from imports where organization_id = ${companyId}) as imports,
      (select count(*)::int from import_rows where organization_id = ${companyId}) as staged`),
  );
  const balances = rowsOf<{ code: string; lines: string; daily: string; monthly: string; yearly: string }>(
    await db.execute(sql`select a.code,
        coalesce((select sum(amount_cents) from journal_lines l where l.account_id = a.id), 0)::text as lines,
        coalesce((select sum(amount_cents) from account_daily_balances d where d.account_id = a.id), 0)::text as daily,
        coalesce((select sum(amount_cents) from account_monthly_balances d where d.account_id = a.id), 0)::text as monthly,
        coalesce((select sum(amount_cents) from account_yearly_balances d where d.account_id = a.id), 0)::text as yearly
      from accounts a where a.organization_id = ${companyId} order by a.code`),
  );
  const balance = Object.fromEntries(balances.filter((b) => b.lines !== '0').map((b) => [b.code, Number(b.lines)]));
  for (const b of balances) expect([b.daily, b.monthly, b.yearly]).toEqual([b.lines, b.lines, b.lines]);
  return { ...(counts as NonNullable<typeof counts>), balance };
}

const JOURNAL = [
  'date,reference,memo,account,debit,credit,contact,line_memo',
  '2025-01-05,JE-1,Office rent,6400,1200.00,,Landlord LLC,January',
  '2025-01-05,JE-1,Office rent,Business Checking,,1200.00,,',
  '2025-01-09,JE-2,Supplies,Office Supplies,45.5,,,',
  '2025-01-09,JE-2,Supplies,1000,,45.50,,',
].join('\n');

describe('importing a journal CSV', () => {
  it('posts its entries with their lines and rollups, and answers 201 with the completed import', async () => {
    const company = await newCompany();
    const res = await upload(company, JOURNAL);
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({
      companyId: company,
      kind: 'journal',
      format: 'csv',
      atomicity: 'file',
      status: 'completed',
      totalRows: 4,
      totalEntries: 2,
      doneRows: 4,
      failedRows: 0,
      entriesPosted: 2,
      errorCount: 0,
      errors: [],
    });
    expect(data.fileSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(res.headers.location).toBe(`/api/v1/companies/${company}/imports/${data.id}`);
    const b = await books(company);
    expect(b).toMatchObject({ entries: 2, lines: 4, imports: 1, staged: 0 });
    expect(b.balance).toEqual({ '1000': -124_550, '6300': 4550, '6400': 120_000 });
    const entries = await t.app.inject({
      method: 'GET',
      url: `/api/v1/companies/${company}/journal-entries`,
      headers: t.auth,
    });
    const rent = entries.json().data.find((e: { reference: string }) => e.reference === 'JE-1');
    expect(rent).toMatchObject({
      status: 'posted',
      source: 'import',
      date: '2025-01-05',
      memo: 'Office rent',
      payeeName: 'Landlord LLC',
    });
    expect(rent.lines[0]).toMatchObject({ description: 'January', debitCents: 120_000 });
  });
});

const get = (path: string, headers: Record<string, string> = t.auth) =>
  t.app.inject({ method: 'GET', url: `/api/v1/companies/${path}`, headers });

const HLEDGER = `; history kept in hledger
account Expenses:Rent

2025-02-01 * (RENT-2) February rent   ; paid by check
    Expenses:Rent           $1,200.00
    Assets:Business Checking

2025-02-03 ! Coffee for the office
    Expenses:Office Supplies    $12.50  ; beans
    1000                       -12.50 USD

2025-02-03 ! Coffee for the office
    Expenses:Office Supplies    $12.50  ; beans
    1000                       -12.50 USD
`;

describe('importing an hledger journal', () => {
  it('posts its transactions: codes as references, an elided amount balancing, accounts by code, name or last segment', async () => {
    const company = await newCompany();
    const res = await upload(company, HLEDGER, 'kind=journal&format=hledger', { 'content-type': 'text/plain' });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toMatchObject({ status: 'completed', totalRows: 6, totalEntries: 3, entriesPosted: 3 });
    const b = await books(company);
    expect(b.balance).toEqual({ '1000': -122_500, '6300': 2500, '6400': 120_000 });
    const list = await get(`${company}/journal-entries`);
    const refs = list
      .json()
      .data.map((e: { reference: string }) => e.reference)
      .sort();
    expect(refs[0]).toBe('RENT-2');
    // Two identical transactions on one day get two references, derived from their text, the same on every read.
    expect(refs.slice(1)).toEqual([
      expect.stringMatching(/^hl:2025-02-03:[0-9a-f]{12}$/),
      expect.stringMatching(/^hl:2025-02-03:[0-9a-f]{12}:2$/),
    ]);
  });
});

describe('a journal that grew since it was imported', () => {
  it('posts only its new transactions with atomicity=entry, reporting the others as imported', async () => {
    const company = await newCompany();
    const hl = { 'content-type': 'text/plain' };
    expect((await upload(company, HLEDGER, 'format=hledger', hl)).statusCode).toBe(201);
    const grown = `${HLEDGER}\n2025-02-10 Internet\n    Utilities  $80\n    Assets:1000\n`;
    const strict = await upload(company, grown, 'format=hledger', hl);
    expect(strict.statusCode).toBe(422);
    const res = await upload(company, grown, 'format=hledger&atomicity=entry', hl);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toMatchObject({
      totalRows: 8,
      doneRows: 2,
      failedRows: 6,
      entriesPosted: 1,
      errorCount: 3,
    });
    expect((await books(company)).entries).toBe(4);
  });
});

describe('importing a chart of accounts', () => {
  it('creates the accounts, taking a blank type from the code', async () => {
    const company = await newCompany();
    const csv = [
      'code,name,type,subtype,description',
      '1050,Petty Cash,asset,bank,Cash box',
      '6450,Storage,,,',
      'M-1,Mileage,expense,,',
    ].join('\n');
    const res = await upload(company, csv, 'kind=accounts&format=csv');
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().data).toMatchObject({ kind: 'accounts', status: 'completed', totalRows: 3, accountsCreated: 3 });
    const chart = await get(`${company}/accounts?limit=1000`);
    const byCode = Object.fromEntries(chart.json().data.map((a: { code: string }) => [a.code, a]));
    expect(byCode['1050']).toMatchObject({
      name: 'Petty Cash',
      type: 'asset',
      subtype: 'bank',
      description: 'Cash box',
    });
    expect(byCode['6450']).toMatchObject({ name: 'Storage', type: 'expense', subtype: 'expense' });
    expect(byCode['M-1']).toMatchObject({ type: 'expense', subtype: 'expense' });
  });

  it('refuses a blank type the code does not tell, a taken or repeated code and a wrong subtype, all together', async () => {
    const company = await newCompany();
    const csv = [
      'code,name,type,subtype,description',
      'X1,Mystery,,,',
      '1000,Second checking,asset,bank,',
      '1060,Till,asset,,',
      '1060,Till again,asset,,',
      '1070,Card,asset,credit_card,',
      '1080,Odd,gadget,,',
    ].join('\n');
    const res = await upload(company, csv, 'kind=accounts&format=csv');
    expect(res.statusCode, res.body).toBe(422);
    expect(res.json().error.code).toBe('IMPORT_INVALID');
    expect(res.json().error.details.map((d: { line: number; column: string }) => [d.line, d.column])).toEqual([
      [2, 'type'],
      [3, 'code'],
      [5, 'code'],
      [6, 'subtype'],
      [7, 'type'],
    ]);
    const chart = await get(`${company}/accounts?limit=1000`);
    expect(chart.json().data).toHaveLength(STANDARD_CHART.length);
    expect((await books(company)).imports).toBe(0);
  });
});

describe('a file with bad rows', () => {
  it('lists every bad row together and writes nothing (atomicity=file)', async () => {
    const company = await newCompany();
    expect((await upload(company, JOURNAL)).statusCode).toBe(201);
    await t.database.db.execute(
      sql`update organizations set books_closed_through = '2024-12-31' where id = ${company}`,
    );
    const before = await books(company);
    const csv = [
      'date,reference,memo,account,debit,credit',
      '2025-03-01,A-1,Unbalanced,6400,100.00,,', // 2: unbalanced (with line 3)
      '2025-03-01,A-1,Unbalanced,1000,,99.99,',
      '2025-03-02,A-2,Unknown,9999,10.00,,', // 4: unknown account
      '2025-03-02,A-2,Unknown,1000,,10.00,',
      '2024-12-15,A-3,Closed,6400,5.00,,', // 6: closed period
      '2024-12-15,A-3,Closed,1000,,5.00,',
      '2025-03-03,A-4,Fine,6400,1.00,,',
      '2025-03-03,A-4,Fine,1000,,1.00,',
      '2025-03-05,JE-1,Imported before,6400,2.00,,', // 10: imported by the first file
      '2025-03-05,JE-1,Imported before,1000,,2.00,',
      '2025-03-04,A-4,Again,6400,1.00,,', // 12: reference used again in the file
      '2025-03-04,A-4,Again,1000,,1.00,',
      '2025-03-06,A-6,Bad number,6400,abc,,', // 14: bad number
      '2025-03-06,A-6,Bad number,1000,,1.00,',
      '2025-03-07,A-7,Three places,6400,1.005,,', // 16: more than 2 decimals
      '2025-03-07,A-7,Three places,1000,,1.005,', // 17
      '2025-02-30,A-8,Bad date,6400,1.00,,', // 18: no such day
      '2025-02-30,A-8,Bad date,1000,,1.00,', // 19
    ].join('\n');
    const res = await upload(company, csv);
    expect(res.statusCode, res.body).toBe(422);
    const error = res.json().error;
    expect(error.code).toBe('IMPORT_INVALID');
    expect(error.message).toMatch(/^10 error\(s\) in the file; nothing was imported$/);
    expect(error.details.map((d: { line: number; column: string }) => [d.line, d.column])).toEqual([
      [2, 'reference'],
      [4, 'account'],
      [6, 'date'],
      [10, 'reference'],
      [12, 'reference'],
      [14, 'debit'],
      [16, 'debit'],
      [17, 'credit'],
      [18, 'date'],
      [19, 'date'],
    ]);
    const messages = error.details.map((d: { message: string }) => d.message);
    expect(messages[0]).toBe('entry A-1 does not balance: debits 100.00, credits 99.99');
    expect(messages[1]).toMatch(/no account "9999"/);
    expect(messages[2]).toMatch(/closed through 2024-12-31/);
    expect(messages[3]).toBe('reference JE-1 was already imported into this company');
    expect(messages[4]).toBe('reference A-4 is used again (first on line 8)');
    expect(messages[6]).toMatch(/more than 2 decimal places/);
    expect(await books(company)).toEqual(before);
  });

  it('keeps the refused rows of an import with atomicity=entry, a page at a time', async () => {
    const company = await newCompany();
    const csv = [
      'date,reference,memo,account,debit,credit',
      '2025-04-01,P-1,Good,6400,10.00,,',
      '2025-04-01,P-1,Good,1000,,10.00,',
      '2025-04-02,P-2,Bad,Nowhere,10.00,,',
      '2025-04-02,P-2,Bad,Nowhere,,10.00,',
      '2025-04-03,P-3,Bad,1000,1.001,,',
    ].join('\n');
    const res = await upload(company, csv, 'atomicity=entry');
    expect(res.json().data).toMatchObject({ errorCount: 3, failedRows: 3, doneRows: 2 });
    const id = res.json().data.id;
    const first = await get(`${company}/imports/${id}/errors?limit=2`);
    expect(first.json().data.map((e: { line: number }) => e.line)).toEqual([4, 5]);
    const second = await get(`${company}/imports/${id}/errors?limit=2&cursor=${first.json().nextCursor}`);
    expect(second.json()).toEqual({ data: [expect.objectContaining({ line: 6, column: 'debit' })], nextCursor: null });
    expect((await get(`${company}/imports/${id}/errors?cursor=bad`)).statusCode).toBe(400);
  });

  it('posts the good entries and reports the bad ones with atomicity=entry', async () => {
    const company = await newCompany();
    const csv = [
      'date,reference,memo,account,debit,credit',
      '2025-04-01,B-1,Good,6400,10.00,,',
      '2025-04-01,B-1,Good,1000,,10.00,',
      '2025-04-02,B-2,Bad,6400,10.00,,',
      '2025-04-02,B-2,Bad,Nowhere,,10.00,',
      '2025-04-03,B-3,Good,6300,3.00,,',
      '2025-04-03,B-3,Good,1000,,3.00,',
      '2025-04-04,B-1,Again,6300,7.00,,',
      '2025-04-04,B-1,Again,1000,,7.00,',
    ].join('\n');
    const res = await upload(company, csv, 'kind=journal&format=csv&atomicity=entry');
    expect(res.statusCode, res.body).toBe(201);
    const data = res.json().data;
    expect(data).toMatchObject({
      status: 'completed',
      atomicity: 'entry',
      totalRows: 8,
      doneRows: 4,
      failedRows: 4,
      entriesPosted: 2,
      errorCount: 2,
      errors: [
        { line: 5, column: 'account', message: expect.stringMatching(/Nowhere/) },
        { line: 8, column: 'reference', message: 'reference B-1 is used again (first on line 2)' },
      ],
    });
    expect((await books(company)).balance).toEqual({ '1000': -1300, '6300': 300, '6400': 1000 });
    const again = await get(`${company}/imports/${data.id}`);
    expect(again.json().data.errors).toEqual(data.errors);
    const page = await get(`${company}/imports/${data.id}/errors?limit=1`);
    expect(page.json()).toEqual({ data: [data.errors[0]], nextCursor: expect.any(String) });
    expect((await get(`${company}/imports/${data.id}/errors`, { authorization: 'Bearer nope' })).statusCode).toBe(401);
  });

  it('refuses an empty file, a missing column and a file that is not CSV', async () => {
    const company = await newCompany();
    const noColumn = await upload(company, 'date,reference,memo,account,debit\n2025-01-01,X,,1000,1.00\n');
    expect(noColumn.statusCode).toBe(422);
    expect(noColumn.json().error.details).toEqual([
      expect.objectContaining({ line: 1, column: 'credit', message: 'the header has no credit column' }),
    ]);
    const quote = await upload(company, 'date,reference,memo,account,debit,credit\n2025-01-01,"X,,1000,1.00,\n');
    expect(quote.statusCode).toBe(422);
    expect(quote.json().error.details[0].message).toMatch(/not valid CSV/);
    const empty = await upload(company, '');
    expect(empty.statusCode).toBe(422);
    const nul = await upload(
      company,
      'date,reference,memo,account,debit,credit\n2025-01-01,N,bad\u0000memo,1000,1.00,\n2025-01-01,N,,No\u0000where,,1.00\n',
    );
    expect(nul.statusCode, nul.body).toBe(422);
    expect(nul.json().error.details.map((d: { line: number; column: string }) => [d.line, d.column])).toEqual([
      [2, 'memo'],
      [3, 'account'],
    ]);
    expect(nul.json().error.details[1].message).toContain('No\\0where');
    expect((await books(company)).imports).toBe(0);
  });
});

describe('the same file again', () => {
  it('answers 200 with the first import and posts nothing new; with an Idempotency-Key it replays', async () => {
    const company = await newCompany();
    const first = await upload(company, JOURNAL);
    expect(first.statusCode).toBe(201);
    const before = await books(company);
    const second = await upload(company, JOURNAL);
    expect(second.statusCode, second.body).toBe(200);
    expect(second.json().data.id).toBe(first.json().data.id);
    expect(await books(company)).toEqual(before);

    const other = await newCompany();
    const key = { 'idempotency-key': randomUUID() };
    const keyed = await upload(other, JOURNAL, undefined, key);
    expect(keyed.statusCode).toBe(201);
    const replay = await upload(other, JOURNAL, undefined, key);
    expect(replay.statusCode).toBe(201);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.headers.location).toBe(keyed.headers.location);
    expect(replay.json()).toEqual(keyed.json());
    const reused = await upload(other, HLEDGER, 'kind=journal&format=csv', key);
    expect(reused.statusCode).toBe(422);
    expect(reused.json().error.code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect((await books(other)).imports).toBe(1);
  });
});

describe('two uploads of one file at once', () => {
  it('import it once: one answers 201, the other 200 with the same import', async () => {
    const company = await newCompany();
    const [a, b] = await Promise.all([upload(company, JOURNAL), upload(company, JOURNAL)]);
    expect([a.statusCode, b.statusCode].sort()).toEqual([200, 201]);
    expect(a.json().data.id).toBe(b.json().data.id);
    expect(await books(company)).toMatchObject({ entries: 2, lines: 4, imports: 1, staged: 0 });
  });
});

describe('refusals before the file is read', () => {
  it('400 for a kind, format or atomicity it does not know, and for a chart in hledger', async () => {
    const company = await newCompany();
    for (const query of ['kind=ledger', 'format=xlsx', 'atomicity=row', 'kind=accounts&format=hledger']) {
      const res = await upload(company, JOURNAL, query);
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
    expect((await books(company)).imports).toBe(0);
  });

  it('413 past IMPORT_MAX_BYTES, whether the length is announced or not, and nothing is kept', async () => {
    const company = await newCompany();
    const big = `date,reference,memo,account,debit,credit\n${'2025-01-01,R,m,1000,1.00,\n'.repeat(300)}`;
    const announced = await upload(company, big);
    expect(announced.statusCode).toBe(413);
    expect(announced.json().error.code).toBe('PAYLOAD_TOO_LARGE');
    const streamed = await t.app.inject({
      method: 'POST',
      url: `/api/v1/companies/${company}/imports`,
      headers: { ...t.auth, 'content-type': 'application/octet-stream' },
      payload: Readable.from([Buffer.from(big)]),
    });
    expect(streamed.statusCode).toBe(413);
    const journal = `${HLEDGER}\n`.repeat(20);
    const hledger = await t.app.inject({
      method: 'POST',
      url: `/api/v1/companies/${company}/imports?format=hledger`,
      headers: { ...t.auth, 'content-type': 'text/plain' },
      payload: Readable.from([Buffer.from(journal.slice(0, 3000)), Buffer.from(journal.slice(3000))]),
    });
    expect(hledger.statusCode).toBe(413);
    expect((await books(company)).imports).toBe(0);
  });

  it('403 without entries:write, and the import events are in the webhook catalogue', async () => {
    const company = await newCompany();
    const { key } = await createApiKey(t.database.db, { firmId: t.demo.firmId, scopes: ['entries:read'] });
    const res = await upload(company, JOURNAL, undefined, { authorization: `Bearer ${key}` });
    expect(res.statusCode).toBe(403);
    expect(res.json().error.code).toBe('INSUFFICIENT_SCOPE');
    expect((await get(`${company}/imports`, { authorization: `Bearer ${key}` })).statusCode).toBe(200);
    const types = await t.app.inject({ method: 'GET', url: '/api/v1/webhooks/event-types', headers: t.auth });
    const names = JSON.stringify(types.json());
    expect(names).toContain('import.completed');
    expect(names).toContain('import.failed');
  });

  it('415 for another content type', async () => {
    const company = await newCompany();
    const res = await upload(company, JSON.stringify({ a: 1 }), undefined, { 'content-type': 'application/json' });
    expect(res.statusCode).toBe(415);
    expect(res.json().error.code).toBe('UNSUPPORTED_MEDIA_TYPE');
  });

  it('409 COMPANY_ARCHIVED for an archived company', async () => {
    const company = await newCompany();
    await t.database.db.execute(sql`update organizations set archived_at = now() where id = ${company}`);
    const res = await upload(company, JOURNAL);
    expect(res.statusCode).toBe(409);
    expect(res.json().error.code).toBe('COMPANY_ARCHIVED');
  });

  it('404 for another firm, and for an import of another company', async () => {
    const company = await newCompany();
    const done = await upload(company, JOURNAL);
    const id = done.json().data.id;
    const other = await createOtherFirm(t.database.db, `imp-${randomUUID().slice(0, 6)}`);
    const theirs = { authorization: other.authorization };
    expect((await upload(company, JOURNAL, undefined, theirs)).statusCode).toBe(404);
    // Whatever they send: another firm's company is not found before the body's type or size is judged.
    const json = { ...theirs, 'content-type': 'application/json' };
    expect((await upload(company, JSON.stringify({ a: 1 }), undefined, json)).statusCode).toBe(404);
    const huge = { ...theirs, 'content-length': String(10 * 1024 ** 3) };
    expect((await upload(company, JOURNAL, undefined, huge)).statusCode).toBe(404);
    expect((await get(`${company}/imports/${id}`, theirs)).statusCode).toBe(404);
    expect((await get(`${company}/imports`, theirs)).statusCode).toBe(404);
    const sibling = await newCompany();
    expect((await get(`${sibling}/imports/${id}/errors`)).statusCode).toBe(404);
    const wrong = await get(`${sibling}/imports/${id}`);
    expect(wrong.statusCode).toBe(404);
    expect(wrong.json().error.code).toBe('IMPORT_NOT_FOUND');
    expect((await get(`${company}/imports/not-a-uuid`)).statusCode).toBe(404);
    const list = await get(`${company}/imports`);
    expect(list.json().data.map((i: { id: string }) => i.id)).toEqual([id]);
  });
});

/** A journal CSV of `n` two-line entries. */
const bigJournal = (n: number, prefix = 'BG') =>
  [
    'date,reference,memo,account,debit,credit',
    ...Array.from({ length: n }, (_, i) => [
      `2025-05-${String((i % 28) + 1).padStart(2, '0')},${prefix}-${i},Entry ${i},6400,${i + 1}.00,`,
      `2025-05-${String((i % 28) + 1).padStart(2, '0')},${prefix}-${i},Entry ${i},1000,,${i + 1}.00`,
    ]).flat(),
  ].join('\n');

describe('a file larger than IMPORT_INLINE_MAX_ROWS', () => {
  it('is queued (202 with Location) and the runner posts it in batches with progress', async () => {
    const company = await newCompany();
    const res = await upload(company, bigJournal(10));
    expect(res.statusCode, res.body).toBe(202);
    const data = res.json().data;
    expect(data).toMatchObject({ status: 'queued', totalRows: 20, doneRows: 0, startedAt: null });
    expect(res.headers.location).toBe(`/api/v1/companies/${company}/imports/${data.id}`);
    expect((await books(company)).entries).toBe(0);

    const progress: number[] = [];
    const ran = await runNextImport(t.database.db, {
      workerId: 'test',
      batchRows: 6,
      onBatch: (p) => progress.push(p.doneRows),
    });
    expect(ran).toBe(data.id);
    expect(progress).toEqual([6, 12, 18, 20]);
    const done = await get(`${company}/imports/${data.id}`);
    expect(done.json().data).toMatchObject({ status: 'completed', doneRows: 20, entriesPosted: 10, failedRows: 0 });
    expect(done.json().data.rowsPerSecond).toBeGreaterThan(0);
    expect(done.json().data.finishedAt).not.toBeNull();
    const b = await books(company);
    expect(b).toMatchObject({ entries: 10, lines: 20, staged: 0 });
    expect(b.balance['6400']).toBe(5500);
    const [event] = rowsOf<{ type: string; payload: { id: string; status: string } }>(
      await t.database.db.execute(
        sql`select type, payload from outbox_events where organization_id = ${company} and type like 'import.%'`,
      ),
    );
    expect(event).toMatchObject({ type: 'import.completed', payload: { id: data.id, status: 'completed' } });
    expect(await runNextImport(t.database.db, { workerId: 'test' })).toBeNull();
  });

  it('resumes after a runner stops half way, from where done_rows says, posting nothing twice', async () => {
    const company = await newCompany();
    const res = await upload(company, bigJournal(8, 'RS'));
    const id = res.json().data.id;
    // The first runner dies after its first batch (its process stops): the import stays running under its lease.
    await expect(
      runNextImport(t.database.db, {
        workerId: 'dies',
        batchRows: 6,
        onBatch: () => {
          throw new Error('the process stopped');
        },
      }),
    ).rejects.toThrow('the process stopped');
    const half = await get(`${company}/imports/${id}`);
    expect(half.json().data).toMatchObject({ status: 'running', doneRows: 6, entriesPosted: 3 });
    // Its lease still holds: nobody else takes the import.
    expect(await runNextImport(t.database.db, { workerId: 'second' })).toBeNull();
    await t.database.db.execute(sql`update imports set locked_until = now() - interval '1 second' where id = ${id}`);
    expect(await runNextImport(t.database.db, { workerId: 'second', batchRows: 6 })).toBe(id);
    const done = await get(`${company}/imports/${id}`);
    expect(done.json().data).toMatchObject({ status: 'completed', doneRows: 16, entriesPosted: 8 });
    const b = await books(company);
    expect(b).toMatchObject({ entries: 8, lines: 16, staged: 0 });
    expect(b.balance['6400']).toBe(3600);
  });

  it('fails with import.failed when the books close on its dates before it runs', async () => {
    const company = await newCompany();
    const res = await upload(company, bigJournal(5, 'CL'));
    const id = res.json().data.id;
    await t.database.db.execute(
      sql`update organizations set books_closed_through = '2025-12-31' where id = ${company}`,
    );
    expect(await runNextImport(t.database.db, { workerId: 'test' })).toBe(id);
    const failed = await get(`${company}/imports/${id}`);
    expect(failed.json().data).toMatchObject({ status: 'failed', doneRows: 0, failedRows: 10 });
    expect(failed.json().data.errorSummary).toMatch(/^PERIOD_CLOSED/);
    expect((await books(company)).entries).toBe(0);
    const [event] = rowsOf<{ type: string }>(
      await t.database.db.execute(
        sql`select type from outbox_events where organization_id = ${company} and type like 'import.%'`,
      ),
    );
    expect(event?.type).toBe('import.failed');
    // A failed import does not hold its file: sent again (the books reopened), it is imported.
    await t.database.db.execute(sql`update organizations set books_closed_through = null where id = ${company}`);
    const again = await upload(company, bigJournal(5, 'CL'));
    expect(again.statusCode).toBe(202);
    expect(again.json().data.id).not.toBe(id);
  });
});
