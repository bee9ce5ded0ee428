import { listAttachments } from '@firm/attachments';
import { DEVELOPMENT_TOKEN_KEYS, listBankTransactions, parseTokenKeys } from '@firm/banking';
import { type Db, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { agingReport } from '@firm/documents';
import { healthScan, listClients } from '@firm/gateway';
import { authenticateApiKey } from '@firm/identity';
import { balanceSheet, getBookSettings, profitAndLoss, trialBalance } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyMonths } from './history';
import { mulberry32 } from './random';
import { type SeedResult, seedDemo } from './seed';

const NOW = new Date('2026-11-27T10:00:00Z');
const LAST_MONTH_END = '2026-10-31';

let first: TestDatabase;
let second: TestDatabase;
let seeded: SeedResult;
beforeAll(async () => {
  first = await createTestDatabase();
  second = await createTestDatabase();
  seeded = await seedDemo(first.db, { history: true, now: NOW });
  await seedDemo(second.db, { history: true, now: NOW });
}, 120_000);
afterAll(async () => {
  await first?.close();
  await second?.close();
});

/** Each demo company's trial balance by account code, keyed by company name. */
async function trialBalances(db: Db) {
  const orgs = rowsOf<{ id: string; name: string }>(
    await db.execute(sql`select o.id, o.name from organizations o join firms f on f.id = o.firm_id
      where f.slug = 'demo' order by o.name`),
  );
  const out: Record<string, Record<string, [number, number]>> = {};
  for (const o of orgs) {
    const tb = await trialBalance(db, o.id, { endDate: '2026-12-31' });
    out[o.name] = Object.fromEntries(tb.rows.map((r) => [r.code, [r.debitCents, r.creditCents]]));
  }
  return out;
}

/** What the books hold, counted and summed, for comparing two states of one database. */
async function footprint(db: Db) {
  const [row] = rowsOf<Record<string, number>>(
    await db.execute(sql`select
      (select count(*)::int from journal_entries) as entries,
      (select count(*)::int from journal_lines) as lines,
      (select coalesce(sum(abs(amount_cents)), 0)::float8 from account_daily_balances) as rollup,
      (select count(*)::int from documents) as documents,
      (select count(*)::int from document_allocations) as allocations,
      (select count(*)::int from contacts) as contacts,
      (select count(*)::int from accounts) as accounts,
      (select count(*)::int from bank_transactions) as bank_transactions,
      (select count(*)::int from reconciliations) as reconciliations,
      (select count(*)::int from tax_rates) as tax_rates,
      (select count(*)::int from organizations) as organizations`),
  );
  return { ...row, trialBalances: await trialBalances(db) };
}

describe('mulberry32', () => {
  it('repeats its sequence for a seed and differs between seeds', () => {
    const a = mulberry32(42);
    const b = mulberry32(42);
    const seqA = Array.from({ length: 5 }, () => a.next());
    expect(Array.from({ length: 5 }, () => b.next())).toEqual(seqA);
    expect(mulberry32(43).next()).not.toBe(seqA[0]);
    for (const x of seqA) expect(x >= 0 && x < 1).toBe(true);
    const r = mulberry32(7);
    for (let i = 0; i < 100; i++) {
      const n = r.int(3, 5);
      expect(n >= 3 && n <= 5 && Number.isInteger(n)).toBe(true);
    }
  });
});

describe('historyMonths', () => {
  it('gives the twelve months ending with the one before now, across a year end', () => {
    expect(historyMonths(NOW)).toEqual([
      '2025-11-01',
      '2025-12-01',
      ...Array.from({ length: 10 }, (_, i) => `2026-${String(i + 1).padStart(2, '0')}-01`),
    ]);
    expect(historyMonths(new Date('2026-01-05T00:00:00Z')).at(-1)).toBe('2025-12-01');
    expect(historyMonths(new Date('2026-01-05T00:00:00Z'))[0]).toBe('2025-01-01');
  });
});

describe('the demo history', () => {
  it('is the same books on two fresh databases seeded with the same clock', async () => {
    expect(await footprint(second.db)).toEqual(await footprint(first.db));
  });

  it('attaches a few source documents to the first company’s bank rows, the same on both databases', async () => {
    const orgId = seeded.organizations[0]?.id as string;
    const page = await listAttachments(first.db, orgId, { limit: 10 });
    expect(page.data.map((a) => a.fileName).filter((n) => n.startsWith('receipt-'))).toHaveLength(3);
    const statement = page.data.find((a) => a.fileName === 'bank-statement.pdf');
    expect(statement?.links).toHaveLength(3);
    expect(statement?.contentType).toBe('application/pdf');
    const hashes = async (db: typeof first.db) =>
      rowsOf<{ sha256: string }>(await db.execute(sql`select sha256 from attachments order by sha256`)).map(
        (r) => r.sha256,
      );
    expect(await hashes(second.db)).toEqual(await hashes(first.db));
  });

  it('is written once: a second seed changes nothing in the books', async () => {
    const before = await footprint(first.db);
    const again = await seedDemo(first.db, { history: true, now: NOW });
    expect(again.created).toBe(false);
    expect(again.history).toEqual({});
    expect(await footprint(first.db)).toEqual(before);
  });

  it('balances, with figures in every part of the year', async () => {
    for (const org of seeded.organizations) {
      const summary = seeded.history[org.id];
      expect(summary).toMatchObject({
        startDate: '2025-11-01',
        endDate: LAST_MONTH_END,
        invoices: 48,
        // The first company's last month has three more: its seeded close problems.
        bills: org.id === seeded.organizations[0]?.id ? 27 : 24,
        reconciliations: 11,
        booksClosedThrough: '2025-12-31',
      });
      const tb = await trialBalance(first.db, org.id, { endDate: LAST_MONTH_END });
      expect(tb.totalDebitCents).toBe(tb.totalCreditCents);
      expect(tb.totalDebitCents).toBeGreaterThan(10_000_000);
      const byCode = new Map(tb.rows.map((r) => [r.code, r.debitCents - r.creditCents]));
      for (const code of ['1000', '1200', '1500']) expect(byCode.get(code), code).toBeGreaterThan(0);
      for (const code of ['1550', '2000', '2200', '2300', '2700', '3000']) {
        expect(byCode.get(code), code).toBeLessThan(0);
      }
      for (const code of ['6100', '6400', '6450', '6500', '6700', '6900', '7000']) {
        expect(byCode.get(code), code).toBeGreaterThan(0);
      }
      // The loan was paid down, not off.
      expect(-(byCode.get('2700') ?? 0)).toBeLessThan(6_000_000);

      const pl = await profitAndLoss(first.db, org.id, { startDate: '2025-11-01', endDate: LAST_MONTH_END });
      expect(pl.netIncomeCents, org.name).toBeGreaterThan(0);
      const bs = await balanceSheet(first.db, org.id, { asOf: LAST_MONTH_END });
      expect(bs.assets.totalCents).toBe(bs.totalLiabilitiesAndEquityCents);
      expect(bs.assets.totalCents).toBeGreaterThan(0);

      expect((await getBookSettings(first.db, org.id)).booksClosedThrough).toBe('2025-12-31');
    }
  });

  it('leaves receivables overdue past 30, 60 and 90 days', async () => {
    for (const org of seeded.organizations) {
      const aging = await agingReport(first.db, org.id, 'receivable', LAST_MONTH_END);
      expect(aging.totals.days31To60Cents, org.name).toBeGreaterThan(0);
      expect(aging.totals.days61To90Cents, org.name).toBeGreaterThan(0);
      expect(aging.totals.over90Cents, org.name).toBeGreaterThan(0);
      expect(aging.totals.totalCents).toBe(aging.controlAccountBalanceCents);
    }
  });

  it('has a bank register reconciled through the month before last, with last month waiting for review', async () => {
    for (const org of seeded.organizations) {
      const all = await listBankTransactions(first.db, org.id, { limit: 1000 });
      expect(all.nextCursor).toBeNull();
      const rows = all.data;
      const last = rows.filter((r) => r.date >= '2026-10-01');
      const earlier = rows.filter((r) => r.date < '2026-10-01');
      expect(last.length).toBeGreaterThan(5);
      expect(last.every((r) => r.status === 'unreviewed' && !r.reconciled)).toBe(true);
      expect(earlier.length).toBeGreaterThan(100);
      expect(earlier.every((r) => r.reconciled && (r.status === 'categorized' || r.status === 'matched'))).toBe(true);
      expect(new Set(earlier.map((r) => r.status))).toEqual(new Set(['categorized', 'matched']));
    }
  });

  it('gives the health scan figures to show', async () => {
    const credential = await authenticateApiKey(first.db, seeded.apiKey);
    if (!credential) throw new Error('the demo key does not authenticate');
    const clients = await listClients(first.db, credential);
    expect(clients).toHaveLength(2);
    const scan = await healthScan(first.db, clients, '2026-11-27');
    const overdue = scan.findings.filter((f) => f.code === 'AR_OVER_90_DAYS');
    expect(overdue).toHaveLength(2);
    for (const f of overdue) expect(f.evidence.over90).toBeGreaterThan(0);
  });
});

describe('the demo without history', () => {
  it('is empty books, as tests expect', async () => {
    const database = await createTestDatabase();
    try {
      const demo = await seedDemo(database.db);
      expect(demo.history).toEqual({});
      const [row] = rowsOf<{ n: number }>(await database.db.execute(sql`select count(*)::int as n from journal_lines`));
      expect(row?.n).toBe(0);
    } finally {
      await database.close();
    }
  });
});

describe('the demo with its sandbox bank feed', () => {
  it('leaves the first company’s last month to the feed’s rows, so no bank row is there twice', async () => {
    const database = await createTestDatabase();
    try {
      const withFeed = await seedDemo(database.db, {
        history: true,
        now: NOW,
        bankTokenKeys: parseTokenKeys(DEVELOPMENT_TOKEN_KEYS),
      });
      const [company] = withFeed.organizations;
      const rows = rowsOf<{ source: string; external_id: string; month: string; reconciled: boolean }>(
        await database.db
          .execute(sql`select t.source_type as source, t.external_id, to_char(t.txn_date, 'YYYY-MM') as month,
            t.reconciliation_id is not null as reconciled
          from bank_transactions t join bank_accounts b on b.id = t.bank_account_id
          join accounts a on a.id = b.account_id
          where t.organization_id = ${company?.id} and a.code = '1000'`),
      );
      const lastMonth = LAST_MONTH_END.slice(0, 7);
      const ofLastMonth = rows.filter((r) => r.month === lastMonth);
      expect(ofLastMonth.length).toBeGreaterThan(0);
      // Last month's rows are the feed's only; the months before are the history's, reconciled.
      expect(ofLastMonth.filter((r) => r.external_id.startsWith('demo-'))).toEqual([]);
      expect(rows.filter((r) => r.month < lastMonth).every((r) => r.reconciled)).toBe(true);
    } finally {
      await database.close();
    }
  }, 120_000);
});
