import { randomUUID } from 'node:crypto';
import { accounts, organizations, rowsOf } from '@firm/db';
import { STANDARD_CHART } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: { IMPORT_MAX_BYTES: 4096 } });
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
