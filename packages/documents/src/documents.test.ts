import { type DomainError, isDomainError } from '@firm/core';
import { type Db, documentAllocations, documents, journalEntries, outboxEvents, organizations } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { getEntry, trialBalance } from '@firm/ledger';
import { and, count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agingReport, contactStatement } from './aging';
import {
  convertEstimate,
  createDocument,
  type DocumentInput,
  type LineDocumentType,
  updateDocument,
  voidDocument,
} from './documents';
import { createItem, createTaxRate } from './items';
import { createPayment, type PaymentInput, voidPayment } from './payments';
import { createDocumentsFixture, type DocumentsFixture } from './testing';

let database: TestDatabase;
let db: Db;
let f: DocumentsFixture;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  f = await createDocumentsFixture(db);
});
afterAll(() => database.close());

const create = (type: LineDocumentType, input: DocumentInput, fixture = f) =>
  db.transaction((tx) => createDocument(tx, fixture.ctx, fixture.orgId, type, input));
const pay = (input: PaymentInput, fixture = f) =>
  db.transaction((tx) => createPayment(tx, fixture.ctx, fixture.orgId, input));

async function refusal(work: Promise<unknown>): Promise<DomainError> {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  );
  if (!isDomainError(err)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return err;
}

const documentCount = async () =>
  (await db.select({ n: count() }).from(documents).where(eq(documents.organizationId, f.orgId)))[0]?.n;

const bill = (cents: number, date = '2026-03-01', vendorId = f.vendor.id) =>
  create('bill', { contactId: vendorId, date, lines: [{ accountId: f.account('6300'), unitPriceCents: cents }] });

describe('documents with lines', () => {
  it('posts an invoice: receivables debited with the total, income and tax credited, half-even per line', async () => {
    const tax = await db.transaction((tx) =>
      createTaxRate(tx, f.ctx, f.orgId, { name: 'State 8.25%', rateBps: 825, liabilityAccountId: f.account('2200') }),
    );
    const item = await db.transaction((tx) =>
      createItem(tx, f.ctx, f.orgId, {
        name: 'Consulting hour',
        unitPriceCents: 15_000,
        incomeAccountId: f.account('4100'),
      }),
    );
    const invoice = await create('invoice', {
      contactId: f.customer.id,
      date: '2026-03-01',
      dueDate: '2026-03-31',
      number: 'INV-1',
      lines: [
        { itemId: item.id, quantity: 2.5, taxRateId: tax.id },
        { accountId: f.account('4000'), quantity: 0.5, unitPriceCents: 101, description: '50.5 -> 50 (even)' },
      ],
    });
    expect(invoice).toMatchObject({
      status: 'open',
      subtotalCents: 37_550,
      taxCents: 3094,
      totalCents: 40_644,
      openCents: 40_644,
    });
    expect(invoice.lines.map((l) => l.amountCents)).toEqual([37_500, 50]);
    const entry = await getEntry(db, f.orgId, invoice.journalEntryId as string);
    expect(entry).toMatchObject({ status: 'posted', source: 'invoice', totalCents: 40_644 });
    const events = await db.select().from(outboxEvents).where(eq(outboxEvents.type, 'invoice.created'));
    expect(events.at(-1)?.payload).toMatchObject({ id: invoice.id, totalCents: 40_644 });
  });

  it('refuses a line with neither item nor account, a wrong contact kind, another tenant tax rate; writes nothing', async () => {
    const other = await createDocumentsFixture(db);
    const otherRate = await db.transaction((tx) =>
      createTaxRate(tx, other.ctx, other.orgId, {
        name: 'Other',
        rateBps: 500,
        liabilityAccountId: other.account('2200'),
      }),
    );
    const before = await documentCount();
    const base = { contactId: f.customer.id, date: '2026-03-02' };
    expect((await refusal(create('invoice', { ...base, lines: [{ unitPriceCents: 100 }] }))).code).toBe(
      'LINE_TARGET_REQUIRED',
    );
    expect((await refusal(bill(100, '2026-03-02', f.customer.id))).code).toBe('WRONG_CONTACT_KIND');
    expect(
      (
        await refusal(
          create('invoice', {
            ...base,
            lines: [{ accountId: f.account('4000'), unitPriceCents: 100, taxRateId: otherRate.id }],
          }),
        )
      ).code,
    ).toBe('INVALID_TAX_RATE');
    expect(
      (await refusal(create('invoice', { ...base, lines: [{ accountId: f.account('1200'), unitPriceCents: 100 }] })))
        .code,
    ).toBe('INVALID_ACCOUNT');
    expect(
      (
        await refusal(
          create('invoice', {
            ...base,
            contactId: other.customer.id,
            lines: [{ accountId: f.account('4000'), unitPriceCents: 1 }],
          }),
        )
      ).code,
    ).toBe('INVALID_CONTACT');
    expect(await documentCount()).toBe(before);
  });

  it('refuses a document dated in a closed period and writes nothing', async () => {
    const g = await createDocumentsFixture(db);
    await db.update(organizations).set({ booksClosedThrough: '2026-01-31' }).where(eq(organizations.id, g.orgId));
    const err = await refusal(
      create(
        'bill',
        { contactId: g.vendor.id, date: '2026-01-15', lines: [{ accountId: g.account('6300'), unitPriceCents: 100 }] },
        g,
      ),
    );
    expect(err.code).toBe('PERIOD_CLOSED');
    expect((await db.select({ n: count() }).from(documents).where(eq(documents.organizationId, g.orgId)))[0]?.n).toBe(
      0,
    );
    expect(
      (await db.select({ n: count() }).from(journalEntries).where(eq(journalEntries.organizationId, g.orgId)))[0]?.n,
    ).toBe(0);
  });

  it('edits an unpaid bill by voiding its entry and posting a new one; refuses once a payment is applied', async () => {
    const b = await bill(10_000);
    const edited = await db.transaction((tx) =>
      updateDocument(tx, f.ctx, f.orgId, 'bill', b.id, {
        lines: [{ accountId: f.account('6400'), unitPriceCents: 12_000 }],
      }),
    );
    expect(edited).toMatchObject({ totalCents: 12_000, openCents: 12_000, status: 'open' });
    expect(edited.journalEntryId).not.toBe(b.journalEntryId);
    expect((await getEntry(db, f.orgId, b.journalEntryId as string)).status).toBe('void');
    await pay({
      type: 'bill_payment',
      contactId: f.vendor.id,
      date: '2026-03-05',
      bankAccountId: f.account('1000'),
      allocations: [{ documentId: b.id, amountCents: 2_000, field: 'allocations[0]' }],
    });
    const err = await refusal(db.transaction((tx) => updateDocument(tx, f.ctx, f.orgId, 'bill', b.id, { memo: 'x' })));
    expect(err.code).toBe('DOCUMENT_NOT_EDITABLE');
    expect((await refusal(db.transaction((tx) => voidDocument(tx, f.ctx, f.orgId, 'bill', b.id, 'dup')))).code).toBe(
      'DOCUMENT_HAS_PAYMENTS',
    );
  });

  it('converts an estimate into an invoice once', async () => {
    const estimate = await create('estimate', {
      contactId: f.customer.id,
      date: '2026-03-03',
      lines: [{ accountId: f.account('4100'), quantity: 3, unitPriceCents: 5_000 }],
    });
    expect(estimate).toMatchObject({ status: 'open', totalCents: 15_000, journalEntryId: null });
    const { estimate: converted, invoice } = await db.transaction((tx) =>
      convertEstimate(tx, f.ctx, f.orgId, estimate.id, {}),
    );
    expect(converted).toMatchObject({ status: 'converted', invoiceId: invoice.id });
    expect(invoice).toMatchObject({ type: 'invoice', totalCents: 15_000, estimateId: estimate.id, status: 'open' });
    expect((await refusal(db.transaction((tx) => convertEstimate(tx, f.ctx, f.orgId, estimate.id, {})))).code).toBe(
      'INVALID_STATE',
    );
  });
});

describe('payments and allocation', () => {
  it('moves a bill open -> partially_paid -> paid, and a void reopens it', async () => {
    const b = await bill(5_000);
    const p1 = await pay({
      type: 'bill_payment',
      contactId: f.vendor.id,
      date: '2026-03-10',
      bankAccountId: f.account('1000'),
      allocations: [{ documentId: b.id, amountCents: 2_000, field: 'allocations[0]' }],
    });
    const after1 = await db.select().from(documents).where(eq(documents.id, b.id));
    expect(after1[0]).toMatchObject({ status: 'partially_paid', openCents: 3_000 });
    await pay({
      type: 'bill_payment',
      contactId: f.vendor.id,
      date: '2026-03-11',
      bankAccountId: f.account('2100'),
      allocations: [{ documentId: b.id, amountCents: 3_000, field: 'allocations[0]' }],
    });
    expect((await db.select().from(documents).where(eq(documents.id, b.id)))[0]).toMatchObject({
      status: 'paid',
      openCents: 0,
    });
    const updated = await db.select().from(outboxEvents).where(eq(outboxEvents.type, 'bill.updated'));
    expect(updated.at(-1)?.payload).toMatchObject({ id: b.id, status: 'paid', openBalanceCents: 0 });
    await db.transaction((tx) => voidPayment(tx, f.ctx, f.orgId, 'bill_payment', p1.document.id, 'bounced'));
    expect((await db.select().from(documents).where(eq(documents.id, b.id)))[0]).toMatchObject({
      status: 'partially_paid',
      openCents: 2_000,
    });
  });

  it('refuses over-allocation, duplicates, allocations above the amount, void and other-vendor bills', async () => {
    const b = await bill(1_000);
    const other = await f.contact('vendor', `Other vendor ${Math.random()}`);
    const otherBill = await bill(1_000, '2026-03-01', other.id);
    const voided = await bill(1_000);
    await db.transaction((tx) => voidDocument(tx, f.ctx, f.orgId, 'bill', voided.id, 'entered twice'));
    const base = {
      type: 'bill_payment' as const,
      contactId: f.vendor.id,
      date: '2026-03-12',
      bankAccountId: f.account('1000'),
    };
    const allocationsBefore = (await db.select({ n: count() }).from(documentAllocations))[0]?.n;
    const cases: [PaymentInput, string][] = [
      [{ ...base, allocations: [{ documentId: b.id, amountCents: 1_001, field: 'a' }] }, 'OVER_ALLOCATION'],
      [
        {
          ...base,
          allocations: [
            { documentId: b.id, amountCents: 1, field: 'a' },
            { documentId: b.id, amountCents: 1, field: 'b' },
          ],
        },
        'DUPLICATE_ALLOCATION',
      ],
      [
        { ...base, amountCents: 500, allocations: [{ documentId: b.id, amountCents: 600, field: 'a' }] },
        'ALLOCATION_EXCEEDS_PAYMENT',
      ],
      [{ ...base, allocations: [{ documentId: voided.id, amountCents: 1, field: 'a' }] }, 'INVALID_ALLOCATION'],
      [{ ...base, allocations: [{ documentId: otherBill.id, amountCents: 1, field: 'a' }] }, 'INVALID_ALLOCATION'],
      [
        { ...base, date: '2026-02-28', allocations: [{ documentId: b.id, amountCents: 1, field: 'a' }] },
        'INVALID_ALLOCATION',
      ],
    ];
    for (const [input, code] of cases) expect((await refusal(pay(input))).code).toBe(code);
    expect((await db.select({ n: count() }).from(documentAllocations))[0]?.n).toBe(allocationsBefore);
    expect((await db.select().from(documents).where(eq(documents.id, b.id)))[0]?.openCents).toBe(1_000);
  });

  it('lets only one of two racing payments take the last of a bill', async () => {
    const b = await bill(10_000);
    const attempt = () =>
      pay({
        type: 'bill_payment',
        contactId: f.vendor.id,
        date: '2026-03-15',
        bankAccountId: f.account('1000'),
        allocations: [{ documentId: b.id, amountCents: 6_000, field: 'allocations[0]' }],
      }).then(
        () => 'ok',
        (e: unknown) => (isDomainError(e) ? e.code : String(e)),
      );
    const results = await Promise.all([attempt(), attempt(), attempt()]);
    expect(results.sort()).toEqual(['OVER_ALLOCATION', 'OVER_ALLOCATION', 'ok']);
    expect((await db.select().from(documents).where(eq(documents.id, b.id)))[0]?.openCents).toBe(4_000);
  });

  it('has the database refuse an allocation to another contact or a later document whatever the code does', async () => {
    const b = await bill(100, '2026-03-20');
    const p = await pay({
      type: 'bill_payment',
      contactId: f.vendor.id,
      date: '2026-03-21',
      bankAccountId: f.account('1000'),
      allocations: [{ documentId: b.id, amountCents: 50, field: 'allocations[0]' }],
    });
    const otherVendor = await f.contact('vendor', `Raw insert vendor ${Math.random()}`);
    const foreign = await bill(100, '2026-03-01', otherVendor.id);
    const later = await bill(100, '2026-03-25');
    for (const targetId of [foreign.id, later.id]) {
      const err = await db
        .insert(documentAllocations)
        .values({ organizationId: f.orgId, paymentId: p.document.id, targetId, amountCents: 1 })
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(String((err as { cause?: unknown })?.cause ?? err)).toMatch(/INVALID_ALLOCATION/);
    }
  });

  it('has the database refuse an open balance below zero whatever the code does', async () => {
    const b = await bill(100);
    const err = await db
      .update(documents)
      .set({ openCents: -1 })
      .where(and(eq(documents.id, b.id)))
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(String((err as { cause?: unknown })?.cause ?? err)).toMatch(/documents_open_within_total/);
    const wrongStatus = await db
      .update(documents)
      .set({ status: 'paid' })
      .where(eq(documents.id, b.id))
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(String((wrongStatus as { cause?: unknown })?.cause ?? wrongStatus)).toMatch(
      /documents_status_follows_balance/,
    );
  });
});

describe('aging', () => {
  it('buckets receivables by days past due and reconciles with the control account', async () => {
    const g = await createDocumentsFixture(db);
    const inv = (date: string, dueDate: string, cents: number) =>
      create(
        'invoice',
        { contactId: g.customer.id, date, dueDate, lines: [{ accountId: g.account('4000'), unitPriceCents: cents }] },
        g,
      );
    const a = await inv('2026-01-01', '2026-01-01', 10_000); // 120 days past due on 2026-05-01
    await inv('2026-04-01', '2026-04-15', 2_000); // 16 days
    await inv('2026-04-20', '2026-05-20', 3_000); // current
    await create(
      'credit_memo',
      { contactId: g.customer.id, date: '2026-04-25', lines: [{ accountId: g.account('4000'), unitPriceCents: 500 }] },
      g,
    );
    await pay(
      {
        type: 'customer_payment',
        contactId: g.customer.id,
        date: '2026-04-30',
        bankAccountId: g.account('1000'),
        amountCents: 5_000,
        allocations: [{ documentId: a.id, amountCents: 4_000, field: 'allocations[0]' }],
      },
      g,
    );
    const report = await agingReport(db, g.orgId, 'receivable', '2026-05-01');
    // Credits and unapplied payments age from their own date: 6 and 1 days.
    expect(report.totals).toEqual({
      currentCents: 3_000,
      days1To30Cents: 2_000 - 500 - 1_000,
      days31To60Cents: 0,
      days61To90Cents: 0,
      over90Cents: 6_000,
      totalCents: 9_500,
    });
    expect(report.controlAccountBalanceCents).toBe(9_500);
    const tb = await trialBalance(db, g.orgId, { endDate: '2026-05-01' });
    const ar = tb.rows
      .filter((r) => r.subtype === 'accounts_receivable')
      .reduce((s, r) => s + r.debitCents - r.creditCents, 0);
    expect(ar).toBe(report.totals.totalCents);
    // Before the payment, the invoice was fully open.
    const earlier = await agingReport(db, g.orgId, 'receivable', '2026-04-29');
    expect(earlier.totals.totalCents).toBe(14_500);
    const statement = await contactStatement(db, g.orgId, g.customer.id, '2026-05-01');
    expect(statement.receivableCents).toBe(9_500);
    expect(statement.documents).toHaveLength(5);
  });
});
