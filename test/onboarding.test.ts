import { randomUUID } from 'node:crypto';
import { buildApp } from '@firm/api/app';
import { testConfig } from '@firm/api/config';
import { bearer, CookieJar, FORM, form, hiddenFields, signIn } from '@firm/api/routes/oauth/fixtures';
import { runCli } from '@firm/cli/main';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * A firm that starts from nothing: made on the command line, its owner signs in and does the rest through the
 * API as a browser would, on a database with no demo in it.
 */
let database: TestDatabase;
let app: FastifyInstance;
beforeAll(async () => {
  database = await createTestDatabase();
  app = await buildApp({ config: testConfig({ LOGIN_RATE_LIMIT_IP_MAX: 1000 }), database });
  await app.ready();
});
afterAll(async () => {
  await app.close();
  await database.close();
});

type Headers = Record<string, string>;

async function cli(...argv: string[]): Promise<unknown> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runCli(argv, database, { out: (t) => out.push(t), err: (t) => err.push(t) });
  if (code !== 0) throw new Error(`cli ${argv.join(' ')}: ${code} ${err.join('\n')}`);
  return JSON.parse(out.join('\n'));
}

/** The headers of a signed-in browser making JSON requests: its cookie and its CSRF token. */
async function sessionHeaders(jar: CookieJar): Promise<Headers> {
  const session = await app.inject({ method: 'GET', url: '/api/session', headers: jar.header() });
  expect(session.statusCode, session.body).toBe(200);
  return { ...jar.header(), 'x-csrf-token': session.json().csrfToken };
}

const call = (method: 'GET' | 'POST' | 'DELETE', url: string, headers: Headers, payload?: object) =>
  app.inject({ method, url, headers, ...(payload ? { payload } : {}) });

const ok = (res: LightMyRequestResponse, status = 200) => {
  expect(res.statusCode, res.body).toBe(status);
  return res.json().data;
};

describe('a new firm, from nothing', () => {
  it('is made on the command line and run through the API: companies, members, and taking access away', async () => {
    const firm = (await cli('firm', 'create', '--name', 'Ledgerline Partners', '--json')) as { id: string };
    const owner = (await cli(
      'user',
      'create',
      '--firm',
      firm.id,
      '--email',
      'olive@ledgerline.test',
      '--role',
      'owner',
      '--json',
    )) as { password: string };

    const ownerJar = await signIn(app, 'olive@ledgerline.test', owner.password);
    const asOwner = await sessionHeaders(ownerJar);
    expect(ok(await call('GET', '/api/v1/companies', asOwner))).toEqual([]);

    const company = async (name: string) =>
      ok(await call('POST', '/api/v1/companies', { ...asOwner, 'idempotency-key': randomUUID() }, { name }), 201) as {
        id: string;
        name: string;
      };
    const harbor = await company('Harbor Coffee Co');
    const juniper = await company('Juniper Dental PLLC');
    expect(ok(await call('GET', '/api/v1/companies', asOwner)).map((c: { name: string }) => c.name)).toEqual([
      'Harbor Coffee Co',
      'Juniper Dental PLLC',
    ]);

    // The books the firm takes over: a trial balance at the cut-off (an account the chart lacks is made from its
    // code), and the books before it closed.
    const opened = await app.inject({
      method: 'POST',
      url: `/api/v1/companies/${harbor.id}/opening-balances?date=2024-12-31&createMissingAccounts=true&closeBooksBefore=true`,
      headers: { ...asOwner, 'content-type': 'text/csv', 'idempotency-key': randomUUID() },
      payload: OPENING_CSV,
    });
    expect(opened.statusCode, opened.body).toBe(201);
    expect(opened.json().data).toMatchObject({ booksClosedThrough: '2024-12-30', difference: { cents: 0 } });
    expect(opened.json().data.createdAccounts.map((a: { code: string }) => a.code)).toEqual(['1510']);
    const expected = openingNet();
    expect(await trialBalance(harbor.id, asOwner, '2024-12-31')).toEqual(Object.fromEntries(expected));

    // A year of history from the previous system's hledger journal: afterwards the trial balance is the opening
    // balances plus what the file says, account by account.
    const journal = yearJournal(expected);
    const importFile = (body: string, query: string) =>
      app.inject({
        method: 'POST',
        url: `/api/v1/companies/${harbor.id}/imports?${query}`,
        headers: { ...asOwner, 'content-type': 'text/plain', 'idempotency-key': randomUUID() },
        payload: body,
      });
    const imported = await importFile(journal, 'kind=journal&format=hledger');
    expect(imported.statusCode, imported.body).toBe(201);
    expect(imported.json().data).toMatchObject({ status: 'completed', entriesPosted: 60, failedRows: 0 });
    const afterImport = await trialBalance(harbor.id, asOwner, '2025-12-31');
    expect(afterImport).toEqual(Object.fromEntries([...expected].filter(([, cents]) => cents !== 0)));
    // The same file again posts nothing new.
    const again = await importFile(journal, 'kind=journal&format=hledger');
    expect(again.statusCode, again.body).toBe(200);
    expect(again.json().data.id).toBe(imported.json().data.id);

    // A CSV with an unbalanced entry, an unknown account, a date in the closed books and a reference the journal
    // already brought in is refused whole, every bad row named, and nothing is written.
    const bad = [
      'date,reference,memo,account,debit,credit',
      '2025-03-01,B-1,Unbalanced,1000,100.00,',
      '2025-03-01,B-1,Unbalanced,4000,,90.00',
      '2025-03-02,B-2,Unknown account,9999,50.00,',
      '2025-03-02,B-2,Unknown account,4000,,50.00',
      '2024-06-01,B-3,In the closed books,1000,10.00,',
      '2024-06-01,B-3,In the closed books,4000,,10.00',
      '2025-03-04,S-2025-01,Already imported,1000,10.00,',
      '2025-03-04,S-2025-01,Already imported,4000,,10.00',
      '2025-03-05,B-5,Good on its own,1000,10.00,',
      '2025-03-05,B-5,Good on its own,4000,,10.00',
    ].join('\n');
    const refused = await app.inject({
      method: 'POST',
      url: `/api/v1/companies/${harbor.id}/imports?kind=journal&format=csv`,
      headers: { ...asOwner, 'content-type': 'text/csv', 'idempotency-key': randomUUID() },
      payload: bad,
    });
    expect(refused.statusCode, refused.body).toBe(422);
    expect(refused.json().error.code).toBe('IMPORT_INVALID');
    const named = refused.json().error.details as { line: number; column: string; message: string }[];
    expect(named.map((d) => [d.line, d.column])).toEqual([
      [2, 'reference'],
      [4, 'account'],
      [6, 'date'],
      [8, 'reference'],
    ]);
    expect(named[0]?.message).toMatch(/does not balance/);
    expect(named[3]?.message).toMatch(/already imported/);
    expect(await trialBalance(harbor.id, asOwner, '2025-12-31')).toEqual(afterImport);

    // A member limited to one company signs in with the link they were given.
    const invited = ok(
      await call(
        'POST',
        '/api/v1/users',
        { ...asOwner, 'content-type': 'application/json' },
        { email: 'max@ledgerline.test', name: 'Max Member', role: 'member', organizationIds: [harbor.id] },
      ),
      201,
    );
    const memberJar = await takeInvitation(invited.invitation.url, 'max has a long password');
    const asMember = await sessionHeaders(memberJar);
    expect(ok(await call('GET', '/api/v1/companies', asMember)).map((c: { id: string }) => c.id)).toEqual([harbor.id]);
    // The owner issues the member a key for their scripts: it acts for them.
    const issued = ok(
      await call(
        'POST',
        '/api/v1/api-keys',
        { ...asOwner, 'content-type': 'application/json' },
        { name: 'Max’s reconciliation script', forUserId: invited.id },
      ),
      201,
    );
    const memberKey = bearer(issued.key);
    for (const headers of [asMember, memberKey]) {
      ok(await call('GET', `/api/v1/companies/${harbor.id}/reports/trial-balance`, headers));
      const refused = await call('GET', `/api/v1/companies/${juniper.id}/reports/trial-balance`, headers);
      expect(refused.statusCode).toBe(404);
    }

    // Deactivated: their session and their token stop on the next request.
    expect((await call('DELETE', `/api/v1/users/${invited.id}`, asOwner)).statusCode).toBe(204);
    for (const headers of [asMember, memberKey]) {
      expect((await call('GET', `/api/v1/companies/${harbor.id}/reports/trial-balance`, headers)).statusCode).toBe(401);
    }
    ok(await call('GET', `/api/v1/companies/${harbor.id}/reports/trial-balance`, asOwner));
  });
});

/** The cut-off trial balance the firm takes over: 1510 is not in the standard chart and is made from its code. */
const OPENING_CSV = [
  'code,name,debit,credit',
  '1000,Business Checking,25000.00,',
  '1200,Accounts Receivable,8400.00,',
  '1500,Equipment,30000.00,',
  '1510,Accumulated Depreciation,,6000.00',
  '2000,Accounts Payable,,4200.00',
  '2700,Loan Payable,,20000.00',
  "3000,Owner's Equity,,33200.00",
].join('\n');

type Net = Map<string, number>;
const add = (net: Net, code: string, cents: number) => net.set(code, (net.get(code) ?? 0) + cents);
const money = (cents: number) => `$${(cents / 100).toFixed(2)}`;

/** The opening balances as signed cents (debit positive) per account code. */
function openingNet(): Net {
  const net: Net = new Map();
  for (const line of OPENING_CSV.split('\n').slice(1)) {
    const [code, , debit, credit] = line.split(',');
    add(net, String(code), Math.round(Number(debit || 0) * 100) - Math.round(Number(credit || 0) * 100));
  }
  return net;
}

/**
 * A year of history as an hledger journal, the way another system exports it: accounts by full name, by the last
 * segment of a colon path or by code, one posting per transaction left for hledger to balance. `net` gets what each
 * transaction does to each account.
 */
function yearJournal(net: Net): string {
  const out: string[] = ['; exported from the previous bookkeeping system', ''];
  const tx = (date: string, code: string, description: string, postings: [string, string, number | null][]) => {
    out.push(`${date} * (${code}) ${description}`);
    const known = postings.reduce((sum, [, , cents]) => sum + (cents ?? 0), 0);
    for (const [account, accountCode, cents] of postings) {
      const amount = cents ?? -known;
      add(net, accountCode, amount);
      out.push(cents === null ? `    ${account}` : `    ${account}    ${money(amount)}`);
    }
    out.push('');
  };
  for (let month = 1; month <= 12; month++) {
    const mm = String(month).padStart(2, '0');
    const sales = 1_200_000 + month * 25_000 + month * 37;
    tx(`2025-${mm}-05`, `S-2025-${mm}`, 'Monthly sales deposit', [
      ['Assets:Bank:Business Checking', '1000', sales],
      ['Income:Sales', '4000', -sales],
    ]);
    tx(`2025-${mm}-01`, `R-2025-${mm}`, 'Rent', [
      ['Expenses:Rent', '6400', 250_000],
      ['1000', '1000', -250_000],
    ]);
    tx(`2025-${mm}-28`, `P-2025-${mm}`, 'Payroll', [
      ['Payroll Expenses', '6900', 600_000 + month * 1_100],
      ['Assets:Bank:Business Checking', '1000', null],
    ]);
    const interest = 10_000 - month * 500;
    tx(`2025-${mm}-15`, `L-2025-${mm}`, 'Loan payment', [
      ['Liabilities:Loan Payable', '2700', 120_000 + month * 500],
      ['Expenses:Interest Expense', '7000', interest],
      ['1000', '1000', -(120_000 + month * 500 + interest)],
    ]);
    tx(`2025-${mm}-20`, `C-2025-${mm}`, 'Roasted beans on the card', [
      ['Cost of Goods Sold', '5000', 310_045 + month * 13],
      ['Liabilities:Business Credit Card', '2100', null],
    ]);
  }
  return out.join('\n');
}

/** A trial balance's rows with a balance, as signed cents per account code. */
async function trialBalance(companyId: string, headers: Headers, endDate: string): Promise<Record<string, number>> {
  const rows = ok(await call('GET', `/api/v1/companies/${companyId}/reports/trial-balance?endDate=${endDate}`, headers))
    .rows as { code: string; debitCents: number; creditCents: number }[];
  return Object.fromEntries(
    rows.filter((r) => r.debitCents !== r.creditCents).map((r) => [r.code, r.debitCents - r.creditCents]),
  );
}

/** Opens the invitation page and posts its form; returns the signed-in browser. */
async function takeInvitation(url: string, password: string): Promise<CookieJar> {
  const jar = new CookieJar();
  const path = new URL(url).pathname;
  const page = await app.inject({ method: 'GET', url: path });
  expect(page.statusCode, page.body).toBe(200);
  jar.store(page);
  const res = await app.inject({
    method: 'POST',
    url: path,
    headers: { ...FORM, ...jar.header() },
    payload: form({ csrf_token: hiddenFields(page.body).csrf_token, password, password_confirmation: password }),
  });
  expect(res.statusCode, res.body).toBe(303);
  return jar.store(res);
}
