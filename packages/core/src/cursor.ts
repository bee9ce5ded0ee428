import { DomainError } from './errors';

/**
 * Opaque list cursors: base64url of a small JSON tuple of the last row's sort keys.
 * Clients must treat them as opaque; we validate shape on the way in.
 */
export function encodeCursor(keys: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(keys), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string, arity: number): (string | number)[] {
  try {
    const keys: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      Array.isArray(keys) &&
      keys.length === arity &&
      keys.every((k) => typeof k === 'string' || typeof k === 'number')
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
