import { entrySource } from '@firm/db';
import { Type } from 'typebox';
import {
  CompanyParams,
  DataOf,
  IsoDate,
  ListQuery,
  ONE_OF_DEBIT_CREDIT,
  PageOf,
  Timestamp,
  Uuid,
  NON_BLANK_TEXT,
} from '../../schemas';
import { Cents } from '../posting/schemas';

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(t: T) => Type.Union([t, Type.Null()]);

export const EntryStatus = Type.Enum(['draft', 'posted', 'void'], {
  description: 'draft -> posted -> void. Drafts do not affect balances; void entries stay visible.',
});

export const EntryLine = Type.Object({
  id: Uuid(),
  lineNo: Type.Integer({ minimum: 1 }),
  accountId: Uuid(),
  description: Nullable(Type.String()),
  debitCents: Type.Integer({ minimum: 0 }),
  creditCents: Type.Integer({ minimum: 0 }),
});

export const Entry = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    status: EntryStatus,
    source: Type.Enum(entrySource.enumValues, {
      description: 'manual for drafts made through /entries, else the posting route or document that made it.',
    }),
    date: IsoDate(),
    memo: Nullable(Type.String()),
    reference: Nullable(Type.String()),
    payeeName: Nullable(Type.String()),
    totalCents: Type.Integer({ description: 'Sum of the debits (equal to the sum of the credits once posted).' }),
    createdAt: Timestamp(),
    postedAt: Nullable(Timestamp()),
    voidedAt: Nullable(Timestamp()),
    voidReason: Nullable(Type.String()),
    lines: Type.Array(EntryLine),
  },
  { title: 'JournalEntry' },
);

export const EntryListQuery = Type.Object({
  ...ListQuery,
  status: Type.Optional(EntryStatus),
  startDate: Type.Optional(IsoDate('Entries dated on or after.')),
  endDate: Type.Optional(IsoDate('Entries dated on or before.')),
  accountId: Type.Optional(Uuid('Entries with a line on this account.')),
});

export const LineListQuery = Type.Object({
  ...ListQuery,
  startDate: Type.Optional(IsoDate('Lines of entries dated on or after.')),
  endDate: Type.Optional(IsoDate('Lines of entries dated on or before.')),
  accountId: Type.Optional(Uuid('Lines on this account.')),
});

export const JournalLine = Type.Object(
  {
    id: Uuid(),
    entryId: Uuid(),
    lineNo: Type.Integer(),
    date: IsoDate(),
    accountId: Uuid(),
    description: Nullable(Type.String()),
    debitCents: Type.Integer({ minimum: 0 }),
    creditCents: Type.Integer({ minimum: 0 }),
  },
  { title: 'JournalLine', description: 'A line of a posted entry.' },
);

export const CreateDraftBody = Type.Object(
  {
    date: IsoDate(),
    memo: Type.Optional(Type.String({ maxLength: 1000 })),
    reference: Type.Optional(Type.String({ maxLength: 100 })),
    lines: Type.Array(
      Type.Object(
        {
          accountId: Uuid(),
          description: Type.Optional(Type.String({ maxLength: 1000 })),
          debitCents: Type.Optional(Cents('Give exactly one of debitCents and creditCents.')),
          creditCents: Type.Optional(Cents('Give exactly one of debitCents and creditCents.')),
        },
        { additionalProperties: false, ...ONE_OF_DEBIT_CREDIT },
      ),
      { minItems: 2, maxItems: 500 },
    ),
  },
  { additionalProperties: false, title: 'DraftEntry' },
);

export const VoidBody = Type.Object(
  {
    reason: Type.String({
      minLength: 1,
      maxLength: 1000,
      pattern: NON_BLANK_TEXT,
      description: 'Why the entry is voided; kept on the entry.',
    }),
  },
  { additionalProperties: false },
);

export const EntryParams = Type.Object({ id: Uuid('Journal entry id.') });
export const EntryOne = DataOf(Entry);
export const EntryList = PageOf(Entry);
export const LineList = PageOf(JournalLine);
export { CompanyParams };
