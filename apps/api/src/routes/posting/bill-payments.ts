import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { recordPayment } from '@firm/banking';
import type { PaymentInput } from '@firm/documents';
import type { FastifyRequest } from 'fastify';
import { type Static, Type } from 'typebox';
import { errorResponses } from '../../errors/responses';
import { IdempotencyHeaders, runIdempotent } from '../../plugins/idempotency';
import { IsoDate, Uuid } from '../../schemas';
import { ledgerContext } from '../context';
import { CompanyParams, CompanyReceipt, Cents, HeaderReceipt } from './schemas';

const strict = { additionalProperties: false } as const;
const Text = (max: number) => Type.Optional(Type.String({ maxLength: max }));

const allocations = Type.Array(
  Type.Object({ billId: Uuid(), amountCents: Cents('Paid towards this bill; at most its open balance.') }, strict),
  { minItems: 1, maxItems: 500, description: 'Bills of this vendor, each at most once.' },
);
const credits = Type.Optional(
  Type.Array(
    Type.Object(
      { vendorCreditId: Uuid(), amountCents: Cents('Used from this vendor credit; at most its open balance.') },
      strict,
    ),
    { maxItems: 500, description: 'Vendor credits of this vendor applied towards the bills.' },
  ),
);
const common = {
  sourceAccountId: Uuid('The paying account: a bank or credit-card account, credited with the amount.'),
  vendorId: Uuid('The vendor whose bills are paid.'),
  amountCents: Type.Optional(
    Cents(
      'Amount paid. Default: the allocations net of the credits. More leaves an unapplied amount (a prepayment); ' +
        'less is 422 ALLOCATION_EXCEEDS_PAYMENT.',
    ),
  ),
  allocations,
  credits,
};

export const CompanyBillPaymentBody = Type.Object(
  { date: IsoDate(), ...common, description: Text(1000), reference: Text(100) },
  { ...strict, title: 'CompanyBillPayment' },
);

export const HeaderBillPaymentBody = Type.Object(
  { txnDate: IsoDate(), ...common, memo: Text(1000), reference: Text(100) },
  { ...strict, title: 'BillPayment' },
);

const DESCRIPTION =
  'Pays existing bills of one vendor and allocates the payment: debits accounts payable, credits the paying ' +
  'account, and lowers each bill’s open balance (open -> partially_paid -> paid). Allocations are checked under ' +
  'row locks and by the database: more than a bill’s open balance is 422 OVER_ALLOCATION, the same bill twice ' +
  '422 DUPLICATE_ALLOCATION, a bill of another vendor or organization, a void or unknown bill 422 ' +
  'INVALID_ALLOCATION. The payment is then listed under GET /bill-payments.';

const POSTING_ERRORS = errorResponses(409, 415, 422);

function toInput(
  b: Static<typeof CompanyBillPaymentBody> | Static<typeof HeaderBillPaymentBody>,
  date: string,
  memo: string | undefined,
): PaymentInput {
  return {
    type: 'bill_payment',
    contactId: b.vendorId,
    date,
    bankAccountId: b.sourceAccountId,
    amountCents: b.amountCents,
    memo,
    reference: b.reference,
    allocations: b.allocations.map((a, i) => ({
      documentId: a.billId,
      amountCents: a.amountCents,
      field: `allocations[${i}]`,
    })),
    credits: (b.credits ?? []).map((c, i) => ({
      documentId: c.vendorCreditId,
      amountCents: c.amountCents,
      field: `credits[${i}]`,
    })),
  };
}

/** The fifth posting route, in both forms, through the same idempotent path as the others. */
export const billPaymentPostingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const post =
    (request: FastifyRequest, input: PaymentInput, stamp: 'postedAt' | 'createdAt') =>
    (reply: Parameters<typeof runIdempotent>[1]) =>
      runIdempotent(request, reply, async (tx) => {
        // A paying account with a bank register gets the payment's register row in the same transaction.
        const { receipt, bankTransactionIds } = await recordPayment(
          tx,
          ledgerContext(request),
          request.organization.id,
          input,
        );
        return {
          status: 201,
          body: {
            journalEntryId: receipt.journalEntryId,
            ...(bankTransactionIds.length > 0 ? { bankTransactionIds } : {}),
            status: receipt.status,
            [stamp]: receipt.postedAt.toISOString(),
          },
        };
      });

  app.post(
    '/bill-payments',
    {
      config: { scope: 'entries:write', organization: 'header' },
      schema: {
        tags: ['posting'],
        summary: 'Post a bill payment',
        description: `${DESCRIPTION} Organization-header form (legacy). Requires Idempotency-Key.`,
        headers: IdempotencyHeaders,
        body: HeaderBillPaymentBody,
        response: { 201: HeaderReceipt, ...POSTING_ERRORS },
      },
    },
    async (request, reply) =>
      post(request, toInput(request.body, request.body.txnDate, request.body.memo), 'postedAt')(reply),
  );

  app.post(
    '/companies/:companyId/bill-payments',
    {
      config: { scope: 'entries:write', organization: 'path' },
      schema: {
        tags: ['posting'],
        summary: 'Post a bill payment (company path)',
        description: `${DESCRIPTION} Company-path form. Requires Idempotency-Key.`,
        params: CompanyParams,
        headers: IdempotencyHeaders,
        body: CompanyBillPaymentBody,
        response: { 201: CompanyReceipt, ...POSTING_ERRORS },
      },
    },
    async (request, reply) =>
      post(request, toInput(request.body, request.body.date, request.body.description), 'createdAt')(reply),
  );
};
