import { isDomainError } from '@firm/core';
import type { Db } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountLedger } from './account-ledger';
import { generalLedger, type GeneralLedgerReader, openGeneralLedger } from './general-ledger';
import { postTransaction } from './posting';
import type { PostingInput } from './posting-inputs';
import { createLedgerFixture, type LedgerFixture } from './testing';

let database: TestDatabase;
let db: Db;
let f: LedgerFixture;
const post = (input: PostingInput) => db.transaction((tx) => postTransaction(tx, f.ctx, f.orgId, input));
const RANGE = { startDate: '2026-01-01', endDate: '2026-12-31' };

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  f = await createLedgerFixture(db);
  const a = f.account;
  await post({
    kind: 'journal_entry',
    date: '2025-12-31',
    lines: [
      { accountId: a('1000'), debitCents: 100_000 },
      { accountId: a('3000'), creditCents: 100_000 },
    ],
  });
  // Several entries a day, and entries that touch cash twice, so pages break between equal dates and inside entries.
  for (let i = 1; i <= 9; i++) {
    await post({
      kind: 'journal_entry',
      date: `2026-0${1 + (i % 3)}-15`,
      lines: [
        { accountId: a('1000'), debitCents: 1_000 * i },
        { accountId: a('1000'), creditCents: 10 * i },
        { accountId: a('4000'), creditCents: 990 * i },
      ],
    });
  }
});
afterAll(() => database.close());

async function readAll(reader: GeneralLedgerReader) {
  try {
    const out: Record<string, unknown[]> = {};
    for (const account of reader.accounts) {
      out[account.code] = [];
      for await (const page of reader.pages(account)) out[account.code]?.push(...page);
    }
    return out;
  } finally {
    await reader.close();
  }
}

describe('general ledger read in pages', () => {
  it('gives the same lines and running balances whatever the page size, as the account ledger does', async () => {
    const whole = await generalLedger(db, f.orgId, RANGE);
    const paged = await readAll(await openGeneralLedger(db, f.orgId, RANGE, { pageLines: 2 }));
    for (const account of whole.accounts) expect(paged[account.code], account.code).toEqual(account.lines);
    const cash = whole.accounts.find((a) => a.code === '1000');
    expect(cash?.lines).toHaveLength(18);
    expect(cash?.openingBalanceCents).toBe(100_000);
    expect(cash?.lines.at(-1)?.runningBalanceCents).toBe(cash?.closingBalanceCents);
    const ledger = await accountLedger(db, f.orgId, { id: f.account('1000'), type: 'asset' }, { ...RANGE, limit: 100 });
    expect(cash?.lines.map((l) => [l.lineId, l.runningBalanceCents])).toEqual(
      ledger.lines.map((l) => [l.lineId, l.runningBalanceCents]),
    );
  });

  it('counts the lines before reading any, and refuses more than maxLines, saying how many and how to narrow', async () => {
    const reader = await openGeneralLedger(db, f.orgId, RANGE, { maxLines: 27 });
    expect(reader.lineCount).toBe(27);
    expect(reader.accounts.map((a) => [a.code, a.lineCount])).toEqual([
      ['1000', 18],
      ['3000', 0],
      ['4000', 9],
    ]);
    await reader.close();

    const err = await openGeneralLedger(db, f.orgId, RANGE, { maxLines: 26 }).catch((e: unknown) => e);
    expect(isDomainError(err) && err.code).toBe('REPORT_TOO_LARGE');
    expect((err as Error).message).toBe(
      'the general ledger from 2026-01-01 to 2026-12-31 has 27 lines, more than the 26 one report may hold: ask ' +
        'for a shorter date range (startDate, endDate) or for one account (accountId)',
    );
    expect(isDomainError(err) && err.details).toEqual([
      { field: 'query', message: 'too many lines in the range', lineCount: 27, maxLines: 26 },
    ]);
    const one = await generalLedger(db, f.orgId, { ...RANGE, accountId: f.account('1000') }, { maxLines: 17 }).catch(
      (e: unknown) => e,
    );
    expect((one as Error).message).toMatch(/has 18 lines, more than the 17 .*\(startDate, endDate\)$/);
  });

  it.runIf(Boolean(process.env.DATABASE_URL))(
    'reads every page from the snapshot its summary saw, whatever is posted meanwhile (Postgres)',
    async () => {
      const reader = await openGeneralLedger(db, f.orgId, RANGE, { pageLines: 4 });
      const cash = reader.accounts.find((a) => a.code === '1000');
      if (!cash) throw new Error('no cash account');
      const pages = reader.pages(cash);
      const first = await pages.next();
      await post({
        kind: 'journal_entry',
        date: '2026-01-01',
        lines: [
          { accountId: f.account('1000'), debitCents: 5 },
          { accountId: f.account('4000'), creditCents: 5 },
        ],
      });
      const lines = [...((first.value as unknown[]) ?? [])];
      for await (const page of pages) lines.push(...page);
      await reader.close();
      expect(lines).toHaveLength(cash.lineCount);
      expect((lines.at(-1) as { runningBalanceCents: number }).runningBalanceCents).toBe(cash.closingBalanceCents);
      const after = await generalLedger(db, f.orgId, { ...RANGE, accountId: f.account('1000') });
      expect(after.accounts[0]?.lines).toHaveLength(cash.lineCount + 1);
    },
  );
});
