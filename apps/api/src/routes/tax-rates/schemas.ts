import { Type } from 'typebox';
import { DataOf, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';

const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: NON_BLANK_TEXT,
  description: 'Unique within the organization, compared case-insensitively.',
});
const Rate = Type.Integer({
  minimum: 0,
  maximum: 10_000,
  description:
    'Basis points of a line amount: 825 is 8.25 %. A line’s tax is amount × rate / 10000, rounded half-even per line.',
});

export const TaxRate = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    name: Type.String(),
    rateBps: Type.Integer(),
    liabilityAccountId: Uuid(),
    archived: Type.Boolean(),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'TaxRate' },
);

const Liability = Uuid(
  'Liability account (not payables, not a credit card) that sales tax is credited to and purchase tax debited to.',
);

export const CreateTaxRateBody = Type.Object(
  { name: Name, rateBps: Rate, liabilityAccountId: Liability },
  { additionalProperties: false },
);

export const UpdateTaxRateBody = Type.Object(
  {
    name: Type.Optional(Name),
    rateBps: Type.Optional(Rate),
    liabilityAccountId: Type.Optional(Liability),
    archived: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const TaxRateParams = Type.Object({ id: Uuid('Tax rate id.') });
export const TaxRateOne = DataOf(TaxRate);
export const TaxRateList = PageOf(TaxRate);
