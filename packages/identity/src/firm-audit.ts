import { type Executor } from '@firm/db';
import { recordFirmAuditRow } from '@firm/ledger';

/**
 * Who changes the firm's people and keys, for its audit trail: the credential (kind and id, as every audit row names
 * it), the user behind it when there is one, and the request.
 */
export interface FirmActor {
  firmId: string;
  /** `session`, `api_key`, `oauth_token`, `cli`, `invitation`. */
  kind: string;
  id: string;
  requestId?: string | null | undefined;
}

export interface FirmEvent {
  /** `user.invited`, `user.updated`, `user.deactivated`, `api_key.created`... */
  action: string;
  resourceType: 'user' | 'api_key';
  resourceId: string;
  data: Record<string, unknown>;
}

/**
 * Writes a firm-level audit row (no organization) in the caller's transaction, so the change and its record commit
 * together. People and keys belong to the firm, not to one client company, so they have no outbox event: webhooks
 * are per organization.
 */
export async function recordFirmEvent(tx: Executor, actor: FirmActor, event: FirmEvent): Promise<void> {
  await recordFirmAuditRow(tx, {
    firmId: actor.firmId,
    actorKind: actor.kind,
    actorId: actor.id,
    action: event.action,
    resourceType: event.resourceType,
    resourceId: event.resourceId,
    requestId: actor.requestId ?? null,
    data: event.data,
  });
}
