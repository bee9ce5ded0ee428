import { isDomainError } from '@firm/core';
import { type Db, documents, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { trialBalance } from '@firm/ledger';
import { sql } from 'drizzle-orm';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agingReport, openDocuments } from './aging';
import { createDocument, type LineDocumentType, updateDocument, voidDocument } from './documents';
import { createPayment, voidPayment } from './payments';
import { createDocumentsFixture } from './testing';

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const day = fc.integer({ min: 0, max: 89 }).map((d) => new Date(Date.UTC(2026, 0, 1 + d)).toISOString().slice(0, 10));

type Op =
  | {
      op: 'doc';
      type: 'invoice' | 'bill' | 'credit_memo' | 'vendor_credit';
      who: number;
      date: string;
      cents: number;
      tax: boolean;
    }
  | {
      op: 'pay';
      side: 'customer_payment' | 'bill_payment';
      who: number;
      date: string;
      picks: number[];
      shares: number[];
      extra: number;
      credit: boolean;
    }
  | { op: 'void'; pick: number }
  | { op: 'edit'; pick: number; date: string; cents: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('doc' as const),
      type: fc.constantFrom('invoice' as const, 'bill' as const, 'credit_memo' as const, 'vendor_credit' as const),
      who: fc.nat(1),
      date: day,
      cents: fc.integer({ min: 1, max: 100_000 }),
      tax: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('pay' as const),
      side: fc.constantFrom('customer_payment' as const, 'bill_payment' as const),
      who: fc.nat(1),
      date: day,
      picks: fc.array(fc.nat(), { minLength: 1, maxLength: 3 }),
      // Share of each document's open balance, in percent; above 100 tries to over-allocate.
      shares: fc.array(fc.integer({ min: 1, max: 120 }), { minLength: 3, maxLength: 3 }),
      extra: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 5_000 })),
      credit: fc.boolean(),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('void' as const), pick: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      op: fc.constant('edit' as const),
      pick: fc.nat(),
      date: day,
      cents: fc.integer({ min: 1, max: 100_000 }),
    }),
  },
);

const EXPECTED = new Set([
  'OVER_ALLOCATION',
  'INVALID_ALLOCATION',
  'DUPLICATE_ALLOCATION',
  'ALLOCATION_EXCEEDS_PAYMENT',
  'ZERO_TOTAL',
  'DOCUMENT_HAS_PAYMENTS',
  'INVALID_STATE',
  'DOCUMENT_NOT_EDITABLE',
]);

describe('open balances under random documents, payments and voids', () => {
  it('keep AR and AP aging equal to their control accounts and never go negative', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 12 }), async (ops) => {
        const f = await createDocumentsFixture(db);
        const customers = [f.customer, await f.contact('customer', 'Second customer')];
        const vendors = [f.vendor, await f.contact('both', 'Second vendor')];
        const rate = await db.execute(sql`
          insert into tax_rates (id, organization_id, name, rate_bps, liability_account_id)
          values (gen_random_uuid(), ${f.orgId}, 'Tax', 825, ${f.account('2200')}) returning id`);
        const taxRateId = rowsOf<{ id: string }>(rate)[0]?.id as string;
        const made: { id: string; type: string }[] = [];
        for (const op of ops) {
          try {
            await db.transaction(async (tx) => {
              if (op.op === 'doc') {
                const sales = op.type === 'invoice' || op.type === 'credit_memo';
                const contact = (sales ? customers : vendors)[op.who];
                const doc = await createDocument(tx, f.ctx, f.orgId, op.type as LineDocumentType, {
                  contactId: contact?.id as string,
                  date: op.date,
                  lines: [
                    {
                      accountId: f.account(sales ? '4000' : '6300'),
                      quantity: 1.5,
                      unitPriceCents: op.cents,
                      taxRateId: op.tax ? taxRateId : null,
                    },
                  ],
                });
                made.push({ id: doc.id, type: doc.type });
              } else if (op.op === 'pay') {
                const customer = op.side === 'customer_payment';
                const contact = (customer ? customers : vendors)[op.who];
                const open = await tx.select().from(documents)
                  .where(sql`${documents.organizationId} = ${f.orgId} and ${documents.contactId} = ${contact?.id}
                    and ${documents.openCents} > 0 and ${documents.status} <> 'void'`);
                const targets = open.filter((d) => d.type === (customer ? 'invoice' : 'bill'));
                const credits = open.filter((d) => d.type === (customer ? 'credit_memo' : 'vendor_credit'));
                if (targets.length === 0) return;
                const chosen = [...new Set(op.picks.map((p) => targets[p % targets.length]))].filter(Boolean);
                const allocations = chosen.map((d, i) => ({
                  documentId: d?.id as string,
                  amountCents: Math.max(1, Math.floor(((d?.openCents ?? 0) * (op.shares[i] ?? 50)) / 100)),
                  field: `allocations[${i}]`,
                }));
                const credit = op.credit ? credits[0] : undefined;
                const creditCents = credit
                  ? Math.min(credit.openCents, Math.max(1, Math.floor((allocations[0]?.amountCents ?? 2) / 2)))
                  : 0;
                const net = allocations.reduce((s, a) => s + a.amountCents, 0) - creditCents;
                const payment = await createPayment(tx, f.ctx, f.orgId, {
                  type: op.side,
                  contactId: contact?.id as string,
                  date: op.date,
                  bankAccountId: f.account('1000'),
                  amountCents: op.extra > 0 ? net + op.extra : undefined,
                  allocations,
                  credits: credit ? [{ documentId: credit.id, amountCents: creditCents, field: 'credits[0]' }] : [],
                });
                made.push({ id: payment.document.id, type: payment.document.type });
              } else if (op.op === 'edit') {
                // Re-posts the entry of a document nothing is applied to; refused once something is.
                const docs = made.filter((m) => m.type !== 'customer_payment' && m.type !== 'bill_payment');
                const target = docs[op.pick % Math.max(docs.length, 1)];
                if (!target) return;
                const sales = target.type === 'invoice' || target.type === 'credit_memo';
                await updateDocument(tx, f.ctx, f.orgId, target.type as LineDocumentType, target.id, {
                  date: op.date,
                  dueDate: null,
                  lines: [{ accountId: f.account(sales ? '4000' : '6300'), unitPriceCents: op.cents }],
                });
              } else if (made.length > 0) {
                const target = made[op.pick % made.length] as { id: string; type: string };
                if (target.type === 'customer_payment' || target.type === 'bill_payment') {
                  await voidPayment(tx, f.ctx, f.orgId, target.type, target.id, 'property test');
                } else {
                  await voidDocument(tx, f.ctx, f.orgId, target.type as LineDocumentType, target.id, 'property test');
                }
              }
            });
          } catch (err) {
            if (!isDomainError(err) || !EXPECTED.has(err.code)) throw err;
          }
        }
        const negative = rowsOf<{ n: number }>(
          await db.execute(
            sql`select count(*)::int as n from documents where organization_id = ${f.orgId} and open_cents < 0`,
          ),
        );
        expect(negative[0]?.n).toBe(0);
        for (const asOf of ['2026-01-15', '2026-02-15', '2026-03-31']) {
          const tb = await trialBalance(db, f.orgId, { endDate: asOf });
          const net = (subtype: string) =>
            tb.rows.filter((r) => r.subtype === subtype).reduce((s, r) => s + r.debitCents - r.creditCents, 0);
          const ar = await agingReport(db, f.orgId, 'receivable', asOf);
          const ap = await agingReport(db, f.orgId, 'payable', asOf);
          expect(ar.totals.totalCents, `AR ${asOf}`).toBe(net('accounts_receivable'));
          expect(ap.totals.totalCents, `AP ${asOf}`).toBe(0 - net('accounts_payable'));
          for (const side of ['receivable', 'payable'] as const) {
            for (const d of await openDocuments(db, f.orgId, side, asOf)) {
              // Owed documents are never below zero; credits and unapplied payments never above.
              if (d.type === 'invoice' || d.type === 'bill') expect(d.openCents).toBeGreaterThan(0);
              else expect(d.openCents).toBeLessThan(0);
            }
          }
        }
      }),
      { numRuns: 15 },
    );
  });
});
