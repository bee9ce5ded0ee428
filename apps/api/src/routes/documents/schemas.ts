import { Type } from 'typebox';
import { CompanyParams, DataOf, IsoDate, ListQuery, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';

const strict = { additionalProperties: false } as const;
const NullableString = Type.Union([Type.String(), Type.Null()]);
const Text = (max: number) => Type.Optional(Type.Union([Type.String({ maxLength: max }), Type.Null()]));
const Cents = (description: string) => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

export const DocumentStatus = Type.Enum(
  ['open', 'partially_paid', 'paid', 'partially_applied', 'applied', 'converted', 'void'],
  {
    description:
      'Invoices and bills: open, partially_paid, paid. Credit memos, vendor credits and payments (their ' +
      'unapplied amount): open, partially_applied, applied. Sales and refund receipts: paid. Estimates: open, ' +
      'converted. Any document: void.',
  },
);

export const DocumentTypeSchema = Type.Enum([
  'invoice',
  'customer_payment',
  'sales_receipt',
  'credit_memo',
  'refund_receipt',
  'estimate',
  'bill',
  'vendor_credit',
  'bill_payment',
]);

export const ROUNDING_RULE =
  'Each line amount is quantity × unitPriceCents rounded half-even (banker’s rounding) to the cent, and each ' +
  'line’s tax is its amount × the tax rate’s basis points / 10000 rounded half-even, per line; the subtotal, tax ' +
  'and total are the sums of the rounded line figures.';

export const DocumentLine = Type.Object({
  lineNo: Type.Integer(),
  itemId: Type.Union([Uuid(), Type.Null()]),
  accountId: Uuid('The account the line posts to: its own, or its item’s.'),
  description: NullableString,
  quantity: Type.Number(),
  unitPriceCents: Type.Integer(),
  amountCents: Type.Integer({ description: 'quantity × unitPriceCents, rounded half-even.' }),
  taxRateId: Type.Union([Uuid(), Type.Null()]),
  taxCents: Type.Integer(),
});

export const Allocation = Type.Object({
  paymentId: Uuid(),
  documentId: Uuid('The invoice, bill, credit memo or vendor credit the payment went to.'),
  amountCents: Type.Integer(),
  voided: Type.Boolean({ description: 'True once the payment is void; it then counts nowhere.' }),
});

export const Document = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    type: DocumentTypeSchema,
    status: DocumentStatus,
    number: NullableString,
    contactId: Uuid(),
    date: IsoDate(),
    dueDate: Type.Union([IsoDate(), Type.Null()]),
    memo: NullableString,
    reference: NullableString,
    bankAccountId: Type.Union([Uuid(), Type.Null()]),
    controlAccountId: Type.Union([Uuid(), Type.Null()], {
      description: 'The accounts-receivable or accounts-payable account the document posts to.',
    }),
    subtotalCents: Type.Integer(),
    taxCents: Type.Integer(),
    totalCents: Type.Integer(),
    openBalanceCents: Type.Integer({
      description:
        'Still to pay (invoice, bill), to apply (credit memo, vendor credit) or unapplied (payment); 0 once void.',
    }),
    journalEntryId: Type.Union([Uuid(), Type.Null()], {
      description: 'The posted entry; after an edit, the new one (the old one is void). Null for estimates.',
    }),
    estimateId: Type.Union([Uuid(), Type.Null()]),
    invoiceId: Type.Union([Uuid(), Type.Null()]),
    voidReason: NullableString,
    voidedAt: Type.Union([Timestamp(), Type.Null()]),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
    lines: Type.Array(DocumentLine),
    allocations: Type.Array(Allocation, {
      description: 'For a payment, where it went; for any other document, the payments applied to it.',
    }),
  },
  { title: 'Document' },
);

const LineBody = Type.Object(
  {
    itemId: Type.Optional(Type.Union([Uuid('Item; its income (sales) or expense (purchases) account.'), Type.Null()])),
    accountId: Type.Optional(
      Type.Union([
        Uuid('Account the line posts to; overrides the item’s. Not a receivables or payables account.'),
        Type.Null(),
      ]),
    ),
    description: Text(1000),
    quantity: Type.Optional(
      Type.Number({
        exclusiveMinimum: 0,
        maximum: 1_000_000_000,
        description: 'Default 1. More than zero, at most four decimals.',
      }),
    ),
    unitPriceCents: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: Number.MAX_SAFE_INTEGER,
        description: 'Default: the item’s price. Required on a line by account.',
      }),
    ),
    taxRateId: Type.Optional(Type.Union([Uuid(), Type.Null()])),
  },
  { ...strict, description: 'A line by item or by account (at least one of itemId and accountId).' },
);

const documentFields = {
  contactId: Uuid('A customer (sales documents) or vendor (bills, vendor credits).'),
  date: IsoDate(),
  dueDate: Type.Optional(Type.Union([IsoDate('On or after date. Invoices and bills default to date.'), Type.Null()])),
  number: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 50 }), Type.Null()])),
  memo: Text(1000),
  reference: Text(100),
  bankAccountId: Type.Optional(
    Type.Union([
      Uuid(
        'Sales receipts: the bank or other current asset account the money went into; refund receipts: the bank, ' +
          'card or other current asset account it came out of. Required for those, ignored otherwise.',
      ),
      Type.Null(),
    ]),
  ),
  lines: Type.Array(LineBody, { minItems: 1, maxItems: 500 }),
};

export const CreateDocumentBody = Type.Object(documentFields, { ...strict, description: ROUNDING_RULE });

export const UpdateDocumentBody = Type.Object(
  {
    contactId: Type.Optional(documentFields.contactId),
    date: Type.Optional(documentFields.date),
    dueDate: documentFields.dueDate,
    number: documentFields.number,
    memo: documentFields.memo,
    reference: documentFields.reference,
    bankAccountId: documentFields.bankAccountId,
    lines: Type.Optional(documentFields.lines),
  },
  {
    ...strict,
    minProperties: 1,
    description: `Fields to change; lines, when given, replace all lines. ${ROUNDING_RULE}`,
  },
);

export const VoidBody = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: 500, pattern: NON_BLANK_TEXT }) },
  { ...strict, title: 'VoidRequest' },
);

export const ConvertBody = Type.Object(
  {
    date: Type.Optional(IsoDate('Invoice date; default: the estimate’s date.')),
    dueDate: Type.Optional(Type.Union([IsoDate(), Type.Null()])),
    number: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 50 }), Type.Null()])),
  },
  strict,
);

export const CustomerPaymentBody = Type.Object(
  {
    contactId: Uuid('The customer.'),
    date: IsoDate(),
    depositAccountId: Uuid('Bank or other current asset (undeposited funds) account the money went into.'),
    amountCents: Type.Optional(
      Cents(
        'Amount received. Default: the allocations net of the credits. More than that leaves an unapplied amount ' +
          'on the payment (a credit of the customer); less is 422 ALLOCATION_EXCEEDS_PAYMENT.',
      ),
    ),
    number: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 50 }), Type.Null()])),
    memo: Text(1000),
    reference: Text(100),
    allocations: Type.Array(
      Type.Object(
        { invoiceId: Uuid(), amountCents: Cents('Paid towards this invoice; at most its open balance.') },
        strict,
      ),
      { maxItems: 500, description: 'Invoices of this customer, each at most once.' },
    ),
    credits: Type.Optional(
      Type.Array(
        Type.Object(
          { creditMemoId: Uuid(), amountCents: Cents('Used from this credit memo; at most its open balance.') },
          strict,
        ),
        { maxItems: 500, description: 'Credit memos of this customer applied towards the invoices.' },
      ),
    ),
  },
  { ...strict, title: 'CustomerPaymentRequest' },
);

export const DocumentListQuery = Type.Object({
  ...ListQuery,
  contactId: Type.Optional(Uuid('Only documents of this contact.')),
  status: Type.Optional(DocumentStatus),
  startDate: Type.Optional(IsoDate('Documents dated on or after.')),
  endDate: Type.Optional(IsoDate('Documents dated on or before.')),
});

export const DocumentParams = Type.Object({ id: Uuid('Document id.') });
export const DocumentOne = DataOf(Document);
export const RecordedPaymentOne = DataOf(
  Type.Object(
    {
      ...Document.properties,
      bankTransactionIds: Type.Optional(
        Type.Array(Uuid(), {
          description:
            "The payment's row in the register of the account it was deposited to, when that account holds a bank " +
            'register (matched to the payment, so a feed row of the same deposit is matched to it, not posted again).',
        }),
      ),
    },
    { title: 'RecordedPayment' },
  ),
);
export const DocumentList = PageOf(Document);
export const ConvertResult = Type.Object({ data: Type.Object({ estimate: Document, invoice: Document }) });
export { CompanyParams };
