import { DomainError } from '@firm/core';
import {
  createToken,
  EmbeddedActionsParser,
  type ILexingError,
  type IRecognitionException,
  type IToken,
  Lexer,
  type TokenType,
} from 'chevrotain';
import { type Comparison, type Condition, LITERAL_EXPECTED, literalOf, type QueryValue } from '@firm/platform';
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

const Identifier = createToken({ name: 'Identifier', pattern: /[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*/ });
const keyword = (name: string, word = name) =>
  createToken({ name, pattern: new RegExp(`${word}\\b`, 'i'), longer_alt: Identifier });
const Select = keyword('Select');
const From = keyword('From');
const Where = keyword('Where');
const And = keyword('And');
const In = keyword('In');
const Like = keyword('Like');
const OrderBy = keyword('OrderBy', 'ORDER\\s*BY');
const Asc = keyword('Asc');
const Desc = keyword('Desc');
const StartPosition = keyword('StartPosition');
const MaxResults = keyword('MaxResults');
const Count = keyword('Count');
const True = keyword('True');
const False = keyword('False');
const StringLiteral = createToken({ name: 'StringLiteral', pattern: /'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"/ });
const NumberLiteral = createToken({ name: 'NumberLiteral', pattern: /-?\d+(?:\.\d+)?/ });
const Star = createToken({ name: 'Star', pattern: /\*/ });
const Comma = createToken({ name: 'Comma', pattern: /,/ });
const LParen = createToken({ name: 'LParen', pattern: /\(/ });
const RParen = createToken({ name: 'RParen', pattern: /\)/ });
const Op = createToken({ name: 'Op', pattern: /<=|>=|!=|<>|=|<|>/ });
const WhiteSpace = createToken({ name: 'WhiteSpace', pattern: /\s+/, group: Lexer.SKIPPED });

const TOKENS: TokenType[] = [
  WhiteSpace,
  Select,
  From,
  Where,
  And,
  In,
  Like,
  OrderBy,
  Asc,
  Desc,
  StartPosition,
  MaxResults,
  Count,
  True,
  False,
  StringLiteral,
  NumberLiteral,
  Star,
  Comma,
  LParen,
  RParen,
  Op,
  Identifier,
];

const lexer = new Lexer(TOKENS, { positionTracking: 'full', ensureOptimizations: false });

const unquote = (image: string): string => image.slice(1, -1).replace(/\\(.)/g, '$1');

const positionOf = (t: IToken): Position => ({
  offset: t.startOffset,
  line: t.startLine ?? 1,
  column: t.startColumn ?? t.startOffset + 1,
});

interface Located<T> {
  value: T;
  at: Position;
}

/** The parser's result: paging numbers as written, so that their form is checked with their position. */
type Parsed = Omit<ParsedQuery, 'startPosition' | 'maxResults'> & {
  startPosition: IToken | null;
  maxResults: IToken | null;
};

class QueryParser extends EmbeddedActionsParser {
  constructor() {
    super(TOKENS, { maxLookahead: 2 });
    this.performSelfAnalysis();
  }

  private value = this.RULE('value', (): Located<QueryValue> => {
    return this.OR([
      {
        ALT: () => {
          const t = this.CONSUME(StringLiteral);
          return { value: unquote(t.image), at: positionOf(t) };
        },
      },
      {
        ALT: () => {
          const t = this.CONSUME(NumberLiteral);
          return { value: Number(t.image), at: positionOf(t) };
        },
      },
      { ALT: () => ({ value: true, at: positionOf(this.CONSUME(True)) }) },
      { ALT: () => ({ value: false, at: positionOf(this.CONSUME(False)) }) },
    ]);
  });

  private condition = this.RULE('condition', (): { condition: Condition; field: Position; values: Position[] } => {
    const token = this.CONSUME(Identifier);
    const field = token.image;
    const at = positionOf(token);
    return this.OR([
      {
        ALT: () => {
          const raw = this.CONSUME(Op).image;
          const op = (raw === '<>' ? '!=' : raw) as Comparison;
          const v = this.SUBRULE(this.value);
          return { condition: { field, op, value: v.value }, field: at, values: [v.at] };
        },
      },
      {
        ALT: () => {
          this.CONSUME(In);
          this.CONSUME(LParen);
          const values: Located<QueryValue>[] = [];
          this.AT_LEAST_ONE_SEP({ SEP: Comma, DEF: () => values.push(this.SUBRULE2(this.value)) });
          this.CONSUME(RParen);
          return {
            condition: { field, op: 'IN' as const, values: values.map((v) => v.value) },
            field: at,
            values: values.map((v) => v.at),
          };
        },
      },
      {
        ALT: () => {
          this.CONSUME(Like);
          const t = this.CONSUME(StringLiteral);
          return {
            condition: { field, op: 'LIKE' as const, value: unquote(t.image) },
            field: at,
            values: [positionOf(t)],
          };
        },
      },
    ]);
  });

  public query = this.RULE('query', (): Parsed => {
    this.CONSUME(Select);
    const selected: IToken[] = [];
    const select = this.OR([
      { ALT: () => (this.CONSUME(Star), '*' as const) },
      {
        ALT: () => {
          this.CONSUME(Count);
          this.CONSUME(LParen);
          this.CONSUME2(Star);
          this.CONSUME(RParen);
          return 'count' as const;
        },
      },
      {
        ALT: () => {
          this.AT_LEAST_ONE_SEP({ SEP: Comma, DEF: () => selected.push(this.CONSUME(Identifier)) });
          return selected.map((t) => t.image);
        },
      },
    ]);
    this.CONSUME(From);
    const entity = this.CONSUME2(Identifier);
    const where: ReturnType<QueryParser['condition']>[] = [];
    this.OPTION(() => {
      this.CONSUME(Where);
      this.AT_LEAST_ONE_SEP2({ SEP: And, DEF: () => where.push(this.SUBRULE(this.condition)) });
    });
    const orderBy: ParsedQuery['orderBy'] = [];
    const ordered: IToken[] = [];
    this.OPTION2(() => {
      this.CONSUME(OrderBy);
      this.AT_LEAST_ONE_SEP3({
        SEP: Comma,
        DEF: () => {
          const field = this.CONSUME3(Identifier);
          const direction = this.OPTION3(() =>
            this.OR2([
              { ALT: () => (this.CONSUME(Asc), 'ASC' as const) },
              { ALT: () => (this.CONSUME(Desc), 'DESC' as const) },
            ]),
          );
          ordered.push(field);
          orderBy.push({ field: field.image, direction: direction ?? 'ASC' });
        },
      });
    });
    let startPosition: IToken | null = null;
    let maxResults: IToken | null = null;
    // Both orders occur in the wild (MAXRESULTS 2 STARTPOSITION 1 and the reverse).
    this.MANY(() => {
      this.OR3([
        { ALT: () => (this.CONSUME(StartPosition), (startPosition = this.CONSUME2(NumberLiteral))) },
        { ALT: () => (this.CONSUME(MaxResults), (maxResults = this.CONSUME3(NumberLiteral))) },
      ]);
    });
    return {
      select,
      entity: entity.image,
      where: where.map((w) => w.condition),
      orderBy,
      startPosition,
      maxResults,
      at: {
        entity: positionOf(entity),
        select: selected.map(positionOf),
        where: where.map((w) => ({ field: w.field, values: w.values })),
        orderBy: ordered.map(positionOf),
      },
    };
  });
}

const parser = new QueryParser();

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
function positionAt(text: string, offset: number): Position {
  const before = text.slice(0, offset).split('\n');
  return { offset, line: before.length, column: (before[before.length - 1]?.length ?? 0) + 1 };
}

const thousands = (n: number) => n.toLocaleString('en-US');

/** A paging number: digits only (no sign, no decimals), from 1 to `max`. */
function pagingNumber(keyword: string, token: IToken | null, max: number): number | null {
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
export function parseQuery(text: string): ParsedQuery {
  const { maxLength, maxConditions, maxInValues, maxResults, maxStartPosition } = QUERY_LIMITS;
  if (text.length > maxLength) {
    throw queryError(
      `a query is at most ${thousands(maxLength)} characters; this one has ${thousands(text.length)}`,
      positionAt(text, maxLength),
    );
  }
  const lexed = lexer.tokenize(text);
  const lexError: ILexingError | undefined = lexed.errors[0];
  if (lexError) {
    throw queryError(`unexpected character ${JSON.stringify(text.charAt(lexError.offset))}`, {
      offset: lexError.offset,
      line: lexError.line ?? 1,
      column: lexError.column ?? lexError.offset + 1,
    });
  }
  parser.input = lexed.tokens;
  const result = parser.query();
  const parseError: IRecognitionException | undefined = parser.errors[0];
  if (parseError) {
    const token = parseError.token;
    const found = token.tokenType?.name === 'EOF' ? 'the end of the query' : JSON.stringify(token.image);
    throw queryError(`unexpected ${found}`, Number.isNaN(token.startOffset) ? null : positionOf(token));
  }
  const extra = result.at.where[maxConditions];
  if (extra) throw queryError(`a query has at most ${maxConditions} conditions`, extra.field);
  for (const { values } of result.at.where) {
    const over = values[maxInValues];
    if (over) throw queryError(`an IN list has at most ${thousands(maxInValues)} values`, over);
  }
  return {
    ...result,
    startPosition: pagingNumber('STARTPOSITION', result.startPosition, maxStartPosition),
    maxResults: pagingNumber('MAXRESULTS', result.maxResults, maxResults),
  };
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
