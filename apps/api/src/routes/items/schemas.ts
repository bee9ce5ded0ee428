import { Type } from 'typebox';
import { DataOf, ListQuery, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';

const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: NON_BLANK_TEXT,
  description: 'Unique within the organization, compared case-insensitively.',
});
const Price = Type.Integer({
  minimum: 0,
  maximum: Number.MAX_SAFE_INTEGER,
  description: 'Default unit price in cents for lines by this item.',
});
const AccountRef = (description: string) => Type.Union([Uuid(description), Type.Null()]);
const ItemKind = Type.Enum(['service', 'product']);

export const Item = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    kind: ItemKind,
    name: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    unitPriceCents: Type.Integer(),
    incomeAccountId: Type.Union([Uuid(), Type.Null()]),
    expenseAccountId: Type.Union([Uuid(), Type.Null()]),
    archived: Type.Boolean(),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Item' },
);

const fields = {
  kind: Type.Optional(ItemKind),
  description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
  unitPriceCents: Type.Optional(Price),
  incomeAccountId: Type.Optional(
    AccountRef('Income account a sales line by this item posts to (sales documents need it).'),
  ),
  expenseAccountId: Type.Optional(
    AccountRef(
      'Expense, cost-of-sales or non-bank asset account a purchase line by this item posts to (bills need it).',
    ),
  ),
};

export const CreateItemBody = Type.Object(
  { name: Name, ...fields },
  {
    additionalProperties: false,
    description: 'At least one of incomeAccountId and expenseAccountId.',
  },
);

export const UpdateItemBody = Type.Object(
  { name: Type.Optional(Name), ...fields, archived: Type.Optional(Type.Boolean()) },
  { additionalProperties: false, minProperties: 1 },
);

export const NamedListQuery = Type.Object({
  ...ListQuery,
  includeArchived: Type.Optional(Type.Boolean({ default: false })),
});

export const ItemParams = Type.Object({ id: Uuid('Item id.') });
export const ItemOne = DataOf(Item);
export const ItemList = PageOf(Item);
