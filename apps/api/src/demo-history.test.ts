import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from './testing';

const NOW = new Date('2026-11-27T10:00:00Z');
let t: TestApp;
let empty: TestApp;
beforeAll(async () => {
  t = await createTestApp({ history: { now: NOW } });
  empty = await createTestApp();
}, 120_000);
afterAll(async () => {
  await t?.close();
  await empty?.close();
});

const data = async (app: TestApp, url: string) => {
  const res = await app.app.inject({ method: 'GET', url, headers: app.orgHeaders });
  expect(res.statusCode, res.body).toBe(200);
  return res.json().data;
};

describe('createTestApp with the demo history', () => {
  it('serves a year of books through the API', async () => {
    const tb = await data(t, '/api/v1/reports/trial-balance?endDate=2026-10-31');
    expect(tb.totalDebitCents).toBeGreaterThan(0);
    expect(tb.totalDebitCents).toBe(tb.totalCreditCents);
    const aging = await data(t, '/api/v1/reports/ar-aging?asOf=2026-10-31');
    expect(aging.totals.over90Cents).toBeGreaterThan(0);
    const packet = await data(t, '/api/v1/reports/financial-packet?startDate=2025-11-01&endDate=2026-10-31');
    expect(packet.profitAndLoss.current.netIncomeCents).toBeGreaterThan(0);
    const unreviewed = await data(t, '/api/v1/bank-transactions?status=unreviewed&limit=1000');
    expect(unreviewed.length).toBeGreaterThan(5);
    const reconciled = await data(t, '/api/v1/bank-transactions?reconciled=true&limit=1000');
    expect(reconciled.length).toBeGreaterThan(100);
  });

  it('stays empty without it', async () => {
    const tb = await data(empty, '/api/v1/reports/trial-balance?endDate=2026-10-31');
    expect(tb.totalDebitCents).toBe(0);
    expect(await data(empty, '/api/v1/bank-transactions?limit=10')).toEqual([]);
  });
});
