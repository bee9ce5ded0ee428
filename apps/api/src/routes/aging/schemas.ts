import { Type } from 'typebox';
import { CompanyParams, IsoDate, Uuid } from '../../schemas';

export const AgingQuery = Type.Object({
  asOf: Type.Optional(IsoDate('The date the report is as of. Default: today, UTC.')),
});

const buckets = {
  currentCents: Type.Integer({ description: 'Not yet past due.' }),
  days1To30Cents: Type.Integer(),
  days31To60Cents: Type.Integer(),
  days61To90Cents: Type.Integer(),
  over90Cents: Type.Integer(),
  totalCents: Type.Integer(),
};

export const AGING_RULES =
  'Open balances by contact as of asOf, bucketed by days past the due date: current (not yet due), 1-30, 31-60, ' +
  '61-90, over 90. Invoices and bills count positive; credit memos, vendor credits and unapplied payments count ' +
  'negative and age from their own date. A document counts from its date and an allocation from the later of its ' +
  'payment’s and its document’s dates, so totalCents equals controlAccountBalanceCents, the balance of the ' +
  'receivables (payables) accounts in the trial balance at the same date, as long as those accounts are posted ' +
  'only through documents.';

export const AgingReport = Type.Object(
  {
    side: Type.Enum(['receivable', 'payable']),
    asOf: IsoDate(),
    contacts: Type.Array(Type.Object({ contactId: Uuid(), contactName: Type.String(), ...buckets })),
    totals: Type.Object(buckets),
    controlAccountBalanceCents: Type.Integer({
      description: 'Balance of the accounts-receivable (accounts-payable) accounts through asOf, owed-positive.',
    }),
  },
  { title: 'AgingReport' },
);

export const OpenDocument = Type.Object({
  documentId: Uuid(),
  type: Type.String(),
  number: Type.Union([Type.String(), Type.Null()]),
  contactId: Uuid(),
  date: IsoDate(),
  dueDate: IsoDate(),
  totalCents: Type.Integer(),
  openCents: Type.Integer({ description: 'Owed (positive) or a credit or unapplied payment (negative).' }),
  daysPastDue: Type.Integer(),
});

export const Statement = Type.Object(
  {
    contactId: Uuid(),
    contactName: Type.String(),
    asOf: IsoDate(),
    documents: Type.Array(OpenDocument),
    receivableCents: Type.Integer({ description: 'What the contact owes, net of credits and unapplied payments.' }),
    payableCents: Type.Integer({ description: 'What is owed to the contact, net of credits and unapplied payments.' }),
  },
  { title: 'ContactStatement' },
);

export const StatementParams = Type.Object({ id: Uuid('Contact id.') });
export const CompanyStatementParams = Type.Object({ ...CompanyParams.properties, id: Uuid('Contact id.') });
export { CompanyParams };
