import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { isDomainError } from '@firm/core';
import { accounts, API_KEYS, bankAccounts, type Db, organizations, rowsOf } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { eq, sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getEntry } from './entries';
import { postOnce, type PostOnceOutcome } from './posting';
import { postingStatementStats } from './posting-batches';
import type { PostingInput } from './posting-inputs';
import { createLedgerFixture, type LedgerFixture, rollupMismatches } from './testing';

// Postings sent at once to one pool share statements (see posting-batches.ts). These tests send many at once, so that
// after the first turns the rest wait and go together, and check that each posting is answered as it would be alone.

let database: TestDatabase;
let db: Db;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
});
afterAll(() => database.close());

const purchase = (f: LedgerFixture, cents: number, date = '2026-05-04', category = '6300'): PostingInput => ({
  kind: 'purchase',
  date,
  memo: `supplies ${cents}`,
  sourceAccountId: f.account('1000'),
  lines: [{ accountId: f.account(category), amountCents: cents }],
});

const keyOf = (f: LedgerFixture, key = randomUUID()) => ({
  key,
  firmId: f.firmId,
  organizationId: f.orgId,
  route: API_KEYS,
  target: 'POST /api/v1/purchases',
  requestHash: `hash-${key}`,
  retentionHours: 24,
});

/** Posts each input at once on the pool, with a key of its own; each outcome, or the error it was refused with. */
function postAll(f: LedgerFixture, inputs: PostingInput[]): Promise<(PostOnceOutcome | Error)[]> {
  return Promise.all(
    inputs.map((input) => postOnce(db, f.ctx, f.orgId, input, { key: keyOf(f) }).catch((err: unknown) => err as Error)),
  );
}

/** A response body as stored and replayed: JSON. */
const asJson = (body: unknown): unknown => JSON.parse(JSON.stringify(body));

const entryIdOf = (outcome: PostOnceOutcome | Error | undefined): string =>
  (outcome as PostOnceOutcome).receipt?.journalEntryId as string;

/** How many transactions wrote these entries: fewer than the entries when postings shared statements. */
async function transactionsOf(entryIds: string[]): Promise<number> {
  const [row] = rowsOf<{ n: number }>(
    await db.execute(sql`select count(distinct xmin::text)::int as n from journal_entries
                         where id = any(${`{${entryIds.join(',')}}`}::uuid[])`),
  );
  return row?.n ?? 0;
}

describe('postings sent at once to one company', () => {
  it('are each written whole, in fewer statements than postings, with the rollup equal to the lines', async () => {
    const f = await createLedgerFixture(db);
    const outcomes = await postAll(
      f,
      Array.from({ length: 40 }, (_, i) => purchase(f, 100 + i)),
    );
    expect(outcomes.every((o) => !(o instanceof Error) && o.status === 201 && !o.replayed)).toBe(true);
    const ids = outcomes.map(entryIdOf);
    expect(new Set(ids).size).toBe(40);
    expect(await transactionsOf(ids)).toBeLessThan(40);
    for (const [i, id] of ids.entries()) {
      const entry = await getEntry(db, f.orgId, id);
      expect(entry.totalCents).toBe(100 + i);
      expect(entry.memo).toBe(`supplies ${100 + i}`);
      expect(entry.lines.map((l) => l.debitCents - l.creditCents)).toEqual([100 + i, -(100 + i)]);
    }
    const [audit] = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from audit_events
                           where resource_id = any(${`{${ids.join(',')}}`}::text[])`),
    );
    expect(audit?.n).toBe(40);
    const [outbox] = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from outbox_events
                           where organization_id = ${f.orgId} and payload->>'id' = any(${`{${ids.join(',')}}`}::text[])`),
    );
    expect(outbox?.n).toBe(40);
    expect(await rollupMismatches(db, f.orgId)).toEqual([]);
    const [daily] = rowsOf<{ amount_cents: string }>(
      await db.execute(sql`select amount_cents::text from account_daily_balances
                           where organization_id = ${f.orgId} and account_id = ${f.account('6300')} and day = '2026-05-04'`),
    );
    expect(Number(daily?.amount_cents)).toBe(40 * 100 + (39 * 40) / 2);
  });

  it('store each key with its own response, which a retry replays', async () => {
    const f = await createLedgerFixture(db);
    const keys = Array.from({ length: 20 }, () => keyOf(f));
    const first = await Promise.all(keys.map((key, i) => postOnce(db, f.ctx, f.orgId, purchase(f, 500 + i), { key })));
    expect(await transactionsOf(first.map(entryIdOf))).toBeLessThan(20);
    const again = await Promise.all(keys.map((key, i) => postOnce(db, f.ctx, f.orgId, purchase(f, 500 + i), { key })));
    for (const [i, outcome] of again.entries()) {
      expect(outcome.replayed).toBe(true);
      expect(outcome.body).toEqual(asJson(first[i]?.body));
    }
  });

  it('refuse only the posting dated in a closed period; the others are written', async () => {
    const f = await createLedgerFixture(db);
    await db.update(organizations).set({ booksClosedThrough: '2026-03-31' }).where(eq(organizations.id, f.orgId));
    const inputs = Array.from({ length: 30 }, (_, i) => purchase(f, 700 + i, i === 17 ? '2026-03-15' : '2026-04-15'));
    const outcomes = await postAll(f, inputs);
    const refused = outcomes[17];
    expect(isDomainError(refused) && refused.code).toBe('PERIOD_CLOSED');
    const written = outcomes.filter((_, i) => i !== 17);
    // Of another date, it went in a statement of its own; the others went together.
    expect(written.every((o) => !(o instanceof Error) && o.status === 201)).toBe(true);
    expect(await transactionsOf(written.map(entryIdOf))).toBeLessThan(29);
    const [row] = rowsOf<{ n: number; march: number }>(
      await db.execute(sql`select count(*)::int as n, count(*) filter (where entry_date < '2026-04-01')::int as march
                           from journal_entries where organization_id = ${f.orgId}`),
    );
    expect(row).toEqual({ n: 29, march: 0 });
    expect(await rollupMismatches(db, f.orgId)).toEqual([]);
  });

  it('refuse only the posting that names an archived account or a transfer to an income account', async () => {
    const f = await createLedgerFixture(db);
    await db
      .update(accounts)
      .set({ archived: true })
      .where(eq(accounts.id, f.account('6200')));
    const inputs = Array.from({ length: 20 }, (_, i) => purchase(f, 900 + i));
    inputs[5] = purchase(f, 905, '2026-05-04', '6200');
    inputs[12] = {
      kind: 'transfer',
      date: '2026-05-04',
      fromAccountId: f.account('1000'),
      toAccountId: f.account('4000'),
      amountCents: 912,
    };
    const outcomes = await postAll(f, inputs);
    expect(isDomainError(outcomes[5]) && outcomes[5].code).toBe('INVALID_ACCOUNT');
    expect(isDomainError(outcomes[12]) && outcomes[12].code).toBe('INVALID_TRANSFER');
    const written = outcomes.filter((_, i) => i !== 5 && i !== 12);
    expect(written.every((o) => !(o instanceof Error) && o.status === 201)).toBe(true);
    expect(await transactionsOf(written.map(entryIdOf))).toBeLessThan(18);
    const [row] = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from journal_entries where organization_id = ${f.orgId}`),
    );
    expect(row?.n).toBe(18);
  });

  it('with one key sent many times at once: one entry, every other answer a replay of it or told to retry', async () => {
    const f = await createLedgerFixture(db);
    const key = keyOf(f);
    const outcomes = await Promise.all(
      Array.from({ length: 12 }, () =>
        postOnce(db, f.ctx, f.orgId, purchase(f, 1234), { key }).catch((err: unknown) => err as Error),
      ),
    );
    const fresh = outcomes.filter((o) => !(o instanceof Error) && !o.replayed) as PostOnceOutcome[];
    expect(fresh).toHaveLength(1);
    for (const o of outcomes) {
      if (o instanceof Error) expect(isDomainError(o) && o.code).toBe('IDEMPOTENCY_IN_PROGRESS');
      else expect(asJson(o.body)).toEqual(asJson(fresh[0]?.body));
    }
    const [row] = rowsOf<{ n: number }>(
      await db.execute(sql`select count(*)::int as n from journal_entries where organization_id = ${f.orgId}`),
    );
    expect(row?.n).toBe(1);
  });

  it("give each bank-linked posting its own register rows' ids", async () => {
    const f = await createLedgerFixture(db);
    await db.insert(bankAccounts).values({ organizationId: f.orgId, accountId: f.account('1000'), name: 'Checking' });
    const outcomes = await postAll(
      f,
      Array.from({ length: 15 }, (_, i) => purchase(f, 300 + i)),
    );
    const ids = outcomes.map(entryIdOf);
    expect(await transactionsOf(ids)).toBeLessThan(15);
    for (const [i, outcome] of outcomes.entries()) {
      const receipt = (outcome as PostOnceOutcome).receipt;
      expect(receipt?.bankTransactionIds).toHaveLength(1);
      const [row] = rowsOf<{ journal_entry_id: string; amount_cents: string }>(
        await db.execute(sql`select journal_entry_id, amount_cents::text from bank_transactions
                             where id = ${receipt?.bankTransactionIds[0] ?? ''}`),
      );
      expect(row).toEqual({ journal_entry_id: ids[i], amount_cents: String(-(300 + i)) });
      expect((outcome as PostOnceOutcome).body).toMatchObject({ bankTransactionIds: receipt?.bankTransactionIds });
    }
  });

  it('of two dates go in statements of one date each', async () => {
    const f = await createLedgerFixture(db);
    const outcomes = await postAll(
      f,
      Array.from({ length: 30 }, (_, i) => purchase(f, 50 + i, i % 2 === 0 ? '2026-06-01' : '2026-06-02')),
    );
    expect(outcomes.every((o) => !(o instanceof Error) && o.status === 201)).toBe(true);
    expect(await transactionsOf(outcomes.map(entryIdOf))).toBeLessThan(30);
    const [row] = rowsOf<{ mixed: number }>(
      await db.execute(sql`select count(*)::int as mixed from (
        select xmin::text from journal_entries where organization_id = ${f.orgId}
        group by xmin::text having count(distinct entry_date) > 1) s`),
    );
    expect(row?.mixed).toBe(0);
    expect(await rollupMismatches(db, f.orgId)).toEqual([]);
  });

  it('whose statement loses its connection are each refused, and none is written again', async () => {
    if (!database.url) return; // pg_terminate_backend needs a real server
    // Through a transaction pooler the backend cut is the pooler's server connection, and what reaches the service (and
    // when the next statement reaches a backend) is the pooler's doing; this test is about a direct connection.
    if (process.env.DATABASE_POOL_MODE === 'transaction') return;
    const f = await createLedgerFixture(db);
    // A first posting creates the day's rollup rows; a second connection then holds one of them, so each statement
    // after it waits on that row until its connection is cut.
    await postOnce(db, f.ctx, f.orgId, purchase(f, 1), { key: keyOf(f) });
    const blocker = new pg.Client({ connectionString: database.url });
    await blocker.connect();
    const cut: number[] = [];
    const cutWaitingStatement = async () => {
      for (let i = 0; i < 200; i++) {
        const { rows } = await blocker.query<{ pid: number }>(
          `select pid from pg_stat_activity
           where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()
             and pid <> all($1::int[])`,
          [cut],
        );
        if (rows[0]) {
          cut.push(rows[0].pid);
          await blocker.query('select pg_terminate_backend($1)', [rows[0].pid]);
          return;
        }
        await new Promise((r) => setTimeout(r, 25));
      }
      throw new Error('no statement waited on the rollup row');
    };
    try {
      await blocker.query('begin');
      await blocker.query(
        `select 1 from account_daily_balances where organization_id = $1 and account_id = $2 and day = '2026-05-04'
         for update`,
        [f.orgId, f.account('1000')],
      );
      // The first goes alone and waits; the other nine wait for it, then go together and wait in their turn.
      const pending = postAll(
        f,
        Array.from({ length: 10 }, (_, i) => purchase(f, 2000 + i)),
      );
      await cutWaitingStatement();
      await cutWaitingStatement();
      const outcomes = await pending;
      await blocker.query('rollback');
      expect(outcomes.every((o) => o instanceof Error && !isDomainError(o))).toBe(true);
      const [row] = rowsOf<{ n: number }>(
        await db.execute(sql`select count(*)::int as n from journal_entries where organization_id = ${f.orgId}`),
      );
      expect(row?.n).toBe(1);
    } finally {
      await blocker.end();
    }
  });

  it('refused whole because of one posting are each written again alone, and all answered as alone', async () => {
    const f = await createLedgerFixture(db);
    // A record of one key past its retention that the purge has not removed: the statement's insert of that key's
    // record fails on the primary key, so the statement holding it fails whole.
    const expired = keyOf(f);
    await db.execute(sql`insert into idempotency_keys
      (firm_id, organization_id, route, key, target, request_hash, response_status, response_body, expires_at)
      values (${f.firmId}, ${f.orgId}, ${API_KEYS}, ${expired.key}, ${expired.target}, 'an older request', 201,
              '{}'::jsonb, now() - interval '1 hour')`);
    const splits = postingStatementStats(db).splits;
    // The first goes alone; the nine after it, the expired key's among them, go together.
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        postOnce(db, f.ctx, f.orgId, purchase(f, 40 + i), { key: i === 5 ? expired : keyOf(f) }),
      ),
    );
    expect(postingStatementStats(db).splits).toBe(splits + 1);
    expect(outcomes.map((o) => [o.status, o.replayed])).toEqual(Array(10).fill([201, false]));
    expect(new Set(outcomes.map(entryIdOf)).size).toBe(10);
    expect(await rollupMismatches(db, f.orgId)).toEqual([]);
  });

  it("that wait on a lock hold up the company's other postings only briefly, and other companies' not at all", async () => {
    if (!database.url) return; // a second connection holding a row lock needs a real server
    const f = await createLedgerFixture(db);
    const other = await createLedgerFixture(db);
    await postOnce(db, f.ctx, f.orgId, purchase(f, 1), { key: keyOf(f) });
    const blocker = new pg.Client({ connectionString: database.url });
    await blocker.connect();
    try {
      await blocker.query('begin');
      await blocker.query(
        `select 1 from account_daily_balances where organization_id = $1 and account_id = $2 and day = '2026-05-04'
         for update`,
        [f.orgId, f.account('6300')],
      );
      let stuckDone = false;
      const stuck = postOnce(db, f.ctx, f.orgId, purchase(f, 2), { key: keyOf(f) }).finally(() => {
        stuckDone = true;
      });
      // Rows the blocker does not hold: another year of the same company, and another company.
      const elsewhere = purchase(f, 3, '2025-01-10', '6200');
      const [sameCompany, otherCompany] = await Promise.all([
        postOnce(db, f.ctx, f.orgId, elsewhere, { key: keyOf(f) }),
        postOnce(db, other.ctx, other.orgId, purchase(other, 4), { key: keyOf(other) }),
      ]);
      expect([sameCompany.status, otherCompany.status]).toEqual([201, 201]);
      expect(stuckDone).toBe(false);
      await blocker.query('rollback');
      expect((await stuck).status).toBe(201);
    } finally {
      await blocker.end();
    }
  });
});
