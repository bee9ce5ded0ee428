import { Type } from 'typebox';
import { CompanyParams, DataOf, ListQuery, NON_BLANK_TEXT, PageOf, Timestamp, Uuid } from '../../schemas';

const Nullable = <T extends ReturnType<typeof Type.String>>(s: T) => Type.Union([s, Type.Null()]);

export const ContactKind = Type.Enum(['customer', 'vendor', 'both'], {
  description: 'customer (sales documents), vendor (purchase documents) or both.',
});

const Part = (max: number) => Type.Optional(Type.String({ maxLength: max }));
export const AddressSchema = Type.Object(
  {
    line1: Part(200),
    line2: Part(200),
    city: Part(100),
    region: Part(100),
    postalCode: Part(20),
    country: Part(100),
  },
  { additionalProperties: false, title: 'Address' },
);

const Name = Type.String({
  minLength: 1,
  maxLength: 200,
  pattern: NON_BLANK_TEXT,
  description: 'Unique within the organization, compared case-insensitively.',
});

export const Contact = Type.Object(
  {
    id: Uuid(),
    organizationId: Uuid(),
    kind: ContactKind,
    name: Type.String(),
    email: Type.Union([Type.String(), Type.Null()]),
    phone: Type.Union([Type.String(), Type.Null()]),
    billingAddress: Type.Union([AddressSchema, Type.Null()]),
    shippingAddress: Type.Union([AddressSchema, Type.Null()]),
    taxId: Type.Union([Type.String(), Type.Null()]),
    archived: Type.Boolean({
      description: 'Archived contacts take no new documents and are hidden from lists by default.',
    }),
    createdAt: Timestamp(),
    updatedAt: Timestamp(),
  },
  { title: 'Contact' },
);

const fields = {
  email: Type.Optional(Nullable(Type.String({ format: 'email', maxLength: 320 }))),
  phone: Type.Optional(Nullable(Type.String({ maxLength: 50 }))),
  billingAddress: Type.Optional(Type.Union([AddressSchema, Type.Null()])),
  shippingAddress: Type.Optional(Type.Union([AddressSchema, Type.Null()])),
  taxId: Type.Optional(Nullable(Type.String({ maxLength: 50 }))),
};

export const CreateContactBody = Type.Object(
  { kind: ContactKind, name: Name, ...fields },
  { additionalProperties: false },
);

export const UpdateContactBody = Type.Object(
  {
    kind: Type.Optional(ContactKind),
    name: Type.Optional(Name),
    ...fields,
    archived: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const ContactListQuery = Type.Object({
  ...ListQuery,
  kind: Type.Optional(
    Type.Enum(['customer', 'vendor'], {
      description: 'Only contacts of this kind (contacts of kind both match either).',
    }),
  ),
  includeArchived: Type.Optional(Type.Boolean({ default: false })),
});

export const ContactParams = Type.Object({ id: Uuid('Contact id.') });
export const CompanyContactParams = Type.Object({ ...CompanyParams.properties, id: Uuid('Contact id.') });
export const ContactOne = DataOf(Contact);
export const ContactList = PageOf(Contact);
export { CompanyParams };
