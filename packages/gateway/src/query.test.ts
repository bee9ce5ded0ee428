import { readFileSync } from 'node:fs';
import { isDomainError } from '@firm/core';
import { describe, expect, it } from 'vitest';
import { checkQuery, QUERY_LIMITS } from './query';
import { parseQueryText as parseQuery } from './query-grammar';

const FIXTURES = new URL('./testdata/qbo-queries.txt', import.meta.url);
const fixtureQueries = () =>
  readFileSync(FIXTURES, 'utf8')
    .split('\n')
    .filter((q) => q.trim() !== '');

/** The refusal a query gets, or null when it parses and checks. */
function refusal(text: string) {
  try {
    checkQuery(parseQuery(text));
    return null;
  } catch (err) {
    if (!isDomainError(err)) throw err;
    return err;
  }
}

describe('query language', () => {
  it('parses selects, counts, field lists, conditions, ordering and paging in any keyword case', () => {
    expect(parseQuery("select * from SalesReceipt where TotalAmt > '300.00'")).toMatchObject({
      select: '*',
      entity: 'SalesReceipt',
      where: [{ field: 'TotalAmt', op: '>', value: '300.00' }],
    });
    expect(
      parseQuery(
        "SELECT Id, DisplayName FROM Customer WHERE Id IN ('5', '6') AND Active IN ( true, false ) AND DisplayName LIKE 'A%' ORDERBY DisplayName DESC MAXRESULTS 2 STARTPOSITION 3",
      ),
    ).toMatchObject({
      select: ['Id', 'DisplayName'],
      entity: 'Customer',
      where: [
        { field: 'Id', op: 'IN', values: ['5', '6'] },
        { field: 'Active', op: 'IN', values: [true, false] },
        { field: 'DisplayName', op: 'LIKE', value: 'A%' },
      ],
      orderBy: [{ field: 'DisplayName', direction: 'DESC' }],
      startPosition: 3,
      maxResults: 2,
    });
    expect(parseQuery('SELECT count(*) FROM Customer').select).toBe('count');
    expect(parseQuery("SELECT * FROM Customer WHERE DisplayName = 'Amy\\'s Bird Sanctuary'").where[0]).toEqual({
      field: 'DisplayName',
      op: '=',
      value: "Amy's Bird Sanctuary",
    });
  });

  it('names the position of a malformed query', () => {
    const amp = refusal('SELECT & FROM Customer');
    expect(amp?.code).toBe('QUERY_INVALID');
    expect(amp?.details?.[0]).toMatchObject({ offset: 7, line: 1, column: 8 });
    const second = refusal("SELECT * FROM Customer WHERE DisplayName = 'x'; DROP TABLE contacts");
    expect(second?.details?.[0]).toMatchObject({ offset: 46 });
    const truncated = refusal('SELECT ');
    expect(truncated?.message).toMatch(/end of the query/);
    const unknownEntity = refusal('SELECT * FROM Custmoer');
    expect(unknownEntity?.message).toMatch(/does not cover the entity Custmoer at line 1, column 15/);
    const unknownField = refusal("SELECT * FROM Customer WHERE Password = 'x'");
    expect(unknownField?.details?.[0]).toMatchObject({
      offset: 29,
      message: 'Customer has no queryable field Password',
    });
  });

  it('answers every recorded query either with a checked query or a refusal naming its position', () => {
    const accepted: string[] = [];
    for (const text of fixtureQueries()) {
      const err = refusal(text);
      if (!err) {
        accepted.push(text);
        continue;
      }
      expect(err.code, text).toBe('QUERY_INVALID');
      expect(err.message, text).toMatch(/at (line \d+, column \d+|the end of the query)$/);
    }
    expect(accepted).toEqual(
      expect.arrayContaining([
        'SELECT COUNT(*) FROM Customer',
        'SELECT * FROM Vendor MAXRESULTS 5 STARTPOSITION 26',
        "select * from SalesReceipt where TotalAmt > '300.00'",
        "SELECT * FROM Customer WHERE DisplayName = 'Amy\\'s Bird Sanctuary'",
        "SELECT * FROM Vendor WHERE DisplayName = 'Robertson & Associates'",
        'SELECT * FROM customer MAXRESULTS 1000 STARTPOSITION 1',
      ]),
    );
    expect(refusal('SELECT * FROM Employee WHERE Active IN (true, false)')?.code).toBe('QUERY_INVALID');
    expect(refusal("SELECT * FROM Vendor WHERE Active IN '(true, false)'")?.code).toBe('QUERY_INVALID');
  });
});

describe('query bounds', () => {
  /** The offset, line and column a refusal names, and its message. */
  const refused = (text: string) => {
    const err = refusal(text);
    expect(err?.code, text).toBe('QUERY_INVALID');
    return { ...err?.details?.[0], text: err?.message };
  };
  const conditions = (n: number) => Array.from({ length: n }, (_, i) => `DisplayName != '${i}'`).join(' AND ');

  it('refuses text over 10,000 characters at the first character past the cap, whatever the text', () => {
    expect(QUERY_LIMITS.maxLength).toBe(10_000);
    // Characters the lexer would refuse at offset 0: the length is judged before any of it is read.
    expect(refused('&'.repeat(1_000_000))).toMatchObject({ offset: 10_000, line: 1, column: 10_001 });
    const twoLines = `SELECT *\nFROM Customer WHERE DisplayName = '${'x'.repeat(10_000)}'`;
    expect(refused(twoLines)).toMatchObject({
      offset: 10_000,
      line: 2,
      column: 9_992,
      text: `a query is at most 10,000 characters; this one has 10,045 at line 2, column 9992`,
    });
    const atTheCap = `SELECT * FROM Customer WHERE DisplayName = '${'x'.repeat(10_000 - 45)}'`;
    expect(atTheCap).toHaveLength(10_000);
    expect(refusal(atTheCap)).toBeNull();
  });

  it('takes 50 conditions and refuses a 51st, naming it', () => {
    expect(refusal(`SELECT * FROM Customer WHERE ${conditions(50)}`)).toBeNull();
    const text = `SELECT * FROM Customer WHERE ${conditions(51)}`;
    expect(refused(text)).toMatchObject({
      offset: text.indexOf("DisplayName != '50'"),
      message: 'a query has at most 50 conditions',
    });
  });

  it('takes 1,000 values in an IN list and refuses a 1,001st, naming it', () => {
    const list = (n: number) => Array.from({ length: n }, (_, i) => `'v${i}'`).join(',');
    expect(refusal(`SELECT * FROM Customer WHERE Id IN (${list(1_000)})`)).toBeNull();
    const text = `SELECT * FROM Customer WHERE Id IN (${list(1_001)})`;
    expect(refused(text)).toMatchObject({
      offset: text.indexOf("'v1000'"),
      message: 'an IN list has at most 1,000 values',
    });
  });

  it('takes STARTPOSITION and MAXRESULTS as whole numbers in bounds, naming the number it refuses', () => {
    for (const paging of [
      'STARTPOSITION 1.5',
      'MAXRESULTS 1.5',
      'MAXRESULTS 1.0',
      'MAXRESULTS 0',
      'STARTPOSITION 0',
      'STARTPOSITION -1',
      'MAXRESULTS 1001',
      'STARTPOSITION 1000000001',
      'STARTPOSITION 100000000000000000000',
      'MAXRESULTS 5 STARTPOSITION 2.5',
    ]) {
      const text = `SELECT * FROM Customer ${paging}`;
      const offset = text.lastIndexOf(' ') + 1;
      expect(refused(text), paging).toMatchObject({ offset, line: 1, column: offset + 1 });
    }
    expect(refused('SELECT * FROM Customer MAXRESULTS 0').message).toBe('MAXRESULTS is a whole number from 1 to 1,000');
    expect(refused('SELECT * FROM Customer STARTPOSITION -1').message).toBe(
      'STARTPOSITION is a whole number from 1 to 1,000,000,000',
    );
    expect(parseQuery('SELECT * FROM Customer STARTPOSITION 1000000000 MAXRESULTS 1000')).toMatchObject({
      startPosition: 1_000_000_000,
      maxResults: 1_000,
    });
  });

  it('holds each literal to the type of its field, naming the literal it refuses', () => {
    const cases: [string, boolean][] = [
      ["TxnDate > '2026-02-30'", false],
      ["TxnDate > '2023-02-29'", false],
      ["TxnDate > '2024-02-29'", true],
      ["DueDate < '2026-13-01'", false],
      ["DueDate < '0000-01-01'", false],
      ["DueDate > '0001-01-01'", true],
      ["TxnDate IN ('2024-02-29', '2023-02-29')", false],
      ['TxnDate = 20240229', false],
      ["TxnDate LIKE '2024%'", false],
      ["MetaData.CreateTime > '2026-02-30T00:00:00Z'", false],
      ["MetaData.CreateTime > '2024-02-29T24:00:00Z'", false],
      ["MetaData.CreateTime > 'March 1, 2024'", false],
      ["MetaData.CreateTime > '2024-02-29T23:59:59+01:00'", true],
      ["MetaData.LastUpdatedTime > '2024-02-29T10:00:00'", true],
      ["MetaData.LastUpdatedTime > '2024-02-29'", true],
      ["TotalAmt > '300.00'", true],
      ["TotalAmt > 'lots'", false],
      ['TotalAmt > true', false],
      [`TotalAmt > 1${'0'.repeat(400)}`, false],
      ["Active = 'true'", true],
      ["Active = 'yes'", false],
    ];
    for (const [condition, ok] of cases) {
      const entity = condition.startsWith('Active') ? 'Customer' : 'Invoice';
      const text = `SELECT * FROM ${entity} WHERE Id != 'x' AND ${condition}`;
      if (ok) {
        expect(refusal(text), condition).toBeNull();
        continue;
      }
      const values = text.slice(text.indexOf(condition)).match(/'[^']*'|\b(true|\d+)$/g) ?? [];
      const last = values[values.length - 1] as string;
      expect(refused(text), condition).toMatchObject({ offset: text.lastIndexOf(last) });
    }
    expect(refused("SELECT * FROM Invoice WHERE TxnDate > '2026-02-30'").message).toBe(
      'TxnDate compares with a calendar date YYYY-MM-DD, not "2026-02-30"',
    );
  });
});
