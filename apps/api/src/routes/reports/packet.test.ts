import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';
import { seedQuarter } from './fixtures';

let t: TestApp;

const get = async (url: string) => {
  const res = await t.app.inject({ method: 'GET', url, headers: t.orgHeaders });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};
beforeAll(async () => {
  t = await createTestApp();
  await seedQuarter(t);
});
afterAll(() => t.close());

describe('the financial packet', () => {
  it('repeats each standalone report exactly, with comparisons, cash flow and ratios', async () => {
    const q = 'startDate=2026-04-01&endDate=2026-06-30';
    const { data } = await get(`/api/v1/reports/financial-packet?${q}`);
    expect(data.period).toEqual({ startDate: '2026-04-01', endDate: '2026-06-30' });
    expect(data.comparisons).toEqual({
      priorPeriod: { startDate: '2025-12-31', endDate: '2026-03-31' },
      priorYear: { startDate: '2025-04-01', endDate: '2025-06-30' },
    });
    const report = async (path: string, query: string) => (await get(`/api/v1/reports/${path}?${query}`)).data;
    expect(data.profitAndLoss.current).toEqual(await report('profit-and-loss', q));
    expect(data.profitAndLoss.priorPeriod).toEqual(
      await report('profit-and-loss', 'startDate=2025-12-31&endDate=2026-03-31'),
    );
    expect(data.profitAndLoss.priorYear).toEqual(
      await report('profit-and-loss', 'startDate=2025-04-01&endDate=2025-06-30'),
    );
    expect(data.balanceSheet.current).toEqual(await report('balance-sheet', 'endDate=2026-06-30'));
    expect(data.balanceSheet.priorPeriod).toEqual(await report('balance-sheet', 'endDate=2026-03-31'));
    expect(data.balanceSheet.priorYear).toEqual(await report('balance-sheet', 'endDate=2025-06-30'));
    expect(data.trialBalance).toEqual(await report('trial-balance', 'endDate=2026-06-30'));
    expect(data.arAging).toEqual(await report('ar-aging', 'asOf=2026-06-30'));
    expect(data.apAging).toEqual(await report('ap-aging', 'asOf=2026-06-30'));
    expect(data.bankReconciliation).toEqual(await get('/api/v1/reports/bank-reconciliation-status?endDate=2026-06-30'));

    // Cash flow: net income 9,000 - 2,500 - 3,000 = 3,500; receivables up 5,000 (-), payables up 2,500 (+);
    // equipment 12,000 (investing, -); the loan 20,000 (financing, +).
    const cf = data.cashFlow;
    expect(cf.operating.netIncomeCents).toBe(data.profitAndLoss.current.netIncomeCents);
    expect(cf.operating.netIncomeCents).toBe(350_000);
    expect(cf.operating.totalCents).toBe(350_000 - 500_000 + 250_000);
    expect(cf.investing.totalCents).toBe(-1_200_000);
    expect(cf.financing.totalCents).toBe(2_000_000);
    expect(cf.netChangeInCashCents).toBe(cf.operating.totalCents + cf.investing.totalCents + cf.financing.totalCents);
    const bank = (bs: { assets: { accounts: { subtype: string; balanceCents: number }[] } }) =>
      bs.assets.accounts.filter((a) => a.subtype === 'bank').reduce((s, a) => s + a.balanceCents, 0);
    expect(cf.cashAtEndCents).toBe(bank(data.balanceSheet.current));
    expect(cf.cashAtStartCents).toBe(bank(data.balanceSheet.priorPeriod));

    // The twelve months to June: sales in January and May, rent in May, cost of sales in June; cash moved by the
    // January sale, the loan and the equipment in April, and June's receipt and payment.
    expect(data.monthlyTrend).toHaveLength(12);
    expect(data.monthlyTrend[0]).toMatchObject({ month: '2025-07', cashAtEndCents: 5_800_000 });
    expect(data.monthlyTrend.slice(-2)).toEqual([
      {
        month: '2026-05',
        startDate: '2026-05-01',
        endDate: '2026-05-31',
        incomeCents: 900_000,
        expensesCents: 250_000,
        netIncomeCents: 650_000,
        cashAtEndCents: 6_750_000,
      },
      {
        month: '2026-06',
        startDate: '2026-06-01',
        endDate: '2026-06-30',
        incomeCents: 0,
        expensesCents: 300_000,
        netIncomeCents: -300_000,
        cashAtEndCents: cf.cashAtEndCents,
      },
    ]);
    expect(data.ratios).toMatchObject({
      grossMarginPct: 66.6667,
      netMarginPct: 38.8889,
    });
    expect(data.ratios.currentRatio).toBeGreaterThan(0);
  });

  it('leaves comparisons out when asked, and refuses a period that ends before it starts', async () => {
    const { data } = await get(
      '/api/v1/reports/financial-packet?startDate=2026-04-01&endDate=2026-06-30&comparePriorPeriod=false&comparePriorYear=false',
    );
    expect(data.comparisons).toEqual({ priorPeriod: null, priorYear: null });
    expect(data.profitAndLoss.priorYear).toBeNull();
    for (const query of ['startDate=2026-07-01&endDate=2026-06-30', 'endDate=2026-02-30', 'startDate=yesterday']) {
      const res = await t.app.inject({
        method: 'GET',
        url: `/api/v1/reports/financial-packet?${query}`,
        headers: t.orgHeaders,
      });
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
  });
});
