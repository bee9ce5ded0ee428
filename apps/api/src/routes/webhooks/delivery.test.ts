import { randomUUID } from 'node:crypto';
import { accounts, outboxEvents } from '@firm/db';
import { claimDeliveries, createWebhookWorker, type Envelope, type WebhookWorker } from '@firm/webhooks';
import { type Receiver, startReceiver, verifyDelivery } from '@firm/webhooks/testing';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../testing';

// Receivers listen on loopback over plain http, which only this setting allows.
let t: TestApp;
let a: Receiver;
let b: Receiver;
beforeAll(async () => {
  t = await createTestApp({ config: { WEBHOOKS_ALLOW_INSECURE_LOCALHOST: true } });
  a = await startReceiver('/a');
  b = await startReceiver('/b');
});
afterAll(async () => {
  await a.close();
  await b.close();
  await t.close();
});

// Real time at the start, so receivers' five-minute timestamp check holds; moved forward to make retries due.
let clock = new Date();
const worker = (): WebhookWorker =>
  createWebhookWorker({
    db: t.database.db,
    policy: { allowInsecureLocalhost: true },
    secretKeys: t.app.webhookSecretKeys,
    timeoutMs: 5000,
    now: () => clock,
    random: () => 0.5,
  });

async function accountId(code: string): Promise<string> {
  const rows = await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId));
  return rows.find((r) => r.code === code)?.id as string;
}

async function postEntry(cents: number, key: string = randomUUID()): Promise<string> {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/journal-entries',
    headers: { ...t.orgHeaders, 'idempotency-key': key },
    payload: {
      txnDate: '2026-06-01',
      memo: `accrual ${cents}`,
      lines: [
        { accountId: await accountId('6400'), postingType: 'debit', amount: cents },
        { accountId: await accountId('2000'), postingType: 'credit', amount: cents },
      ],
    },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().journalEntryId;
}

async function subscribe(url: string, body: object) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/webhooks',
    headers: t.auth,
    payload: { url, ...body },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; secret: string };
}

/** Every request verified with the standardwebhooks package; throws on any bad signature. */
const verified = (r: Receiver, secret: string): Envelope[] => r.received.map((q) => verifyDelivery(secret, q));

describe('webhook delivery end to end', () => {
  it('delivers each committed event once per subscription, signed and in order, across an outage and a worker restart', async () => {
    const entries = await subscribe(a.url, { eventTypes: ['entry.posted', 'entry.voided'] });
    const everything = await subscribe(b.url, { eventTypes: ['*'], organizationIds: [t.orgId] });

    const key = randomUUID();
    const first = await postEntry(1000, key);
    // A replayed request commits nothing, so it sends nothing.
    expect(await postEntry(1000, key)).toBe(first);
    const second = await postEntry(2000);
    const voided = await t.app.inject({
      method: 'POST',
      url: `/api/v1/entries/${first}/void`,
      headers: t.orgHeaders,
      payload: { reason: 'duplicate' },
    });
    expect(voided.statusCode, voided.body).toBe(200);
    // A change that fails commits nothing, so it sends nothing either.
    const unbalanced = await t.app.inject({
      method: 'POST',
      url: '/api/v1/journal-entries',
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() },
      payload: {
        txnDate: '2026-06-01',
        lines: [
          { accountId: await accountId('6400'), postingType: 'debit', amount: 5 },
          { accountId: await accountId('2000'), postingType: 'credit', amount: 4 },
        ],
      },
    });
    expect(unbalanced.statusCode).toBe(422);

    const w1 = worker();
    await w1.drain();
    expect(verified(a, entries.secret).map((e) => [e.sequence, e.type, (e.data as { id: string }).id])).toEqual([
      [1, 'entry.posted', first],
      [2, 'entry.posted', second],
      [3, 'entry.voided', first],
    ]);
    expect(verified(a, entries.secret)[2]?.data).toMatchObject({ id: first, status: 'void', voidReason: 'duplicate' });

    // The receiver goes down; events keep coming.
    await a.down();
    const third = await postEntry(3000);
    const fourth = await postEntry(4000);
    await w1.drain();
    expect(a.received).toHaveLength(3);
    await w1.stop();

    // The receiver comes back; a worker claims the retry and dies before sending it.
    await a.up();
    clock = new Date(clock.getTime() + 30_000);
    expect(await claimDeliveries(t.database.db, { now: clock, leaseMs: 65_000, limit: 50 })).toHaveLength(1);

    // A new worker process takes over: first the dead worker's lease must run out.
    const w2 = worker();
    await w2.drain();
    expect(a.received).toHaveLength(3);
    clock = new Date(clock.getTime() + 65_000);
    await w2.drain();
    await w2.stop();

    const toA = verified(a, entries.secret);
    expect(toA.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(toA.slice(3).map((e) => (e.data as { id: string }).id)).toEqual([third, fourth]);
    expect(new Set(toA.map((e) => e.id)).size).toBe(5);

    const toB = verified(b, everything.secret);
    expect(toB.map((e) => e.sequence)).toEqual([1, 2, 3, 4, 5]);
    expect(toB.map((e) => e.organizationId)).toEqual(Array(5).fill(t.orgId));

    // Every event the outbox holds reached each subscription exactly once, but the demo's company.created, which went
    // out before the subscriptions were made.
    const outbox = (
      await t.database.db.select().from(outboxEvents).where(eq(outboxEvents.organizationId, t.orgId))
    ).filter((e) => e.type !== 'company.created');
    const entryEvents = outbox.filter((e) => e.type.startsWith('entry.')).map((e) => e.id);
    expect(toA.map((e) => e.id).sort()).toEqual([...entryEvents].sort());
    expect(toB.map((e) => e.id).sort()).toEqual(outbox.map((e) => e.id).sort());

    // The delivery log tells the story of the outage.
    const log = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhooks/${entries.id}/deliveries`,
      headers: t.auth,
    });
    const rows = log.json().data as { id: string; sequence: number; status: string; attemptCount: number }[];
    expect(rows.map((d) => [d.sequence, d.status, d.attemptCount])).toEqual([
      [5, 'succeeded', 1],
      [4, 'succeeded', 3],
      [3, 'succeeded', 1],
      [2, 'succeeded', 1],
      [1, 'succeeded', 1],
    ]);

    // Attempt 2 was the dead worker's: made, never recorded.
    const detail = await t.app.inject({
      method: 'GET',
      url: `/api/v1/webhooks/${entries.id}/deliveries/${rows[1]?.id}`,
      headers: t.auth,
    });
    expect(detail.statusCode).toBe(200);
    const attempts = detail.json().data.attempts as { attemptNumber: number; outcome: string; error: string | null }[];
    expect(attempts.map((x) => [x.attemptNumber, x.outcome])).toEqual([
      [1, 'retrying'],
      [3, 'succeeded'],
    ]);
    expect(attempts[0]?.error).toMatch(/ECONNREFUSED/);

    // A redelivery and the test ping arrive signed, after everything else.
    const redeliver = await t.app.inject({
      method: 'POST',
      url: `/api/v1/webhooks/${entries.id}/deliveries/${rows[4]?.id}/redeliver`,
      headers: t.auth,
    });
    expect(redeliver.statusCode).toBe(202);
    const ping = await t.app.inject({ method: 'POST', url: `/api/v1/webhooks/${entries.id}/test`, headers: t.auth });
    expect(ping.statusCode).toBe(202);
    await worker().drain();
    const tail = verified(a, entries.secret).slice(5);
    expect(tail.map((e) => [e.sequence, e.type])).toEqual([
      [1, 'entry.posted'],
      [6, 'webhook.test'],
    ]);
    expect(tail[0]?.id).toBe(toA[0]?.id);
    expect(tail[1]?.data).toEqual({ subscriptionId: entries.id, message: 'This is a test event.' });
  });
});
