import { type TSchema, Type } from 'typebox';

/** Building blocks shared by every route module's schemas. */
/**
 * Text with something in it besides white space, and no NUL character (which Postgres cannot store; the server
 * refuses it in any field, and the schema says so where the field has a pattern anyway).
 */
export const NON_BLANK_TEXT = '^[^\\u0000]*[^\\s\\u0000][^\\u0000]*$';
/** A UUID written plainly (no `urn:uuid:` prefix), in either case. */
export const Uuid = (description?: string) =>
  Type.String({
    format: 'uuid',
    pattern: '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$',
    ...(description ? { description } : {}),
  });

/** A calendar date from 1900-01-01 to 9999-12-31. */
export const IsoDate = (description?: string) =>
  Type.String({
    format: 'date',
    pattern: '^(19|[2-9][0-9])[0-9]{2}-[0-9]{2}-[0-9]{2}$',
    description: description ?? 'Calendar date, YYYY-MM-DD, from 1900-01-01 to 9999-12-31.',
  });

export const Timestamp = () => Type.String({ format: 'date-time' });

export const ListQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100, description: 'Page size, 1-1000.' })),
  cursor: Type.Optional(Type.String({ maxLength: 512, description: 'The nextCursor of the previous page.' })),
};

export const DEFAULT_LIMIT = 100;

export const DataOf = <T extends TSchema>(item: T) => Type.Object({ data: item });

export const PageOf = <T extends TSchema>(item: T) =>
  Type.Object({
    data: Type.Array(item),
    nextCursor: Type.Union([Type.String(), Type.Null()], {
      description: 'Pass as cursor for the next page; null at the end.',
    }),
  });

export const CompanyParams = Type.Object({ companyId: Type.String({ description: 'Company (organization) id.' }) });

/**
 * A journal line gives exactly one of debitCents and creditCents: stated in the schema (for generated clients and
 * fuzzers) as well as checked by the ledger, which says which line is wrong.
 */
export const ONE_OF_DEBIT_CREDIT = {
  oneOf: [{ required: ['debitCents'] }, { required: ['creditCents'] }],
} as const;
