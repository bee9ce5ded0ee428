import { createHash } from 'node:crypto';
import { decodeCursor, newId, type Page, toPage } from '@firm/core';
import { agentAuditEvents, type Db, type Executor, rowsOf } from '@firm/db';
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

/**
 * Appends an event to its firm's chain. Appends of one firm take turns on a transaction-scoped advisory lock, so
 * each event commits to the one before it; firms do not wait for each other.
 */
export async function appendAuditEvent(db: Db, input: AuditInput, now = new Date()): Promise<AgentAuditEvent> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select pg_advisory_xact_lock(hashtextextended(${`agent-audit|${input.firmId}`}, 0))`);
    const [last] = await tx
      .select({ seq: agentAuditEvents.seq, hash: agentAuditEvents.hash })
      .from(agentAuditEvents)
      .where(eq(agentAuditEvents.firmId, input.firmId))
      .orderBy(desc(agentAuditEvents.seq))
      .limit(1);
    const event = {
      ...input,
      id: newId(),
      seq: (last?.seq ?? 0) + 1,
      createdAt: new Date(Math.floor(now.getTime())),
      prevHash: last?.hash ?? GENESIS_HASH,
    };
    const full: AgentAuditEvent = { ...event, hash: hashOf(event) };
    await tx.insert(agentAuditEvents).values(full);
    return full;
  });
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
