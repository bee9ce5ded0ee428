import { decodeCursor, DomainError, isUuid, newId, type Page, TEST_EVENT_TYPE, toPage } from '@firm/core';
import { type Db, type Executor, webhookDeliveries, webhookDeliveryAttempts } from '@firm/db';
import { and, asc, desc, eq, gte, lt, lte } from 'drizzle-orm';
import { findSubscriptionRow, takeSequence, type WebhookDeps, type WebhookOwner } from './subscriptions';

export type DeliveryStatus = (typeof webhookDeliveries.status.enumValues)[number];

/** One event for one subscription and the outcome of its latest attempt: the delivery log's line. */
export interface Delivery {
  id: string;
  subscriptionId: string;
  eventId: string;
  eventType: string;
  organizationId: string | null;
  sequence: number;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: Date | null;
  lastAttemptedAt: Date | null;
  lastStatusCode: number | null;
  lastLatencyMs: number | null;
  lastResponseBody: string | null;
  lastError: string | null;
  completedAt: Date | null;
  createdAt: Date;
}

type Row = typeof webhookDeliveries.$inferSelect;

export const toDelivery = (row: Row): Delivery => ({
  id: row.id,
  subscriptionId: row.subscriptionId,
  eventId: row.eventId,
  eventType: row.eventType,
  organizationId: row.organizationId,
  sequence: Number(row.sequence),
  status: row.status,
  attemptCount: row.attemptCount,
  nextAttemptAt: row.nextAttemptAt,
  lastAttemptedAt: row.lastAttemptedAt,
  lastStatusCode: row.lastStatusCode,
  lastLatencyMs: row.lastLatencyMs,
  lastResponseBody: row.lastResponseBody,
  lastError: row.lastError,
  completedAt: row.completedAt,
  createdAt: row.createdAt,
});

export const deliveryNotFound = () =>
  new DomainError('WEBHOOK_DELIVERY_NOT_FOUND', 'no such delivery of this webhook subscription');

export interface DeliveryFilter {
  limit: number;
  cursor?: string | undefined;
  status?: DeliveryStatus | undefined;
  eventType?: string | undefined;
  /** Deliveries created at or after this instant. */
  since?: Date | undefined;
  /** Deliveries created at or before this instant. */
  until?: Date | undefined;
}

/** A subscription's deliveries, newest first. */
export async function listDeliveries(
  db: Executor,
  owner: WebhookOwner,
  subscriptionId: string,
  filter: DeliveryFilter,
): Promise<Page<Delivery>> {
  const subscription = await findSubscriptionRow(db, owner, subscriptionId);
  const conditions = [eq(webhookDeliveries.subscriptionId, subscription.id)];
  if (filter.status) conditions.push(eq(webhookDeliveries.status, filter.status));
  if (filter.eventType) conditions.push(eq(webhookDeliveries.eventType, filter.eventType));
  if (filter.since) conditions.push(gte(webhookDeliveries.createdAt, filter.since));
  if (filter.until) conditions.push(lte(webhookDeliveries.createdAt, filter.until));
  if (filter.cursor) {
    const [before] = decodeCursor(filter.cursor, ['uuid']);
    conditions.push(lt(webhookDeliveries.id, String(before)));
  }
  const rows = await db
    .select()
    .from(webhookDeliveries)
    .where(and(...conditions))
    .orderBy(desc(webhookDeliveries.id))
    .limit(filter.limit + 1);
  return toPage(rows.map(toDelivery), filter.limit, (d) => [d.id]);
}

export interface DeliveryAttempt {
  attemptNumber: number;
  attemptedAt: Date;
  outcome: string;
  statusCode: number | null;
  latencyMs: number;
  responseBody: string | null;
  error: string | null;
}

/** One delivery with every attempt made, oldest first. */
export async function getDelivery(
  db: Executor,
  owner: WebhookOwner,
  subscriptionId: string,
  deliveryId: string,
): Promise<Delivery & { attempts: DeliveryAttempt[] }> {
  const subscription = await findSubscriptionRow(db, owner, subscriptionId);
  if (!isUuid(deliveryId)) throw deliveryNotFound();
  const [row] = await db
    .select()
    .from(webhookDeliveries)
    .where(and(eq(webhookDeliveries.subscriptionId, subscription.id), eq(webhookDeliveries.id, deliveryId)));
  if (!row) throw deliveryNotFound();
  const attempts = await db
    .select({
      attemptNumber: webhookDeliveryAttempts.attemptNumber,
      attemptedAt: webhookDeliveryAttempts.attemptedAt,
      outcome: webhookDeliveryAttempts.outcome,
      statusCode: webhookDeliveryAttempts.statusCode,
      latencyMs: webhookDeliveryAttempts.latencyMs,
      responseBody: webhookDeliveryAttempts.responseBody,
      error: webhookDeliveryAttempts.error,
    })
    .from(webhookDeliveryAttempts)
    .where(eq(webhookDeliveryAttempts.deliveryId, row.id))
    .orderBy(asc(webhookDeliveryAttempts.id));
  return { ...toDelivery(row), attempts };
}

/**
 * Queues a finished delivery again, due now, with a fresh retry schedule. It keeps its event id and
 * sequence number, so receivers recognise it as the same event.
 */
export async function redeliver(
  db: Db,
  owner: WebhookOwner,
  subscriptionId: string,
  deliveryId: string,
  deps: { now?: (() => Date) | undefined },
): Promise<Delivery> {
  const now = deps.now?.() ?? new Date();
  return db.transaction(async (tx) => {
    const subscription = await findSubscriptionRow(tx, owner, subscriptionId);
    if (!isUuid(deliveryId)) throw deliveryNotFound();
    const [current] = await tx
      .select()
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.subscriptionId, subscription.id), eq(webhookDeliveries.id, deliveryId)))
      .for('update');
    if (!current) throw deliveryNotFound();
    if (current.status === 'pending') {
      throw new DomainError('INVALID_STATE', 'the delivery is still pending; it will be attempted again by itself');
    }
    const [row] = await tx
      .update(webhookDeliveries)
      .set({ status: 'pending', nextAttemptAt: now, attemptCount: 0, firstAttemptedAt: null, completedAt: null })
      .where(eq(webhookDeliveries.id, current.id))
      .returning();
    return toDelivery(row as Row);
  });
}

/** Queues a `webhook.test` event for this one subscription, behind any deliveries already waiting. */
export async function sendTestEvent(
  db: Db,
  owner: WebhookOwner,
  id: string,
  deps: Pick<WebhookDeps, 'now'>,
): Promise<Delivery> {
  const now = deps.now?.() ?? new Date();
  return db.transaction(async (tx) => {
    const subscription = await findSubscriptionRow(tx, owner, id, true);
    if (!subscription.enabled) {
      throw new DomainError('INVALID_STATE', 'the subscription is disabled; enable it first');
    }
    const sequence = await takeSequence(tx, subscription.id, 1);
    const [row] = await tx
      .insert(webhookDeliveries)
      .values({
        firmId: subscription.firmId,
        subscriptionId: subscription.id,
        eventId: newId(),
        eventType: TEST_EVENT_TYPE,
        organizationId: null,
        payload: { subscriptionId: subscription.id, message: 'This is a test event.' },
        eventCreatedAt: now,
        sequence,
        nextAttemptAt: now,
        createdAt: now,
      })
      .returning();
    return toDelivery(row as typeof webhookDeliveries.$inferSelect);
  });
}
