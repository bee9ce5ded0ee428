import { type DomainError, isDomainError } from '@firm/core';
import { accounts, auditEvents, type Db, organizations, outboxEvents } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { and, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEntry, presentEntry } from './entries';
import type { DebitCreditLine } from './lines';
import { postTransaction, type PostingReceipt } from './posting';
import type { PostingInput } from './posting-inputs';
import { trialBalance } from './reports';
import { createLedgerFixture, type LedgerFixture } from './testing';

let database: TestDatabase;
let db: Db;
let f: LedgerFixture;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  f = await createLedgerFixture(db);
});
afterAll(() => database.close());

const post = (input: PostingInput, fixture = f): Promise<PostingReceipt> =>
  db.transaction((tx) => postTransaction(tx, fixture.ctx, fixture.orgId, input));

async function refused(input: PostingInput, fixture = f): Promise<DomainError> {
  const err = await post(input, fixture).then(
    () => null,
    (e: unknown) => e,
  );
  if (!isDomainError(err)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return err;
}

/** An entry's lines as [account code, signed cents], in line order. */
async function linesByCode(entryId: string): Promise<[string, number][]> {
  const codeOf = new Map(
    (await db.select().from(accounts).where(eq(accounts.organizationId, f.orgId))).map((a) => [a.id, a.code]),
  );
  const entry = await getEntry(db, f.orgId, entryId);
  return entry.lines.map((l) => [codeOf.get(l.accountId) ?? '?', l.debitCents - l.creditCents]);
}

describe('postTransaction builds balanced lines from each request shape', () => {
  it('purchase: debits each category line, credits the source with the total', async () => {
    const receipt = await post({
      kind: 'purchase',
      date: '2026-03-02',
      memo: 'Office run',
      payeeName: 'Staples',
      sourceAccountId: f.account('1000'),
      lines: [
        { accountId: f.account('6300'), amountCents: 4599, description: 'Paper' },
        { accountId: f.account('6200'), amountCents: 1250 },
      ],
    });
    expect(receipt.status).toBe('posted');
    expect(receipt.postedAt).toBeInstanceOf(Date);
    expect(await linesByCode(receipt.journalEntryId)).toEqual([
      ['6300', 4599],
      ['6200', 1250],
      ['1000', -5849],
    ]);
    const entry = await getEntry(db, f.orgId, receipt.journalEntryId);
    expect(entry).toMatchObject({ status: 'posted', source: 'purchase', payeeName: 'Staples', totalCents: 5849 });
  });

  it('deposit: debits the destination with the total, credits each line', async () => {
    const receipt = await post({
      kind: 'deposit',
      date: '2026-03-03',
      destinationAccountId: f.account('1000'),
      lines: [
        { accountId: f.account('4000'), amountCents: 10_000 },
        { accountId: f.account('4900'), amountCents: 12 },
      ],
    });
    expect(await linesByCode(receipt.journalEntryId)).toEqual([
      ['1000', 10_012],
      ['4000', -10_000],
      ['4900', -12],
    ]);
  });

  it('transfer: debits the account the money goes to, credits the one it leaves', async () => {
    const receipt = await post({
      kind: 'transfer',
      date: '2026-03-04',
      fromAccountId: f.account('1000'),
      toAccountId: f.account('1010'),
      amountCents: 2500,
    });
    expect(await linesByCode(receipt.journalEntryId)).toEqual([
      ['1010', 2500],
      ['1000', -2500],
    ]);
  });

  it('bill payment: money out of the source into the lines (accounts payable)', async () => {
    const receipt = await post({
      kind: 'bill_payment',
      date: '2026-03-05',
      sourceAccountId: f.account('1000'),
      lines: [{ accountId: f.account('2000'), amountCents: 800 }],
    });
    expect(await linesByCode(receipt.journalEntryId)).toEqual([
      ['2000', 800],
      ['1000', -800],
    ]);
  });

  it('journal entry: balanced lines as given, with their descriptions', async () => {
    const receipt = await post({
      kind: 'journal_entry',
      date: '2026-03-06',
      memo: 'Accrual',
      reference: 'JE-1',
      lines: [
        { accountId: f.account('6800'), debitCents: 30_000, description: 'Audit fee' },
        { accountId: f.account('2000'), creditCents: 30_000 },
      ],
    });
    const entry = await getEntry(db, f.orgId, receipt.journalEntryId);
    expect(entry).toMatchObject({ memo: 'Accrual', reference: 'JE-1', source: 'journal_entry', totalCents: 30_000 });
    expect(entry.lines.map((l) => [l.lineNo, l.debitCents, l.creditCents, l.description])).toEqual([
      [1, 30_000, 0, 'Audit fee'],
      [2, 0, 30_000, null],
    ]);
  });

  it('uses the clock of the context for the receipt and the entry', async () => {
    const now = new Date('2026-03-07T10:11:12.000Z');
    const receipt = await db.transaction((tx) =>
      postTransaction(tx, { ...f.ctx, now }, f.orgId, {
        kind: 'transfer',
        date: '2026-03-07',
        fromAccountId: f.account('1010'),
        toAccountId: f.account('1000'),
        amountCents: 1,
      }),
    );
    expect(receipt).toMatchObject({ createdAt: now, postedAt: now });
    expect((await getEntry(db, f.orgId, receipt.journalEntryId)).postedAt?.toISOString()).toBe(now.toISOString());
  });

  it('writes the audit and outbox events in the same transaction', async () => {
    const receipt = await post({
      kind: 'transfer',
      date: '2026-03-08',
      fromAccountId: f.account('1000'),
      toAccountId: f.account('2100'),
      amountCents: 700,
    });
    const [audit] = await db.select().from(auditEvents).where(eq(auditEvents.resourceId, receipt.journalEntryId));
    expect(audit).toMatchObject({
      firmId: f.firmId,
      organizationId: f.orgId,
      actorKind: 'test',
      actorId: 'tester',
      action: 'entry.posted',
      resourceType: 'journal_entry',
      requestId: 'req-test',
      data: { source: 'transfer', date: '2026-03-08', totalCents: 700, lineCount: 2 },
    });
    const outbox = await db
      .select()
      .from(outboxEvents)
      .where(and(eq(outboxEvents.organizationId, f.orgId), eq(outboxEvents.type, 'entry.posted')));
    const mine = outbox.find((o) => (o.payload as { id: string }).id === receipt.journalEntryId);
    // The event carries the entry exactly as GET /entries/:id returns it.
    const entry = await getEntry(db, f.orgId, receipt.journalEntryId);
    expect(mine).toMatchObject({ firmId: f.firmId, processedAt: null, payload: presentEntry(entry) });
    expect(mine?.payload).toMatchObject({ totalCents: 700, source: 'transfer', status: 'posted' });
  });

  it('leaves nothing behind when the surrounding transaction rolls back', async () => {
    let entryId = '';
    await db
      .transaction(async (tx) => {
        entryId = (
          await postTransaction(tx, f.ctx, f.orgId, {
            kind: 'transfer',
            date: '2026-03-09',
            fromAccountId: f.account('1000'),
            toAccountId: f.account('1010'),
            amountCents: 5,
          })
        ).journalEntryId;
        throw new Error('abort');
      })
      .catch(() => {});
    await expect(getEntry(db, f.orgId, entryId)).rejects.toMatchObject({ code: 'ENTRY_NOT_FOUND' });
    expect(await db.select().from(auditEvents).where(eq(auditEvents.resourceId, entryId))).toEqual([]);
  });
});

describe('postTransaction refuses', () => {
  it('UNBALANCED_ENTRY, with the difference in cents', async () => {
    const err = await refused({
      kind: 'journal_entry',
      date: '2026-03-10',
      lines: [
        { accountId: f.account('6800'), debitCents: 1000 },
        { accountId: f.account('2000'), creditCents: 990 },
      ],
    });
    expect(err.code).toBe('UNBALANCED_ENTRY');
    expect(err.details?.[0]).toMatchObject({ debitCents: 1000, creditCents: 990, differenceCents: 10 });
  });

  it('INVALID_ACCOUNT for a missing, archived or other-tenant account, with one message for all three', async () => {
    const other = await createLedgerFixture(db);
    const [archived] = await db
      .insert(accounts)
      .values({
        organizationId: f.orgId,
        code: '6999',
        name: 'Old',
        type: 'expense',
        subtype: 'expense',
        archived: true,
      })
      .returning();
    const candidates = {
      missing: '0190a0a0-0000-7000-8000-000000000000',
      archived: archived?.id as string,
      otherTenant: other.account('6300'),
    };
    const messages = new Set<string>();
    for (const [what, accountId] of Object.entries(candidates)) {
      const err = await refused({
        kind: 'purchase',
        date: '2026-03-10',
        sourceAccountId: f.account('1000'),
        lines: [{ accountId, amountCents: 100 }],
      });
      expect(err.code, what).toBe('INVALID_ACCOUNT');
      expect(err.details, what).toEqual([
        { field: 'lines[0].accountId', message: 'not an active account of this organization' },
      ]);
      messages.add(err.message.replace(accountId, '<id>'));
    }
    expect(messages.size).toBe(1);
    expect(
      (
        await refused({
          kind: 'transfer',
          date: '2026-03-10',
          fromAccountId: 'nope',
          toAccountId: f.account('1000'),
          amountCents: 1,
        })
      ).code,
    ).toBe('INVALID_ACCOUNT');
  });

  it('INVALID_ACCOUNT when the organization is not the acting firm’s', async () => {
    const other = await createLedgerFixture(db);
    const err = await refused(
      {
        kind: 'transfer',
        date: '2026-03-10',
        fromAccountId: f.account('1000'),
        toAccountId: f.account('1010'),
        amountCents: 1,
      },
      { ...f, ctx: other.ctx },
    );
    expect(err.code).toBe('INVALID_ACCOUNT');
  });

  it('INVALID_TRANSFER between the same account or into an income or expense account', async () => {
    const same = await refused({
      kind: 'transfer',
      date: '2026-03-10',
      fromAccountId: f.account('1000'),
      toAccountId: f.account('1000'),
      amountCents: 100,
    });
    expect(same.code).toBe('INVALID_TRANSFER');
    const income = await refused({
      kind: 'transfer',
      date: '2026-03-10',
      fromAccountId: f.account('1000'),
      toAccountId: f.account('4000'),
      amountCents: 100,
    });
    expect(income).toMatchObject({ code: 'INVALID_TRANSFER', details: [{ field: 'toAccountId' }] });
    // Equity and liabilities are balance-sheet accounts too.
    await post({
      kind: 'transfer',
      date: '2026-03-10',
      fromAccountId: f.account('3000'),
      toAccountId: f.account('2700'),
      amountCents: 1,
    });
  });

  it('PERIOD_CLOSED for a date on or before the books-closed date', async () => {
    const g = await createLedgerFixture(db);
    await db.update(organizations).set({ booksClosedThrough: '2026-02-28' }).where(eq(organizations.id, g.orgId));
    const input: PostingInput = {
      kind: 'transfer',
      date: '2026-02-28',
      fromAccountId: g.account('1000'),
      toAccountId: g.account('1010'),
      amountCents: 100,
    };
    const err = await refused(input, g);
    expect(err.code).toBe('PERIOD_CLOSED');
    expect(err.message).toMatch(/closed through 2026-02-28/);
    await post({ ...input, date: '2026-03-01' }, g);
  });

  it('VALIDATION_ERROR for malformed amounts, lines and dates', async () => {
    // Shapes a type-checked caller could not send, but an untyped one (JSON) can.
    const jl = (lines: unknown[], date = '2026-03-10'): PostingInput => ({
      kind: 'journal_entry',
      date,
      lines: lines as DebitCreditLine[],
    });
    const cash = f.account('1000');
    const fees = f.account('6100');
    const cases: [string, PostingInput, string][] = [
      [
        'both sides',
        jl([
          { accountId: fees, debitCents: 5, creditCents: 5 },
          { accountId: cash, creditCents: 5 },
        ]),
        'lines[0]',
      ],
      ['no side', jl([{ accountId: fees }, { accountId: cash, creditCents: 5 }]), 'lines[0]'],
      [
        'zero',
        jl([
          { accountId: fees, debitCents: 0 },
          { accountId: cash, creditCents: 0 },
        ]),
        'lines[0].debitCents',
      ],
      [
        'negative',
        jl([
          { accountId: fees, debitCents: -5 },
          { accountId: cash, creditCents: -5 },
        ]),
        'lines[0].debitCents',
      ],
      [
        'fraction',
        jl([
          { accountId: fees, debitCents: 1.5 },
          { accountId: cash, creditCents: 1.5 },
        ]),
        'lines[0].debitCents',
      ],
      ['one line', jl([{ accountId: fees, debitCents: 5 }]), 'lines'],
      [
        'bad date',
        jl(
          [
            { accountId: fees, debitCents: 5 },
            { accountId: cash, creditCents: 5 },
          ],
          '2026-02-30',
        ),
        'date',
      ],
      ['empty purchase', { kind: 'purchase', date: '2026-03-10', sourceAccountId: cash, lines: [] }, 'lines'],
      [
        'transfer of nothing',
        { kind: 'transfer', date: '2026-03-10', fromAccountId: cash, toAccountId: f.account('1010'), amountCents: 0 },
        'amountCents',
      ],
    ];
    for (const [what, input, field] of cases) {
      const err = await refused(input);
      expect(err.code, what).toBe('VALIDATION_ERROR');
      expect(err.details?.[0]?.field, what).toBe(field);
    }
  });

  it('and a refused posting changes no balance', async () => {
    const before = await trialBalance(db, f.orgId, { endDate: '2026-12-31' });
    await refused({
      kind: 'journal_entry',
      date: '2026-03-10',
      lines: [
        { accountId: f.account('6800'), debitCents: 1 },
        { accountId: f.account('2000'), creditCents: 2 },
      ],
    });
    expect(await trialBalance(db, f.orgId, { endDate: '2026-12-31' })).toEqual(before);
  });
});
