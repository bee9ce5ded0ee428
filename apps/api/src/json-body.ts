import { DomainError } from '@firm/core';
import type { FastifyInstance } from 'fastify';

/** How deep a request body may nest arrays and objects; the API's own bodies nest fewer than ten levels. */
export const MAX_JSON_DEPTH = 64;

/** The deepest nesting of arrays and objects in JSON text, counted without parsing it (no recursion, one pass). */
export function jsonDepth(text: string, limit = Number.POSITIVE_INFINITY): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // a backslash escapes the next character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > deepest && (deepest = depth) > limit) return deepest;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return deepest;
}

/**
 * JSON bodies through Fastify's own parser (which refuses `__proto__` and `constructor` poisoning), after refusing
 * nesting deeper than MAX_JSON_DEPTH: every later step that walks a body (validation, the text checks, logging)
 * would otherwise recurse once per level and overflow the stack on a small, hostile body.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  const parse = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (jsonDepth(body as string, MAX_JSON_DEPTH) > MAX_JSON_DEPTH) {
      done(
        new DomainError('VALIDATION_ERROR', 'the request failed validation', [
          { field: 'body', message: `must not nest arrays and objects more than ${MAX_JSON_DEPTH} levels deep` },
        ]),
        undefined,
      );
      return;
    }
    parse(request, body as string, done);
  });
}
