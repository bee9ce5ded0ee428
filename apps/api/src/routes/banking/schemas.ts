import { BANK_TRANSACTION_STATES, BANK_TRANSACTION_STATUS_LIST, SOURCE_TYPES } from '@firm/banking';
import { Type } from 'typebox';
import { CompanyParams, DataOf, IsoDate, ListQuery, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';
import { Cents } from '../posting/schemas';

const strict = { additionalProperties: false } as const;
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(s: T) => Type.Union([s, Type.Null()]);
const SignedCents = (description: string) =>
  Type.Integer({ minimum: -Number.MAX_SAFE_INTEGER, maximum: Number.MAX_SAFE_INTEGER, description });
const Text = (max: number, description?: string) =>
  Type.String({ maxLength: max, ...(description ? { description } : {}) });

export const BankAccount = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    accountId: Uuid('The ledger account (subtype bank or credit_card) the register belongs to.'),
    accountSubtype: Type.Enum(['bank', 'credit_card']),
    name: Type.String(),
    institution: Nullable(Type.String()),
    mask: Nullable(Type.String({ description: 'Last digits of the account number.' })),
    currency: Type.String({ description: 'ISO 4217 code.' }),
    feedConnectionId: Nullable(Uuid('The bank feed the account syncs from; null when it has none.')),
    feedAccountId: Nullable(Type.String({ description: "The aggregator's id of the account." })),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'BankAccount' },
);

export const CreateBankAccountBody = Type.Object(
  {
    accountId: Uuid('A ledger account of subtype bank or credit_card, not yet linked to a bank account.'),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: NON_BLANK_TEXT })),
    institution: Type.Optional(Nullable(Text(200))),
    mask: Type.Optional(Nullable(Type.String({ pattern: '^[0-9A-Za-z]{2,8}$' }))),
    currency: Type.Optional(Type.String({ pattern: '^[A-Z]{3}$', description: "Default: the organization's." })),
  },
  { ...strict, title: 'CreateBankAccount' },
);

const statusDescription = Object.entries(BANK_TRANSACTION_STATES)
  .map(([s, d]) => `\`${s}\`: ${d}`)
  .join(' ');

export const BankTransactionLine = Type.Object(
  {
    accountId: Nullable(Uuid()),
    documentId: Nullable(Uuid()),
    documentType: Nullable(Type.String()),
    paymentId: Nullable(Uuid('The payment this line recorded for an invoice or bill.')),
    description: Nullable(Type.String()),
    amountCents: SignedCents(
      'In the direction of the bank transaction; negative for a difference going the other way (a fee withheld).',
    ),
    taxRateId: Nullable(Uuid('The sales tax rate inside an account line’s amount.')),
    taxCents: SignedCents(
      'How much of amountCents was tax, posted to the tax rate’s liability account; 0 without one.',
    ),
  },
  { title: 'BankTransactionLine' },
);

export const BankTransaction = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    bankAccountId: Uuid(),
    date: IsoDate(),
    amountCents: SignedCents('Signed: money in positive, money out negative.'),
    description: Type.String(),
    counterparty: Nullable(Type.String()),
    sourceType: Type.Enum(SOURCE_TYPES, {
      description: 'aggregator_bank_feed: synced from a feed. posting: written by a posting route. manual: by us.',
    }),
    status: Type.Enum(BANK_TRANSACTION_STATUS_LIST, { description: statusDescription }),
    pending: Type.Boolean({ description: 'The bank still shows it as pending.' }),
    externalId: Nullable(Type.String()),
    reviewReason: Nullable(Type.String({ description: 'Why the row needs a second look, e.g. amount_changed.' })),
    reconciled: Type.Boolean(),
    reconciliationId: Nullable(Uuid()),
    reconciledAt: Nullable(Timestamp()),
    journalEntryId: Nullable(Uuid('The entry the row posted for its account lines.')),
    journalEntryIds: Type.Array(Uuid(), { description: 'Every entry the row is in the books through.' }),
    documentIds: Type.Array(Uuid(), { description: 'Invoices, bills and payments it settled or recorded.' }),
    contactId: Nullable(Uuid()),
    taxRateId: Nullable(Uuid()),
    lines: Type.Array(BankTransactionLine),
    attachments: Type.Optional(
      Type.Array(
        Type.Object(
          {
            id: Uuid(),
            fileName: Type.String(),
            contentType: Type.String(),
            size: Type.Integer({ description: 'Bytes.' }),
            sha256: Type.String({ description: 'SHA-256 of the bytes, hex.' }),
          },
          { title: 'BankTransactionAttachment' },
        ),
        {
          description:
            'The files attached to the row (receipts, invoices, statements; cited when it was categorized, or ' +
            'attached since), oldest first. GET /api/v1/attachments/{id} reads one with its download link.',
        },
      ),
    ),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'BankTransaction' },
);

/** The attachments a categorization cites: linked to the row and what it posts, in the same transaction. */
const AttachmentIds = Type.Optional(
  Type.Array(Uuid(), {
    minItems: 1,
    maxItems: 10,
    uniqueItems: true,
    description:
      'Attachments of the same company (receipts, invoices) the categorization rests on: each is attached to the ' +
      'bank transaction, to the entry it posts and to the payments it records, in the same transaction, so a ' +
      'refused categorization attaches nothing. An id that is not an attachment of the company is 404 ' +
      'ATTACHMENT_NOT_FOUND, with nothing written.',
  }),
);

export const BankTransactionQuery = Type.Object({
  ...ListQuery,
  bankAccountId: Type.Optional(Uuid()),
  status: Type.Optional(Type.Enum(BANK_TRANSACTION_STATUS_LIST)),
  reconciled: Type.Optional(Type.Boolean()),
  sourceType: Type.Optional(Type.Enum(SOURCE_TYPES)),
  startDate: Type.Optional(IsoDate('Only rows dated on or after.')),
  endDate: Type.Optional(IsoDate('Only rows dated on or before.')),
  minAmountCents: Type.Optional(SignedCents('Only rows of at least this signed amount.')),
  maxAmountCents: Type.Optional(SignedCents('Only rows of at most this signed amount.')),
  q: Type.Optional(
    Type.String({ minLength: 1, maxLength: 200, description: 'Text in the description or counterparty.' }),
  ),
});
export const AccountTransactionQuery = Type.Object(
  Object.fromEntries(Object.entries(BankTransactionQuery.properties).filter(([k]) => k !== 'bankAccountId')),
);

export const ReclassifyBody = Type.Object(
  {
    accountId: Uuid('The account the whole amount is classified to (an active account, not the bank account).'),
    reason: Type.String({
      minLength: 1,
      maxLength: 1000,
      pattern: NON_BLANK_TEXT,
      description: 'Kept in the audit trail.',
    }),
    contactId: Type.Optional(Nullable(Uuid())),
    taxRateId: Type.Optional(
      Nullable(
        Uuid(
          'The sales tax rate inside the bank amount: the tax (amount × rate ÷ (1 + rate), rounded half away from ' +
            'zero) is posted to the rate’s liability account and the rest to accountId.',
        ),
      ),
    ),
    attachmentIds: AttachmentIds,
  },
  { ...strict, title: 'Reclassify' },
);

export const MatchBody = Type.Object(
  {
    documents: Type.Optional(
      Type.Array(
        Type.Object(
          {
            documentId: Uuid(
              'An open invoice or a customer payment (money in), an open bill or a bill payment (money out).',
            ),
            amountCents: Type.Optional(
              Cents("Default: the invoice's or bill's open balance, or the payment's amount."),
            ),
          },
          strict,
        ),
        { minItems: 1, maxItems: 100, description: 'The documents to match; or bankTransactionId instead.' },
      ),
    ),
    bankTransactionId: Type.Optional(
      Uuid(
        'Instead of documents: the register row a posting route wrote for the same money (a match candidate of type ' +
          "posting). The bank's row takes its place and its entry; the amounts must be equal.",
      ),
    ),
    differenceAccountId: Type.Optional(
      Uuid('Where a difference between the documents and the bank amount is posted (fees, discounts).'),
    ),
    contactId: Type.Optional(Uuid('Refuse documents of any other contact.')),
    attachmentIds: AttachmentIds,
  },
  { ...strict, title: 'Match' },
);

export const SplitBody = Type.Object(
  {
    parts: Type.Array(
      Type.Object(
        {
          accountId: Type.Optional(Uuid()),
          documentId: Type.Optional(Uuid('An open invoice or bill (or a payment) as in match.')),
          amountCents: Cents(),
          description: Type.Optional(Text(1000)),
          taxRateId: Type.Optional(
            Uuid(
              'An account part’s sales tax rate: amountCents includes the tax, which is posted to the rate’s ' +
                'liability account and the rest to accountId. Not with documentId.',
            ),
          ),
        },
        strict,
      ),
      { minItems: 1, maxItems: 100, description: 'Each part names exactly one of accountId and documentId.' },
    ),
    contactId: Type.Optional(Uuid()),
    attachmentIds: AttachmentIds,
  },
  { ...strict, title: 'Split' },
);

export const ReconcileBody = Type.Object(
  { reconciliationId: Type.Optional(Uuid('Default: the open reconciliation of the bank account.')) },
  { ...strict, title: 'Reconcile' },
);

export const ExcludeBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: 1000, pattern: NON_BLANK_TEXT })) },
  { ...strict, title: 'Exclude' },
);

export const Reconciliation = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    bankAccountId: Uuid(),
    status: Type.Enum(['open', 'finished', 'undone']),
    statementEndDate: IsoDate(),
    statementEndingBalanceCents: SignedCents("In the register's sign: a card balance owed is negative."),
    openingBalanceCents: SignedCents('The ending balance of the last finished reconciliation; 0 for the first.'),
    clearedBalanceCents: SignedCents('Opening balance plus the transactions reconciled into this one.'),
    differenceCents: SignedCents('Statement ending balance minus cleared balance; 0 to finish.'),
    reconciledCount: Type.Integer(),
    adjustmentEntryId: Nullable(Uuid()),
    finishedAt: Nullable(Timestamp()),
    undoneAt: Nullable(Timestamp()),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Reconciliation' },
);

export const OpenReconciliationBody = Type.Object(
  {
    bankAccountId: Uuid(),
    statementEndDate: IsoDate(),
    statementEndingBalanceCents: SignedCents("The statement's ending balance in the register's sign."),
  },
  { ...strict, title: 'OpenReconciliation' },
);

export const FinishReconciliationBody = Type.Object(
  {
    adjustmentAccountId: Type.Optional(
      Uuid('Post the remaining difference to this account (an adjustment row, reconciled) instead of refusing.'),
    ),
  },
  { ...strict, title: 'FinishReconciliation' },
);

export const ReconciliationQuery = Type.Object({
  ...ListQuery,
  bankAccountId: Type.Optional(Uuid()),
  status: Type.Optional(Type.Enum(['open', 'finished', 'undone'])),
});

export const ReconciliationStatusQuery = Type.Object({
  endDate: Type.Optional(IsoDate('Counts rows dated up to this day. Default: today, UTC.')),
});

export const ReconciliationStatusReport = Type.Object(
  {
    endDate: IsoDate(),
    rows: Type.Array(
      Type.Object({
        bankAccountId: Uuid(),
        name: Type.String(),
        accountId: Uuid(),
        lastReconciledDate: Nullable(IsoDate()),
        lastReconciledBalanceCents: Nullable(SignedCents('The statement balance of the last finished reconciliation.')),
        openReconciliationId: Nullable(Uuid()),
        unreconciledCount: Type.Integer({ description: 'Rows in the books (categorized, matched) not reconciled.' }),
        unreconciledAmountCents: SignedCents('Their sum.'),
        unreviewedCount: Type.Integer(),
        ledgerBalanceCents: SignedCents("The linked ledger account's balance, in the register's sign."),
        registerBalanceCents: SignedCents('The sum of the rows in the books.'),
        feed: Nullable(
          Type.Object({
            connectionId: Uuid(),
            status: Type.String(),
            lastSyncedAt: Nullable(Timestamp()),
            lastError: Nullable(Type.String()),
          }),
        ),
      }),
    ),
  },
  { title: 'BankReconciliationStatus' },
);

export const MatchCandidateList = Type.Object(
  {
    data: Type.Array(
      Type.Object({
        type: Type.Enum(['invoice', 'customer_payment', 'bill', 'bill_payment', 'posting']),
        documentId: Nullable(Uuid('The invoice, bill or payment; null for a posting.')),
        bankTransactionId: Nullable(
          Uuid("A posting's register row, to match with bankTransactionId; null for a document."),
        ),
        journalEntryId: Nullable(Uuid("The posting's entry; null for a document.")),
        number: Nullable(Type.String()),
        contactId: Nullable(Uuid()),
        contactName: Nullable(Type.String({ description: "The contact's name, or a posting's payee." })),
        date: IsoDate(),
        amountCents: Type.Integer({ description: "An invoice's or bill's open balance, a payment's amount." }),
        exact: Type.Boolean({ description: 'The amount equals the bank amount.' }),
      }),
    ),
  },
  { title: 'MatchCandidates' },
);

export const BankAccountListQuery = Type.Object({ ...ListQuery });
export const EmptyBody = Type.Object({}, { ...strict, title: 'Empty' });

export const IdParams = Type.Object({ id: Uuid() });
export const BankAccountOne = DataOf(BankAccount);
export const BankAccountList = PageOf(BankAccount);
export const BankTransactionOne = DataOf(BankTransaction);
export const BankTransactionList = PageOf(BankTransaction);
export const ReconciliationOne = DataOf(Reconciliation);
export const ReconciliationList = PageOf(Reconciliation);
export { CompanyParams };
