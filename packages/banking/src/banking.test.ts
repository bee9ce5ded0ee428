import { type DomainError, isDomainError } from '@firm/core';
import { type Db, organizations, pgErrorOf, rowsOf, type Tx } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { createDocument, voidDocument } from '@firm/documents';
import { getEntry, ledgerErrorOf, trialBalance } from '@firm/ledger';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBankAccount } from './accounts';
import {
  excludeBankTransaction,
  includedTaxCents,
  includeBankTransaction,
  matchBankTransaction,
  reclassifyBankTransaction,
  reconcileBankTransaction,
  splitBankTransaction,
} from './actions';
import { matchCandidates } from './candidates';
import { finishReconciliation, openReconciliation, undoReconciliation } from './reconciliations';
import { reconciliationStatus } from './status-report';
import { bankingWrites, createBankingFixture, type BankingFixture } from './testing';
import {
  BANK_TRANSACTION_STATUS_LIST,
  BANK_TRANSACTION_TRANSITIONS,
  type BankTransactionStatus,
  getBankTransaction,
  listBankTransactions,
  moveBankTransaction,
} from './transactions';

let database: TestDatabase;
let db: Db;
let f: BankingFixture;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  f = await createBankingFixture(db);
});
afterAll(() => database.close());

async function refusal(work: Promise<unknown>): Promise<DomainError> {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  );
  const domain = isDomainError(err) ? err : ledgerErrorOf(err);
  if (!domain) throw new Error(`expected a DomainError, got ${String(err)}`);
  return domain;
}

/** Runs `work`, expects the refusal `code`, and checks that nothing at all was written. */
async function refusedWithoutWrites(code: string, work: () => Promise<unknown>) {
  const before = await bankingWrites(db, f.orgId);
  const err = await refusal(work());
  expect(err.code).toBe(code);
  expect(await bankingWrites(db, f.orgId)).toEqual(before);
  return err;
}

const tx = <T>(work: (t: Parameters<Parameters<Db['transaction']>[0]>[0]) => Promise<T>) => db.transaction(work);
const reclassify = (id: string, accountId: string, reason = 'categorize') =>
  tx((t) => reclassifyBankTransaction(t, f.ctx, f.orgId, id, { accountId, reason }));
const invoice = (cents: number, contactId = f.customer.id) =>
  tx((t) =>
    createDocument(t, f.ctx, f.orgId, 'invoice', {
      contactId,
      date: '2026-03-01',
      lines: [{ accountId: f.account('4100'), unitPriceCents: cents }],
    }),
  );
const bill = (cents: number) =>
  tx((t) =>
    createDocument(t, f.ctx, f.orgId, 'bill', {
      contactId: f.vendor.id,
      date: '2026-03-01',
      lines: [{ accountId: f.account('6300'), unitPriceCents: cents }],
    }),
  );

describe('bank accounts', () => {
  it('links only bank and credit-card ledger accounts, once each', async () => {
    const wrongType = await refusal(tx((t) => createBankAccount(t, f.ctx, f.orgId, { accountId: f.account('6100') })));
    expect(wrongType.code).toBe('INVALID_ACCOUNT');
    const taken = await refusal(tx((t) => createBankAccount(t, f.ctx, f.orgId, { accountId: f.account('1000') })));
    expect(taken.code).toBe('BANK_ACCOUNT_TAKEN');
    expect(f.card.accountSubtype).toBe('credit_card');
  });
});

describe('reclassify', () => {
  it('categorizes an unreviewed row by posting its entry, and re-posts on a second reclassify', async () => {
    const id = await f.row({ amountCents: -4_250, description: 'OFFICE DEPOT #12' });
    const first = await reclassify(id, f.account('6300'));
    expect(first).toMatchObject({
      status: 'categorized',
      lines: [{ accountId: f.account('6300'), amountCents: 4_250 }],
    });
    const entry = await getEntry(db, f.orgId, first.journalEntryId as string);
    expect(entry.source).toBe('bank_transaction');
    expect(entry.lines.map((l) => [l.accountId, l.debitCents, l.creditCents])).toEqual([
      [f.account('1000'), 0, 4_250],
      [f.account('6300'), 4_250, 0],
    ]);
    const second = await reclassify(id, f.account('6200'), 'it was lunch');
    expect(second.journalEntryId).not.toBe(first.journalEntryId);
    expect((await getEntry(db, f.orgId, first.journalEntryId as string)).status).toBe('void');
    expect(second.lines).toEqual([expect.objectContaining({ accountId: f.account('6200'), amountCents: 4_250 })]);
  });

  it('refuses an archived account and writes nothing', async () => {
    const id = await f.row({ amountCents: -999 });
    await db.execute(sql`update accounts set archived = true where id = ${f.account('6600')}`);
    await refusedWithoutWrites('INVALID_ACCOUNT', () => reclassify(id, f.account('6600')));
    await db.execute(sql`update accounts set archived = false where id = ${f.account('6600')}`);
  });

  it('refuses a row in a closed period and writes nothing', async () => {
    const id = await f.row({ amountCents: -1_500, date: '2026-01-15' });
    await db.update(organizations).set({ booksClosedThrough: '2026-01-31' }).where(eq(organizations.id, f.orgId));
    await refusedWithoutWrites('PERIOD_CLOSED', () => reclassify(id, f.account('6300')));
    await db.update(organizations).set({ booksClosedThrough: null }).where(eq(organizations.id, f.orgId));
  });
});

describe('sales tax inside a bank amount', () => {
  it('takes the tax out of the included amount, rounding half away from zero', () => {
    expect(includedTaxCents(10_825, 825)).toBe(825);
    expect(includedTaxCents(-10_825, 825)).toBe(-825);
    expect(includedTaxCents(1, 825)).toBe(0);
    expect(includedTaxCents(13, 825)).toBe(1);
    expect(includedTaxCents(12_000, 2_000)).toBe(2_000);
  });

  async function taxRate(bps: number, name: string): Promise<string> {
    const [rate] = rowsOf<{ id: string }>(
      await db.execute(sql`insert into tax_rates (id, organization_id, name, rate_bps, liability_account_id)
        values (gen_random_uuid(), ${f.orgId}, ${name}, ${bps}, ${f.account('2200')}) returning id`),
    );
    return rate?.id as string;
  }

  it('reclassifies with a tax rate: net to the account, tax to the rate’s liability account', async () => {
    const rate = await taxRate(825, 'State 8.25%');
    const id = await f.row({ amountCents: -10_825, description: 'OFFICE DEPOT #77' });
    const done = await tx((t) =>
      reclassifyBankTransaction(t, f.ctx, f.orgId, id, {
        accountId: f.account('6300'),
        reason: 'supplies with tax',
        taxRateId: rate,
      }),
    );
    expect(done).toMatchObject({
      status: 'categorized',
      taxRateId: rate,
      lines: [{ accountId: f.account('6300'), amountCents: 10_825, taxRateId: rate, taxCents: 825 }],
    });
    const entry = await getEntry(db, f.orgId, done.journalEntryId as string);
    expect(entry.lines.map((l) => [l.accountId, l.debitCents, l.creditCents])).toEqual([
      [f.account('1000'), 0, 10_825],
      [f.account('6300'), 10_000, 0],
      [f.account('2200'), 825, 0],
    ]);
  });

  it('splits with a tax rate on one part; refuses a tax rate on a document part or an archived rate', async () => {
    const rate = await taxRate(1_000, 'Ten percent');
    const id = await f.row({ amountCents: -16_000, description: 'MIXED PURCHASE' });
    const done = await tx((t) =>
      splitBankTransaction(t, f.ctx, f.orgId, id, {
        parts: [
          { accountId: f.account('6300'), amountCents: 11_000, taxRateId: rate },
          { accountId: f.account('6200'), amountCents: 5_000 },
        ],
      }),
    );
    expect(done.lines.map((l) => [l.accountId, l.amountCents, l.taxCents])).toEqual([
      [f.account('6300'), 11_000, 1_000],
      [f.account('6200'), 5_000, 0],
    ]);
    const entry = await getEntry(db, f.orgId, done.journalEntryId as string);
    expect(entry.lines.map((l) => [l.accountId, l.debitCents, l.creditCents])).toEqual([
      [f.account('1000'), 0, 16_000],
      [f.account('6300'), 10_000, 0],
      [f.account('2200'), 1_000, 0],
      [f.account('6200'), 5_000, 0],
    ]);

    const bill = await f.row({ amountCents: -2_000 });
    const onDocument = await refusedWithoutWrites('VALIDATION_ERROR', () =>
      tx((t) =>
        splitBankTransaction(t, f.ctx, f.orgId, bill, {
          parts: [{ documentId: f.vendor.id, amountCents: 2_000, taxRateId: rate }],
        }),
      ),
    );
    expect(onDocument.details?.[0]?.field).toBe('parts[0].taxRateId');
    await db.execute(sql`update tax_rates set archived = true where id = ${rate}`);
    const archived = await refusedWithoutWrites('INVALID_TAX_RATE', () =>
      tx((t) =>
        splitBankTransaction(t, f.ctx, f.orgId, bill, {
          parts: [{ accountId: f.account('6300'), amountCents: 2_000, taxRateId: rate }],
        }),
      ),
    );
    expect(archived.details?.[0]?.field).toBe('parts[0].taxRateId');
  });
});

describe('match', () => {
  it('records the payment of an open invoice and marks it paid', async () => {
    const inv = await invoice(120_000);
    const id = await f.row({ amountCents: 120_000, description: 'ACME CORP ACH' });
    const matched = await tx((t) =>
      matchBankTransaction(t, f.ctx, f.orgId, id, { documents: [{ documentId: inv.id }] }),
    );
    expect(matched.status).toBe('matched');
    expect(matched.lines[0]).toMatchObject({ documentId: inv.id, documentType: 'invoice', amountCents: 120_000 });
    expect(matched.lines[0]?.paymentId).toBeTruthy();
    expect(matched.journalEntryIds).toHaveLength(1);
    const [doc] = rowsOf<{ status: string }>(await db.execute(sql`select status from documents where id = ${inv.id}`));
    expect(doc?.status).toBe('paid');
  });

  it('books a difference to the account named, and refuses one without it', async () => {
    const b = await bill(50_000);
    const id = await f.row({ amountCents: -50_250 });
    const err = await refusedWithoutWrites('AMOUNT_MISMATCH', () =>
      tx((t) => matchBankTransaction(t, f.ctx, f.orgId, id, { documents: [{ documentId: b.id }] })),
    );
    expect(err.details?.[0]).toMatchObject({ differenceCents: 250 });
    const matched = await tx((t) =>
      matchBankTransaction(t, f.ctx, f.orgId, id, {
        documents: [{ documentId: b.id }],
        differenceAccountId: f.account('6100'),
      }),
    );
    expect(matched.lines.map((l) => [l.documentId ?? l.accountId, l.amountCents])).toEqual([
      [b.id, 50_000],
      [f.account('6100'), 250],
    ]);
    expect(matched.journalEntryIds).toHaveLength(2);
  });

  it('refuses a paid invoice, a void bill and another contact’s invoice, writing nothing', async () => {
    const paid = await invoice(10_000);
    const first = await f.row({ amountCents: 10_000 });
    await tx((t) => matchBankTransaction(t, f.ctx, f.orgId, first, { documents: [{ documentId: paid.id }] }));
    const again = await f.row({ amountCents: 10_000 });
    await refusedWithoutWrites('INVALID_ALLOCATION', () =>
      tx((t) => matchBankTransaction(t, f.ctx, f.orgId, again, { documents: [{ documentId: paid.id }] })),
    );

    const voided = await bill(7_000);
    await tx((t) => voidDocument(t, f.ctx, f.orgId, 'bill', voided.id, 'duplicate'));
    const out = await f.row({ amountCents: -7_000 });
    await refusedWithoutWrites('INVALID_ALLOCATION', () =>
      tx((t) => matchBankTransaction(t, f.ctx, f.orgId, out, { documents: [{ documentId: voided.id }] })),
    );

    const other = await f.contact('customer', 'Globex');
    const theirs = await invoice(3_000, other.id);
    const row = await f.row({ amountCents: 3_000 });
    await refusedWithoutWrites('INVALID_ALLOCATION', () =>
      tx((t) =>
        matchBankTransaction(t, f.ctx, f.orgId, row, {
          documents: [{ documentId: theirs.id }],
          contactId: f.customer.id,
        }),
      ),
    );
  });
});

describe('match candidates', () => {
  it('offers open invoices for money in, the exact amount first, and never a paid one', async () => {
    const exact = await invoice(4_321);
    const other = await invoice(9_999);
    const paid = await invoice(4_322);
    const first = await f.row({ amountCents: 4_322 });
    await tx((t) => matchBankTransaction(t, f.ctx, f.orgId, first, { documents: [{ documentId: paid.id }] }));
    const id = await f.row({ amountCents: 4_321 });
    const candidates = await matchCandidates(db, f.orgId, id);
    expect(candidates[0]).toMatchObject({ documentId: exact.id, type: 'invoice', exact: true, amountCents: 4_321 });
    expect(candidates.map((c) => c.documentId)).toContain(other.id);
    expect(candidates.map((c) => c.documentId)).not.toContain(paid.id);
    expect(candidates.every((c) => c.type === 'invoice' || c.type === 'customer_payment')).toBe(true);
  });
});

describe('split', () => {
  it('refuses parts that do not add up to the amount, writing nothing', async () => {
    const id = await f.row({ amountCents: -10_000 });
    const err = await refusedWithoutWrites('SPLIT_MISMATCH', () =>
      tx((t) =>
        splitBankTransaction(t, f.ctx, f.orgId, id, {
          parts: [
            { accountId: f.account('6300'), amountCents: 6_000 },
            { accountId: f.account('6200'), amountCents: 3_999 },
          ],
        }),
      ),
    );
    expect(err.details?.[0]).toMatchObject({ partsCents: 9_999, amountCents: 10_000 });
  });

  it('splits across a bill and an account', async () => {
    const b = await bill(6_000);
    const id = await f.row({ amountCents: -10_000 });
    const split = await tx((t) =>
      splitBankTransaction(t, f.ctx, f.orgId, id, {
        parts: [
          { documentId: b.id, amountCents: 6_000 },
          { accountId: f.account('6200'), amountCents: 4_000, description: 'team lunch' },
        ],
      }),
    );
    expect(split.status).toBe('matched');
    expect(split.journalEntryIds).toHaveLength(2);
  });
});

describe('exclude and include', () => {
  it('voids what the row posted and brings it back as unreviewed', async () => {
    const id = await f.row({ amountCents: -2_000 });
    const categorized = await reclassify(id, f.account('6300'));
    const excluded = await tx((t) => excludeBankTransaction(t, f.ctx, f.orgId, id));
    expect(excluded).toMatchObject({ status: 'excluded', journalEntryId: null, lines: [] });
    expect((await getEntry(db, f.orgId, categorized.journalEntryId as string)).status).toBe('void');
    const included = await tx((t) => includeBankTransaction(t, f.ctx, f.orgId, id));
    expect(included.status).toBe('unreviewed');
  });
});

describe('reconciliation', () => {
  it('reconciles a month, refuses what does not belong, finishes only when balanced, and undoes', async () => {
    // A fresh organization so balances are this test's own.
    const g = await createBankingFixture(db);
    const run = <T>(work: (t: Parameters<Parameters<Db['transaction']>[0]>[0]) => Promise<T>) => db.transaction(work);
    const writes = () => bankingWrites(db, g.orgId);
    const deposit = await g.row({ amountCents: 500_000, date: '2026-04-01' });
    const rent = await g.row({ amountCents: -200_000, date: '2026-04-03' });
    const cardRow = await g.row({ amountCents: -4_000, date: '2026-04-04', bankAccountId: g.card.id });
    for (const [id, code] of [
      [deposit, '3000'],
      [rent, '6400'],
      [cardRow, '6500'],
    ] as const) {
      await run((t) => reclassifyBankTransaction(t, g.ctx, g.orgId, id, { accountId: g.account(code), reason: 'r' }));
    }

    let before = await writes();
    expect((await refusal(run((t) => reconcileBankTransaction(t, g.ctx, g.orgId, deposit)))).code).toBe(
      'NO_OPEN_RECONCILIATION',
    );
    expect(await writes()).toEqual(before);

    const session = await run((t) =>
      openReconciliation(t, g.ctx, g.orgId, {
        bankAccountId: g.checking.id,
        statementEndDate: '2026-04-30',
        statementEndingBalanceCents: 299_500,
      }),
    );
    before = await writes();
    expect(
      (
        await refusal(
          run((t) => reconcileBankTransaction(t, g.ctx, g.orgId, cardRow, { reconciliationId: session.id })),
        )
      ).code,
    ).toBe('NO_OPEN_RECONCILIATION');
    expect(await writes()).toEqual(before);
    const unreviewed = await g.row({ amountCents: -100, date: '2026-04-05' });
    before = await writes();
    expect((await refusal(run((t) => reconcileBankTransaction(t, g.ctx, g.orgId, unreviewed)))).code).toBe(
      'INVALID_STATE',
    );
    expect(await writes()).toEqual(before);

    await run((t) => reconcileBankTransaction(t, g.ctx, g.orgId, deposit));
    await run((t) => reconcileBankTransaction(t, g.ctx, g.orgId, rent, { reconciliationId: session.id }));

    before = await writes();
    const unbalanced = await refusal(run((t) => finishReconciliation(t, g.ctx, g.orgId, session.id)));
    expect(unbalanced.code).toBe('RECONCILIATION_UNBALANCED');
    expect(unbalanced.details?.[0]).toMatchObject({ clearedBalanceCents: 300_000, differenceCents: -500 });
    expect(await writes()).toEqual(before);

    // A reconciled row cannot change, in code and in the database.
    before = await writes();
    expect(
      (
        await refusal(
          run((t) => reclassifyBankTransaction(t, g.ctx, g.orgId, rent, { accountId: g.account('6300'), reason: 'x' })),
        )
      ).code,
    ).toBe('ALREADY_RECONCILED');
    expect(
      (await refusal(db.execute(sql`update bank_transactions set amount_cents = 1 where id = ${rent}`))).code,
    ).toBe('ALREADY_RECONCILED');
    expect(await writes()).toEqual(before);

    const finished = await run((t) =>
      finishReconciliation(t, g.ctx, g.orgId, session.id, { adjustmentAccountId: g.account('6100') }),
    );
    expect(finished).toMatchObject({ status: 'finished', clearedBalanceCents: 299_500, differenceCents: 0 });
    expect(finished.adjustmentEntryId).toBeTruthy();

    const [status] = await reconciliationStatus(db, g.orgId, '2026-12-31');
    const tb = await trialBalance(db, g.orgId, { startDate: '2026-01-01', endDate: '2026-12-31' });
    const checkingRow = tb.rows.find((r) => r.accountId === g.account('1000'));
    const statusRow = (await reconciliationStatus(db, g.orgId, '2026-12-31')).find(
      (r) => r.bankAccountId === g.checking.id,
    );
    expect(status).toBeDefined();
    expect(statusRow).toMatchObject({
      lastReconciledDate: '2026-04-30',
      lastReconciledBalanceCents: 299_500,
      unreconciledCount: 0,
      unreviewedCount: 1,
      ledgerBalanceCents: 299_500,
      registerBalanceCents: 299_500,
    });
    expect((checkingRow?.debitCents ?? 0) - (checkingRow?.creditCents ?? 0)).toBe(299_500);

    const undone = await run((t) => undoReconciliation(t, g.ctx, g.orgId, session.id));
    expect(undone.status).toBe('undone');
    expect((await getBankTransaction(db, g.orgId, rent)).reconciled).toBe(false);
    const page = await listBankTransactions(db, g.orgId, { limit: 10, bankAccountId: g.checking.id, reconciled: true });
    expect(page.data).toEqual([]);
  });
});

describe('state moves', () => {
  it('the database allows exactly the moves of the catalogue, and moveBankTransaction refuses the others first', async () => {
    const id = await f.row({ amountCents: 1_000 });
    const ROLLBACK = new Error('rolled back');
    /** Puts the row in `from` and makes one move to `to`, then rolls both back: moved, or why not. */
    const attempt = (from: BankTransactionStatus, move: (tx: Tx) => Promise<unknown>) =>
      db
        .transaction(async (t) => {
          await t.execute(sql`update bank_transactions set status = ${from} where id = ${id}`);
          await move(t);
          throw ROLLBACK;
        })
        .then(
          () => 'committed',
          (err: unknown) =>
            err === ROLLBACK ? 'moved' : isDomainError(err) ? err.code : (pgErrorOf(err)?.constraint ?? err),
        );
    for (const from of BANK_TRANSACTION_STATUS_LIST) {
      for (const to of BANK_TRANSACTION_STATUS_LIST) {
        const allowed = from === to || BANK_TRANSACTION_TRANSITIONS[from].includes(to);
        const byDatabase = await attempt(from, (t) =>
          t.execute(sql`update bank_transactions set status = ${to} where id = ${id}`),
        );
        expect({ from, to, byDatabase }).toEqual({
          from,
          to,
          byDatabase: allowed ? 'moved' : 'bank_transactions_transition',
        });
        const byFunction = await attempt(from, (t) => moveBankTransaction(t, f.ctx, f.orgId, { id, status: from }, to));
        expect({ from, to, byFunction }).toEqual({ from, to, byFunction: allowed ? 'moved' : 'INVALID_STATE' });
      }
    }
    expect((await getBankTransaction(db, f.orgId, id)).status).toBe('unreviewed');
  });
});
