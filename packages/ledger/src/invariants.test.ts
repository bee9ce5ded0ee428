import { newId } from '@firm/core';
import { type Db, type Executor, organizations, pgErrorOf, rowsOf, type Tx } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { eq, sql } from 'drizzle-orm';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ledgerErrorOf } from './db-errors';
import { createLedgerFixture, type LedgerFixture } from './testing';

/**
 * The ledger rules of migrations/0003_ledger_invariants.sql, exercised with raw SQL that bypasses the
 * domain code entirely: these are what hold when a bug, a script or an operator writes directly.
 */

let database: TestDatabase;
let db: Db;
let f: LedgerFixture;

beforeAll(async () => {
  database = await createTestDatabase();
  db = database.db;
  f = await createLedgerFixture(db);
});
afterAll(() => database.close());

type Status = 'draft' | 'posted' | 'void';

async function insertEntry(tx: Executor, status: Status, date = '2026-03-10', org = f): Promise<string> {
  const id = newId();
  await tx.execute(sql`
    insert into journal_entries (id, organization_id, status, entry_date, posted_at, voided_at, created_by_kind, created_by_id)
    values (${id}, ${org.orgId}, ${status}, ${date}, ${status === 'draft' ? null : sql`now()`},
            ${status === 'void' ? sql`now()` : null}, 'test', 'test')`);
  return id;
}

async function insertLine(tx: Executor, entryId: string, lineNo: number, code: string, cents: number, org = f) {
  await tx.execute(sql`
    insert into journal_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
    values (${newId()}, ${org.orgId}, ${entryId}, ${lineNo}, ${org.account(code)}, ${cents})`);
}

/** Commits a balanced entry written the way a raw-SQL writer would: inserted as posted, then its lines. */
async function rawPosted(date = '2026-03-10', org = f): Promise<string> {
  return db.transaction(async (tx) => {
    const id = await insertEntry(tx, 'posted', date, org);
    await insertLine(tx, id, 1, '6300', 1250, org);
    await insertLine(tx, id, 2, '1000', -1250, org);
    return id;
  });
}

async function rawDraft(
  lines: [string, number][] = [
    ['6300', 500],
    ['1000', -500],
  ],
  date = '2026-03-10',
  org = f,
) {
  return db.transaction(async (tx) => {
    const id = await insertEntry(tx, 'draft', date, org);
    for (const [i, [code, cents]] of lines.entries()) await insertLine(tx, id, i + 1, code, cents, org);
    return id;
  });
}

const voidRaw = (tx: Executor, id: string) =>
  tx.execute(sql`update journal_entries set status = 'void', voided_at = now(), void_reason = 'test' where id = ${id}`);

interface Failure {
  sqlstate: string | undefined;
  code: string | undefined;
  message: string | undefined;
}

/** Runs raw SQL in a transaction that must fail, and says how: SQLSTATE, the mapped DomainError code, the message. */
async function failure(work: (tx: Tx) => Promise<unknown>): Promise<Failure> {
  const err = await db.transaction(work).then(
    () => null,
    (e: unknown) => e,
  );
  if (err === null) throw new Error('expected the transaction to fail, but it committed');
  const pgErr = pgErrorOf(err);
  return { sqlstate: pgErr?.code, code: ledgerErrorOf(err)?.code, message: pgErr?.message };
}

const statusOf = async (id: string) =>
  rowsOf<{ status: string }>(await db.execute(sql`select status from journal_entries where id = ${id}`))[0]?.status;

describe('a posted entry balances (checked at commit)', () => {
  it('accepts a balanced entry inserted as posted, whatever order its lines are written in', async () => {
    const id = await db.transaction(async (tx) => {
      const entry = await insertEntry(tx, 'posted');
      await insertLine(tx, entry, 1, '1000', -700);
      await insertLine(tx, entry, 2, '6300', 300);
      await insertLine(tx, entry, 3, '6400', 400);
      return entry;
    });
    expect(await statusOf(id)).toBe('posted');
  });

  it('refuses an unbalanced posted entry', async () => {
    const f1 = await failure(async (tx) => {
      const id = await insertEntry(tx, 'posted');
      await insertLine(tx, id, 1, '6300', 1000);
      await insertLine(tx, id, 2, '1000', -990);
    });
    expect(f1).toMatchObject({ sqlstate: 'P0001', code: 'UNBALANCED_ENTRY' });
    expect(f1.message).toMatch(/sum to 10 cents/);
  });

  it('refuses a posted entry with one line or none', async () => {
    expect(
      await failure(async (tx) => {
        const id = await insertEntry(tx, 'posted');
        await insertLine(tx, id, 1, '6300', 1000);
      }),
    ).toMatchObject({ sqlstate: 'P0001', code: 'VALIDATION_ERROR' });
    expect(await failure((tx) => insertEntry(tx, 'posted'))).toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  it('refuses a zero-amount line, on any entry', async () => {
    const f1 = await failure(async (tx) => {
      const id = await insertEntry(tx, 'draft');
      await insertLine(tx, id, 1, '6300', 0);
    });
    expect(f1.sqlstate).toBe('23514');
    expect(f1.message).toMatch(/journal_lines_amount_nonzero/);
  });

  it('lets a draft be unbalanced, but not be posted that way', async () => {
    const draft = await rawDraft([
      ['6300', 500],
      ['1000', -400],
    ]);
    expect(await statusOf(draft)).toBe('draft');
    const f1 = await failure((tx) =>
      tx.execute(sql`update journal_entries set status = 'posted', posted_at = now() where id = ${draft}`),
    );
    expect(f1).toMatchObject({ code: 'UNBALANCED_ENTRY' });
    expect(await statusOf(draft)).toBe('draft');
  });

  it('accepts a posting whose entry and lines are written inside savepoints', async () => {
    const id = await db.transaction(async (tx) => {
      const entry = await tx.transaction((sp) => insertEntry(sp, 'posted'));
      await tx.transaction(async (sp) => {
        await insertLine(sp, entry, 1, '6300', 100);
        await insertLine(sp, entry, 2, '1000', -100);
      });
      return entry;
    });
    expect(await statusOf(id)).toBe('posted');
  });
});

describe('lines of a posted or void entry are frozen', () => {
  let posted: string;
  let voided: string;
  beforeAll(async () => {
    posted = await rawPosted();
    voided = await rawPosted();
    await voidRaw(db, voided);
  });

  it('refuses new lines on a committed posted entry, even a balanced pair', async () => {
    const f1 = await failure(async (tx) => {
      await insertLine(tx, posted, 3, '6300', 100);
      await insertLine(tx, posted, 4, '1000', -100);
    });
    expect(f1).toMatchObject({ sqlstate: 'P0001', code: 'INVALID_STATE' });
  });

  it('refuses updating a posted line: amount, account or description', async () => {
    for (const change of [
      sql`amount_cents = amount_cents * 2`,
      sql`account_id = ${f.account('6400')}`,
      sql`description = 'rewritten'`,
    ]) {
      expect(
        await failure((tx) => tx.execute(sql`update journal_lines set ${change} where entry_id = ${posted}`)),
      ).toMatchObject({ code: 'INVALID_STATE' });
    }
  });

  it('refuses deleting a posted line', async () => {
    expect(
      await failure((tx) => tx.execute(sql`delete from journal_lines where entry_id = ${posted} and line_no = 2`)),
    ).toMatchObject({ code: 'INVALID_STATE' });
  });

  it('refuses any change to the lines of a void entry', async () => {
    expect(await failure((tx) => insertLine(tx, voided, 3, '6300', 5))).toMatchObject({ code: 'INVALID_STATE' });
    expect(
      await failure((tx) => tx.execute(sql`update journal_lines set amount_cents = 1 where entry_id = ${voided}`)),
    ).toMatchObject({ code: 'INVALID_STATE' });
    expect(await failure((tx) => tx.execute(sql`delete from journal_lines where entry_id = ${voided}`))).toMatchObject({
      code: 'INVALID_STATE',
    });
  });

  it('refuses moving a draft line into a posted entry', async () => {
    const draft = await rawDraft();
    expect(
      await failure((tx) =>
        tx.execute(
          sql`update journal_lines set entry_id = ${posted}, line_no = 9 where entry_id = ${draft} and line_no = 1`,
        ),
      ),
    ).toMatchObject({ code: 'INVALID_STATE' });
  });

  it('lets draft lines change and go', async () => {
    const draft = await rawDraft();
    await db.execute(sql`update journal_lines set amount_cents = 600 where entry_id = ${draft} and line_no = 1`);
    await db.execute(sql`delete from journal_lines where entry_id = ${draft}`);
    await db.execute(sql`delete from journal_entries where id = ${draft}`);
    expect(await statusOf(draft)).toBeUndefined();
  });
});

describe('an entry moves only draft -> posted -> void', () => {
  const setStatus = (id: string, status: Status) => (tx: Executor) =>
    tx.execute(sql`
      update journal_entries
      set status = ${status},
          posted_at = case when ${status} = 'draft' then null else coalesce(posted_at, now()) end,
          voided_at = case when ${status} = 'void' then now() end
      where id = ${id}`);

  it('refuses void -> posted and void -> draft', async () => {
    const id = await rawPosted();
    await voidRaw(db, id);
    expect(await failure(setStatus(id, 'posted'))).toMatchObject({ sqlstate: 'P0001', code: 'INVALID_STATE' });
    expect(await failure(setStatus(id, 'draft'))).toMatchObject({ code: 'INVALID_STATE' });
    expect(await statusOf(id)).toBe('void');
  });

  it('refuses posted -> draft', async () => {
    const id = await rawPosted();
    expect(await failure(setStatus(id, 'draft'))).toMatchObject({ code: 'INVALID_STATE' });
  });

  it('refuses draft -> void and creating an entry as void', async () => {
    const draft = await rawDraft();
    expect(await failure(setStatus(draft, 'void'))).toMatchObject({ code: 'INVALID_STATE' });
    expect(await failure((tx) => insertEntry(tx, 'void'))).toMatchObject({ code: 'INVALID_STATE' });
  });

  it("refuses changing a posted entry's date, organization or memo", async () => {
    const id = await rawPosted();
    const other = await createLedgerFixture(db);
    for (const change of [
      sql`entry_date = '2026-03-11'`,
      sql`organization_id = ${other.orgId}`,
      sql`memo = 'edited'`,
    ]) {
      expect(
        await failure((tx) => tx.execute(sql`update journal_entries set ${change} where id = ${id}`)),
      ).toMatchObject({ code: 'INVALID_STATE' });
    }
  });

  it('refuses changing anything else while voiding', async () => {
    const id = await rawPosted();
    expect(
      await failure((tx) =>
        tx.execute(sql`
          update journal_entries set status = 'void', voided_at = now(), void_reason = 'x', entry_date = '2026-04-01'
          where id = ${id}`),
      ),
    ).toMatchObject({ code: 'INVALID_STATE' });
  });

  it('refuses deleting a posted or void entry; a draft can go', async () => {
    const posted = await rawPosted();
    const voided = await rawPosted();
    await voidRaw(db, voided);
    for (const id of [posted, voided]) {
      expect(await failure((tx) => tx.execute(sql`delete from journal_entries where id = ${id}`))).toMatchObject({
        code: 'INVALID_STATE',
      });
    }
    const draft = await db.transaction((tx) => insertEntry(tx, 'draft'));
    await db.execute(sql`delete from journal_entries where id = ${draft}`);
    expect(await statusOf(draft)).toBeUndefined();
  });
});

describe('closed periods', () => {
  let g: LedgerFixture;
  const closeThrough = (date: string | null) =>
    db.update(organizations).set({ booksClosedThrough: date }).where(eq(organizations.id, g.orgId));

  beforeAll(async () => {
    g = await createLedgerFixture(db);
  });

  it('refuses posting on or before books_closed_through, and allows the day after', async () => {
    const before = await rawPosted('2026-01-20', g);
    await closeThrough('2026-01-31');
    const f1 = await failure(async (tx) => {
      const id = await insertEntry(tx, 'posted', '2026-01-31', g);
      await insertLine(tx, id, 1, '6300', 100, g);
      await insertLine(tx, id, 2, '1000', -100, g);
    });
    expect(f1).toMatchObject({ sqlstate: 'P0001', code: 'PERIOD_CLOSED' });
    expect(f1.message).toMatch(/closed through 2026-01-31/);
    expect(await statusOf(await rawPosted('2026-02-01', g))).toBe('posted');

    // Voiding changes the closed period's figures just as posting does.
    expect(await failure((tx) => voidRaw(tx, before))).toMatchObject({ code: 'PERIOD_CLOSED' });
    await closeThrough(null);
  });

  it('allows drafts dated in a closed period, but not posting them', async () => {
    await closeThrough('2026-01-31');
    const draft = await rawDraft(undefined, '2026-01-15', g);
    expect(
      await failure((tx) =>
        tx.execute(sql`update journal_entries set status = 'posted', posted_at = now() where id = ${draft}`),
      ),
    ).toMatchObject({ code: 'PERIOD_CLOSED' });
    await closeThrough(null);
    await db.execute(sql`update journal_entries set status = 'posted', posted_at = now() where id = ${draft}`);
    expect(await statusOf(draft)).toBe('posted');
  });
});

// Two real connections are needed to interleave transactions; the embedded database has one.
describe.runIf(Boolean(process.env.DATABASE_URL))('concurrent writers (Postgres)', () => {
  const connect = async () => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    return client;
  };

  it('a line added to a draft while another transaction posts it is seen by the balance check', async () => {
    const draft = await rawDraft();
    const [a, b] = [await connect(), await connect()];
    try {
      await a.query('begin');
      await a.query(
        `insert into journal_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
         values ($1, $2, $3, 3, $4, 999)`,
        [newId(), f.orgId, draft, f.account('6300')],
      );
      await b.query('begin');
      // Waits for a's share lock on the entry, then checks the lines a committed.
      const posting = b
        .query(`update journal_entries set status = 'posted', posted_at = now() where id = $1`, [draft])
        .then(() => b.query('commit'));
      await new Promise((r) => setTimeout(r, 200));
      await a.query('commit');
      const err = await posting.then(
        () => null,
        (e: unknown) => e,
      );
      expect(ledgerErrorOf(err)?.code).toBe('UNBALANCED_ENTRY');
      expect(await statusOf(draft)).toBe('draft');
    } finally {
      await a.end();
      await b.end();
    }
  });

  it('closing the books waits for a posting in flight, and a posting after the close sees it', async () => {
    const g = await createLedgerFixture(db);
    const [a, b] = [await connect(), await connect()];
    try {
      await a.query('begin');
      const id = newId();
      await a.query(
        `insert into journal_entries (id, organization_id, status, entry_date, posted_at, created_by_kind, created_by_id)
         values ($1, $2, 'posted', '2026-01-10', now(), 'test', 'test')`,
        [id, g.orgId],
      );
      let closed = false;
      const closing = b
        .query(`update organizations set books_closed_through = '2026-01-31' where id = $1`, [g.orgId])
        .then(() => {
          closed = true;
        });
      await new Promise((r) => setTimeout(r, 200));
      expect(closed).toBe(false);
      await a.query(
        `insert into journal_lines (id, organization_id, entry_id, line_no, account_id, amount_cents)
         values ($1, $3, $4, 1, $5, 100), ($2, $3, $4, 2, $6, -100)`,
        [newId(), newId(), g.orgId, id, g.account('6300'), g.account('1000')],
      );
      await a.query('commit');
      await closing;
      expect(await statusOf(id)).toBe('posted');
      const late = await db
        .transaction((tx) => insertEntry(tx, 'posted', '2026-01-11', g))
        .then(
          () => null,
          (e: unknown) => e,
        );
      expect(ledgerErrorOf(late)?.code).toBe('PERIOD_CLOSED');
    } finally {
      await a.end();
      await b.end();
    }
  });
});
