import { contacts } from '@firm/db';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

let t: TestApp;
beforeAll(async () => {
  t = await createTestApp({ config: { AGENT_WRITE_BUDGET: 2, AGENT_WRITE_WINDOW_SECONDS: 60 } });
});
afterAll(() => t.close());

describe('agent write budget', () => {
  it('answers writes over the budget with 429 and Retry-After, writing nothing, while reads go on', async () => {
    const base = `/agent/v1/acct/clients/${t.orgId}`;
    const create = (name: string) =>
      t.app.inject({
        method: 'POST',
        url: `${base}/entities/Customer`,
        headers: { ...t.auth, 'idempotency-key': name },
        payload: { DisplayName: name },
      });
    expect((await create('first')).statusCode).toBe(201);
    expect((await create('second')).statusCode).toBe(201);
    const contactsBefore = await t.database.db
      .select({ n: count() })
      .from(contacts)
      .where(eq(contacts.organizationId, t.orgId));
    const over = await create('third');
    expect(over.statusCode).toBe(429);
    expect(over.json().error.code).toBe('RATE_LIMITED');
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    const list = await t.app.inject({ method: 'GET', url: `${base}/customers`, headers: t.auth });
    expect(list.json().data.QueryResponse.Customer.map((c: { DisplayName: string }) => c.DisplayName)).toEqual([
      'first',
      'second',
    ]);
    expect(
      await t.database.db.select({ n: count() }).from(contacts).where(eq(contacts.organizationId, t.orgId)),
    ).toEqual(contactsBefore);
  });
});
