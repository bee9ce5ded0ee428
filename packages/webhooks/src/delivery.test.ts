import { newId } from '@firm/core';
import { firms, organizations, outboxEvents, webhookDeliveries, webhookSubscriptions } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { asc, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Resolver, UrlPolicy } from './address';
import { getDelivery } from './deliveries';
import { MAX_ATTEMPTS, RETRY_DELAYS_SECONDS } from './schedule';
import { sendWebhook } from './sender';
import { createSubscription, rotateSecret, type SubscriptionInput } from './subscriptions';
import { type ReceivedRequest, type Receiver, startReceiver, verifyDelivery } from './testing';
import {
  attemptDelivery,
  type ClaimedDelivery,
  claimDeliveries,
  createWebhookWorker,
  dispatchOutbox,
  type WebhookWorker,
} from './worker';
import { DEVELOPMENT_SECRET_KEYS, parseSecretKeys } from './secrets';

const secretKeys = parseSecretKeys(DEVELOPMENT_SECRET_KEYS);

let database: TestDatabase;
const db = () => database.db;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

// The clock starts at the real time, so that receivers' signature checks (five minutes of tolerance)
// pass; tests move it forward to make retries due instead of waiting for them.
let clock: Date;
const now = () => clock;
const advance = (ms: number) => {
  clock = new Date(clock.getTime() + ms);
};
const policy: UrlPolicy = { allowInsecureLocalhost: true };
const receivers: Receiver[] = [];
const delay = (retry: number) => (RETRY_DELAYS_SECONDS[retry] ?? 0) * 1000;
const workers: WebhookWorker[] = [];

beforeEach(() => {
  clock = new Date();
});
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop()));
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  // A later test's receiver may get a closed receiver's port: nothing may be sent to it from here on.
  await db()
    .update(webhookSubscriptions)
    .set({ enabled: false, disabledAt: new Date(), disabledReason: 'test over' })
    .where(eq(webhookSubscriptions.enabled, true));
});

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

function worker(options: { timeoutMs?: number; resolve?: Resolver } = {}): WebhookWorker {
  const w = createWebhookWorker({
    db: db(),
    policy: { ...policy, resolve: options.resolve },
    secretKeys,
    timeoutMs: options.timeoutMs ?? 5000,
    now,
    random: () => 0.5,
  });
  workers.push(w);
  return w;
}

/** A firm of its own with two organizations, so that tests do not see each other's events. */
async function firm() {
  const [f] = await db()
    .insert(firms)
    .values({ slug: `f-${newId()}`, name: 'Webhook firm' })
    .returning();
  const firmId = (f as { id: string }).id;
  const orgs = await db()
    .insert(organizations)
    .values([
      { firmId, name: 'First client' },
      { firmId, name: 'Second client' },
    ])
    .returning();
  const [org1, org2] = orgs.map((o) => o.id) as [string, string];
  const owner = { firmId, organizationIds: null };
  const emit = async (type: string, data: Record<string, unknown>, organizationId = org1) => {
    const id = newId();
    await db().insert(outboxEvents).values({ id, firmId, organizationId, type, payload: data, createdAt: clock });
    return id;
  };
  const subscribe = async (input: Partial<SubscriptionInput> & { url: string }, resolve?: Resolver) =>
    createSubscription(
      db(),
      owner,
      { eventTypes: ['*'], ...input },
      { policy: { ...policy, resolve }, secretKeys, now },
    );
  return { firmId, org1, org2, owner, emit, subscribe };
}

const deliveriesOf = (subscriptionId: string) =>
  db()
    .select()
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.subscriptionId, subscriptionId))
    .orderBy(asc(webhookDeliveries.sequence));

const subscriptionRow = async (id: string) =>
  (await db().select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, id)))[0];

describe('webhook delivery', () => {
  it('delivers each event once per subscription, signed, with its sequence number, in order', async () => {
    const f = await firm();
    const r = await receiver();
    const { subscription, secret } = await f.subscribe({ url: r.url });
    const ids = [
      await f.emit('entry.posted', { id: 'e1', totalCents: 100 }),
      await f.emit('account.created', { id: 'a1', code: '6100' }),
      await f.emit('entry.voided', { id: 'e1', status: 'void' }, f.org2),
    ];
    await worker().drain();

    const envelopes = r.received.map((request) => verifyDelivery(secret, request));
    expect(envelopes.map((e) => e.sequence)).toEqual([1, 2, 3]);
    expect(envelopes.map((e) => e.id)).toEqual(ids);
    expect(r.received.map((request) => request.headers['webhook-id'])).toEqual(ids);
    expect(envelopes[0]).toEqual({
      id: ids[0],
      type: 'entry.posted',
      createdAt: clock.toISOString(),
      organizationId: f.org1,
      sequence: 1,
      data: { id: 'e1', totalCents: 100 },
    });
    expect(envelopes[2]).toMatchObject({ type: 'entry.voided', organizationId: f.org2 });
    const rows = await deliveriesOf(subscription.id);
    expect(rows.map((d) => [d.status, d.attemptCount, d.lastStatusCode])).toEqual([
      ['succeeded', 1, 204],
      ['succeeded', 1, 204],
      ['succeeded', 1, 204],
    ]);
    const outbox = await db().select().from(outboxEvents).where(eq(outboxEvents.firmId, f.firmId));
    expect(outbox.every((e) => e.processedAt !== null)).toBe(true);
    // Nothing is left to do: a second pass delivers nothing again.
    await worker().drain();
    expect(r.received).toHaveLength(3);
  });

  it('sends a subscription only the event types and organizations it asked for', async () => {
    const f = await firm();
    const r1 = await receiver();
    const r2 = await receiver();
    const entries = await f.subscribe({ url: r1.url, eventTypes: ['entry.posted'] });
    const second = await f.subscribe({ url: r2.url, organizationIds: [f.org2] });
    await f.emit('entry.posted', { n: 1 });
    await f.emit('account.updated', { n: 2 });
    await f.emit('entry.posted', { n: 3 }, f.org2);
    await worker().drain();
    expect(r1.received.map((q) => verifyDelivery(entries.secret, q).data)).toEqual([{ n: 1 }, { n: 3 }]);
    expect(r2.received.map((q) => verifyDelivery(second.secret, q))).toMatchObject([{ sequence: 1, data: { n: 3 } }]);
  });

  it('retries a receiver that is down on the schedule, holding later events back so order is kept', async () => {
    const f = await firm();
    const r = await receiver();
    const { subscription, secret } = await f.subscribe({ url: r.url });
    await r.down();
    await f.emit('entry.posted', { n: 1 });
    await f.emit('entry.posted', { n: 2 });
    const w = worker();
    await w.drain();
    let [first, second] = await deliveriesOf(subscription.id);
    expect(first).toMatchObject({ status: 'pending', attemptCount: 1, lastStatusCode: null });
    expect(first?.lastError).toMatch(/ECONNREFUSED/);
    expect(first?.nextAttemptAt?.getTime()).toBe(clock.getTime() + delay(0));
    expect(second).toMatchObject({ status: 'pending', attemptCount: 0 });

    advance(delay(0));
    await w.drain();
    [first] = await deliveriesOf(subscription.id);
    expect(first?.attemptCount).toBe(2);
    expect(first?.nextAttemptAt?.getTime()).toBe(clock.getTime() + delay(1));

    await r.up();
    advance(delay(1));
    await w.drain();
    expect(r.received.map((q) => verifyDelivery(secret, q).data)).toEqual([{ n: 1 }, { n: 2 }]);
    [first, second] = await deliveriesOf(subscription.id);
    expect([first?.status, first?.attemptCount, second?.status, second?.attemptCount]).toEqual([
      'succeeded',
      3,
      'succeeded',
      1,
    ]);
    expect((await subscriptionRow(subscription.id))?.failingSince).toBeNull();
  });

  it('records a 500 with its status, latency and response excerpt, then succeeds on the retry', async () => {
    const f = await firm();
    const r = await receiver();
    r.reply = (_q, i) => (i === 0 ? { status: 500, body: 'x'.repeat(5000) } : { status: 200, body: 'ok' });
    const { subscription } = await f.subscribe({ url: r.url });
    await f.emit('entry.posted', { n: 1 });
    const w = worker();
    await w.drain();
    let [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'pending', lastStatusCode: 500, lastError: null });
    expect(d?.lastResponseBody).toBe('x'.repeat(1024));
    expect(d?.lastLatencyMs).toBeGreaterThanOrEqual(0);
    expect((await subscriptionRow(subscription.id))?.failingSince).toEqual(clock);

    advance(60_000);
    await w.drain();
    [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'succeeded', attemptCount: 2, lastStatusCode: 200, lastResponseBody: 'ok' });
    expect(r.received).toHaveLength(2);
    expect(r.received[0]?.headers['webhook-id']).toBe(r.received[1]?.headers['webhook-id']);
    const detail = await getDelivery(db(), f.owner, subscription.id, d?.id as string);
    expect(detail.attempts.map((x) => [x.attemptNumber, x.outcome, x.statusCode, x.responseBody?.length])).toEqual([
      [1, 'retrying', 500, 1024],
      [2, 'succeeded', 200, 2],
    ]);
  });

  it('gives up on a receiver slower than the timeout for this attempt', async () => {
    const f = await firm();
    const r = await receiver();
    r.reply = () => 'hang';
    const { subscription } = await f.subscribe({ url: r.url });
    await f.emit('entry.posted', { n: 1 });
    await worker({ timeoutMs: 200 }).drain();
    const [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'pending', attemptCount: 1, lastStatusCode: null });
    expect(d?.lastError).toBe('no response within 200 ms');
  });

  it('does not follow a redirect: the 3xx is a failed attempt', async () => {
    const f = await firm();
    const elsewhere = await receiver();
    const r = await receiver();
    r.reply = () => ({ status: 302, headers: { location: elsewhere.url } });
    const { subscription } = await f.subscribe({ url: r.url });
    await f.emit('entry.posted', { n: 1 });
    await worker().drain();
    const [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'pending', lastStatusCode: 302 });
    expect(elsewhere.received).toHaveLength(0);
  });

  it('disables a subscription whose endpoint answers 410 Gone', async () => {
    const f = await firm();
    const r = await receiver();
    r.reply = () => ({ status: 410 });
    const { subscription } = await f.subscribe({ url: r.url });
    await f.emit('entry.posted', { n: 1 });
    await worker().drain();
    const [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'failed', lastStatusCode: 410, nextAttemptAt: null });
    expect(await subscriptionRow(subscription.id)).toMatchObject({
      enabled: false,
      disabledReason: 'the endpoint answered 410 Gone',
    });
    await f.emit('entry.posted', { n: 2 });
    await worker().drain();
    expect(await deliveriesOf(subscription.id)).toHaveLength(1);
    expect(r.received).toHaveLength(1);
  });

  it('marks the delivery failed after the last retry and disables an endpoint failing for three days', async () => {
    const f = await firm();
    const r = await receiver();
    r.reply = () => ({ status: 503 });
    const { subscription } = await f.subscribe({ url: r.url });
    await f.emit('entry.posted', { n: 1 });
    const started = clock.getTime();
    const w = worker();
    await w.drain();
    for (let i = 0; i < 20; i++) {
      const [d] = await deliveriesOf(subscription.id);
      if (!d?.nextAttemptAt) break;
      clock = d.nextAttemptAt;
      await w.drain();
    }
    const [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'failed', attemptCount: MAX_ATTEMPTS, lastStatusCode: 503 });
    expect(r.received).toHaveLength(MAX_ATTEMPTS);
    const days = (clock.getTime() - started) / 86_400_000;
    expect(days).toBeGreaterThan(3);
    expect(days).toBeLessThan(3.5);
    const sub = await subscriptionRow(subscription.id);
    expect(sub?.enabled).toBe(false);
    expect(sub?.disabledReason).toBe('every attempt failed for 3 days; the last: HTTP 503');
  });

  it('connects to the address it checked, and refuses a host that now resolves to a private address', async () => {
    const f = await firm();
    const r = await receiver();
    const port = new URL(r.url).port;
    // A name no real DNS answers: a delivery can arrive only through the checked address.
    const url = `http://hooks.webhooks.invalid:${port}/hooks`;
    const loopback: Resolver = async () => [{ address: '127.0.0.1', family: 4 }];
    const { subscription, secret } = await f.subscribe({ url }, loopback);
    await f.emit('entry.posted', { n: 1 });
    await worker({ resolve: loopback }).drain();
    expect(r.received.map((q) => verifyDelivery(secret, q).data)).toEqual([{ n: 1 }]);
    expect(r.received[0]?.headers.host).toBe(`hooks.webhooks.invalid:${port}`);

    const rebound: Resolver = async () => [{ address: '10.0.0.7', family: 4 }];
    await f.emit('entry.posted', { n: 2 });
    await worker({ resolve: rebound }).drain();
    const [, second] = await deliveriesOf(subscription.id);
    expect(second).toMatchObject({ status: 'pending', lastStatusCode: null });
    expect(second?.lastError).toMatch(/WEBHOOK_URL_REFUSED|10\.0\.0\.7 is a private address/);
    expect(r.received).toHaveLength(1);
  });

  it('delivers again, later, what a worker claimed and then died with', async () => {
    const f = await firm();
    const r = await receiver();
    const { subscription, secret } = await f.subscribe({ url: r.url });
    await f.emit('entry.posted', { n: 1 });
    // Killed after claiming, before sending: the lease keeps others off until it runs out.
    await dispatchOutbox(db(), { now: clock, batchSize: 10 });
    expect(await claimDeliveries(db(), { now: clock, leaseMs: 65_000, limit: 10 })).toHaveLength(1);
    await worker().drain();
    expect(r.received).toHaveLength(0);
    advance(65_000);
    await worker().drain();
    expect(r.received.map((q) => verifyDelivery(secret, q).sequence)).toEqual([1]);
    expect((await deliveriesOf(subscription.id))[0]).toMatchObject({ status: 'succeeded', attemptCount: 2 });

    // Killed after sending, before recording: the receiver sees the same event id again.
    await f.emit('entry.posted', { n: 2 });
    const before = r.received.length;
    advance(1000);
    await dispatchOutbox(db(), { now: clock, batchSize: 10 });
    const [claimed] = await claimDeliveries(db(), { now: clock, leaseMs: 65_000, limit: 10 });
    await expect(
      attemptDelivery(db(), claimed as ClaimedDelivery, {
        policy,
        secretKeys,
        timeoutMs: 5000,
        now,
        random: () => 0.5,
        send: async (request) => {
          await sendWebhook(request);
          throw new Error('process killed');
        },
      }),
    ).rejects.toThrow('process killed');
    advance(65_000);
    await worker().drain();
    const latest = r.received.slice(before).map((q) => verifyDelivery(secret, q));
    expect(latest.map((e) => e.sequence)).toEqual([2, 2]);
    expect(latest[0]?.id).toBe(latest[1]?.id);
    const rows = await deliveriesOf(subscription.id);
    expect(rows.at(-1)).toMatchObject({ status: 'succeeded', attemptCount: 2 });
  });

  it('never lets two workers deliver the same attempt, and keeps each subscription in order', async () => {
    const f = await firm();
    const r1 = await receiver();
    const r2 = await receiver();
    const a = await f.subscribe({ url: r1.url });
    const b = await f.subscribe({ url: r2.url });
    for (let n = 1; n <= 12; n++) await f.emit('entry.posted', { n });
    await Promise.all([worker().drain(), worker().drain(), worker().drain()]);
    const seqA = r1.received.map((q) => verifyDelivery(a.secret, q).sequence);
    const seqB = r2.received.map((q) => verifyDelivery(b.secret, q).sequence);
    const expected = Array.from({ length: 12 }, (_, i) => i + 1);
    expect(seqA).toEqual(expected);
    expect(seqB).toEqual(expected);
  });

  it('signs with the old secret too for 24 hours after a rotation', async () => {
    const f = await firm();
    const r = await receiver();
    const { subscription, secret: old } = await f.subscribe({ url: r.url });
    const { secret: fresh, subscription: rotated } = await rotateSecret(db(), f.owner, subscription.id, {
      now,
      secretKeys,
    });
    expect(fresh).not.toBe(old);
    expect(rotated.previousSecretExpiresAt).toEqual(new Date(clock.getTime() + 24 * 3600 * 1000));
    await f.emit('entry.posted', { n: 1 });
    await worker().drain();
    expect(verifyDelivery(old, r.received[0] as ReceivedRequest).data).toEqual({ n: 1 });
    expect(verifyDelivery(fresh, r.received[0] as ReceivedRequest).data).toEqual({ n: 1 });
    expect(String(r.received[0]?.headers['webhook-signature']).split(' ')).toHaveLength(2);

    await db()
      .update(webhookSubscriptions)
      .set({ previousSecretExpiresAt: new Date(clock.getTime() - 1) })
      .where(eq(webhookSubscriptions.id, subscription.id));
    await f.emit('entry.posted', { n: 2 });
    await worker().drain();
    expect(verifyDelivery(fresh, r.received[1] as ReceivedRequest).data).toEqual({ n: 2 });
    expect(() => verifyDelivery(old, r.received[1] as ReceivedRequest)).toThrow();
  });

  it('runs in the background until stopped, and a new worker carries on after a restart', async () => {
    const f = await firm();
    const r = await receiver();
    const { secret } = await f.subscribe({ url: r.url });
    const first = createWebhookWorker({ db: db(), policy, secretKeys, timeoutMs: 5000, pollIntervalMs: 20 });
    first.start();
    await f.emit('entry.posted', { n: 1 });
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(1);
    await first.stop();
    await f.emit('entry.posted', { n: 2 });
    const second = createWebhookWorker({ db: db(), policy, secretKeys, timeoutMs: 5000, pollIntervalMs: 20 });
    workers.push(second);
    second.start();
    await expect.poll(() => r.received.length, { timeout: 10_000 }).toBe(2);
    expect(r.received.map((q) => verifyDelivery(secret, q).sequence)).toEqual([1, 2]);
  });
});
