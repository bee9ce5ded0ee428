import { randomUUID } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rowsOf } from './connection';
import { type IdempotencyKey, liveRecordQuery, replayIfUsed } from './idempotency';
import { createTestDatabase, type TestDatabase } from './testing';

let database: TestDatabase;
let firmId: string;
let organizationId: string;
beforeAll(async () => {
  database = await createTestDatabase();
  [{ firmId, organizationId }] = rowsOf<{ firmId: string; organizationId: string }>(
    await database.db.execute(sql`
      with f as (insert into firms (id, slug, name) values (gen_random_uuid(), 'keys', 'Keys') returning id)
      insert into organizations (id, firm_id, name) select gen_random_uuid(), f.id, 'Keys client' from f
      returning firm_id as "firmId", id as "organizationId"`),
  ) as [{ firmId: string; organizationId: string }];
  // A busy day of one company: 5,000 live records in its key space, and one an earlier release kept on its route.
  await database.db.execute(sql`
    insert into idempotency_keys (firm_id, organization_id, route, key, target, request_hash, response_status,
                                  response_body, expires_at)
    select ${firmId}::uuid, ${organizationId}::uuid, 'api', 'key-' || n, 'POST /api/v1/journal-entries', 'hash-' || n, 201,
           jsonb_build_object('n', n), now() + interval '1 day'
    from generate_series(1, 5000) n
    union all
    select ${firmId}::uuid, ${organizationId}::uuid, 'POST /api/v1/journal-entries', 'former', 'POST /api/v1/journal-entries',
           'hash-former', 201, '{"n":"former"}', now() + interval '1 day'`);
});
afterAll(() => database.close());

const keyOf = (key: string, requestHash: string): IdempotencyKey => ({
  key,
  firmId,
  organizationId,
  route: 'api',
  formerRoute: 'POST /api/v1/journal-entries',
  target: 'POST /api/v1/journal-entries',
  requestHash,
  retentionHours: 24,
});

/** The buffers a statement touched, from its plan as executed. */
async function buffersOf(query: ReturnType<typeof liveRecordQuery>): Promise<number> {
  const [row] = rowsOf<{ 'QUERY PLAN': [{ Plan: Record<string, number> }] }>(
    await database.db.execute(sql`explain (analyze, buffers, format json) ${query}`),
  );
  const plan = row?.['QUERY PLAN'][0].Plan ?? {};
  return (plan['Shared Hit Blocks'] ?? 0) + (plan['Shared Read Blocks'] ?? 0);
}

describe('a key’s record', () => {
  it('is found among a day of the company’s records, in its key space or under its former route', async () => {
    expect(await replayIfUsed(database.db, keyOf('key-4321', 'hash-4321'))).toEqual({
      replayed: true,
      status: 201,
      body: { n: 4321 },
    });
    expect(await replayIfUsed(database.db, keyOf('former', 'hash-former'))).toMatchObject({ body: { n: 'former' } });
    expect(await replayIfUsed(database.db, keyOf(randomUUID(), 'hash'))).toBeNull();
  });

  it('is looked up through the key, not by reading the company’s other records', async () => {
    // The table's statistics predate the day's records, as on a busy day before autovacuum analyzes it. A lookup that
    // walked the organization's records would touch dozens of index pages for 5,000 keys (71 before 0035); through
    // the key it is one descent.
    for (const key of ['key-2500', 'former', randomUUID()]) {
      expect(await buffersOf(liveRecordQuery(keyOf(key, 'hash')))).toBeLessThan(12);
    }
  });
});
