import { DomainError } from '@firm/core';
import {
  createToken,
  EmbeddedActionsParser,
  type ILexingError,
  type IRecognitionException,
  Lexer,
  type TokenType,
} from 'chevrotain';
import type { Comparison, Condition, QueryValue } from '@firm/platform';
import { type CoverageEntry, coverageOf } from './coverage';

/**
 * The platform's query language (QuickBooks Online's SQL-like subset):
 *
 *   SELECT * | COUNT(*) | field, ... FROM Entity
 *     [WHERE cond [AND cond]...] [ORDERBY field [ASC|DESC], ...] [STARTPOSITION n] [MAXRESULTS m]
 *   cond := field (= | != | < | <= | > | >=) value | field IN (value, ...) | field LIKE 'text%'
 *
 * Keywords are case-insensitive; strings are single-quoted with `\'` for a quote (or double-quoted); values are
 * strings, numbers, true and false. Parsed with Chevrotain into a plain object; nothing here knows SQL.
 */
export interface ParsedQuery {
  select: '*' | 'count' | string[];
  entity: string;
  where: Condition[];
  orderBy: { field: string; direction: 'ASC' | 'DESC' }[];
  startPosition: number | null;
  maxResults: number | null;
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

class QueryParser extends EmbeddedActionsParser {
  constructor() {
    super(TOKENS, { maxLookahead: 2 });
    this.performSelfAnalysis();
  }

  private value = this.RULE('value', (): QueryValue => {
    return this.OR([
      { ALT: () => unquote(this.CONSUME(StringLiteral).image) },
      { ALT: () => Number(this.CONSUME(NumberLiteral).image) },
      { ALT: () => (this.CONSUME(True), true) },
      { ALT: () => (this.CONSUME(False), false) },
    ]);
  });

  private condition = this.RULE('condition', (): Condition => {
    const field = this.CONSUME(Identifier).image;
    return this.OR([
      {
        ALT: () => {
          const raw = this.CONSUME(Op).image;
          const op = (raw === '<>' ? '!=' : raw) as Comparison;
          return { field, op, value: this.SUBRULE(this.value) };
        },
      },
      {
        ALT: () => {
          this.CONSUME(In);
          this.CONSUME(LParen);
          const values: QueryValue[] = [];
          this.AT_LEAST_ONE_SEP({ SEP: Comma, DEF: () => values.push(this.SUBRULE2(this.value)) });
          this.CONSUME(RParen);
          return { field, op: 'IN' as const, values };
        },
      },
      {
        ALT: () => {
          this.CONSUME(Like);
          return { field, op: 'LIKE' as const, value: unquote(this.CONSUME(StringLiteral).image) };
        },
      },
    ]);
  });

  public query = this.RULE('query', (): ParsedQuery => {
    this.CONSUME(Select);
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
          const fields: string[] = [];
          this.AT_LEAST_ONE_SEP({ SEP: Comma, DEF: () => fields.push(this.CONSUME(Identifier).image) });
          return fields;
        },
      },
    ]);
    this.CONSUME(From);
    const entity = this.CONSUME2(Identifier).image;
    const where: Condition[] = [];
    this.OPTION(() => {
      this.CONSUME(Where);
      this.AT_LEAST_ONE_SEP2({ SEP: And, DEF: () => where.push(this.SUBRULE(this.condition)) });
    });
    const orderBy: ParsedQuery['orderBy'] = [];
    this.OPTION2(() => {
      this.CONSUME(OrderBy);
      this.AT_LEAST_ONE_SEP3({
        SEP: Comma,
        DEF: () => {
          const field = this.CONSUME3(Identifier).image;
          const direction = this.OPTION3(() =>
            this.OR2([
              { ALT: () => (this.CONSUME(Asc), 'ASC' as const) },
              { ALT: () => (this.CONSUME(Desc), 'DESC' as const) },
            ]),
          );
          orderBy.push({ field, direction: direction ?? 'ASC' });
        },
      });
    });
    let startPosition: number | null = null;
    let maxResults: number | null = null;
    // Both orders occur in the wild (MAXRESULTS 2 STARTPOSITION 1 and the reverse).
    this.MANY(() => {
      this.OR3([
        { ALT: () => (this.CONSUME(StartPosition), (startPosition = Number(this.CONSUME2(NumberLiteral).image))) },
        { ALT: () => (this.CONSUME(MaxResults), (maxResults = Number(this.CONSUME3(NumberLiteral).image))) },
      ]);
    });
    return { select, entity, where, orderBy, startPosition, maxResults };
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

const positionOf = (t: { startOffset: number; startLine?: number; startColumn?: number }) =>
  Number.isNaN(t.startOffset)
    ? null
    : { offset: t.startOffset, line: t.startLine ?? 1, column: t.startColumn ?? t.startOffset + 1 };

/** Parses a query, or throws QUERY_INVALID naming the first problem's position. */
export function parseQuery(text: string): ParsedQuery {
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
    throw queryError(`unexpected ${found}`, positionOf(token));
  }
  return result;
}

/** The query checked against the registry: a covered, readable entity and only its queryable fields. */
export interface CheckedQuery extends ParsedQuery {
  coverage: CoverageEntry;
}

export function checkQuery(query: ParsedQuery, text: string): CheckedQuery {
  const at = (name: string) => {
    const offset = text.toLowerCase().indexOf(name.toLowerCase());
    if (offset < 0) return null;
    const before = text.slice(0, offset).split('\n');
    return { offset, line: before.length, column: (before[before.length - 1]?.length ?? 0) + 1 };
  };
  const coverage = coverageOf(query.entity);
  if (!coverage || !coverage.operations.includes('read') || coverage.fields.length === 0) {
    throw queryError(`the gateway does not cover the entity ${query.entity}`, at(query.entity));
  }
  if (query.maxResults !== null && (query.maxResults < 1 || query.maxResults > 1000)) {
    throw queryError('MAXRESULTS must be 1-1000', at('maxresults'));
  }
  if (query.startPosition !== null && query.startPosition < 1) {
    throw queryError('STARTPOSITION must be 1 or more', at('startposition'));
  }
  const known = new Map(coverage.fields.map((f) => [f.toLowerCase(), f]));
  const canonical = (name: string) => {
    const field = known.get(name.toLowerCase());
    if (!field) throw queryError(`${coverage.entity} has no queryable field ${name}`, at(name));
    return field;
  };
  return {
    ...query,
    entity: coverage.entity,
    coverage,
    select: Array.isArray(query.select) ? query.select.map(canonical) : query.select,
    where: query.where.map((c) => ({ ...c, field: canonical(c.field) })),
    orderBy: query.orderBy.map((o) => ({ ...o, field: canonical(o.field) })),
  };
}
