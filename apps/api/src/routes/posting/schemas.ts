import { Type } from 'typebox';
import { CompanyParams, IsoDate, ONE_OF_DEBIT_CREDIT, Timestamp, Uuid } from '../../schemas';

/** Positive whole cents, at most 2^53-1 so that every JSON parser reads it exactly. */
export const Cents = (description = 'Amount in integer cents, greater than zero.') =>
  Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

const Text = (max: number, description?: string) =>
  Type.String({ maxLength: max, ...(description ? { description } : {}) });

const strict = { additionalProperties: false } as const;

// Company-path form: flat bodies with `date` and `…Cents` amounts.

export const CompanyPurchaseBody = Type.Object(
  {
    date: IsoDate(),
    sourceAccountId: Uuid('Bank or credit-card account the money leaves.'),
    amountCents: Cents(),
    categoryAccountId: Uuid('Expense (or other) account the purchase is recorded in.'),
    description: Type.Optional(Text(1000)),
    reference: Type.Optional(Text(100)),
  },
  { ...strict, title: 'CompanyPurchase' },
);

export const CompanyDepositBody = Type.Object(
  {
    date: IsoDate(),
    destinationAccountId: Uuid('Bank account the money arrives in.'),
    amountCents: Cents(),
    categoryAccountId: Uuid('Income (or other) account the deposit is recorded in.'),
    description: Type.Optional(Text(1000)),
    reference: Type.Optional(Text(100)),
  },
  { ...strict, title: 'CompanyDeposit' },
);

export const CompanyTransferBody = Type.Object(
  {
    date: IsoDate(),
    fromAccountId: Uuid('Balance-sheet account the money leaves.'),
    toAccountId: Uuid('Another balance-sheet account the money arrives in.'),
    amountCents: Cents(),
    description: Type.Optional(Text(1000)),
    reference: Type.Optional(Text(100)),
  },
  { ...strict, title: 'CompanyTransfer' },
);

export const CompanyJournalLine = Type.Object(
  {
    accountId: Uuid(),
    description: Type.Optional(Text(1000)),
    debitCents: Type.Optional(Cents('Debit amount; give exactly one of debitCents and creditCents.')),
    creditCents: Type.Optional(Cents('Credit amount; give exactly one of debitCents and creditCents.')),
  },
  { ...strict, ...ONE_OF_DEBIT_CREDIT },
);

export const CompanyJournalEntryBody = Type.Object(
  {
    date: IsoDate(),
    memo: Type.Optional(Text(1000)),
    reference: Type.Optional(Text(100)),
    lines: Type.Array(CompanyJournalLine, { minItems: 2, maxItems: 500, description: 'Debits must equal credits.' }),
  },
  { ...strict, title: 'CompanyJournalEntry' },
);

// Organization-header form: `txnDate`, `memo`, and `lines` with `amount`.

const HeaderLine = Type.Object({ accountId: Uuid(), description: Type.Optional(Text(1000)), amount: Cents() }, strict);

export const HeaderPurchaseBody = Type.Object(
  {
    txnDate: IsoDate(),
    payeeName: Type.Optional(Text(200)),
    sourceAccountId: Uuid('Bank or credit-card account the money leaves.'),
    memo: Type.Optional(Text(1000)),
    lines: Type.Array(HeaderLine, {
      minItems: 1,
      maxItems: 500,
      description: 'Each line debits its account; the source account is credited with the total.',
    }),
  },
  { ...strict, title: 'Purchase' },
);

export const HeaderDepositBody = Type.Object(
  {
    txnDate: IsoDate(),
    payerName: Type.Optional(Text(200)),
    destinationAccountId: Uuid('Bank account the money arrives in.'),
    memo: Type.Optional(Text(1000)),
    lines: Type.Array(HeaderLine, {
      minItems: 1,
      maxItems: 500,
      description: 'Each line credits its account; the destination account is debited with the total.',
    }),
  },
  { ...strict, title: 'Deposit' },
);

export const HeaderTransferBody = Type.Object(
  {
    txnDate: IsoDate(),
    fromAccountId: Uuid(),
    toAccountId: Uuid(),
    amount: Cents(),
    memo: Type.Optional(Text(1000)),
  },
  { ...strict, title: 'Transfer' },
);

export const HeaderJournalEntryBody = Type.Object(
  {
    txnDate: IsoDate(),
    memo: Type.Optional(Text(1000)),
    reference: Type.Optional(Text(100)),
    lines: Type.Array(
      Type.Object(
        {
          accountId: Uuid(),
          description: Type.Optional(Text(1000)),
          postingType: Type.Enum(['debit', 'credit']),
          amount: Cents(),
        },
        strict,
      ),
      { minItems: 2, maxItems: 500, description: 'Debits must equal credits.' },
    ),
  },
  { ...strict, title: 'JournalEntry' },
);

const receiptBase = {
  journalEntryId: Uuid(),
  bankTransactionIds: Type.Optional(
    Type.Array(Uuid(), {
      description:
        'The register rows written with the posting, one per side whose account is linked to a bank account ' +
        '(sourceType posting), in the order of the entry’s lines: for a transfer the receiving account’s row, then ' +
        'the paying one’s. Absent when no side is. The bank’s own row of the same money is later matched to it.',
    }),
  ),
  status: Type.Literal('posted'),
};

export const CompanyReceipt = Type.Object(
  { ...receiptBase, createdAt: Timestamp() },
  { title: 'CompanyPostingReceipt' },
);
export const HeaderReceipt = Type.Object({ ...receiptBase, postedAt: Timestamp() }, { title: 'PostingReceipt' });

export { CompanyParams };
