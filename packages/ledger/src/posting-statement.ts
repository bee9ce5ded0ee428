import { ACCOUNT_TYPES, isBalanceSheetType, newId } from '@firm/core';
import {
  type Executor,
  type IdempotencyKey,
  idempotencyLockKey,
  keyIsFreeSql,
  keyRecordSql,
  preparedStatement,
} from '@firm/db';
import { sql } from 'drizzle-orm';
import type { LedgerContext } from './context';
import { rethrowLedgerError } from './db-errors';
import { type Entry, presentEntry } from './entries';
import type { LedgerEvent } from './events';
import type { PreparedPosting } from './posting';
import { postingRegisterRowsSql } from './register-rows';

/** A register row's description when its posting has no memo, payee or line description. */
const KIND_NAMES: Record<string, string> = { purchase: 'Purchase', deposit: 'Deposit', transfer: 'Transfer' };

/** entry.posted: the audit row keeps a summary, the outbox carries the entry as the API returns it. */
export const postedEvent = (entry: Entry): LedgerEvent => ({
  organizationId: entry.organizationId,
  action: 'entry.posted',
  resourceType: 'journal_entry',
  resourceId: entry.id,
  data: { source: entry.source, date: entry.date, totalCents: entry.totalCents, lineCount: entry.lines.length },
  payload: presentEntry(entry),
});

/**
 * What a posting is written under when it is idempotent: the key, and the response that a retry with the key
 * replays, stored by the posting statement together with the entry.
 */
export interface PostingKey extends IdempotencyKey {
  response: { status: number; body: unknown };
}

const p = sql.placeholder;

/**
 * The posting statement (see `writePostings`): any number of postings of one organization in one statement. Its text
 * never changes, whatever the postings, their lines or their keys: they come as three JSON arrays (postings, lines,
 * register rows), each row naming its posting by `n`. So it is prepared once per connection, and each call sends only
 * its values.
 *
 * Each posting is written whole or not at all, on its own gate: every account its lines name is an active account of
 * the organization (of its `account_types` when given: a transfer's are the balance-sheet ones), and, with a key, this
 * statement takes the key's advisory lock and the key has no live record. The entries are inserted first; everything
 * else is written from their RETURNING (`written`), so a line's trigger finds its entry, and nothing of a gated-out
 * posting is written.
 */
const postingsStatement = preparedStatement<{ n: number; written: boolean; bank_transaction_ids: string[] | string }>(
  'ledger_write_postings',
  sql`
    with posting as (
      select * from jsonb_to_recordset(${p('postings')}::jsonb) as x(
        n int, entry_id uuid, source entry_source, entry_date date, memo text, reference text, payee_name text,
        at timestamptz, actor_kind text, actor_id text, account_types text[], action text, resource_type text,
        key text, lock_key text, route text, former_route text, target text, request_hash text,
        response_status int, response_body jsonb, retention_hours int,
        audit_id uuid, outbox_id uuid, request_id text, event_data jsonb, event_payload jsonb,
        register_description text)
    ),
    line as (
      select * from jsonb_to_recordset(${p('lines')}::jsonb)
        as x(n int, id uuid, line_no int, account_id uuid, description text, amount_cents bigint)
    ),
    register_row as (
      select * from jsonb_to_recordset(${p('register')}::jsonb) as x(n int, ord int, id uuid, account_id uuid, amount_cents bigint)
    ),
    postable as (
      select l.n
      from line l
      join posting s on s.n = l.n
      left join accounts a
        on a.organization_id = ${p('organizationId')} and a.id = l.account_id and not a.archived
        and (s.account_types is null or a.type::text = any(s.account_types))
      where exists (select 1 from organizations o where o.id = ${p('organizationId')} and o.firm_id = ${p('firmId')})
      group by l.n
      having bool_and(a.id is not null)
    ),
    gate as (
      select s.n
      from posting s
      where s.n in (select n from postable)
        and ${keyIsFreeSql}
    ),
    new_entry as (
      insert into journal_entries
        (id, organization_id, status, source, entry_date, memo, reference, payee_name, created_at, posted_at,
         created_by_kind, created_by_id)
      select s.entry_id, ${p('organizationId')}, 'posted', s.source, s.entry_date, s.memo, s.reference, s.payee_name,
             s.at, s.at, s.actor_kind, s.actor_id
      from posting s
      where s.n in (select n from gate)
      order by s.n
      returning id
    ),
    written as (
      select s.* from posting s join new_entry e on e.id = s.entry_id
    ),
    new_lines as (
      insert into journal_lines (id, organization_id, entry_id, line_no, account_id, description, amount_cents)
      select l.id, ${p('organizationId')}, w.entry_id, l.line_no, l.account_id, l.description, l.amount_cents
      from line l
      join written w on w.n = l.n
      order by l.n, l.line_no
      returning entry_id, account_id, amount_cents
    ),
    audit_event as (
      insert into audit_events
        (id, firm_id, organization_id, actor_kind, actor_id, action, resource_type, resource_id, request_id, data, created_at)
      select w.audit_id, ${p('firmId')}, ${p('organizationId')}, w.actor_kind, w.actor_id, w.action, w.resource_type,
             w.entry_id::text, w.request_id, w.event_data, w.at
      from written w
      order by w.n
    ),
    outbox_event as (
      insert into outbox_events (id, firm_id, organization_id, type, payload, created_at)
      select w.outbox_id, ${p('firmId')}, ${p('organizationId')}, w.action, w.event_payload, w.at
      from written w
      order by w.n
    ),
    register as (${postingRegisterRowsSql(sql`register_row`, sql`written`)}
    ),
    registered as (
      select r.n, array_agg(r.id order by r.ord) as ids
      from register_row r
      join register g on g.id = r.id
      group by r.n
    ),
    key_record as (
      ${keyRecordSql(
        sql`written w left join registered g on g.n = w.n`,
        sql`case when g.ids is null then '{}'::jsonb
                 else jsonb_build_object('bankTransactionIds', to_jsonb(g.ids::text[])) end`,
      )}
    ),
    rollup as (
      insert into account_daily_balances (organization_id, account_id, day, amount_cents)
      select ${p('organizationId')}, l.account_id, w.entry_date, sum(l.amount_cents)
      from new_lines l
      join written w on w.entry_id = l.entry_id
      group by l.account_id, w.entry_date
      order by l.account_id, w.entry_date
      on conflict (organization_id, account_id, day)
      do update set amount_cents = account_daily_balances.amount_cents + excluded.amount_cents
    )
    select s.n, w.n is not null as written, coalesce(g.ids::text[], '{}') as bank_transaction_ids
    from posting s
    left join written w on w.n = s.n
    left join registered g on g.n = s.n
    order by s.n`,
);

/** The account types a transfer may move money between. */
const BALANCE_SHEET_TYPES = ACCOUNT_TYPES.filter(isBalanceSheetType);

/** A text[] as either driver returns it: an array, or (PGlite, untyped) Postgres's `{a,b}` literal of uuids. */
function textArray(value: string[] | string | null | undefined): string[] {
  if (Array.isArray(value)) return value;
  if (!value || value === '{}') return [];
  return value.slice(1, -1).split(',');
}

/** One posting to write: who writes it, the posting, and, when it is idempotent, its key and response. */
export interface PostingWrite {
  ctx: LedgerContext;
  posting: PreparedPosting;
  key?: PostingKey | undefined;
}

/** What writing a posting did: its register rows' ids when it was written, null when its gate held it back. */
export type PostingWritten = { bankTransactionIds: string[] } | null;

/**
 * Writes prepared postings of one organization in one statement (one round trip): for each, the entry, its lines, the
 * entry.posted events, with its key that key's record, and the lines' daily rollup. On a pool rather than in a
 * transaction, that statement is its own transaction. Each posting is written whole or not at all, and the answer
 * says which, in the order given. Nothing of a posting is written when an account its lines name is not an active
 * account of the organization (or, for a transfer, not a balance-sheet account), or, with a key, when another
 * request holds the key's advisory lock or the key already has a live record.
 *
 * The database lets a transaction write the lines of the entry it posts, checks the closed period on each entry, and
 * checks each entry's balance at commit; any of those refusals fails the whole statement. The rollup is summed from
 * the lines as stored (the RETURNING of their insert) per account and day over all the postings, upserted in
 * (account, day) order so that concurrent postings lock rollup rows in the same order and cannot deadlock. Those rows
 * are the hot rows that concurrent postings to one account wait for, so they are written last: their locks are held
 * only until the commit that follows.
 */
export async function writePostings(
  db: Executor,
  firmId: string,
  organizationId: string,
  writes: readonly PostingWrite[],
): Promise<PostingWritten[]> {
  const postings: object[] = [];
  const lines: object[] = [];
  const register: object[] = [];
  writes.forEach(({ ctx, posting, key }, n) => {
    const { entry, lines: postingLines, register: registerRows } = posting;
    const event = postedEvent(entry);
    postings.push({
      n,
      entry_id: entry.id,
      source: entry.source,
      entry_date: entry.date,
      memo: entry.memo,
      reference: entry.reference,
      payee_name: entry.payeeName,
      at: entry.createdAt.toISOString(),
      actor_kind: ctx.actor.kind,
      actor_id: ctx.actor.id,
      account_types: entry.source === 'transfer' ? BALANCE_SHEET_TYPES : null,
      key: key?.key ?? null,
      lock_key: key ? idempotencyLockKey(key) : null,
      route: key?.route ?? null,
      former_route: key?.formerRoute ?? null,
      target: key?.target ?? null,
      request_hash: key?.requestHash ?? null,
      response_status: key?.response.status ?? null,
      response_body: key?.response.body ?? null,
      retention_hours: key?.retentionHours ?? null,
      action: event.action,
      resource_type: event.resourceType,
      audit_id: newId(),
      outbox_id: newId(),
      request_id: ctx.requestId ?? null,
      event_data: event.data,
      event_payload: event.payload,
      register_description:
        entry.memo ?? entry.payeeName ?? postingLines[0]?.description ?? KIND_NAMES[entry.source] ?? entry.source,
    });
    postingLines.forEach((l, i) => {
      lines.push({
        n,
        id: entry.lines[i]?.id,
        line_no: i + 1,
        account_id: l.accountId,
        description: l.description,
        amount_cents: l.amountCents,
      });
    });
    registerRows.forEach((r, ord) => {
      register.push({ n, ord, id: r.id, account_id: r.accountId, amount_cents: r.amountCents });
    });
  });
  try {
    const rows = await postingsStatement(db, {
      firmId,
      organizationId,
      postings: JSON.stringify(postings),
      lines: JSON.stringify(lines),
      register: JSON.stringify(register),
    });
    const byN = new Map(rows.map((r) => [Number(r.n), r]));
    return writes.map((_, n) => {
      const row = byN.get(n);
      return row?.written === true ? { bankTransactionIds: textArray(row.bank_transaction_ids) } : null;
    });
  } catch (err) {
    rethrowLedgerError(err);
  }
}

/** Writes one prepared posting: `writePostings` with one. */
export async function writePosting(db: Executor, write: PostingWrite): Promise<PostingWritten> {
  const [written] = await writePostings(db, write.ctx.firmId, write.posting.entry.organizationId, [write]);
  return written ?? null;
}
