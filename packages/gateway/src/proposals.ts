import { DomainError, type EventType, decodeCursor, isUuid, newId, type Page, toPage } from '@firm/core';
import {
  agentProposals,
  approvalPolicies,
  type Db,
  type Executor,
  type IdempotencyKey,
  API_KEYS,
  liveRecordQuery,
  rowsOf,
  type Tx,
} from '@firm/db';
import { agentOfCredential } from '@firm/identity';
import { booksClosedThrough, companyOfFirm, recordEvent } from '@firm/ledger';
import type { JournalEffectLine, WriteResult } from '@firm/platform';
import { and, eq, sql } from 'drizzle-orm';
import {
  type ApprovalPolicy,
  type ApprovalPolicyInput,
  AUTO_POLICY,
  approvalReasons,
  checkApprovalPolicy,
  DEFAULT_PROPOSAL_HOURS,
} from './approval-policy';
import { appendAuditEvent, type AuditTrail } from './audit';
import { agentClientOf, type Client } from './clients';
import type { CoverageEntry } from './coverage';
import type { Gateway, GatewayActor, GatewayWrite, GatewayWriteOptions, GatewayWriteOutcome } from './service';

export type ProposalRow = typeof agentProposals.$inferSelect;
export type ProposalStatus = ProposalRow['status'];

/** Where a policy in force comes from: the agent's own, the client's, the firm's default, or the shipped default. */
export type PolicySource = 'agent' | 'client' | 'firm' | 'default';

/** The credential kinds whose writes a policy judges: agents (API keys and OAuth tokens), not people signed in. */
const AGENT_KINDS = new Set(['api_key', 'oauth_token']);

export async function getApprovalPolicy(
  db: Executor,
  firmId: string,
  scope: 'firm' | 'client' | 'agent',
  subjectId = '',
): Promise<ApprovalPolicy | null> {
  const [row] = await db
    .select({ policy: approvalPolicies.policy })
    .from(approvalPolicies)
    .where(
      and(
        eq(approvalPolicies.firmId, firmId),
        eq(approvalPolicies.scope, scope),
        eq(approvalPolicies.subjectId, subjectId),
      ),
    );
  return (row?.policy as ApprovalPolicy | undefined) ?? null;
}

/** Sets a policy (checked: VALIDATION_ERROR) or, with null, removes it so the next one out applies. */
export async function setApprovalPolicy(
  db: Executor,
  firmId: string,
  scope: 'firm' | 'client' | 'agent',
  subjectId: string,
  policy: ApprovalPolicyInput | null,
): Promise<ApprovalPolicy | null> {
  const where = and(
    eq(approvalPolicies.firmId, firmId),
    eq(approvalPolicies.scope, scope),
    eq(approvalPolicies.subjectId, subjectId),
  );
  if (policy === null) {
    await db.delete(approvalPolicies).where(where);
    return null;
  }
  const checked = checkApprovalPolicy(policy);
  await db
    .insert(approvalPolicies)
    .values({ firmId, scope, subjectId, policy: checked })
    .onConflictDoUpdate({
      target: [approvalPolicies.firmId, approvalPolicies.scope, approvalPolicies.subjectId],
      set: { policy: checked, updatedAt: sql`now()` },
    });
  return checked;
}

/** The policy in force for an agent's writes to a client: the agent's, else the client's, else the firm's. */
export async function effectiveApprovalPolicy(
  db: Executor,
  firmId: string,
  clientId: string,
  agentClientId: string | null,
): Promise<{ policy: ApprovalPolicy; source: PolicySource }> {
  const rows = rowsOf<{ scope: 'firm' | 'client' | 'agent'; policy: ApprovalPolicy }>(
    await db.execute(sql`select scope, policy from approval_policies where firm_id = ${firmId} and (
      (scope = 'firm' and subject_id = '') or (scope = 'client' and subject_id = ${clientId})
      or (scope = 'agent' and subject_id = ${agentClientId ?? ''}))`),
  );
  for (const scope of ['agent', 'client', 'firm'] as const) {
    const row = rows.find((r) => r.scope === scope);
    if (row) return { policy: row.policy, source: scope };
  }
  return { policy: AUTO_POLICY, source: 'default' };
}

/** A proposal's change as an audit row and, through the outbox, its `agent_proposal.*` webhook event. */
async function proposalEvent(
  tx: Tx,
  row: ProposalRow,
  type: EventType,
  actor: { kind: string; id: string },
  at: Date,
): Promise<void> {
  const view = presentProposal(row);
  await recordEvent(
    tx,
    { firmId: row.firmId, actor, requestId: null, now: at },
    {
      organizationId: row.organizationId,
      action: type,
      resourceType: 'agent_proposal',
      resourceId: row.id,
      data: { status: row.status, note: row.decisionNote, failure: view.failure },
      payload: {
        id: row.id,
        clientId: row.organizationId,
        status: row.status,
        entity: row.entity,
        operation: row.operation,
        targetId: row.targetId,
        agent: view.agent,
        decision: view.decision,
        failure: view.failure,
        recordId: (row.resultBody as { data?: { Id?: string; transactionId?: string } } | null)?.data?.Id ?? null,
      },
    },
  );
}

/** Who expires a proposal nobody decided on in time: the service itself. */
const EXPIRY_ACTOR = { kind: 'system', id: 'approvals' };

/** Marks a pending proposal expired and says so, in the caller's transaction; null when it is no longer pending. */
async function expirePending(tx: Tx, row: Pick<ProposalRow, 'id' | 'firmId'>, at: Date): Promise<ProposalRow | null> {
  const [expired] = await tx
    .update(agentProposals)
    .set({ status: 'expired' })
    .where(
      and(eq(agentProposals.id, row.id), eq(agentProposals.firmId, row.firmId), eq(agentProposals.status, 'pending')),
    )
    .returning();
  if (!expired) return null;
  await proposalEvent(tx, expired, 'agent_proposal.expired', EXPIRY_ACTOR, at);
  return expired;
}

/**
 * Expires the pending proposals past their expiry, of every firm, in transactions of `batch`; answers how many. The
 * rows are claimed with FOR UPDATE SKIP LOCKED, so any number of processes may run it, and beside a read or a
 * decision that expires the same proposal, each proposal is expired (and its event sent) once.
 */
export async function expireDueProposals(db: Db, options: { now?: () => Date; batch?: number } = {}): Promise<number> {
  const now = options.now ?? (() => new Date());
  const batch = options.batch ?? 100;
  let total = 0;
  for (;;) {
    const at = now();
    const expired = await db.transaction(async (tx) => {
      const due = rowsOf<{ id: string; firm_id: string }>(
        await tx.execute(sql`select id, firm_id from agent_proposals
          where status = 'pending' and expires_at <= ${at.toISOString()}::timestamptz
          order by expires_at limit ${batch} for update skip locked`),
      );
      for (const row of due) await expirePending(tx, { id: row.id, firmId: row.firm_id }, at);
      return due.length;
    });
    total += expired;
    if (expired < batch) return total;
  }
}

/** What a held write would do, shown to the approver. */
export interface ProposalPreview {
  /** The journal lines it would post. */
  journal: JournalEffectLine[];
  /** The record as it would be written. */
  record: Record<string, unknown>;
  /** The SyncToken the record has now (an update or a delete); null for a create. */
  syncToken: string | null;
  /** The books' closing date when the proposal was made, and whether the write's date falls in the closed period. */
  period: { closedThrough: string | null; status: 'open' | 'closed' };
}

/** What the proposal keeps of the request, to run it later as it was sent. */
interface StoredRequest {
  method: string;
  path: string;
  body: unknown;
  resource: 'entities' | 'transactions' | 'passthrough';
  /** The status of the write when it runs, when not the operation's default (201 for a create, else 200). */
  status?: number;
  write: GatewayWrite;
  key: IdempotencyKey | null;
}

/** A proposal as answered to agents and approvers. */
export function presentProposal(row: ProposalRow) {
  const request = row.request as StoredRequest;
  return {
    id: row.id,
    clientId: row.organizationId,
    status: row.status,
    agent: { kind: row.actorKind, id: row.actorId, clientId: row.agentClientId },
    entity: row.entity,
    transactionType: row.transactionType,
    operation: row.operation,
    targetId: row.targetId,
    request: {
      method: request.method,
      path: request.path,
      body: request.body ?? null,
      idempotencyKey: row.idempotencyKey,
    },
    reason: row.reason,
    rules: row.matchedRules,
    preview: row.preview as ProposalPreview,
    decision:
      row.decidedAt === null
        ? null
        : {
            by: { kind: row.decidedByKind as string, id: row.decidedById as string },
            note: row.decisionNote,
            at: row.decidedAt.toISOString(),
          },
    result: row.resultStatus === null ? null : { status: row.resultStatus, body: row.resultBody },
    failure: row.failureCode === null ? null : { code: row.failureCode, reason: row.failureReason ?? '' },
    expiresAt: row.expiresAt.toISOString(),
    createdAt: row.createdAt.toISOString(),
    executedAt: row.executedAt?.toISOString() ?? null,
    links: {
      self: `/agent/v1/proposals/${row.id}`,
      approve: `/api/v1/agent-proposals/${row.id}/approve`,
      reject: `/api/v1/agent-proposals/${row.id}/reject`,
    },
  };
}

export type ProposalView = ReturnType<typeof presentProposal>;

export const proposalNotFound = () => new DomainError('NOT_FOUND', 'agent proposal not found');

/** Who decides: a person signed in or a credential of the firm, never an agent's OAuth token. */
export interface Approver {
  firmId: string;
  kind: string;
  id: string;
  /** Null: every organization of the firm. */
  organizationIds: readonly string[] | null;
  requestId: string | null;
}

/** A write as the route hands it to the approvals: the gateway write, its options, and the request as sent. */
export interface SubmittedWrite<B> {
  write: GatewayWrite;
  options: GatewayWriteOptions<B>;
  request: Omit<StoredRequest, 'write' | 'key'>;
  /** The agent's reason for the write, shown to the approver. */
  reason: string | null;
}

/** The response body of a write, rebuilt when an approved proposal runs (the route's own shape). */
export type RespondFor = (
  proposal: ProposalRow,
  client: Client,
) => ((result: WriteResult, dryRun: boolean, entry: CoverageEntry) => unknown) | undefined;

export type Approvals = ReturnType<typeof createApprovals>;

/**
 * Agent write approvals: a write the firm's policy holds becomes a proposal instead, which a person approves or
 * rejects; an approved proposal runs once, through the gateway, as the agent that proposed it.
 */
export function createApprovals(options: {
  db: Db;
  gateway: Gateway;
  audit: AuditTrail;
  /** The response body of an approved proposal's write when a read runs it again (see `decide`'s respondFor). */
  respondFor?: RespondFor;
  now?: () => Date;
}) {
  const { db, gateway } = options;
  const respondForResume: RespondFor = options.respondFor ?? (() => undefined);
  const now = options.now ?? (() => new Date());

  /** Whether the credential that proposed is still in force: its API key, or its OAuth grant, not revoked. */
  const isCredentialLive = async (row: ProposalRow): Promise<boolean> => {
    const table = row.actorKind === 'api_key' ? sql`api_keys` : sql`oauth_grants`;
    return (
      rowsOf(
        await db.execute(sql`select 1 from ${table} where id = ${row.actorId}::uuid and firm_id = ${row.firmId}
          and revoked_at is null`),
      ).length > 0
    );
  };

  const byKey = async (actor: GatewayActor, clientId: string, key: string) => {
    const [row] = await db
      .select()
      .from(agentProposals)
      .where(
        and(
          eq(agentProposals.firmId, actor.firmId),
          eq(agentProposals.organizationId, clientId),
          eq(agentProposals.actorKind, actor.kind),
          eq(agentProposals.actorId, actor.id),
          eq(agentProposals.idempotencyKey, key),
        ),
      );
    return row ?? null;
  };

  /** A proposal's answer to the agent: the executed write's own response once it ran, else 202 and the proposal. */
  const answerOf = (row: ProposalRow) =>
    row.status === 'executed' && row.resultStatus !== null
      ? { status: row.resultStatus, body: row.resultBody }
      : { status: 202, body: { data: presentProposal(row) } };

  const event = (tx: Tx, row: ProposalRow, type: EventType, actor: { kind: string; id: string }) =>
    proposalEvent(tx, row, type, actor, now());

  const audit = (
    row: ProposalRow,
    operation: string,
    actor: { kind: string; id: string },
    requestId: string | null,
    extra: {
      errorCode?: string | null;
      statusCode?: number;
      syncTokenAfter?: string | null;
      note?: string | null;
    } = {},
  ) =>
    appendAuditEvent(db, options.audit, {
      firmId: row.firmId,
      organizationId: row.organizationId,
      actorKind: actor.kind,
      actorId: actor.id,
      actorName: null,
      operation,
      entityType: 'AgentProposal',
      entityId: row.id,
      outcome: extra.errorCode ? 'failed' : 'succeeded',
      statusCode: extra.statusCode ?? 200,
      errorCode: extra.errorCode ?? null,
      requestId,
      dryRun: false,
      syncTokenBefore: (row.preview as ProposalPreview).syncToken,
      syncTokenAfter: extra.syncTokenAfter ?? null,
      note: extra.note ?? null,
    });

  /** The books' closing date of an embedded client (a remote platform's is not known here: null). */
  const closedThroughOf = async (client: Client): Promise<string | null> => {
    if (client.platform !== 'embedded') return null;
    const [row] = await booksClosedThrough(db, [client.id]);
    return row?.closed ?? null;
  };

  /**
   * An agent's write, judged by the policy in force: run as it is (`auto`, a person's write, a dry run, or a rule
   * that does not hold it), or held: its dry run is kept as the preview and the answer is 202 with the proposal. The
   * same Idempotency-Key answers the same proposal, and once it ran, the write's own response.
   */
  async function submit<B>(
    actor: GatewayActor,
    client: Client,
    submitted: SubmittedWrite<B>,
  ): Promise<GatewayWriteOutcome<B | { data: ProposalView }>> {
    const { write, options: writeOptions } = submitted;
    const direct = () => gateway.write(actor, client, write, writeOptions);
    if (!AGENT_KINDS.has(actor.kind) || writeOptions.dryRun) return direct();
    const key = writeOptions.key;
    const audited = writeOptions.audit ?? {};
    if (key) {
      const earlier = await byKey(actor, client.id, key.key);
      if (earlier) {
        if ((earlier.request as StoredRequest).key?.requestHash !== key.requestHash) {
          throw new DomainError(
            'IDEMPOTENCY_KEY_REUSED',
            'this Idempotency-Key was used for another request; send a new key for a new request',
          );
        }
        audited.entityType = earlier.entity;
        const answer = answerOf(await resumeIfStuck(earlier));
        return { replayed: true, ...answer, body: answer.body as B, audit: audited };
      }
      // A key an earlier write ran under (before the policy held such writes) answers as it did then.
      if (rowsOf(await db.execute(liveRecordQuery(key))).length > 0) return direct();
    }
    const agentClientId = await agentOfCredential(db, actor);
    const { policy } = await effectiveApprovalPolicy(db, actor.firmId, client.id, agentClientId);
    if (policy.mode === 'auto') return direct();

    let preview: WriteResult | undefined;
    const dry = await gateway.write(actor, client, write, {
      dryRun: true,
      audit: {},
      respond: (result, _dry, entry) => {
        preview = result;
        return entry;
      },
    });
    const entry = dry.body as CoverageEntry;
    const result = preview as WriteResult;
    const closedThrough = await closedThroughOf(client);
    const payload = write.payload ?? {};
    const reasons = approvalReasons(policy, {
      entity: entry.entity,
      operation: write.operation,
      journal: result.journal,
      payload,
      record: result.record,
      closedThrough,
    });
    if (reasons.length === 0) return direct();

    const date = String(payload.TxnDate ?? result.record.TxnDate ?? '').slice(0, 10);
    const hours = policy.expiresInHours ?? DEFAULT_PROPOSAL_HOURS;
    const at = now();
    const request: StoredRequest = { ...submitted.request, write, key: key ?? null };
    const row = await db.transaction(async (tx) => {
      const [inserted] = await tx
        .insert(agentProposals)
        .values({
          id: newId(),
          firmId: actor.firmId,
          organizationId: client.id,
          actorKind: actor.kind,
          actorId: actor.id,
          agentClientId,
          scopes: [...actor.scopes],
          entity: entry.entity,
          transactionType: write.transactionType ?? null,
          operation: write.operation,
          targetId: write.id ?? null,
          request,
          idempotencyKey: key?.key ?? null,
          reason: submitted.reason,
          matchedRules: reasons,
          preview: {
            journal: result.journal,
            record: result.record,
            syncToken: write.operation === 'create' ? null : result.syncTokenBefore,
            period: {
              closedThrough,
              status: closedThrough !== null && date !== '' && date <= closedThrough ? 'closed' : 'open',
            },
          } satisfies ProposalPreview,
          expiresAt: new Date(at.getTime() + hours * 3_600_000),
          createdAt: at,
        })
        .onConflictDoNothing()
        .returning();
      if (inserted) await event(tx, inserted, 'agent_proposal.created', actor);
      return inserted ?? null;
    });
    audited.entityType = entry.entity;
    audited.entityId = write.id ?? null;
    if (!row) {
      // The same key, sent twice at once: the other request made the proposal.
      const other = key ? await byKey(actor, client.id, key.key) : null;
      if (!other) throw new DomainError('IDEMPOTENCY_IN_PROGRESS', 'a request with this key is in progress');
      return { replayed: true, ...answerOf(other), body: answerOf(other).body as B, audit: audited };
    }
    await audit(row, 'proposals.create', actor, actor.requestId, { statusCode: 202 });
    return { replayed: false, status: 202, body: { data: presentProposal(row) }, audit: audited };
  }

  /** A proposal of the firm that the caller may see, else null. */
  async function find(
    firmId: string,
    id: string,
    visible: readonly string[] | null,
    executor: Executor = db,
  ): Promise<ProposalRow | null> {
    if (!isUuid(id)) return null;
    const [row] = await executor
      .select()
      .from(agentProposals)
      .where(and(eq(agentProposals.id, id), eq(agentProposals.firmId, firmId)));
    if (!row || (visible !== null && !visible.includes(row.organizationId))) return null;
    return row;
  }

  /** Marks a pending proposal past its expiry as expired (and says so to subscribers); answers the row as it is. */
  async function expireIfDue(row: ProposalRow): Promise<ProposalRow> {
    if (row.status !== 'pending' || row.expiresAt.getTime() > now().getTime()) return row;
    return db.transaction(
      async (tx) =>
        (await expirePending(tx, row, now())) ?? ((await find(row.firmId, row.id, null, tx)) as ProposalRow),
    );
  }

  /** The agent's own proposal (another credential's, or another firm's, is NOT_FOUND). */
  async function getOwn(actor: GatewayActor, id: string): Promise<ProposalView> {
    const row = await find(actor.firmId, id, null);
    if (!row || row.actorKind !== actor.kind || row.actorId !== actor.id) throw proposalNotFound();
    return presentProposal(await resumeIfStuck(await expireIfDue(row)));
  }

  async function get(approver: Approver, id: string): Promise<ProposalView> {
    const row = await find(approver.firmId, id, approver.organizationIds);
    if (!row) throw proposalNotFound();
    return presentProposal(await resumeIfStuck(await expireIfDue(row)));
  }

  async function list(
    approver: Approver,
    filter: { clientId?: string; status?: ProposalStatus; agent?: string; limit: number; cursor?: string },
  ): Promise<Page<ProposalView>> {
    if (approver.organizationIds?.length === 0) return { data: [], nextCursor: null };
    const due = await db
      .select()
      .from(agentProposals)
      .where(
        and(
          eq(agentProposals.firmId, approver.firmId),
          eq(agentProposals.status, 'pending'),
          sql`${agentProposals.expiresAt} <= ${now().toISOString()}::timestamptz`,
        ),
      )
      .limit(100);
    for (const row of due) await expireIfDue(row);
    const before = filter.cursor ? decodeCursor(filter.cursor, ['timestamp', 'uuid']).map(String) : null;
    const visible = approver.organizationIds;
    const ids = rowsOf<{ id: string; created_at_exact: string }>(
      await db.execute(sql`select id,
          to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_exact
        from agent_proposals where firm_id = ${approver.firmId}
        ${
          visible === null
            ? sql``
            : sql`and organization_id in (${sql.join(
                visible.map((v) => sql`${v}::uuid`),
                sql`, `,
              )})`
        }
        ${filter.clientId ? sql`and organization_id = ${filter.clientId}::uuid` : sql``}
        ${filter.status ? sql`and status = ${filter.status}` : sql``}
        ${filter.agent ? sql`and (agent_client_id = ${filter.agent} or actor_id = ${filter.agent})` : sql``}
        ${before ? sql`and (created_at, id) < (${before[0]}::timestamptz, ${before[1]}::uuid)` : sql``}
        order by created_at desc, id desc limit ${filter.limit + 1}`),
    );
    const page = toPage(ids, filter.limit, (r) => [r.created_at_exact, r.id]);
    const rows = await Promise.all(page.data.map((r) => find(approver.firmId, r.id, null)));
    return { data: rows.filter((r): r is ProposalRow => r !== null).map(presentProposal), nextCursor: page.nextCursor };
  }

  /**
   * A person's decision. An agent's OAuth token never decides, nor the credential (or the API key) that proposed.
   * Only a pending proposal is decided, once: of two decisions at once, one wins and the other is INVALID_STATE.
   * An approved proposal then runs once, as the agent with the scopes it had, under the agent's idempotency key;
   * a record changed since the proposal, a closed period or any refusal of the write turns it `failed`, with
   * nothing written.
   */
  async function decide(
    approver: Approver,
    id: string,
    decision: 'approve' | 'reject',
    note: string | null,
    respondFor: RespondFor,
  ): Promise<ProposalView> {
    if (approver.kind === 'oauth_token') {
      throw new DomainError('FORBIDDEN', 'an agent cannot decide on proposals; a person of the firm does');
    }
    const found = await find(approver.firmId, id, approver.organizationIds);
    if (!found) throw proposalNotFound();
    if (
      (found.actorKind === approver.kind && found.actorId === approver.id) ||
      (approver.kind === 'api_key' && found.agentClientId === approver.id)
    ) {
      throw new DomainError('FORBIDDEN', 'the credential that proposed a write cannot decide on it');
    }
    const current = await expireIfDue(found);
    const who = { kind: approver.kind, id: approver.id };
    const decided = await db.transaction(async (tx) => {
      const [row] = await tx
        .update(agentProposals)
        .set({
          status: decision === 'approve' ? 'approved' : 'rejected',
          decidedByKind: approver.kind,
          decidedById: approver.id,
          decisionNote: note,
          decidedAt: now(),
        })
        .where(
          and(
            eq(agentProposals.id, current.id),
            eq(agentProposals.status, 'pending'),
            sql`${agentProposals.expiresAt} > ${now().toISOString()}::timestamptz`,
          ),
        )
        .returning();
      if (row)
        await event(tx, row, decision === 'approve' ? 'agent_proposal.approved' : 'agent_proposal.rejected', who);
      return row ?? null;
    });
    if (!decided) {
      const now = (await find(approver.firmId, id, null)) ?? current;
      throw new DomainError('INVALID_STATE', `the proposal is ${now.status}; only a pending proposal is decided`, [
        { field: 'status', message: now.status },
      ]);
    }
    await audit(decided, decision === 'approve' ? 'proposals.approve' : 'proposals.reject', who, approver.requestId, {
      note: decided.decisionNote,
    });
    if (decision === 'reject') return presentProposal(decided);
    return presentProposal(await execute(decided, approver.requestId, respondFor));
  }

  /**
   * The key an approved proposal's write runs under: the agent's, or one of the proposal's own when the agent sent
   * none, so that running it again (after a crash between the approval and the write's end) is still one write.
   */
  const keyOf = (row: ProposalRow): IdempotencyKey =>
    (row.request as StoredRequest).key ?? {
      key: `proposal:${row.id}`,
      firmId: row.firmId,
      organizationId: row.organizationId,
      route: API_KEYS,
      target: `${(row.request as StoredRequest).method} ${(row.request as StoredRequest).path.split('?')[0]}`,
      requestHash: row.id,
      retentionHours: 24 * 30,
    };

  /** How long an approved proposal may take to run before a read of it runs it again (the first run died). */
  const STUCK_MS = 2 * 60_000;

  /** An approved proposal whose run died (the process stopped mid-way) is run again: once, by its key. */
  async function resumeIfStuck(row: ProposalRow): Promise<ProposalRow> {
    if (row.status !== 'approved' || !row.decidedAt) return row;
    if (now().getTime() - row.decidedAt.getTime() < STUCK_MS) return row;
    return execute(row, null, respondForResume);
  }

  /**
   * Runs an approved proposal once: executed with the write's response, or failed with why. A platform that did not
   * answer (503 SERVICE_UNAVAILABLE: QBO's answers lost, or it was not reachable) leaves it approved: the write may
   * have been made there, so it is not `failed` (which tells the agent to write anew), and the next read after
   * STUCK_MS runs it again under the same key, which the platform answers with the record it kept.
   */
  async function execute(row: ProposalRow, requestId: string | null, respondFor: RespondFor): Promise<ProposalRow> {
    const request = row.request as StoredRequest;
    const actor: GatewayActor = {
      firmId: row.firmId,
      kind: row.actorKind,
      id: row.actorId,
      scopes: new Set(row.scopes) as GatewayActor['scopes'],
      requestId,
    };
    let outcome: { status: number; body: unknown; syncToken: string | null } | null = null;
    let failure: { code: string; reason: string } | null = null;
    try {
      const org = await companyOfFirm(db, row.firmId, row.organizationId);
      const client = org ? await agentClientOf(db, row.firmId, org) : null;
      if (!client || client.agentAccess === 'none') throw new DomainError('CLIENT_NOT_FOUND', 'client not found');
      if (!(await isCredentialLive(row))) {
        throw new DomainError('UNAUTHENTICATED', 'the credential that proposed the write was revoked since');
      }
      const preview = row.preview as ProposalPreview;
      // A write that already ran under the key (a second run of the proposal) replays: no check of what it changed.
      const ran = rowsOf(await db.execute(liveRecordQuery(keyOf(row)))).length > 0;
      if (!ran && row.operation !== 'create' && row.targetId !== null) {
        const record = await gateway.readRecord(actor, client, row.entity, row.targetId);
        if (preview.syncToken !== null && record.SyncToken !== preview.syncToken) {
          throw new DomainError(
            'STALE_SYNC_TOKEN',
            `the record changed after the proposal (SyncToken ${preview.syncToken}, now ${String(record.SyncToken)})`,
          );
        }
      }
      const respond = respondFor(row, client);
      const written = await gateway.write(actor, client, request.write, {
        key: keyOf(row),
        ...(request.status ? { status: request.status } : {}),
        ...(respond ? { respond } : {}),
        requireReadWrite: true,
      });
      outcome = { status: written.status, body: written.body, syncToken: written.audit.syncTokenAfter ?? null };
    } catch (err) {
      if (!(err instanceof DomainError)) {
        failure = { code: 'INTERNAL', reason: 'the write failed unexpectedly' };
        await settle(row, requestId, null, failure);
        throw err;
      }
      if (err.code === 'SERVICE_UNAVAILABLE') {
        const agent = { kind: row.actorKind, id: row.actorId };
        await audit(row, 'proposals.execute', agent, requestId, { statusCode: 503, errorCode: err.code });
        return (await find(row.firmId, row.id, null)) ?? row;
      }
      failure = { code: err.code, reason: err.message };
    }
    return settle(row, requestId, outcome, failure);
  }

  async function settle(
    row: ProposalRow,
    requestId: string | null,
    outcome: { status: number; body: unknown; syncToken: string | null } | null,
    failure: { code: string; reason: string } | null,
  ): Promise<ProposalRow> {
    const agent = { kind: row.actorKind, id: row.actorId };
    const settled = await db.transaction(async (tx) => {
      const [updated] = await tx
        .update(agentProposals)
        .set(
          outcome
            ? { status: 'executed', resultStatus: outcome.status, resultBody: outcome.body, executedAt: now() }
            : { status: 'failed', failureCode: failure?.code ?? 'INTERNAL', failureReason: failure?.reason ?? null },
        )
        .where(and(eq(agentProposals.id, row.id), eq(agentProposals.status, 'approved')))
        .returning();
      if (updated) {
        await event(tx, updated, outcome ? 'agent_proposal.executed' : 'agent_proposal.failed', agent);
      }
      return updated ?? row;
    });
    await audit(settled, outcome ? 'proposals.execute' : 'proposals.fail', agent, requestId, {
      statusCode: outcome?.status ?? 422,
      errorCode: failure?.code ?? null,
      syncTokenAfter: outcome?.syncToken ?? null,
    });
    return settled;
  }

  return { submit, get, getOwn, list, decide };
}
