import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
let base: string;
let customerId: string;
beforeAll(async () => {
  t = await createTestApp();
  base = `/agent/v1/acct/clients/${t.orgId}`;
  const created = await t.app.inject({
    method: 'POST',
    url: `${base}/entities/Customer`,
    headers: { ...t.auth, 'idempotency-key': 'bounds-customer' },
    payload: { DisplayName: 'Amy Bird Sanctuary' },
  });
  customerId = created.json().data.Id;
});
afterAll(() => t.close());

const post = (app: TestApp, url: string, payload: object) =>
  app.app.inject({ method: 'POST', url, headers: app.auth, payload });
const query = (text: string) => post(t, `${base}/query`, { query: text });
const relayed = (text: string) => post(t, `${base}/request`, { path: 'query', query: { query: text } });
/** The query sent through both doors: the query route and the pass-through's `query` path. */
const bothDoors = async (text: string) => [await query(text), await relayed(text)];

/** `n` conditions joined by AND. */
const conditions = (n: number) => Array.from({ length: n }, () => "DisplayName != 'x'").join(' AND ');

describe('agent gateway: bounds on query text', () => {
  it('refuses a query longer than 10,000 characters through every door, at the first character past the cap', async () => {
    const megabyte = `SELECT * FROM Customer WHERE ${Array.from({ length: 60_000 }, () => "Id = 'abcde'").join(' AND ')}`;
    expect(megabyte.length).toBeGreaterThan(1_000_000);
    for (const res of [
      ...(await bothDoors(megabyte)),
      await post(t, `${base}/request`, { method: 'GET', path: 'query', body: { query: megabyte } }),
    ]) {
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'QUERY_INVALID', details: [{ field: 'query', offset: 10_000 }] });
    }
    const opening = "SELECT * FROM Customer WHERE DisplayName = '";
    const atTheCap = `${opening}${'x'.repeat(10_000 - opening.length - 1)}'`;
    expect(atTheCap.length).toBe(10_000);
    for (const res of await bothDoors(atTheCap)) expect(res.statusCode).toBe(200);
  });

  it('refuses more than 50 conditions, naming the 51st', async () => {
    const many = `SELECT * FROM Customer WHERE ${conditions(400)}`;
    expect(many.length).toBeLessThan(10_000);
    const fiftyFirst = `SELECT * FROM Customer WHERE ${conditions(50)} AND `.length;
    for (const res of await bothDoors(many)) {
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'QUERY_INVALID', details: [{ offset: fiftyFirst }] });
      expect(res.json().error.message).toMatch(/at most 50 conditions/);
    }
    for (const res of await bothDoors(`SELECT COUNT(*) FROM Customer WHERE ${conditions(50)}`)) {
      expect(res.statusCode).toBe(200);
    }
  });

  it('refuses an IN list of 70,000 values or of more than 1,000, and runs one of 1,000', async () => {
    const huge = `SELECT * FROM Customer WHERE Id IN (${Array.from({ length: 70_000 }, (_, i) => `'${i}'`).join(', ')})`;
    for (const res of await bothDoors(huge)) {
      expect(res.statusCode).toBe(400);
      expect(res.json().error.code).toBe('QUERY_INVALID');
    }
    const values = (n: number) => Array.from({ length: n - 1 }, (_, i) => String(i)).concat(`'${customerId}'`);
    const over = `SELECT * FROM Customer WHERE Id IN (${values(1_001).join(',')})`;
    const thousandFirst = over.indexOf(`'${customerId}'`);
    for (const res of await bothDoors(over)) {
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toMatchObject({ code: 'QUERY_INVALID', details: [{ offset: thousandFirst }] });
      expect(res.json().error.message).toMatch(/at most 1,000 values/);
    }
    for (const res of await bothDoors(`SELECT * FROM Customer WHERE Id IN (${values(1_000).join(',')})`)) {
      expect(res.statusCode).toBe(200);
      expect(res.json().data.QueryResponse.Customer.map((c: { Id: string }) => c.Id)).toEqual([customerId]);
    }
  });

  it('takes STARTPOSITION and MAXRESULTS as whole numbers in bounds, naming the number it refuses', async () => {
    for (const clause of [
      'STARTPOSITION 1.5',
      'MAXRESULTS 1.5',
      'MAXRESULTS 0',
      'STARTPOSITION -1',
      'MAXRESULTS 1001',
    ]) {
      const text = `SELECT * FROM Customer ${clause}`;
      const offset = text.lastIndexOf(' ') + 1;
      for (const res of await bothDoors(text)) {
        expect({ clause, status: res.statusCode }).toEqual({ clause, status: 400 });
        expect(res.json().error).toMatchObject({ code: 'QUERY_INVALID', details: [{ offset, column: offset + 1 }] });
      }
    }
    const huge = await query('SELECT * FROM Customer STARTPOSITION 100000000000000000000');
    expect(huge.json().error).toMatchObject({ code: 'QUERY_INVALID', details: [{ offset: 37 }] });
    for (const res of await bothDoors('SELECT * FROM Customer STARTPOSITION 2 MAXRESULTS 1000')) {
      expect(res.statusCode).toBe(200);
    }
  });

  it('compares dates and times only with real calendar dates, naming the literal it refuses', async () => {
    for (const [text, status] of [
      ["SELECT * FROM Invoice WHERE TxnDate > '2026-02-30'", 400],
      ["SELECT * FROM Invoice WHERE TxnDate > '2023-02-29'", 400],
      ["SELECT * FROM Invoice WHERE TxnDate IN ('2024-02-28', '2023-02-29')", 400],
      ["SELECT * FROM Invoice WHERE DueDate <= '2026-13-01'", 400],
      ["SELECT * FROM Invoice WHERE MetaData.CreateTime > '2026-02-30T00:00:00Z'", 400],
      ["SELECT * FROM Invoice WHERE TxnDate > '2024-02-29'", 200],
      ["SELECT * FROM Invoice WHERE TxnDate IN ('2024-02-29', '2026-01-31')", 200],
      ["SELECT * FROM Invoice WHERE MetaData.CreateTime > '2024-02-29T23:59:59+01:00'", 200],
      ["SELECT * FROM Invoice WHERE MetaData.LastUpdatedTime > '2024-02-29'", 200],
    ] as const) {
      for (const res of await bothDoors(text)) {
        expect({ text, status: res.statusCode }).toEqual({ text, status });
        if (status !== 400) continue;
        const literal = text.lastIndexOf("'", text.lastIndexOf("'") - 1);
        expect(res.json().error).toMatchObject({ code: 'QUERY_INVALID', details: [{ offset: literal }] });
      }
    }
  });
});

describe.skipIf(!process.env.DATABASE_URL)('agent gateway: statement timeout', () => {
  let slow: TestApp;
  beforeAll(async () => {
    slow = await createTestApp({ config: { GATEWAY_STATEMENT_TIMEOUT_MS: 200 } });
  });
  afterAll(() => slow.close());

  /** Runs `read` while another transaction holds the customers' table, so the read waits past the timeout. */
  async function whileLocked<T>(read: () => Promise<T>): Promise<T> {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked = () => {};
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holder = slow.database.db.transaction(async (tx) => {
      await tx.execute(sql`lock table contacts in access exclusive mode`);
      locked();
      // Released when the read answers; a read that never gives up still ends the test.
      await Promise.race([released, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    });
    await isLocked;
    try {
      return await read();
    } finally {
      release();
      await holder;
    }
  }

  it('cancels a read that runs past GATEWAY_STATEMENT_TIMEOUT_MS with 422 QUERY_TIMEOUT, the database still ready', async () => {
    const url = `/agent/v1/acct/clients/${slow.orgId}`;
    for (const send of [
      () => post(slow, `${url}/query`, { query: 'SELECT * FROM Customer' }),
      () => post(slow, `${url}/request`, { path: 'query', query: { query: 'SELECT COUNT(*) FROM Customer' } }),
      () => slow.app.inject({ method: 'GET', url: `${url}/customers`, headers: slow.auth }),
    ]) {
      const started = Date.now();
      const res = await whileLocked(send);
      expect(res.statusCode).toBe(422);
      expect(res.json().error).toMatchObject({ code: 'QUERY_TIMEOUT', retryable: false });
      expect(Date.now() - started).toBeLessThan(4_000);
    }
    expect((await slow.app.inject({ method: 'GET', url: '/api/ready' })).statusCode).toBe(200);
    const after = await post(slow, `${url}/query`, { query: 'SELECT COUNT(*) FROM Customer' });
    expect(after.statusCode).toBe(200);
  });
});
