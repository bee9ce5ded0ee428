import { decodeCursor, type EventType, newId, type Page, toPage } from '@firm/core';
import { auditEvents, type Executor, preparedStatement, rowsOf, type StatementValues, type Tx } from '@firm/db';
import { type SQL, sql } from 'drizzle-orm';
import { type LedgerContext, nowOf } from './context';

export interface LedgerEvent {
  organizationId: string;
  /** `resource.verb`, e.g. `entry.posted`; also the outbox event type, so one of the published catalogue. */
  action: EventType;
  resourceType: string;
  resourceId: string;
  /** Kept on the audit row: what an auditor needs to see what changed. */
  data: Record<string, unknown>;
  /** Delivered to subscribers (webhooks) through the outbox. */
  payload: Record<string, unknown>;
}

/**
 * The audit row and the outbox row of a change as two data-modifying CTEs (`audit_event`, `outbox_event`) whose
 * values are placeholders that `eventValues` fills: one statement, one round trip, for both. (The posting statement
 * writes its postings' events itself, one pair per posting.)
 */
function eventCtes(): SQL {
  const p = sql.placeholder;
  return sql`
    audit_event as (
      insert into audit_events
        (id, firm_id, organization_id, actor_kind, actor_id, action, resource_type, resource_id, request_id, data, created_at)
      select ${p('eventAuditId')}, ${p('eventFirmId')}, ${p('eventOrganizationId')}, ${p('eventActorKind')},
             ${p('eventActorId')}, ${p('eventAction')}, ${p('eventResourceType')}, ${p('eventResourceId')},
             ${p('eventRequestId')}, ${p('eventData')}::jsonb, ${p('eventAt')}
    ),
    outbox_event as (
      insert into outbox_events (id, firm_id, organization_id, type, payload, created_at)
      select ${p('eventOutboxId')}, ${p('eventFirmId')}, ${p('eventOrganizationId')}, ${p('eventAction')},
             ${p('eventPayload')}::jsonb, ${p('eventAt')}
    )`;
}

/** The values of `eventCtes` for one event. */
function eventValues(ctx: LedgerContext, event: LedgerEvent): StatementValues {
  return {
    eventAuditId: newId(),
    eventOutboxId: newId(),
    eventFirmId: ctx.firmId,
    eventOrganizationId: event.organizationId,
    eventActorKind: ctx.actor.kind,
    eventActorId: ctx.actor.id,
    eventAction: event.action,
    eventResourceType: event.resourceType,
    eventResourceId: event.resourceId,
    eventRequestId: ctx.requestId ?? null,
    eventData: JSON.stringify(event.data),
    eventPayload: JSON.stringify(event.payload),
    eventAt: nowOf(ctx).toISOString(),
  };
}

const recordEventStatement = preparedStatement('ledger_record_event', sql`with ${eventCtes()} select 1`);

/**
 * Writes the audit row and the outbox row of a change, in the caller's transaction and in one
 * statement: both commit with the change or not at all.
 */
export async function recordEvent(tx: Tx, ctx: LedgerContext, event: LedgerEvent): Promise<void> {
  await recordEventStatement(tx, eventValues(ctx, event));
}

/**
 * Writes a firm-level audit row (no organization, so no outbox event: webhooks are per organization) in the caller's
 * transaction: identity's record of changes to the firm's people and keys, in the one audit trail the firm reads.
 */
export async function recordFirmAuditRow(
  tx: Executor,
  row: {
    firmId: string;
    actorKind: string;
    actorId: string;
    action: string;
    resourceType: string;
    resourceId: string;
    requestId: string | null;
    data: Record<string, unknown>;
  },
): Promise<void> {
  await tx.insert(auditEvents).values({ ...row, organizationId: null });
}

/**
 * Writes an audit row of an organization with no outbox event: what is recorded but not announced (a file read by
 * someone).
 */
export async function recordAuditRow(
  tx: Executor,
  ctx: LedgerContext,
  row: {
    organizationId: string;
    action: string;
    resourceType: string;
    resourceId: string;
    data: Record<string, unknown>;
  },
): Promise<void> {
  await tx.insert(auditEvents).values({
    ...row,
    firmId: ctx.firmId,
    actorKind: ctx.actor.kind,
    actorId: ctx.actor.id,
    requestId: ctx.requestId ?? null,
    createdAt: nowOf(ctx),
  });
}

export interface AuditEvent {
  id: string;
  organizationId: string | null;
  actor: { kind: string; id: string };
  action: string;
  resourceType: string;
  resourceId: string;
  requestId: string | null;
  data: Record<string, unknown>;
  createdAt: string;
}

export interface AuditFilter {
  /** Only this organization's events. */
  organizationId?: string | undefined;
  /** Null: every organization of the firm, and firm-level events; else only these organizations' events. */
  visibleOrganizationIds: readonly string[] | null;
  since?: string | undefined;
  until?: string | undefined;
  action?: string | undefined;
  limit: number;
  cursor?: string | undefined;
}

/** A firm's audit trail, newest first. */
export async function listAuditEvents(db: Executor, firmId: string, filter: AuditFilter): Promise<Page<AuditEvent>> {
  let before: [string, string] | null = null;
  if (filter.cursor) {
    const [at, id] = decodeCursor(filter.cursor, ['timestamp', 'uuid']).map(String) as [string, string];
    before = [at, id];
  }
  const visible = filter.visibleOrganizationIds;
  if (visible?.length === 0) return { data: [], nextCursor: null };
  const rows = rowsOf<{
    id: string;
    organization_id: string | null;
    actor_kind: string;
    actor_id: string;
    action: string;
    resource_type: string;
    resource_id: string;
    request_id: string | null;
    data: Record<string, unknown>;
    created_at: string;
  }>(
    await db.execute(sql`
      select id, organization_id, actor_kind, actor_id, action, resource_type, resource_id, request_id, data,
             to_char(created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at
      from audit_events
      where firm_id = ${firmId}
        ${filter.organizationId ? sql`and organization_id = ${filter.organizationId}` : sql``}
        ${
          visible
            ? sql`and organization_id in (${sql.join(
                visible.map((id) => sql`${id}::uuid`),
                sql`, `,
              )})`
            : sql``
        }
        ${filter.since ? sql`and created_at >= ${filter.since}::timestamptz` : sql``}
        ${filter.until ? sql`and created_at < ${filter.until}::timestamptz` : sql``}
        ${filter.action ? sql`and action = ${filter.action}` : sql``}
        ${before ? sql`and (created_at, id) < (${before[0]}::timestamptz, ${before[1]}::uuid)` : sql``}
      order by created_at desc, id desc
      limit ${filter.limit + 1}`),
  );
  const page = toPage(rows, filter.limit, (r) => [r.created_at, r.id]);
  return {
    data: page.data.map((r) => ({
      id: r.id,
      organizationId: r.organization_id,
      actor: { kind: r.actor_kind, id: r.actor_id },
      action: r.action,
      resourceType: r.resource_type,
      resourceId: r.resource_id,
      requestId: r.request_id,
      data: r.data,
      createdAt: r.created_at,
    })),
    nextCursor: page.nextCursor,
  };
}
