import { readFileSync } from 'node:fs';
import { isDomainError } from '@firm/core';
import { describe, expect, it } from 'vitest';
import { checkQuery, parseQuery } from './query';

const FIXTURES = new URL('./testdata/qbo-queries.txt', import.meta.url);
const fixtureQueries = () =>
  readFileSync(FIXTURES, 'utf8')
    .split('\n')
    .filter((q) => q.trim() !== '');

/** The refusal a query gets, or null when it parses and checks. */
function refusal(text: string) {
  try {
    checkQuery(parseQuery(text), text);
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
    ).toEqual({
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
