import {
  ALL_EVENTS,
  decodeCursor,
  DomainError,
  isEventType,
  isUuid,
  newId,
  type Page,
  SUBSCRIBABLE_EVENT_TYPES,
  TEST_EVENT_TYPE,
  toPage,
} from '@firm/core';
import { type Db, type Executor, webhookSubscriptions } from '@firm/db';
import { firmCompanyIds } from '@firm/ledger';
import { and, arrayContained, asc, eq, gt, isNotNull, type SQL, sql } from 'drizzle-orm';
import { type SecretKeys, sealSigningSecret } from './secrets';
import { checkWebhookUrl, type UrlPolicy } from './address';
import { generateSigningSecret } from './signing';

/** Who manages subscriptions: a firm, and the organizations the caller's credential is narrowed to (null: all). */
export interface WebhookOwner {
  firmId: string;
  organizationIds: readonly string[] | null;
}

export interface WebhookDeps {
  policy: UrlPolicy;
  /** The keys signing secrets are sealed under at rest. */
  secretKeys: SecretKeys;
  now?: (() => Date) | undefined;
}

/** How long the secret replaced by a rotation keeps signing alongside the new one. */
export const PREVIOUS_SECRET_TTL_MS = 24 * 3600 * 1000;

export interface Subscription {
  id: string;
  url: string;
  description: string | null;
  eventTypes: string[];
  organizationIds: string[] | null;
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: Date | null;
  /** Until when the secret replaced by the latest rotation still signs; null when none does. */
  previousSecretExpiresAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

export interface SubscriptionInput {
  url: string;
  eventTypes: readonly string[];
  organizationIds?: readonly string[] | null | undefined;
  description?: string | null | undefined;
  enabled?: boolean | undefined;
}

export type SubscriptionPatch = Partial<SubscriptionInput>;

type Row = typeof webhookSubscriptions.$inferSelect;

const toSubscription = (row: Row): Subscription => ({
  id: row.id,
  url: row.url,
  description: row.description,
  eventTypes: row.eventTypes,
  organizationIds: row.organizationIds,
  enabled: row.enabled,
  disabledReason: row.disabledReason,
  disabledAt: row.disabledAt,
  previousSecretExpiresAt: row.previousSecretExpiresAt,
  createdAt: row.createdAt,
  updatedAt: row.updatedAt,
});

export const webhookNotFound = () => new DomainError('WEBHOOK_NOT_FOUND', 'webhook subscription not found');

/**
 * The subscriptions an owner sees: its firm's, and for a credential narrowed to some organizations
 * only those limited to organizations it can see.
 */
export function visibleTo(owner: WebhookOwner): SQL {
  const firm = eq(webhookSubscriptions.firmId, owner.firmId);
  if (owner.organizationIds === null) return firm;
  return and(
    firm,
    isNotNull(webhookSubscriptions.organizationIds),
    arrayContained(webhookSubscriptions.organizationIds, [...owner.organizationIds]),
  ) as SQL;
}

/** `*` alone, or the listed types without repeats; every one must be in the catalogue. */
function normaliseEventTypes(types: readonly string[]): string[] {
  if (types.includes(ALL_EVENTS)) return [ALL_EVENTS];
  const unknown = types.filter((t) => !isEventType(t) || t === TEST_EVENT_TYPE);
  if (unknown.length > 0 || types.length === 0) {
    throw new DomainError('VALIDATION_ERROR', 'unknown event type', [
      {
        field: 'eventTypes',
        message: `known event types: ${SUBSCRIBABLE_EVENT_TYPES.join(', ')}, or * for all`,
      },
    ]);
  }
  return [...new Set(types)];
}

/**
 * The organizations a subscription is limited to: the firm's own, within the owner's reach. An owner
 * narrowed to some organizations that names none gets its own list rather than the whole firm.
 */
async function checkOrganizations(
  db: Executor,
  owner: WebhookOwner,
  requested: readonly string[] | null | undefined,
): Promise<string[] | null> {
  if (requested === null || requested === undefined) {
    return owner.organizationIds === null ? null : [...owner.organizationIds];
  }
  const ids = [...new Set(requested)];
  const outOfReach = ids.filter((id) => !isUuid(id) || (owner.organizationIds && !owner.organizationIds.includes(id)));
  const found = outOfReach.length === 0 && ids.length > 0 ? await firmCompanyIds(db, owner.firmId, ids) : [];
  if (outOfReach.length > 0 || found.length !== ids.length) {
    throw new DomainError('ORGANIZATION_NOT_FOUND', 'an organization is not one this caller can see', [
      { field: 'organizationIds', message: 'every id must be an organization of the firm visible to this credential' },
    ]);
  }
  return ids;
}

export async function createSubscription(
  db: Db,
  owner: WebhookOwner,
  input: SubscriptionInput,
  deps: WebhookDeps,
): Promise<{ subscription: Subscription; secret: string }> {
  const eventTypes = normaliseEventTypes(input.eventTypes);
  const { url } = await checkWebhookUrl(input.url, deps.policy);
  const organizationIds = await checkOrganizations(db, owner, input.organizationIds);
  const now = deps.now?.() ?? new Date();
  const id = newId();
  const secret = generateSigningSecret();
  const enabled = input.enabled ?? true;
  const [row] = await db
    .insert(webhookSubscriptions)
    .values({
      id,
      firmId: owner.firmId,
      url: url.toString(),
      description: input.description ?? null,
      eventTypes,
      organizationIds,
      enabled,
      disabledAt: enabled ? null : now,
      disabledReason: enabled ? null : 'disabled by its owner',
      secret: sealSigningSecret(deps.secretKeys, id, secret),
      createdAt: now,
      updatedAt: now,
    })
    .returning();
  return { subscription: toSubscription(row as Row), secret };
}

export async function listSubscriptions(
  db: Executor,
  owner: WebhookOwner,
  options: { limit: number; cursor?: string | undefined },
): Promise<Page<Subscription>> {
  const conditions = [visibleTo(owner)];
  if (options.cursor) {
    const [after] = decodeCursor(options.cursor, ['uuid']);
    conditions.push(gt(webhookSubscriptions.id, String(after)));
  }
  const rows = await db
    .select()
    .from(webhookSubscriptions)
    .where(and(...conditions))
    .orderBy(asc(webhookSubscriptions.id))
    .limit(options.limit + 1);
  return toPage(rows.map(toSubscription), options.limit, (s) => [s.id]);
}

/** A subscription row the owner can see, or WEBHOOK_NOT_FOUND; `forUpdate` locks it. */
export async function findSubscriptionRow(
  db: Executor,
  owner: WebhookOwner,
  id: string,
  forUpdate = false,
): Promise<Row> {
  if (!isUuid(id)) throw webhookNotFound();
  const query = db
    .select()
    .from(webhookSubscriptions)
    .where(and(visibleTo(owner), eq(webhookSubscriptions.id, id)));
  const [row] = forUpdate ? await query.for('update') : await query;
  if (!row) throw webhookNotFound();
  return row;
}

export const getSubscription = async (db: Executor, owner: WebhookOwner, id: string): Promise<Subscription> =>
  toSubscription(await findSubscriptionRow(db, owner, id));

export async function updateSubscription(
  db: Db,
  owner: WebhookOwner,
  id: string,
  patch: SubscriptionPatch,
  deps: WebhookDeps,
): Promise<Subscription> {
  await findSubscriptionRow(db, owner, id);
  const set: Partial<typeof webhookSubscriptions.$inferInsert> = {};
  // The URL is resolved and checked before the transaction: no network call while rows are locked.
  if (patch.url !== undefined) set.url = (await checkWebhookUrl(patch.url, deps.policy)).url.toString();
  if (patch.eventTypes !== undefined) set.eventTypes = normaliseEventTypes(patch.eventTypes);
  if (patch.organizationIds !== undefined) {
    set.organizationIds = await checkOrganizations(db, owner, patch.organizationIds);
  }
  if (patch.description !== undefined) set.description = patch.description;
  const now = deps.now?.() ?? new Date();
  return db.transaction(async (tx) => {
    const current = await findSubscriptionRow(tx, owner, id, true);
    if (patch.enabled === true && !current.enabled) {
      Object.assign(set, { enabled: true, disabledAt: null, disabledReason: null, failingSince: null });
    } else if (patch.enabled === false && current.enabled) {
      Object.assign(set, { enabled: false, disabledAt: now, disabledReason: 'disabled by its owner' });
    }
    const [row] = await tx
      .update(webhookSubscriptions)
      .set({ ...set, updatedAt: now })
      .where(eq(webhookSubscriptions.id, id))
      .returning();
    return toSubscription(row as Row);
  });
}

/** Deletes the subscription and its delivery log. */
export async function deleteSubscription(db: Executor, owner: WebhookOwner, id: string): Promise<void> {
  const row = await findSubscriptionRow(db, owner, id);
  await db.delete(webhookSubscriptions).where(eq(webhookSubscriptions.id, row.id));
}

/** A new secret; the one it replaces keeps signing alongside it for 24 hours. */
export async function rotateSecret(
  db: Db,
  owner: WebhookOwner,
  id: string,
  deps: Pick<WebhookDeps, 'now' | 'secretKeys'>,
): Promise<{ subscription: Subscription; secret: string }> {
  const now = deps.now?.() ?? new Date();
  const secret = generateSigningSecret();
  return db.transaction(async (tx) => {
    const current = await findSubscriptionRow(tx, owner, id, true);
    const [row] = await tx
      .update(webhookSubscriptions)
      .set({
        secret: sealSigningSecret(deps.secretKeys, current.id, secret),
        previousSecret: current.secret,
        previousSecretExpiresAt: new Date(now.getTime() + PREVIOUS_SECRET_TTL_MS),
        updatedAt: now,
      })
      .where(eq(webhookSubscriptions.id, id))
      .returning();
    return { subscription: toSubscription(row as Row), secret };
  });
}

/** Gives `count` new sequence numbers to a subscription; returns the first. Locks the subscription row. */
export async function takeSequence(db: Executor, subscriptionId: string, count: number): Promise<number> {
  const [row] = await db
    .update(webhookSubscriptions)
    .set({ lastSequence: sql`${webhookSubscriptions.lastSequence} + ${count}` })
    .where(eq(webhookSubscriptions.id, subscriptionId))
    .returning({ last: webhookSubscriptions.lastSequence });
  return Number(row?.last) - count + 1;
}
