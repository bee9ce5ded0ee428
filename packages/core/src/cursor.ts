import { isIsoDate, isIsoTimestamp } from './dates';
import { isStorableText } from './text';
import { DomainError } from './errors';
import { isUuid } from './ids';

/**
 * Opaque list cursors: base64url of a small JSON tuple of the last row's sort keys.
 * Clients must treat them as opaque; we validate shape on the way in.
 */
export function encodeCursor(keys: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(keys), 'utf8').toString('base64url');
}

/** What one key of a cursor must be: a UUID, a YYYY-MM-DD date, a timestamp, any string, or a whole number within int4. */
export type CursorKey = 'uuid' | 'date' | 'timestamp' | 'string' | 'int';

const keyIsValid: Record<CursorKey, (k: unknown) => boolean> = {
  uuid: (k) => typeof k === 'string' && isUuid(k),
  date: (k) => typeof k === 'string' && isIsoDate(k),
  timestamp: (k) => typeof k === 'string' && isIsoTimestamp(k),
  string: (k) => typeof k === 'string' && isStorableText(k),
  int: (k) => typeof k === 'number' && Number.isInteger(k) && k >= 0 && k <= 2_147_483_647,
};

/** The keys of a cursor, each checked against `shape`, so that a forged cursor is a 400 and never reaches a query. */
export function decodeCursor(cursor: string, shape: readonly CursorKey[]): (string | number)[] {
  try {
    const keys: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(keys) &&
      keys.length === shape.length &&
      keys.every((k, i) => keyIsValid[shape[i] as CursorKey](k))
    ) {
      return keys;
    }
  } catch {
    // fall through to the validation error
  }
  throw new DomainError('VALIDATION_ERROR', 'cursor is not valid', [
    { field: 'cursor', message: 'not a cursor returned by this API' },
  ]);
}

export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}

/** Given `limit + 1` rows, cut to `limit` and compute the next cursor from the last kept row. */
export function toPage<T>(rows: T[], limit: number, keysOf: (row: T) => (string | number)[]): Page<T> {
  if (rows.length <= limit) return { data: rows, nextCursor: null };
  const data = rows.slice(0, limit);
  const last = data[data.length - 1] as T;
  return { data, nextCursor: encodeCursor(keysOf(last)) };
}
