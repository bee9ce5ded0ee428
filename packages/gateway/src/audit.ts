import { createHash } from 'node:crypto';
import { decodeCursor, newId, type Page, toPage } from '@firm/core';
import { agentAuditEvents, type Db, type Executor, pgErrorOf, preparedStatement, rowsOf } from '@firm/db';
import type { Credential } from '@firm/identity';
import { and, asc, desc, eq, gt, gte, inArray, lt, lte, type SQL, sql } from 'drizzle-orm';

export type AgentAuditEvent = typeof agentAuditEvents.$inferSelect;

export type AuditInput = Omit<AgentAuditEvent, 'id' | 'seq' | 'createdAt' | 'prevHash' | 'hash'>;

/** The hash that starts every firm's chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an event's hash covers: every field but the hash itself, in a fixed order, and the previous hash. */
export function hashOf(e: Omit<AgentAuditEvent, 'hash'>): string {
  const fields = [
    e.id,
    e.firmId,
    String(e.seq),
    e.organizationId,
    e.actorKind,
    e.actorId,
    e.actorName,
    e.operation,
    e.entityType,
    e.entityId,
    e.outcome,
    String(e.statusCode),
    e.errorCode,
    e.requestId,
    String(e.dryRun),
    e.syncTokenBefore,
    e.syncTokenAfter,
    e.createdAt.toISOString(),
  ];
  return createHash('sha256')
    .update(`${e.prevHash}\n${JSON.stringify(fields)}`)
    .digest('hex');
}

/** The columns of an event and the fields they hold. */
const EVENT_COLUMNS: [string, keyof AgentAuditEvent][] = [
  ['id', 'id'],
  ['firm_id', 'firmId'],
  ['seq', 'seq'],
  ['organization_id', 'organizationId'],
  ['actor_kind', 'actorKind'],
  ['actor_id', 'actorId'],
  ['actor_name', 'actorName'],
  ['operation', 'operation'],
  ['entity_type', 'entityType'],
  ['entity_id', 'entityId'],
  ['outcome', 'outcome'],
  ['status_code', 'statusCode'],
  ['error_code', 'errorCode'],
  ['request_id', 'requestId'],
  ['dry_run', 'dryRun'],
  ['sync_token_before', 'syncTokenBefore'],
  ['sync_token_after', 'syncTokenAfter'],
  ['created_at', 'createdAt'],
  ['prev_hash', 'prevHash'],
  ['hash', 'hash'],
];

/** The append itself runs on every gateway request, so it is a prepared statement (parsed once per connection). */
const insertEventStatement = preparedStatement(
  'gateway_append_audit_event',
  sql`insert into agent_audit_events (${sql.raw(EVENT_COLUMNS.map(([column]) => column).join(', '))})
      values (${sql.join(
        EVENT_COLUMNS.map(([, field]) => sql.placeholder(field)),
        sql`, `,
      )})`,
);

interface ChainHead {
  seq: number;
  hash: string;
}

/**
 * Per database, each firm's last event as this process last wrote it, and the tail of the firm's appends in flight:
 * appends of one firm in one process go one after another, so they do not race each other for a sequence number.
 */
const chains = new WeakMap<Db, Map<string, { head: ChainHead | null; tail: Promise<unknown> }>>();

async function readChainHead(db: Db, firmId: string): Promise<ChainHead> {
  const [last] = await db
    .select({ seq: agentAuditEvents.seq, hash: agentAuditEvents.hash })
    .from(agentAuditEvents)
    .where(eq(agentAuditEvents.firmId, firmId))
    .orderBy(desc(agentAuditEvents.seq))
    .limit(1);
  return last ?? { seq: 0, hash: GENESIS_HASH };
}

/**
 * Appends an event to its firm's chain. The event takes the sequence number after the head this process knows and
 * links to its hash; the unique (firm, seq) key lets only one writer take each number, so an append that loses the
 * race to another process reads the real head and tries again. In the usual case an append is a single insert: no
 * transaction, no lock, no read.
 */
export function appendAuditEvent(db: Db, input: AuditInput, now = new Date()): Promise<AgentAuditEvent> {
  let firms = chains.get(db);
  if (!firms) chains.set(db, (firms = new Map()));
  let chain = firms.get(input.firmId);
  if (!chain) firms.set(input.firmId, (chain = { head: null, tail: Promise.resolve() }));
  const state = chain;
  const appended = state.tail.then(async () => {
    const createdAt = new Date(Math.floor(now.getTime()));
    let head = state.head ?? (await readChainHead(db, input.firmId));
    for (let attempt = 1; ; attempt++) {
      const event = { ...input, id: newId(), seq: head.seq + 1, createdAt, prevHash: head.hash };
      const full: AgentAuditEvent = { ...event, hash: hashOf(event) };
      try {
        await insertEventStatement(db, { ...full, createdAt: full.createdAt.toISOString() });
        state.head = { seq: full.seq, hash: full.hash };
        return full;
      } catch (err) {
        state.head = null;
        const pgErr = pgErrorOf(err);
        const lostRace = pgErr?.code === '23505' && pgErr.message.includes('agent_audit_events_firm_seq_key');
        if (!lostRace || attempt >= 100) throw err;
        head = await readChainHead(db, input.firmId);
      }
    }
  });
  state.tail = appended.catch(() => undefined);
  return appended;
}

export interface AuditFilter {
  clientId?: string | undefined;
  operation?: string | undefined;
  outcome?: AgentAuditEvent['outcome'] | undefined;
  since?: string | undefined;
  until?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** The firm's agent audit events, newest first; a credential narrowed to some organizations sees only theirs. */
export async function listAgentAuditEvents(
  db: Executor,
  credential: Credential,
  filter: AuditFilter,
): Promise<Page<AgentAuditEvent>> {
  if (credential.organizationIds?.length === 0) return { data: [], nextCursor: null };
  const before = filter.cursor ? Number(decodeCursor(filter.cursor, ['int'])[0]) : undefined;
  const rows = await db
    .select()
    .from(agentAuditEvents)
    .where(
      and(
        eq(agentAuditEvents.firmId, credential.firmId),
        credential.organizationIds === null
          ? undefined
          : inArray(agentAuditEvents.organizationId, [...credential.organizationIds]),
        filter.clientId ? eq(agentAuditEvents.organizationId, filter.clientId) : undefined,
        filter.operation ? eq(agentAuditEvents.operation, filter.operation) : undefined,
        filter.outcome ? eq(agentAuditEvents.outcome, filter.outcome) : undefined,
        filter.since ? gte(agentAuditEvents.createdAt, new Date(filter.since)) : undefined,
        filter.until ? lte(agentAuditEvents.createdAt, new Date(filter.until)) : undefined,
        before !== undefined ? lt(agentAuditEvents.seq, before) : undefined,
      ),
    )
    .orderBy(desc(agentAuditEvents.seq))
    .limit(filter.limit + 1);
  return toPage(rows, filter.limit, (e) => [e.seq]);
}

export interface ChainBreak {
  firmId: string;
  seq: number;
  id: string | null;
  problem: string;
}

export interface VerifyResult {
  ok: boolean;
  firms: number;
  events: number;
  /** The first event (per firm, in chain order) whose hash, link or sequence is wrong. */
  breaks: ChainBreak[];
}

/**
 * Walks every firm's chain from its first event: each event must have the next sequence number, name the previous
 * event's hash, and hash to what it stores. Reports the first broken event of each firm: an edited event fails its
 * own hash, a deleted one leaves a gap in the sequence, an inserted one breaks the link or the sequence.
 */
export async function verifyAuditChains(db: Executor, options: { firmId?: string } = {}): Promise<VerifyResult> {
  const firmIds = options.firmId
    ? [options.firmId]
    : rowsOf<{ firm_id: string }>(
        await db.execute(sql`select distinct firm_id from agent_audit_events order by firm_id`),
      ).map((r) => r.firm_id);
  const result: VerifyResult = { ok: true, firms: firmIds.length, events: 0, breaks: [] };
  for (const firmId of firmIds) {
    let expectedSeq = 1;
    let prevHash = GENESIS_HASH;
    let after = 0;
    let broken: ChainBreak | null = null;
    for (;;) {
      const where: SQL | undefined = and(eq(agentAuditEvents.firmId, firmId), gt(agentAuditEvents.seq, after));
      const rows = await db.select().from(agentAuditEvents).where(where).orderBy(asc(agentAuditEvents.seq)).limit(1000);
      for (const e of rows) {
        result.events++;
        if (broken) continue;
        const problem =
          e.seq !== expectedSeq
            ? `sequence jumps from ${expectedSeq - 1} to ${e.seq}: events are missing`
            : e.prevHash !== prevHash
              ? 'does not link to the event before it'
              : hashOf(e) !== e.hash
                ? 'its content does not match its hash: it was edited'
                : null;
        if (problem) broken = { firmId, seq: e.seq, id: e.id, problem };
        expectedSeq = e.seq + 1;
        prevHash = e.hash;
      }
      if (rows.length < 1000) break;
      after = rows[rows.length - 1]?.seq ?? after;
    }
    if (broken) {
      result.ok = false;
      result.breaks.push(broken);
    }
  }
  return result;
}
