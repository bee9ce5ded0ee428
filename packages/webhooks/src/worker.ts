import { randomUUID } from 'node:crypto';
import { ALL_EVENTS, DomainError, newId } from '@firm/core';
import { type Db, rowsOf, type Tx, webhookDeliveries, webhookDeliveryAttempts } from '@firm/db';
import { sql } from 'drizzle-orm';
import { checkWebhookUrl, type UrlPolicy } from './address';
import { openSigningSecret, resealSigningSecrets, type SecretKeys } from './secrets';
import { DISABLE_AFTER_FAILING_MS, nextAttemptAt } from './schedule';
import { type SendResult, type Sender, sendWebhook } from './sender';
import { signatureHeaders } from './signing';
import { takeSequence } from './subscriptions';

/** Serialises fan-out across workers, so sequence numbers follow the order events were written in. */
const DISPATCH_LOCK = 7264310004;

export interface WorkerOptions {
  db: Db;
  policy: UrlPolicy;
  /** The keys signing secrets are sealed under at rest. */
  secretKeys: SecretKeys;
  /** How long a receiver has to answer. */
  timeoutMs: number;
  now?: (() => Date) | undefined;
  /** In [0, 1); spreads retries (jitter). */
  random?: (() => number) | undefined;
  send?: Sender | undefined;
  /** Outbox events fanned out, and deliveries attempted, per round. */
  batchSize?: number | undefined;
  /** How long an idle worker waits before looking again. */
  pollIntervalMs?: number | undefined;
  onError?: ((err: unknown) => void) | undefined;
  /** Told the outcome of every delivery attempt (for metrics). */
  onAttempt?: ((outcome: AttemptOutcome) => void) | undefined;
}

/** The body every receiver gets. `data` is the resource as the API returns it. */
export interface Envelope {
  id: string;
  type: string;
  createdAt: string;
  organizationId: string | null;
  /** Per subscription, increasing by one with each event it is sent: for ordering and de-duplication. */
  sequence: number;
  data: unknown;
}

interface OutboxRow {
  id: string;
  firm_id: string;
  organization_id: string;
  type: string;
  payload: unknown;
  created_at: Date | string;
}

interface SubscriptionMatch {
  id: string;
  firm_id: string;
  event_types: string[];
  organization_ids: string[] | null;
}

/**
 * Fans committed outbox events out to the subscriptions that want them: one delivery per
 * (subscription, event) with the subscription's next sequence number, and the events marked
 * processed, all in one transaction. Returns how many events it took.
 */
export async function dispatchOutbox(db: Db, options: { now: Date; batchSize: number }): Promise<number> {
  return db.transaction(async (tx) => {
    const [lock] = rowsOf<{ ok: boolean }>(
      await tx.execute(sql`select pg_try_advisory_xact_lock(${DISPATCH_LOCK}) as ok`),
    );
    if (!lock?.ok) return 0;
    const events = rowsOf<OutboxRow>(
      await tx.execute(sql`
        select id, firm_id, organization_id, type, payload, created_at from outbox_events
        where processed_at is null
        order by created_at, id
        limit ${options.batchSize}
        for update skip locked`),
    );
    if (events.length === 0) return 0;
    const firmIds = [...new Set(events.map((e) => e.firm_id))];
    const subscriptions = rowsOf<SubscriptionMatch>(
      await tx.execute(sql`
        select id, firm_id, event_types, organization_ids from webhook_subscriptions
        where enabled and firm_id in ${sql`(${sql.join(
          firmIds.map((id) => sql`${id}::uuid`),
          sql`, `,
        )})`}
        order by id`),
    );
    const wanted = (s: SubscriptionMatch, e: OutboxRow) =>
      s.firm_id === e.firm_id &&
      (s.event_types.includes(ALL_EVENTS) || s.event_types.includes(e.type)) &&
      (s.organization_ids === null || s.organization_ids.includes(e.organization_id));
    const rows: (typeof webhookDeliveries.$inferInsert)[] = [];
    for (const s of subscriptions) {
      const matching = events.filter((e) => wanted(s, e));
      if (matching.length === 0) continue;
      let sequence = await takeSequence(tx, s.id, matching.length);
      for (const e of matching) {
        rows.push({
          id: newId(),
          firmId: e.firm_id,
          subscriptionId: s.id,
          eventId: e.id,
          eventType: e.type,
          organizationId: e.organization_id,
          payload: e.payload,
          eventCreatedAt: new Date(e.created_at),
          sequence: sequence++,
          nextAttemptAt: options.now,
          createdAt: options.now,
        });
      }
    }
    if (rows.length > 0) await tx.insert(webhookDeliveries).values(rows);
    // By (organization_id, id), the table's key: one index probe per event.
    const organizationIds = sql.param(events.map((e) => e.organization_id));
    const ids = sql.param(events.map((e) => e.id));
    await tx.execute(sql`
      update outbox_events o set processed_at = ${options.now.toISOString()}::timestamptz
      from unnest(${organizationIds}::uuid[], ${ids}::uuid[]) as e(organization_id, id)
      where o.organization_id = e.organization_id and o.id = e.id`);
    return events.length;
  });
}

/** A delivery leased to one worker for one attempt. */
/** Seconds since the oldest event not yet fanned out to deliveries was written; 0 when none waits. */
export async function outboxLagSeconds(db: Db): Promise<number> {
  const [row] = rowsOf<{ lag: number | string | null }>(
    await db.execute(
      sql`select extract(epoch from now() - min(created_at))::float8 as lag from outbox_events where processed_at is null`,
    ),
  );
  return Number(row?.lag ?? 0);
}

export interface ClaimedDelivery {
  id: string;
  firmId: string;
  subscriptionId: string;
  eventId: string;
  eventType: string;
  organizationId: string | null;
  payload: unknown;
  eventCreatedAt: Date;
  sequence: number;
  /** Including the attempt being made. */
  attemptCount: number;
  attemptedAt: Date;
  leaseToken: string;
  url: string;
  /** The signing secrets as stored (sealed); opened only to sign the attempt. */
  secrets: string[];
}

interface ClaimRow {
  id: string;
  firm_id: string;
  subscription_id: string;
  event_id: string;
  event_type: string;
  organization_id: string | null;
  payload: unknown;
  event_created_at: Date | string;
  sequence: number | string;
  attempt_count: number;
  lease_token: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | string | null;
}

/**
 * Leases due deliveries: at most one per subscription, the pending one with the lowest sequence
 * number, so that each subscription receives its events in order. `FOR UPDATE SKIP LOCKED` lets
 * workers claim side by side without waiting on each other or taking the same row; the lease
 * (`locked_until`) is what keeps a second worker off a delivery while its HTTP request runs outside
 * any transaction, and what hands it to another worker if this one dies.
 */
export async function claimDeliveries(
  db: Db,
  options: { now: Date; leaseMs: number; limit: number },
): Promise<ClaimedDelivery[]> {
  const now = options.now.toISOString();
  const leaseUntil = new Date(options.now.getTime() + options.leaseMs).toISOString();
  const token = randomUUID();
  const rows = rowsOf<ClaimRow>(
    await db.execute(sql`
      update webhook_deliveries d
      set locked_until = ${leaseUntil}::timestamptz, lease_token = ${token}::uuid,
          attempt_count = d.attempt_count + 1,
          first_attempted_at = coalesce(d.first_attempted_at, ${now}::timestamptz),
          last_attempted_at = ${now}::timestamptz
      from webhook_subscriptions s
      where s.firm_id = d.firm_id and s.id = d.subscription_id and (d.firm_id, d.id) in (
        select c.firm_id, c.id from webhook_deliveries c
        join webhook_subscriptions cs on cs.firm_id = c.firm_id and cs.id = c.subscription_id
        where cs.enabled and c.status = 'pending' and c.next_attempt_at <= ${now}::timestamptz
          and (c.locked_until is null or c.locked_until <= ${now}::timestamptz)
          and not exists (
            select 1 from webhook_deliveries p
            where p.firm_id = c.firm_id and p.subscription_id = c.subscription_id and p.status = 'pending' and p.sequence < c.sequence)
        order by c.next_attempt_at, c.sequence
        limit ${options.limit}
        for update of c skip locked)
      returning d.id, d.firm_id, d.subscription_id, d.event_id, d.event_type, d.organization_id, d.payload,
        d.event_created_at, d.sequence, d.attempt_count, d.lease_token,
        s.url, s.secret, s.previous_secret, s.previous_secret_expires_at`),
  );
  return rows.map((r) => ({
    id: r.id,
    firmId: r.firm_id,
    subscriptionId: r.subscription_id,
    eventId: r.event_id,
    eventType: r.event_type,
    organizationId: r.organization_id,
    payload: r.payload,
    eventCreatedAt: new Date(r.event_created_at),
    sequence: Number(r.sequence),
    attemptCount: r.attempt_count,
    attemptedAt: options.now,
    leaseToken: r.lease_token,
    url: r.url,
    secrets:
      r.previous_secret && r.previous_secret_expires_at && new Date(r.previous_secret_expires_at) > options.now
        ? [r.secret, r.previous_secret]
        : [r.secret],
  }));
}

export const envelopeOf = (d: ClaimedDelivery): Envelope => ({
  id: d.eventId,
  type: d.eventType,
  createdAt: d.eventCreatedAt.toISOString(),
  organizationId: d.organizationId,
  sequence: d.sequence,
  data: d.payload,
});

export type AttemptOutcome = 'succeeded' | 'retrying' | 'failed' | 'gone' | 'lease_lost';

/** Signs and sends one claimed delivery, then records what happened. */
export async function attemptDelivery(
  db: Db,
  delivery: ClaimedDelivery,
  options: Pick<WorkerOptions, 'policy' | 'timeoutMs' | 'send' | 'secretKeys'> & {
    now: () => Date;
    random: () => number;
  },
): Promise<AttemptOutcome> {
  const body = JSON.stringify(envelopeOf(delivery));
  let result: SendResult;
  try {
    // Checked again at every attempt: the host may resolve elsewhere since the subscription was saved.
    const target = await checkWebhookUrl(delivery.url, options.policy);
    const secrets = delivery.secrets.map((stored) => openForSigning(options.secretKeys, delivery, stored));
    const headers = { ...signatureHeaders(delivery.eventId, options.now(), body, secrets) };
    result = await (options.send ?? sendWebhook)({ target, headers, body, timeoutMs: options.timeoutMs });
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    result = { statusCode: null, latencyMs: 0, responseBody: null, error: err.message };
  }
  return recordOutcome(db, delivery, result, options.now(), options.random);
}

/** A secret that does not open is never used: the attempt fails, unsent, until the secret is rotated. */
function openForSigning(keys: SecretKeys, delivery: ClaimedDelivery, stored: string): string {
  try {
    return openSigningSecret(keys, delivery.subscriptionId, stored);
  } catch {
    throw new DomainError(
      'INVALID_STATE',
      'the signing secret cannot be read (altered, or its key is no longer configured); rotate the secret',
    );
  }
}

async function recordOutcome(
  db: Db,
  delivery: ClaimedDelivery,
  result: SendResult,
  now: Date,
  random: () => number,
): Promise<AttemptOutcome> {
  const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
  const gone = result.statusCode === 410;
  const retryAt = ok || gone ? null : nextAttemptAt(delivery.attemptCount, now, random);
  const outcome: AttemptOutcome = ok ? 'succeeded' : gone ? 'gone' : retryAt ? 'retrying' : 'failed';
  const at = now.toISOString();
  const responseBody = storable(result.responseBody);
  const error = storable(result.error);
  return db.transaction(async (tx) => {
    const updated = rowsOf<{ id: string }>(
      await tx.execute(sql`
        update webhook_deliveries set
          status = ${ok ? 'succeeded' : retryAt ? 'pending' : 'failed'}::webhook_delivery_status,
          next_attempt_at = ${retryAt ? retryAt.toISOString() : null}::timestamptz,
          completed_at = ${retryAt ? null : at}::timestamptz,
          locked_until = null, lease_token = null,
          last_status_code = ${result.statusCode}::int, last_latency_ms = ${result.latencyMs}::int,
          last_response_body = ${responseBody}, last_error = ${error}
        where firm_id = ${delivery.firmId}::uuid and id = ${delivery.id}::uuid
          and lease_token = ${delivery.leaseToken}::uuid
        returning id`),
    );
    // The lease ran out and another worker took the delivery over; its outcome is the one that counts.
    if (updated.length === 0) return 'lease_lost';
    await tx.insert(webhookDeliveryAttempts).values({
      firmId: delivery.firmId,
      deliveryId: delivery.id,
      attemptNumber: delivery.attemptCount,
      attemptedAt: delivery.attemptedAt,
      outcome,
      statusCode: result.statusCode,
      latencyMs: result.latencyMs,
      responseBody,
      error,
    });
    if (ok) {
      await tx.execute(
        sql`update webhook_subscriptions set failing_since = null where id = ${delivery.subscriptionId}::uuid`,
      );
    } else if (gone) {
      await disable(tx, delivery.subscriptionId, at, 'the endpoint answered 410 Gone');
    } else {
      await failing(tx, delivery.subscriptionId, now, describe({ ...result, error }));
    }
    return outcome;
  });
}

/**
 * Text a receiver sent, made storable: Postgres text cannot hold NUL, and a receiver answering with
 * one must not stop its attempt from being recorded (the delivery would be resent at every lease expiry).
 */
const storable = (text: string | null): string | null => (text === null ? null : text.replaceAll('\u0000', '\uFFFD'));

const describe = (result: SendResult) =>
  result.statusCode === null ? (result.error ?? 'no response') : `HTTP ${result.statusCode}`;

async function disable(tx: Tx, subscriptionId: string, at: string, reason: string): Promise<void> {
  await tx.execute(sql`
    update webhook_subscriptions
    set enabled = false, disabled_at = ${at}::timestamptz, disabled_reason = ${reason}
    where id = ${subscriptionId}::uuid and enabled`);
}

/** Notes a failure; a subscription whose endpoint has failed every attempt for three days is disabled. */
async function failing(tx: Tx, subscriptionId: string, now: Date, last: string): Promise<void> {
  const [row] = rowsOf<{ failing_since: Date | string }>(
    await tx.execute(sql`
      update webhook_subscriptions set failing_since = coalesce(failing_since, ${now.toISOString()}::timestamptz)
      where id = ${subscriptionId}::uuid
      returning failing_since`),
  );
  if (row && now.getTime() - new Date(row.failing_since).getTime() >= DISABLE_AFTER_FAILING_MS) {
    await disable(tx, subscriptionId, now.toISOString(), `every attempt failed for 3 days; the last: ${last}`);
  }
}

export interface RoundResult {
  dispatched: number;
  attempted: number;
}

export interface WebhookWorker {
  /** One round: fan out pending outbox events, then attempt the deliveries that are due. */
  runOnce(): Promise<RoundResult>;
  /** Rounds until one finds nothing to do. */
  drain(): Promise<RoundResult>;
  /** Runs rounds in the background until stopped. */
  start(): void;
  /** Stops after the round in progress; in-flight attempts finish and are recorded. */
  stop(): Promise<void>;
}

export function createWebhookWorker(options: WorkerOptions): WebhookWorker {
  const now = options.now ?? (() => new Date());
  const random = options.random ?? Math.random;
  const batchSize = options.batchSize ?? 50;
  const pollIntervalMs = options.pollIntervalMs ?? 1000;
  // A lease outlives the longest attempt, so only a dead worker's lease ever runs out.
  const leaseMs = options.timeoutMs + 60_000;
  const attemptOptions = { ...options, now, random };

  // Secrets in clear (written before sealing) or under a key that is no longer current are sealed anew, once.
  let resealed = false;
  const runOnce = async (): Promise<RoundResult> => {
    if (!resealed) {
      await resealSigningSecrets(options.db, options.secretKeys);
      resealed = true;
    }
    const dispatched = await dispatchOutbox(options.db, { now: now(), batchSize });
    const claimed = await claimDeliveries(options.db, { now: now(), leaseMs, limit: batchSize });
    await Promise.all(
      claimed.map(async (d) => {
        const outcome = await attemptDelivery(options.db, d, attemptOptions);
        options.onAttempt?.(outcome);
        return outcome;
      }),
    );
    return { dispatched, attempted: claimed.length };
  };

  let loop: Promise<void> | null = null;
  let running = false;
  let wake: (() => void) | null = null;

  return {
    runOnce,
    async drain() {
      const total = { dispatched: 0, attempted: 0 };
      for (;;) {
        const round = await runOnce();
        total.dispatched += round.dispatched;
        total.attempted += round.attempted;
        if (round.dispatched === 0 && round.attempted === 0) return total;
      }
    },
    start() {
      if (running) return;
      running = true;
      loop = (async () => {
        while (running) {
          let busy = false;
          try {
            const round = await runOnce();
            busy = round.dispatched > 0 || round.attempted > 0;
          } catch (err) {
            options.onError?.(err);
          }
          if (!busy && running) {
            await new Promise<void>((resolve) => {
              const timer = setTimeout(resolve, pollIntervalMs);
              wake = () => {
                clearTimeout(timer);
                resolve();
              };
            });
            wake = null;
          }
        }
      })();
    },
    async stop() {
      running = false;
      wake?.();
      await loop;
      loop = null;
    },
  };
}
