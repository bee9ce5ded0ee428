import { OPENING_BALANCE_MAX_ROWS } from '@firm/ledger';
import { Type } from 'typebox';
import { IsoDate, Uuid } from '../../schemas';
import { Account } from '../accounts/schemas';
import { Entry } from '../entries/schemas';

const Amount = Type.Union([Type.String({ maxLength: 32 }), Type.Null()], {
  description: 'Decimal string, at most 2 decimals, not negative.',
});
const Text = Type.Union([Type.String({ maxLength: 200 }), Type.Null()]);

export const OpeningBalanceLine = Type.Object(
  {
    account: Type.Optional(Text),
    accountCode: Type.Optional(Text),
    accountName: Type.Optional(Text),
    debit: Type.Optional(Amount),
    credit: Type.Optional(Amount),
    type: Type.Optional(Text),
    name: Type.Optional(Text),
  },
  {
    additionalProperties: false,
    title: 'OpeningBalanceLine',
    description:
      'account: a code, else a name. type (or a subtype) and name: for an account to create; without type, the ' +
      'code range decides (1 asset, 2 liability, 3 equity, 4 income, 5 cost of sales, 6-9 expense).',
  },
);

const Options = {
  createMissingAccounts: Type.Optional(Type.Boolean()),
  replace: Type.Optional(Type.Boolean()),
  closeBooksBefore: Type.Optional(Type.Boolean()),
};

export const OpeningBalancesBody = Type.Object(
  {
    date: IsoDate(),
    lines: Type.Array(OpeningBalanceLine, { maxItems: OPENING_BALANCE_MAX_ROWS }),
    ...Options,
  },
  { additionalProperties: false, title: 'OpeningBalancesRequest' },
);

export const OpeningBalancesCsv = Type.String({ description: 'CSV with a header row; rows numbered by file line.' });

export const OpeningBalancesQuery = Type.Object({
  date: Type.Optional(IsoDate('Required with a CSV body.')),
  ...Options,
});

export const OpeningBalancesResult = Type.Object(
  {
    data: Type.Object({
      entry: Entry,
      createdAccounts: Type.Array(Account),
      difference: Type.Object({
        cents: Type.Integer({ minimum: 0 }),
        side: Type.Union([Type.Enum(['debit', 'credit']), Type.Null()]),
        account: Type.Union([Type.Object({ id: Uuid(), code: Type.String(), name: Type.String() }), Type.Null()]),
      }),
      replacedEntryId: Type.Union([Uuid(), Type.Null()]),
      booksClosedThrough: Type.Union([IsoDate(), Type.Null()]),
    }),
  },
  { title: 'OpeningBalances' },
);
