// The query language's grammar (Chevrotain) and the parse that holds a query to QUERY_LIMITS. Loaded by `parseQuery`
// with the first query, not by every process that starts: Chevrotain and the grammar's analysis are the
// gateway's largest start-up cost.
import {
  createToken,
  EmbeddedActionsParser,
  type ILexingError,
  type IRecognitionException,
  type IToken,
  Lexer,
  type TokenType,
} from 'chevrotain';
import type { Comparison, Condition, QueryValue } from '@firm/platform';
import {
  type ParsedQuery,
  type Position,
  pagingNumber,
  positionAt,
  positionOf,
  QUERY_LIMITS,
  queryError,
  thousands,
} from './query';

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

/**
 * Parses a query, or throws QUERY_INVALID naming the first problem's position. Text over QUERY_LIMITS.maxLength is
 * refused before it is read, so a long text costs no more than a short one; then the WHERE clause's conditions, each
 * IN list and the paging numbers are held to their bounds.
 */
export function parseQueryText(text: string): ParsedQuery {
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
