import { DomainError } from '@firm/core';
import type { FastifyRequest } from 'fastify';

/** Where in `value` a string holds U+0000, as a validation error names a field (`body.lines.0.description`). */
function nulFieldOf(value: unknown, path: string): string | null {
  if (typeof value === 'string') return value.includes('\u0000') ? path : null;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = nulFieldOf(value[i], `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = nulFieldOf(key, path) ?? nulFieldOf(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

/**
 * Postgres text cannot hold the NUL character (U+0000), which JSON and query strings can carry: a request with one
 * is refused as invalid up front, naming the field, rather than failing when it is written.
 */
export async function refuseNulCharacters(request: FastifyRequest): Promise<void> {
  const field = nulFieldOf(request.body, 'body') ?? nulFieldOf(request.query, 'querystring');
  if (field) {
    throw new DomainError('VALIDATION_ERROR', 'the request failed validation', [
      { field, message: 'must not contain the NUL character (U+0000)' },
    ]);
  }
}
