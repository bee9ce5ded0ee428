import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
const acct = (c: string) => t.account(c);
const get = async (url: string, headers: Record<string, string> = t.orgHeaders) => {
  const res = await t.app.inject({ method: 'GET', url, headers });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data;
};

beforeAll(async () => {
  t = await createTestApp();
  const post = async (route: string, payload: object) => {
    const res = await t.app.inject({
      method: 'POST',
      url: `/api/v1/${route}`,
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() },
      payload,
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().journalEntryId as string;
  };
  // Last fiscal year: capital, a sale and rent. This year: sales, cost of sales, supplies, interest, a transfer.
  await post('journal-entries', {
    txnDate: '2025-01-02',
    lines: [
      { accountId: acct('1000'), postingType: 'debit', amount: 1_000_000 },
      { accountId: acct('3000'), postingType: 'credit', amount: 1_000_000 },
    ],
  });
  await post('deposits', {
    txnDate: '2025-06-01',
    destinationAccountId: acct('1000'),
    lines: [{ accountId: acct('4000'), amount: 300_000 }],
  });
  await post('purchases', {
    txnDate: '2025-06-02',
    sourceAccountId: acct('1000'),
    lines: [{ accountId: acct('6400'), amount: 120_000 }],
  });
  await post('deposits', {
    txnDate: '2026-02-01',
    destinationAccountId: acct('1000'),
    lines: [{ accountId: acct('4000'), amount: 500_000 }],
  });
  await post('purchases', {
    txnDate: '2026-02-03',
    sourceAccountId: acct('2100'),
    lines: [
      { accountId: acct('5000'), amount: 200_000 },
      { accountId: acct('6300'), amount: 15_000 },
    ],
  });
  await post('deposits', {
    txnDate: '2026-02-04',
    destinationAccountId: acct('1010'),
    lines: [{ accountId: acct('4900'), amount: 1_000 }],
  });
  await post('transfers', {
    txnDate: '2026-02-05',
    fromAccountId: acct('1000'),
    toAccountId: acct('2100'),
    amount: 215_000,
  });
  // A voided entry leaves every report.
  const voided = await post('purchases', {
    txnDate: '2026-02-06',
    sourceAccountId: acct('1000'),
    lines: [{ accountId: acct('6600'), amount: 99_999 }],
  });
  const res = await t.app.inject({
    method: 'POST',
    url: `/api/v1/entries/${voided}/void`,
    headers: t.orgHeaders,
    payload: { reason: 'test' },
  });
  expect(res.statusCode).toBe(200);
});
afterAll(() => t.close());

describe('reports agree with each other and with the ledger detail', () => {
  it('trial balance: debits equal credits, from the beginning through endDate', async () => {
    const tb = await get('/api/v1/reports/trial-balance?endDate=2026-12-31');
    expect(tb.startDate).toBeNull();
    expect(tb.totalDebitCents).toBe(tb.totalCreditCents);
    const row = (c: string) => tb.rows.find((r: { code: string }) => r.code === c);
    expect(row('1000')).toMatchObject({
      debitCents: 1_000_000 + 300_000 - 120_000 + 500_000 - 215_000,
      creditCents: 0,
    });
    expect(row('2100')).toBeUndefined(); // paid off by the transfer: zero
    expect(row('6600')).toBeUndefined(); // only the voided entry touched it
    const thisYear = await get('/api/v1/reports/trial-balance?startDate=2026-01-01&endDate=2026-12-31');
    expect(thisYear.rows.find((r: { code: string }) => r.code === '3000')).toBeUndefined();
  });

  it('profit and loss: income, cost of sales, expenses, other income and net income', async () => {
    const pnl = await get('/api/v1/reports/profit-and-loss?startDate=2026-01-01&endDate=2026-12-31');
    expect(pnl.income.totalCents).toBe(500_000);
    expect(pnl.costOfSales.totalCents).toBe(200_000);
    expect(pnl.grossProfitCents).toBe(300_000);
    expect(pnl.expenses.totalCents).toBe(15_000);
    expect(pnl.otherIncome.totalCents).toBe(1_000);
    expect(pnl.netIncomeCents).toBe(286_000);
    // Without a startDate: the fiscal year containing endDate.
    const defaulted = await get('/api/v1/reports/profit-and-loss?endDate=2026-12-31');
    expect(defaulted).toEqual(pnl);
  });

  it('balance sheet: assets = liabilities + equity, with earnings rolled in by fiscal year', async () => {
    const bs = await get('/api/v1/reports/balance-sheet?endDate=2026-12-31');
    expect(bs.asOf).toBe('2026-12-31');
    expect(bs.assets.totalCents).toBe(bs.totalLiabilitiesAndEquityCents);
    expect(bs.equity.retainedEarningsCents).toBe(300_000 - 120_000);
    expect(bs.equity.currentYearEarningsCents).toBe(286_000);
    const pnl = await get('/api/v1/reports/profit-and-loss?startDate=2026-01-01&endDate=2026-12-31');
    expect(bs.equity.currentYearEarningsCents).toBe(pnl.netIncomeCents);

    // A fiscal year starting in July moves the line between retained and current earnings.
    const patched = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/books',
      headers: t.orgHeaders,
      payload: { fiscalYearStartMonth: 7 },
    });
    expect(patched.statusCode).toBe(200);
    const july = await get('/api/v1/reports/balance-sheet?endDate=2026-03-31');
    expect(july.fiscalYearStart).toBe('2025-07-01');
    expect(july.equity.retainedEarningsCents).toBe(180_000);
    expect(july.assets.totalCents).toBe(july.totalLiabilitiesAndEquityCents);
    await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/books',
      headers: t.orgHeaders,
      payload: { fiscalYearStartMonth: 1 },
    });
  });

  it('general ledger: opening + lines = closing, equal to the account detail and the trial balance', async () => {
    const gl = await get(
      `/api/v1/reports/general-ledger?startDate=2026-01-01&endDate=2026-12-31&accountId=${acct('1000')}`,
    );
    const [checking] = gl.accounts;
    expect(checking.openingBalanceCents).toBe(1_180_000);
    let running = checking.openingBalanceCents;
    for (const line of checking.lines) {
      running += line.debitCents - line.creditCents;
      expect(line.runningBalanceCents).toBe(running);
    }
    expect(checking.closingBalanceCents).toBe(running);
    const detail = (
      await t.app.inject({ method: 'GET', url: `/api/v1/accounts/${acct('1000')}`, headers: t.orgHeaders })
    ).json().data;
    expect(detail.balanceCents).toBe(checking.closingBalanceCents);
    const tb = await get('/api/v1/reports/trial-balance?endDate=2026-12-31');
    expect(tb.rows.find((r: { code: string }) => r.code === '1000').debitCents).toBe(checking.closingBalanceCents);

    const all = await get('/api/v1/reports/general-ledger?startDate=2026-01-01&endDate=2026-12-31');
    const closingSum = all.accounts.reduce(
      (sum: number, a: { type: string; closingBalanceCents: number }) =>
        sum + (a.type === 'asset' || a.type === 'expense' ? a.closingBalanceCents : -a.closingBalanceCents),
      0,
    );
    expect(closingSum).toBe(0);
  });

  it('the company-path form answers the same reports', async () => {
    for (const report of ['trial-balance', 'balance-sheet', 'profit-and-loss', 'general-ledger']) {
      const query = 'startDate=2026-01-01&endDate=2026-12-31';
      const viaHeader = await get(`/api/v1/reports/${report}?${query}`);
      const viaPath = await get(`/api/v1/companies/${t.orgId}/reports/${report}?${query}`, t.auth);
      expect(viaPath).toEqual(viaHeader);
    }
  });

  it('bad report queries: impossible dates, start after end, an unknown account', async () => {
    for (const query of ['endDate=2026-02-30', 'startDate=2026-05-01&endDate=2026-04-01', 'endDate=tomorrow']) {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/reports/trial-balance?${query}`,
        headers: t.orgHeaders,
      });
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
    const unknown = await t.app.inject({
      method: 'GET',
      url: `/api/v1/reports/general-ledger?endDate=2026-01-01&accountId=${randomUUID()}`,
      headers: t.orgHeaders,
    });
    expect(unknown.statusCode).toBe(404);
  });
});
