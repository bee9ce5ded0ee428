import { DomainError } from '@firm/core';
import type { IToken } from 'chevrotain';
import { type Condition, LITERAL_EXPECTED, literalOf } from '@firm/platform';
import { type CoverageEntry, coverageOf, QUERY_FIELD_TYPES } from './coverage';

/**
 * The platform's query language (QuickBooks Online's SQL-like subset):
 *
 *   SELECT * | COUNT(*) | field, ... FROM Entity
 *     [WHERE cond [AND cond]...] [ORDERBY field [ASC|DESC], ...] [STARTPOSITION n] [MAXRESULTS m]
 *   cond := field (= | != | < | <= | > | >=) value | field IN (value, ...) | field LIKE 'text%'
 *
 * Keywords are case-insensitive; strings are single-quoted with `\'` for a quote (or double-quoted); values are
 * strings, numbers, true and false. Parsed with Chevrotain into a plain object; nothing here knows SQL.
 *
 * Every query, whichever door it comes in by (the query route, the pass-through's `query` path, the MCP tools that
 * call them), is parsed here, so these bounds hold for all of them; each refusal names the position of what it
 * refuses.
 */
export const QUERY_LIMITS = {
  /** Characters of query text; a longer one is refused before any of it is read. */
  maxLength: 10_000,
  /** Conditions of the WHERE clause. */
  maxConditions: 50,
  /** Values of one IN list. */
  maxInValues: 1_000,
  /** MAXRESULTS: a whole number from 1 to this, as the list routes' maxResults. */
  maxResults: 1_000,
  /** STARTPOSITION: a whole number from 1 to this. */
  maxStartPosition: 1_000_000_000,
} as const;

/** A place in the query text: 0-based offset, 1-based line and column. */
export interface Position {
  offset: number;
  line: number;
  column: number;
}

export interface ParsedQuery {
  select: '*' | 'count' | string[];
  entity: string;
  where: Condition[];
  orderBy: { field: string; direction: 'ASC' | 'DESC' }[];
  startPosition: number | null;
  maxResults: number | null;
  /** Where the parts are in the text, for the refusals that name them. */
  at: {
    entity: Position;
    select: Position[];
    where: { field: Position; values: Position[] }[];
    orderBy: Position[];
  };
}

/** Where a token is in the text. */
export const positionOf = (t: IToken): Position => ({
  offset: t.startOffset,
  line: t.startLine ?? 1,
  column: t.startColumn ?? t.startOffset + 1,
});

/** A query the gateway refuses, naming where (1-based line and column, 0-based offset) the problem is. */
export function queryError(message: string, at: { offset: number; line: number; column: number } | null) {
  const where = at ? ` at line ${at.line}, column ${at.column}` : ' at the end of the query';
  return new DomainError('QUERY_INVALID', `${message}${where}`, [
    {
      field: 'query',
      message,
      ...(at ? { offset: at.offset, line: at.line, column: at.column } : {}),
    },
  ]);
}

/** The line and column of an offset, counted in the text before it. */
export function positionAt(text: string, offset: number): Position {
  const before = text.slice(0, offset).split('\n');
  return { offset, line: before.length, column: (before[before.length - 1]?.length ?? 0) + 1 };
}

export const thousands = (n: number) => n.toLocaleString('en-US');

/** A paging number: digits only (no sign, no decimals), from 1 to `max`. */
export function pagingNumber(keyword: string, token: IToken | null, max: number): number | null {
  if (!token) return null;
  const n = Number(token.image);
  if (!/^\d+$/.test(token.image) || n < 1 || n > max) {
    throw queryError(`${keyword} is a whole number from 1 to ${thousands(max)}`, positionOf(token));
  }
  return n;
}

/**
 * Parses a query, or throws QUERY_INVALID naming the first problem's position. Text over QUERY_LIMITS.maxLength is
 * refused before it is read, so a long text costs no more than a short one; then the WHERE clause's conditions, each
 * IN list and the paging numbers are held to their bounds.
 */
export async function parseQuery(text: string): Promise<ParsedQuery> {
  return (await import('./query-grammar')).parseQueryText(text);
}

/** The query checked against the registry: a covered, readable entity and only its queryable fields. */
export interface CheckedQuery extends ParsedQuery {
  coverage: CoverageEntry;
}

/**
 * Checks a parsed query against the registry: the entity is covered and readable, every field is one of its queryable
 * fields, and every literal is one its field compares with (a real calendar date for a date, a number for an amount),
 * so that whatever platform runs it gets only what it can read.
 */
export function checkQuery(query: ParsedQuery): CheckedQuery {
  const coverage = coverageOf(query.entity);
  if (!coverage || !coverage.operations.includes('read') || coverage.fields.length === 0) {
    throw queryError(`the gateway does not cover the entity ${query.entity}`, query.at.entity);
  }
  const known = new Map(coverage.fields.map((f) => [f.toLowerCase(), f]));
  const canonical = (name: string, at: Position | undefined) => {
    const field = known.get(name.toLowerCase());
    if (!field) throw queryError(`${coverage.entity} has no queryable field ${name}`, at ?? null);
    return field;
  };
  const where = query.where.map((c, i): Condition => {
    const at = query.at.where[i];
    const field = canonical(c.field, at?.field);
    const type = QUERY_FIELD_TYPES[field] ?? 'text';
    if (c.op === 'LIKE' && type !== 'text') {
      throw queryError(`${field} compares with ${LITERAL_EXPECTED[type]}, not a LIKE pattern`, at?.values[0] ?? null);
    }
    const values = c.op === 'IN' ? c.values : [c.value];
    values.forEach((value, j) => {
      if (literalOf(type, value) === undefined) {
        throw queryError(
          `${field} compares with ${LITERAL_EXPECTED[type]}, not ${JSON.stringify(value)}`,
          at?.values[j] ?? null,
        );
      }
    });
    return { ...c, field };
  });
  return {
    ...query,
    entity: coverage.entity,
    coverage,
    select: Array.isArray(query.select) ? query.select.map((f, i) => canonical(f, query.at.select[i])) : query.select,
    where,
    orderBy: query.orderBy.map((o, i) => ({ ...o, field: canonical(o.field, query.at.orderBy[i]) })),
  };
}
