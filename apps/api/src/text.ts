import { DomainError, hasLoneSurrogate } from '@firm/core';
import type { FastifyRequest } from 'fastify';

/** Why Postgres cannot store this text, or null when it can. */
function textProblem(value: string): string | null {
  if (value.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (hasLoneSurrogate(value)) return 'must be well-formed Unicode (a \\ud800-\\udfff escape without its pair)';
  return null;
}

/** The text when Postgres can store it, else null: for recording what a refused request named. */
export function storableOrNull(value: string | null | undefined): string | null {
  return value === null || value === undefined || textProblem(value) ? null : value;
}

/** The first field of `value` holding text Postgres cannot store, named as a validation error names it. */
function badTextOf(value: unknown, path: string): { field: string; message: string } | null {
  if (typeof value === 'string') {
    const message = textProblem(value);
    return message ? { field: path, message } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = badTextOf(value[i], `${path}.${i}`);
      if (found) return found;
    }
    return null;
  }
  if (value && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) {
      const found = badTextOf(key, path) ?? badTextOf(item, `${path}.${key}`);
      if (found) return found;
    }
  }
  return null;
}

/**
 * Postgres text cannot hold the NUL character (U+0000), nor can jsonb hold an unpaired UTF-16 surrogate, both of
 * which JSON, query strings and (percent-encoded) paths can carry: a request with either is refused as invalid up front, naming the field,
 * rather than failing when it is written (or being stored altered).
 */
export async function refuseUnstorableText(request: FastifyRequest): Promise<void> {
  const bad =
    badTextOf(request.params, 'params') ?? badTextOf(request.body, 'body') ?? badTextOf(request.query, 'querystring');
  if (bad) throw new DomainError('VALIDATION_ERROR', 'the request failed validation', [bad]);
}
