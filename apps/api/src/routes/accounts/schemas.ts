import { ACCOUNT_SUBTYPE_LIST, ACCOUNT_SUBTYPES, ACCOUNT_TYPES } from '@firm/core';
import { Type } from 'typebox';
import { CompanyParams, DataOf, IsoDate, ListQuery, PageOf, Timestamp, Uuid } from '../../schemas';

export const AccountTypeSchema = Type.Enum(ACCOUNT_TYPES, {
  description: 'asset, liability, equity, income or expense.',
});

export const AccountSubtypeSchema = Type.Enum(ACCOUNT_SUBTYPE_LIST, {
  description: `Must belong to the type: ${ACCOUNT_TYPES.map((t) => `${t}: ${ACCOUNT_SUBTYPES[t].join(', ')}`).join('; ')}. Defaults per type when omitted.`,
});

const Code = Type.String({
  pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,19}$',
  description: 'Unique within the organization: 1-20 letters, digits, dot, dash or underscore.',
});
const Name = Type.String({ minLength: 1, maxLength: 200 });
const Description = Type.Union([Type.String({ maxLength: 2000 }), Type.Null()]);

export const Account = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    code: Type.String(),
    name: Type.String(),
    type: AccountTypeSchema,
    subtype: AccountSubtypeSchema,
    description: Type.Union([Type.String(), Type.Null()]),
    archived: Type.Boolean({
      description: 'Archived accounts take no new postings and are hidden from lists by default.',
    }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Account' },
);

export const AccountLedgerLine = Type.Object({
  entryId: Uuid(),
  lineId: Uuid(),
  date: IsoDate(),
  memo: Type.Union([Type.String(), Type.Null()]),
  description: Type.Union([Type.String(), Type.Null()]),
  debitCents: Type.Integer({ minimum: 0 }),
  creditCents: Type.Integer({ minimum: 0 }),
  runningBalanceCents: Type.Integer({ description: 'Balance after this line, positive on the normal side.' }),
});

export const AccountDetail = Type.Object(
  {
    ...Account.properties,
    balanceCents: Type.Integer({
      description:
        'Balance of posted lines through endDate (or today), positive on the normal side: debit for assets and expenses, credit for the rest.',
    }),
    ledger: Type.Object({
      startDate: Type.Union([IsoDate(), Type.Null()]),
      endDate: Type.Union([IsoDate(), Type.Null()]),
      openingBalanceCents: Type.Integer(),
      closingBalanceCents: Type.Integer(),
      lines: Type.Array(AccountLedgerLine),
      nextCursor: Type.Union([Type.String(), Type.Null()]),
    }),
  },
  { title: 'AccountDetail' },
);

export const AccountParams = Type.Object({ id: Uuid('Account id.') });

export const AccountListQuery = Type.Object({
  ...ListQuery,
  type: Type.Optional(AccountTypeSchema),
  includeArchived: Type.Optional(Type.Boolean({ default: false })),
});

export const AccountDetailQuery = Type.Object({
  startDate: Type.Optional(IsoDate('First date of the ledger detail.')),
  endDate: Type.Optional(IsoDate('Last date of the ledger detail and of the balance.')),
  ...ListQuery,
});

export const CreateAccountBody = Type.Object(
  {
    code: Code,
    name: Name,
    type: AccountTypeSchema,
    subtype: Type.Optional(AccountSubtypeSchema),
    description: Type.Optional(Description),
  },
  { additionalProperties: false },
);

export const UpdateAccountBody = Type.Object(
  {
    code: Type.Optional(Code),
    name: Type.Optional(Name),
    type: Type.Optional(AccountTypeSchema),
    subtype: Type.Optional(AccountSubtypeSchema),
    description: Type.Optional(Description),
    archived: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const AccountOne = DataOf(Account);
export const AccountList = PageOf(Account);
export const AccountDetailOne = DataOf(AccountDetail);
export { CompanyParams };
