import { isCalendarDate, isIsoTimestamp } from '@firm/core';
import type { QueryValue } from './types';

/** How a queryable field compares, and so which literals it takes. */
export type QueryFieldType = 'id' | 'text' | 'number' | 'boolean' | 'date' | 'timestamp';

/** What a field of each type compares with, as a refusal says it. */
export const LITERAL_EXPECTED: Record<QueryFieldType, string> = {
  id: 'a string or a number',
  text: 'a string or a number',
  number: 'a number',
  boolean: 'true or false',
  date: 'a calendar date YYYY-MM-DD',
  timestamp: 'a date and time (YYYY-MM-DDThh:mm:ss with an optional Z or ±hh:mm, or a date)',
};

const DATE_TIME_WITHOUT_OFFSET = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?$/;

/**
 * A literal as a field of this type compares with it, or undefined when it is none: a finite number (or a string of
 * one), true or false (or the strings), a real calendar date, a date-time Postgres holds. A date-time without an
 * offset is UTC, and a date alone its midnight UTC, so a query means the same on every server.
 */
export function literalOf(type: QueryFieldType, value: QueryValue): QueryValue | undefined {
  switch (type) {
    case 'number': {
      const n = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : Number.NaN;
      return Number.isFinite(n) && !(typeof value === 'string' && value.trim() === '') ? n : undefined;
    }
    case 'boolean':
      if (typeof value === 'boolean') return value;
      return value === 'true' ? true : value === 'false' ? false : undefined;
    case 'date':
      return typeof value === 'string' && isCalendarDate(value) ? value : undefined;
    case 'timestamp': {
      if (typeof value !== 'string') return undefined;
      const zoned = isCalendarDate(value)
        ? `${value}T00:00:00Z`
        : DATE_TIME_WITHOUT_OFFSET.test(value)
          ? `${value}Z`
          : value;
      return isIsoTimestamp(zoned) ? zoned : undefined;
    }
    default:
      return typeof value === 'number' && !Number.isFinite(value) ? undefined : String(value);
  }
}
