/**
 * Webhook receiver faults: two subscriptions whose receiver is down, then answers 500, then hangs past the timeout,
 * then drops the connection, each for one round of the delivery worker while events keep coming, and a third whose
 * receiver stays down until its subscription is deleted. The worker's clock moves on between rounds so that every
 * retry is due. Once the receivers recover, each subscription has received every event at least once, signed, in
 * sequence order; the deleted one has received nothing.
 */
import { randomUUID } from 'node:crypto';
import { rowsOf } from '@firm/db';
import { createWebhookWorker, type Envelope, RETRY_DELAYS_SECONDS, type WebhookWorker } from '@firm/webhooks';
import { type ReceivedRequest, type Receiver, type Reply, startReceiver } from '@firm/webhooks/testing';
import { Webhook } from 'standardwebhooks';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestApp, type TestApp } from '../../apps/api/src/testing';

const EVENTS_PER_PHASE = 8;
const ROUNDS_PER_FAULT = 2;
const HOUR = 3_600_000;

let t: TestApp;
let receivers: Receiver[] = [];
// Real time at the start (receivers check the signature's timestamp), moved on by more than the longest backoff.
let clock = new Date();

beforeAll(async () => {
  t = await createTestApp({ config: { WEBHOOKS_ALLOW_INSECURE_LOCALHOST: true } });
  receivers = await Promise.all(['/all', '/entries', '/deleted'].map((p) => startReceiver(p)));
}, 120_000);
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
  await t?.close();
});

async function postEntries(n: number, tag: string): Promise<void> {
  const [debit, credit] = [t.account('6400'), t.account('2000')];
  for (let i = 0; i < n; i++) {
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/journal-entries',
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() },
      payload: {
        txnDate: '2026-06-01',
        memo: `${tag} ${i}`,
        lines: [
          { accountId: debit, postingType: 'debit', amount: 100 + i },
          { accountId: credit, postingType: 'credit', amount: 100 + i },
        ],
      },
    });
    expect(res.statusCode, res.body).toBe(201);
  }
}

async function subscribe(url: string, eventTypes: string[]) {
  const res = await t.app.inject({
    method: 'POST',
    url: '/api/v1/webhooks',
    headers: t.auth,
    payload: { url, eventTypes },
  });
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; secret: string };
}

describe('webhook receivers that fail', () => {
  it('delivers every event at least once, in order, after down, 500, hang and closed connections', async () => {
    const [all, entries, deleted] = receivers as [Receiver, Receiver, Receiver];
    const subAll = await subscribe(all.url, ['*']);
    const subEntries = await subscribe(entries.url, ['entry.posted']);
    const subDeleted = await subscribe(deleted.url, ['*']);
    await deleted.down();
    const worker: WebhookWorker = createWebhookWorker({
      db: t.database.db,
      policy: { allowInsecureLocalhost: true },
      secretKeys: t.app.webhookSecretKeys,
      timeoutMs: 300,
      now: () => clock,
      random: () => 0.5,
    });
    // Each round moves the clock just past the next retry of a delivery that has failed every round so far (the
    // most-failed one), so every failed delivery is due again without reaching the three-day disabling.
    let rounds = 0;
    const round = async () => {
      const delay = RETRY_DELAYS_SECONDS[Math.min(rounds, RETRY_DELAYS_SECONDS.length - 1)] as number;
      clock = new Date(clock.getTime() + delay * 1250);
      rounds++;
      return worker.runOnce();
    };

    const faults: Record<string, number> = {};
    const failWith = (name: string, reply: Reply) => (r: Receiver) => {
      r.reply = () => {
        faults[name] = (faults[name] ?? 0) + 1;
        return reply;
      };
    };
    const phases: [string, (r: Receiver) => Promise<void> | void][] = [
      ['down', (r) => r.down()],
      [
        '500',
        async (r) => {
          await r.up();
          failWith('500', { status: 500, body: 'receiver broken' })(r);
        },
      ],
      ['hang', failWith('hang', 'hang')],
      ['close', failWith('close', 'close')],
    ];
    let downRounds = 0;
    for (const [name, apply] of phases) {
      for (const r of [all, entries]) await apply(r);
      for (let i = 0; i < ROUNDS_PER_FAULT; i++) {
        await postEntries(EVENTS_PER_PHASE / ROUNDS_PER_FAULT, `webhook fault ${name} ${i}`);
        await round();
        if (name === 'down') downRounds++;
      }
    }
    // The third subscription goes while its deliveries wait; its receiver comes back only afterwards.
    const gone = await t.app.inject({ method: 'DELETE', url: `/api/v1/webhooks/${subDeleted.id}`, headers: t.auth });
    expect(gone.statusCode).toBe(204);
    await deleted.up();
    for (const r of [all, entries]) r.reply = () => ({ status: 204 });
    await postEntries(EVENTS_PER_PHASE, 'webhook fault after');

    const pending = async () =>
      rowsOf<{ n: number }>(
        await t.database.db.execute(sql`select count(*)::int as n from webhook_deliveries where status <> 'succeeded'`),
      )[0]?.n ?? 0;
    let recovery = 0;
    do {
      clock = new Date(clock.getTime() + 13 * HOUR);
      // A subscription's later events wait behind its pending one: rounds until none is left to do.
      await worker.drain();
      recovery++;
    } while ((await pending()) > 0 && recovery < 5);
    expect(await pending()).toBe(0);

    // Signed at the worker's clock, days ahead of the receiver's: the signature is checked, not its age.
    const signedBy = (secret: string, q: ReceivedRequest): Envelope => {
      const id = String(q.headers['webhook-id']);
      const at = new Date(Number(q.headers['webhook-timestamp']) * 1000);
      const expected = new Webhook(secret).sign(id, at, q.body);
      if (!String(q.headers['webhook-signature']).split(' ').includes(expected))
        throw new Error(`bad signature: ${id}`);
      return JSON.parse(q.body) as Envelope;
    };
    const check = (r: Receiver, secret: string, subscriptionId: string) => {
      const envelopes: Envelope[] = r.received.map((q) => signedBy(secret, q));
      const firstSeen: number[] = [];
      for (const e of envelopes) if (!firstSeen.includes(e.sequence)) firstSeen.push(e.sequence);
      return { envelopes, firstSeen, subscriptionId };
    };
    const sent = async (subscriptionId: string) =>
      rowsOf<{ n: number }>(
        await t.database.db.execute(
          sql`select count(*)::int as n from webhook_deliveries where subscription_id = ${subscriptionId}`,
        ),
      )[0]?.n ?? 0;
    const everything = check(all, subAll.secret, subAll.id);
    const onlyEntries = check(entries, subEntries.secret, subEntries.id);
    const expectedEntries = EVENTS_PER_PHASE * (phases.length + 1);
    process.stdout.write(
      `webhook faults: ${expectedEntries} entries posted; faults answered ${JSON.stringify({ ...faults, down: downRounds })}; ` +
        `${all.received.length} + ${entries.received.length} requests received for ${everything.firstSeen.length} + ` +
        `${onlyEntries.firstSeen.length} events; ${rounds} fault rounds, ${recovery} recovery; deleted subscription received ` +
        `${deleted.received.length}\n`,
    );
    for (const { firstSeen, envelopes, subscriptionId } of [everything, onlyEntries]) {
      const n = await sent(subscriptionId);
      expect(firstSeen).toEqual(Array.from({ length: n }, (_, i) => i + 1));
      expect(new Set(envelopes.map((e) => e.id)).size).toBe(n);
    }
    expect(onlyEntries.firstSeen).toHaveLength(expectedEntries);
    expect(onlyEntries.envelopes.every((e) => e.type === 'entry.posted')).toBe(true);
    expect(everything.firstSeen.length).toBeGreaterThanOrEqual(expectedEntries);
    expect(deleted.received).toEqual([]);
    expect(faults['500']).toBeGreaterThan(0);
    expect(faults.hang).toBeGreaterThan(0);
    expect(faults.close).toBeGreaterThan(0);
  });
});
