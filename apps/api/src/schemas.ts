import { type TSchema, Type } from 'typebox';

/** Building blocks shared by every route module's schemas. */
export const Uuid = (description?: string) => Type.String({ format: 'uuid', ...(description ? { description } : {}) });

export const IsoDate = (description?: string) =>
  Type.String({ format: 'date', description: description ?? 'Calendar date, YYYY-MM-DD.' });

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
