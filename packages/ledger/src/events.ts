import { newId } from '@firm/core';
import type { Tx } from '@firm/db';
import { sql } from 'drizzle-orm';
import { type LedgerContext, nowOf } from './context';

export interface LedgerEvent {
  organizationId: string;
  /** `resource.verb`, e.g. `entry.posted`; also the outbox event type. */
  action: string;
  resourceType: string;
  resourceId: string;
  /** Kept on the audit row: what an auditor needs to see what changed. */
  data: Record<string, unknown>;
  /** Delivered to subscribers (webhooks) through the outbox. */
  payload: Record<string, unknown>;
}

/**
 * Writes the audit row and the outbox row of a change, in the caller's transaction and in one
 * statement: both commit with the change or not at all, for one round trip.
 */
export async function recordEvent(tx: Tx, ctx: LedgerContext, event: LedgerEvent): Promise<void> {
  const at = nowOf(ctx).toISOString();
  await tx.execute(sql`
    with audit as (
      insert into audit_events
        (id, firm_id, organization_id, actor_kind, actor_id, action, resource_type, resource_id, request_id, data, created_at)
      values (${newId()}, ${ctx.firmId}, ${event.organizationId}, ${ctx.actor.kind}, ${ctx.actor.id}, ${event.action},
              ${event.resourceType}, ${event.resourceId}, ${ctx.requestId ?? null}, ${JSON.stringify(event.data)}::jsonb, ${at})
    )
    insert into outbox_events (id, firm_id, organization_id, type, payload, created_at)
    values (${newId()}, ${ctx.firmId}, ${event.organizationId}, ${event.action}, ${JSON.stringify(event.payload)}::jsonb, ${at})`);
}
