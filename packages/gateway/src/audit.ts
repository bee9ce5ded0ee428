import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { decodeCursor, newId, type Page, toPage } from '@firm/core';
import { agentAuditEvents, type Db, type Executor, pgErrorOf, preparedStatement, rowsOf } from '@firm/db';
import type { Credential } from '@firm/identity';
import { and, asc, desc, eq, gt, gte, inArray, lt, lte, type SQL, sql } from 'drizzle-orm';
import { type AnchorProblem, AnchorStore } from './audit-anchors';
import { AUDIT_KEYS_SETTING, type AuditKeys, hmacOf, localAuditKeys, parseAuditKeys, sameDigest } from './audit-keys';

export type AgentAuditEvent = typeof agentAuditEvents.$inferSelect;

/** The fields that joined the event later: each is hashed only when present, so earlier events hash as they did. */
type LaterFields = 'note' | 'evidenceSha256';

export type AuditInput = Omit<
  AgentAuditEvent,
  'id' | 'seq' | 'createdAt' | 'prevHash' | 'hash' | 'keyId' | LaterFields
> &
  Partial<Pick<AgentAuditEvent, LaterFields>>;

/** What appending and verifying need besides the database: the audit keys and where the chain heads are anchored. */
export interface AuditTrail {
  keys: AuditKeys;
  anchors: AnchorStore;
}

export interface AuditTrailOptions {
  /** AUDIT_HMAC_KEYS: `id:<32 bytes base64>[,...]`, the first one signing. */
  keys?: string | undefined;
  /** DATA_DIR: where a development setup keeps its generated key and, by default, the anchors. */
  dataDir: string;
  /** AUDIT_ANCHOR_DIR; default `<dataDir>/audit-anchors`. */
  anchorDir?: string | undefined;
  /** NODE_ENV=production: the keys must be configured. */
  production: boolean;
}

/**
 * The audit trail as configured. Without AUDIT_HMAC_KEYS a development setup uses a key generated into the data
 * directory, so a fresh clone runs without configuration; production refuses to start without one, since a key that
 * lives beside the database, or a published one, would let a database writer recompute the chain.
 */
export async function openAuditTrail(options: AuditTrailOptions): Promise<AuditTrail> {
  let keys: AuditKeys;
  if (options.keys) keys = parseAuditKeys(options.keys);
  else if (options.production) {
    throw new Error(`${AUDIT_KEYS_SETTING}: required when NODE_ENV=production (k1:<32 random bytes in base64>)`);
  } else keys = await localAuditKeys(options.dataDir);
  return { keys, anchors: new AnchorStore(options.anchorDir ?? join(options.dataDir, 'audit-anchors'), keys) };
}

/** The hash that starts every firm's chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** What an event's hash covers: every field but the hash itself and its key id (a note only when there is one). */
type HashedEvent = Omit<AgentAuditEvent, 'hash' | 'keyId' | LaterFields> & Partial<Pick<AgentAuditEvent, LaterFields>>;

/** Every field of an event but its hash, its previous hash and its key id, in a fixed order. */
function fieldsOf(e: HashedEvent): string {
  return JSON.stringify([
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
    // Fields that joined later, each named, and only when present: events without them hash as they always did,
    // and one with them cannot lose them.
    ...(['note', 'evidenceSha256'] as const).flatMap((name) =>
      e[name] === null || e[name] === undefined ? [] : [[name, e[name]]],
    ),
  ]);
}

/** The plain SHA-256 of an event written before the chain was keyed: its fields and the previous hash. */
export function hashOf(e: HashedEvent): string {
  return createHash('sha256')
    .update(`${e.prevHash}\n${fieldsOf(e)}`)
    .digest('hex');
}

/**
 * A keyed event's hash: HMAC-SHA256 under its key over the key id, the previous hash and its fields, with a label that
 * keeps it from ever equalling a plain hash of the same text. Undefined when that key is not configured.
 */
export function macOf(keys: AuditKeys, e: HashedEvent & { keyId: string }): string | undefined {
  return hmacOf(keys, e.keyId, `agent-audit-event:v2\n${e.keyId}\n${e.prevHash}\n${fieldsOf(e)}`);
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
  ['key_id', 'keyId'],
  ['note', 'note'],
  ['evidence_sha256', 'evidenceSha256'],
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
 * Where the next append starts: the chain's last event, or the firm's anchor when that is later. The anchor is read
 * first: read after the head, an append committed between the two reads would look like events gone missing.
 */
async function startingHead(db: Db, trail: AuditTrail, firmId: string): Promise<ChainHead> {
  const anchor = await trail.anchors.latest(firmId);
  const head = await readChainHead(db, firmId);
  return anchor && anchor.seq > head.seq ? { seq: anchor.seq, hash: anchor.hash } : head;
}

/**
 * Appends an event to its firm's chain, signed with the current audit key, then anchors it. The event takes the
 * sequence number after the head this process knows and links to its hash; the unique (firm, seq) key lets only one
 * writer take each number, so an append that loses the race to another process reads the real head and tries again.
 * In the usual case an append is a single insert (no transaction, no lock, no read); the anchor's file follows in the
 * background, one write at a time per firm, so agent calls do not wait for the file system.
 *
 * The anchor is written after the insert has committed, so it never vouches for an event that is not there. No
 * number at or below an anchor is used again: if events were deleted, appends go on after the anchor (linking to the
 * hash it records) and the gap stays in the database for verification to report, however many events follow.
 */
export function appendAuditEvent(
  db: Db,
  trail: AuditTrail,
  input: AuditInput,
  now = new Date(),
): Promise<AgentAuditEvent> {
  let firms = chains.get(db);
  if (!firms) chains.set(db, (firms = new Map()));
  let chain = firms.get(input.firmId);
  if (!chain) firms.set(input.firmId, (chain = { head: null, tail: Promise.resolve() }));
  const state = chain;
  const appended = state.tail.then(async () => {
    // Anchors cannot be written (a full disk, a lost volume): refuse to go on unanchored, as a failed insert would.
    if (trail.anchors.failed()) await trail.anchors.recover(input.firmId, state.head);
    const createdAt = new Date(Math.floor(now.getTime()));
    const keyId = trail.keys.current;
    let head = state.head ?? (await startingHead(db, trail, input.firmId));
    for (let attempt = 1; ; attempt++) {
      const event = {
        ...input,
        note: input.note ?? null,
        evidenceSha256: input.evidenceSha256 ?? null,
        id: newId(),
        seq: head.seq + 1,
        createdAt,
        prevHash: head.hash,
        keyId,
      };
      const full: AgentAuditEvent = { ...event, hash: macOf(trail.keys, event) as string };
      try {
        await insertEventStatement(db, { ...full, createdAt: full.createdAt.toISOString() });
      } catch (err) {
        state.head = null;
        const pgErr = pgErrorOf(err);
        const lostRace = pgErr?.code === '23505' && pgErr.message.includes('agent_audit_events_firm_seq_key');
        if (!lostRace || attempt >= 100) throw err;
        head = await startingHead(db, trail, input.firmId);
        continue;
      }
      state.head = { seq: full.seq, hash: full.hash };
      trail.anchors.anchorSoon(input.firmId, state.head, now, (latest) => {
        // A later anchor is another process's later event, or events deleted below it (this number was free):
        // either way the next append goes after it.
        if (state.head && latest.seq > state.head.seq) state.head = { seq: latest.seq, hash: latest.hash };
      });
      return full;
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

export type ChainProblemKind =
  /** An event's content does not match its hash or HMAC. */
  | 'altered'
  /** An event without a key id after the chain was keyed: written without the key. */
  | 'unkeyed'
  /** An event or anchor signed with a key id that is not configured: it cannot be checked. */
  | 'unknown_key'
  /** An event that does not name the previous event's hash. */
  | 'link'
  /** Sequence numbers missing inside the chain. */
  | 'gap'
  /** The chain ends before the event its anchor records. */
  | 'tail_cut'
  /** The event at the anchor's number is not the one the anchor records. */
  | 'anchor_mismatch'
  /** An anchor file that is not what this service wrote. */
  | 'anchor_invalid'
  /** The stored evidence an event vouches for (by its SHA-256) is not what it was. */
  | 'evidence_altered';

export interface ChainBreak {
  firmId: string;
  /** The event concerned; for a gap or a cut tail, the first missing one. */
  seq: number;
  id: string | null;
  kind: ChainProblemKind;
  /** One sentence for an operator, naming the events concerned. */
  problem: string;
}

export interface ChainReport {
  firmId: string;
  events: number;
  /** The last event: keep it elsewhere (with the anchor) to check this chain against later. */
  head: { seq: number; hash: string } | null;
  /** The first event signed with an audit key; the events before it are plain SHA-256 (written before keying). */
  keyedFrom: number | null;
  /** The firm's latest anchor that verifies. */
  anchor: { seq: number; hash: string; writtenAt: string } | null;
  /** How many problems were found; `breaks` lists at most the first MAX_BREAKS_PER_FIRM. */
  problems: number;
}

export interface VerifyResult {
  ok: boolean;
  firms: number;
  events: number;
  breaks: ChainBreak[];
  chains: ChainReport[];
  /** What verification could not check, which is not itself a break (a chain with no anchor yet). */
  warnings: string[];
}

export const MAX_BREAKS_PER_FIRM = 100;

/**
 * The SHA-256 of the evidence an event vouches for, computed again from what is stored now (undefined: none is
 * stored). Given by the package that owns that evidence, per entity type (a finished close's files: `Close`), so this
 * package reads no other package's tables and does not depend on them.
 */
export type EvidenceHasher = (db: Executor, event: AgentAuditEvent) => Promise<string | undefined>;

export interface VerifyOptions {
  firmId?: string;
  /** Per entity type, how to hash its evidence again; an event with evidence of another type is a warning. */
  evidence?: Readonly<Record<string, EvidenceHasher>>;
}

const missing = (from: number, to: number) => (from === to ? `event ${from} missing` : `events ${from}..${to} missing`);

/**
 * Walks each firm's chain from its first event, then compares its end with the firm's anchor. Each event must have
 * the next sequence number, name the previous event's hash, and match its own hash: an HMAC under the key it names,
 * or, before the chain was keyed, a plain SHA-256; once an event is keyed, every later one must be. The chain must
 * reach the anchor's number and have there the hash the anchor records. Firms are those with events or an anchor, so
 * a chain deleted whole is reported too. The anchor is read before the chain, so appends running meanwhile only make
 * the chain longer than its anchor, which is no problem.
 */
export async function verifyAuditChains(
  db: Executor,
  trail: AuditTrail,
  options: VerifyOptions = {},
): Promise<VerifyResult> {
  // This process's own appends are anchored before their chains are judged.
  await trail.anchors.settled();
  const firmIds = options.firmId
    ? [options.firmId]
    : [
        ...new Set([
          ...rowsOf<{ firm_id: string }>(
            await db.execute(sql`select distinct firm_id from agent_audit_events order by firm_id`),
          ).map((r) => r.firm_id),
          ...(await trail.anchors.firms()),
        ]),
      ].sort();
  const result: VerifyResult = { ok: true, firms: firmIds.length, events: 0, breaks: [], chains: [], warnings: [] };
  for (const firmId of firmIds) {
    const { latest: anchor, problems: anchorProblems } = await trail.anchors.inspect(firmId);
    const chain: ChainReport = {
      firmId,
      events: 0,
      head: null,
      keyedFrom: null,
      anchor: anchor && { seq: anchor.seq, hash: anchor.hash, writtenAt: anchor.writtenAt },
      problems: 0,
    };
    const report = (seq: number, id: string | null, kind: ChainProblemKind, problem: string) => {
      chain.problems++;
      if (chain.problems <= MAX_BREAKS_PER_FIRM) result.breaks.push({ firmId, seq, id, kind, problem });
    };
    let expectedSeq = 1;
    let prevHash = GENESIS_HASH;
    let hashAtAnchor: string | undefined;
    let after = 0;
    for (;;) {
      const where: SQL | undefined = and(eq(agentAuditEvents.firmId, firmId), gt(agentAuditEvents.seq, after));
      const rows = await db.select().from(agentAuditEvents).where(where).orderBy(asc(agentAuditEvents.seq)).limit(1000);
      for (const e of rows) {
        chain.events++;
        const event = `event ${e.seq} (${e.id})`;
        if (e.seq !== expectedSeq) report(expectedSeq, null, 'gap', `gap: ${missing(expectedSeq, e.seq - 1)}`);
        else if (e.prevHash !== prevHash) {
          report(
            e.seq,
            e.id,
            'link',
            `${event} does not link to event ${e.seq - 1}: an event was inserted or replaced`,
          );
        }
        if (e.keyId === null) {
          if (chain.keyedFrom !== null) {
            report(
              e.seq,
              e.id,
              'unkeyed',
              `${event} has no audit key id, though the chain is keyed from event ${chain.keyedFrom}: it was written without the key`,
            );
          } else if (!sameDigest(hashOf(e), e.hash)) {
            report(e.seq, e.id, 'altered', `${event} does not match its SHA-256 hash: it was altered`);
          }
        } else {
          chain.keyedFrom ??= e.seq;
          const mac = macOf(trail.keys, { ...e, keyId: e.keyId });
          if (mac === undefined) {
            report(
              e.seq,
              e.id,
              'unknown_key',
              `${event} is signed with audit key ${e.keyId}, which is not configured (${AUDIT_KEYS_SETTING}): it cannot be checked`,
            );
          } else if (!sameDigest(mac, e.hash)) {
            report(
              e.seq,
              e.id,
              'altered',
              `${event} does not match its HMAC under audit key ${e.keyId}: it was altered or forged`,
            );
          }
        }
        if (e.evidenceSha256 !== null) await checkEvidence(db, e, options.evidence, report, result.warnings);
        if (anchor && e.seq === anchor.seq) hashAtAnchor = e.hash;
        expectedSeq = e.seq + 1;
        prevHash = e.hash;
        chain.head = { seq: e.seq, hash: e.hash };
      }
      if (rows.length < 1000) break;
      after = rows[rows.length - 1]?.seq ?? after;
    }
    for (const p of anchorProblems) reportAnchorProblem(p, report);
    if (anchor) {
      const last = chain.head?.seq ?? 0;
      if (last < anchor.seq) {
        report(
          last + 1,
          null,
          'tail_cut',
          `tail cut: ${missing(last + 1, anchor.seq)} (the anchor written at ${anchor.writtenAt} records event ${anchor.seq})`,
        );
      } else if (hashAtAnchor !== undefined && hashAtAnchor !== anchor.hash) {
        report(
          anchor.seq,
          null,
          'anchor_mismatch',
          `event ${anchor.seq} is not the event its anchor records: the chain was rewritten up to it`,
        );
      }
    } else if (chain.events > 0 && anchorProblems.length === 0) {
      result.warnings.push(
        `firm ${firmId}: no anchor in ${trail.anchors.dir}: a cut tail of this chain cannot be seen until its next event`,
      );
    }
    result.events += chain.events;
    if (chain.problems > 0) result.ok = false;
    result.chains.push(chain);
  }
  return result;
}

/** Compares the evidence an event vouches for with what is stored now, hashed again. */
async function checkEvidence(
  db: Executor,
  e: AgentAuditEvent,
  hashers: VerifyOptions['evidence'],
  report: (seq: number, id: string | null, kind: ChainProblemKind, problem: string) => void,
  warnings: string[],
): Promise<void> {
  const what = `the evidence of ${e.entityType} ${e.entityId}`;
  const hasher = e.entityType === null ? undefined : hashers?.[e.entityType];
  if (!hasher) {
    warnings.push(`firm ${e.firmId}: event ${e.seq} (${e.id}) vouches for ${what}, which this check cannot read`);
    return;
  }
  const stored = await hasher(db, e);
  if (stored === undefined) {
    report(e.seq, e.id, 'evidence_altered', `event ${e.seq} (${e.id}): ${what} is gone`);
  } else if (!sameDigest(stored, e.evidenceSha256 as string)) {
    report(
      e.seq,
      e.id,
      'evidence_altered',
      `event ${e.seq} (${e.id}): ${what} does not match the SHA-256 the event records: it was altered`,
    );
  }
}

function reportAnchorProblem(
  p: AnchorProblem,
  report: (seq: number, id: string | null, kind: ChainProblemKind, problem: string) => void,
) {
  report(p.seq, null, p.kind, `the anchor of event ${p.seq} (${p.file}) ${p.problem}`);
}
