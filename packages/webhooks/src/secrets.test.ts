import { randomBytes } from 'node:crypto';
import { newId } from '@firm/core';
import { firms, organizations, outboxEvents, webhookDeliveries, webhookSubscriptions } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseSecretKeys, resealSigningSecrets, type SecretKeys } from './secrets';
import { createSubscription, rotateSecret } from './subscriptions';
import { type Receiver, startReceiver, verifyDelivery } from './testing';
import { createWebhookWorker } from './worker';

const key = () => randomBytes(32).toString('base64');
const OLD = parseSecretKeys(`old:${key()}`);
const oldKey = OLD.keys.get('old')?.toString('base64') as string;
const ROTATED = parseSecretKeys(`new:${key()},old:${oldKey}`);
const policy = { allowInsecureLocalhost: true };

let database: TestDatabase;
let receiver: Receiver;
const db = () => database.db;
beforeAll(async () => {
  database = await createTestDatabase();
  receiver = await startReceiver();
});
afterAll(async () => {
  await receiver.close();
  await database.close();
});

async function subscribed(secretKeys: SecretKeys) {
  const [f] = await db()
    .insert(firms)
    .values({ slug: `s-${newId()}`, name: 'Sealing firm' })
    .returning();
  const firmId = (f as { id: string }).id;
  const [org] = await db().insert(organizations).values({ firmId, name: 'Client' }).returning();
  const owner = { firmId, organizationIds: null };
  const created = await createSubscription(
    db(),
    owner,
    { url: receiver.url, eventTypes: ['*'] },
    { policy, secretKeys },
  );
  return { firmId, organizationId: (org as { id: string }).id, owner, ...created };
}

const stored = async (id: string) =>
  (await db().select().from(webhookSubscriptions).where(eq(webhookSubscriptions.id, id)))[0] as {
    secret: string;
    previousSecret: string | null;
  };

async function deliverOne(
  { firmId, organizationId }: { firmId: string; organizationId: string },
  secretKeys: SecretKeys,
) {
  const eventId = newId();
  await db()
    .insert(outboxEvents)
    .values({ id: eventId, firmId, organizationId, type: 'account.created', payload: { n: 1 } });
  const before = receiver.received.length;
  await createWebhookWorker({ db: db(), policy, secretKeys, timeoutMs: 5000 }).drain();
  return { eventId, requests: receiver.received.slice(before) };
}

describe('signing secrets at rest', () => {
  it('are stored sealed, never in clear, and still sign deliveries receivers verify', async () => {
    const sub = await subscribed(OLD);
    const { subscription, secret } = sub;
    const row = await stored(subscription.id);
    expect(row.secret).toMatch(/^sealed:v1:old:/);
    expect(row.secret).not.toContain(secret.slice('whsec_'.length));
    const { requests } = await deliverOne(sub, OLD);
    expect(requests).toHaveLength(1);
    expect(verifyDelivery(secret, requests[0] as (typeof requests)[0]).type).toBe('account.created');
  });

  it('written in clear before sealing are sealed by the first worker round, and keep signing', async () => {
    const sub = await subscribed(OLD);
    const { subscription } = sub;
    const legacy = `whsec_${randomBytes(32).toString('base64')}`;
    await db().update(webhookSubscriptions).set({ secret: legacy }).where(eq(webhookSubscriptions.id, subscription.id));
    const { requests } = await deliverOne(sub, OLD);
    expect((await stored(subscription.id)).secret).toMatch(/^sealed:v1:old:/);
    expect(verifyDelivery(legacy, requests[0] as (typeof requests)[0]).type).toBe('account.created');
  });

  it('move to a new key put first, including the secret a rotation keeps signing; then the old key can go', async () => {
    const sub = await subscribed(OLD);
    const { owner, subscription } = sub;
    const { secret: fresh } = await rotateSecret(db(), owner, subscription.id, { secretKeys: OLD });
    const result = await resealSigningSecrets(db(), ROTATED);
    expect(result.resealed).toBeGreaterThanOrEqual(1);
    const row = await stored(subscription.id);
    expect(row.secret).toMatch(/^sealed:v1:new:/);
    expect(row.previousSecret).toMatch(/^sealed:v1:new:/);
    const onlyNew = parseSecretKeys(`new:${ROTATED.keys.get('new')?.toString('base64')}`);
    const { requests } = await deliverOne(sub, onlyNew);
    expect(verifyDelivery(fresh, requests[0] as (typeof requests)[0]).type).toBe('account.created');
    // a second pass finds nothing left to do
    expect((await resealSigningSecrets(db(), ROTATED)).resealed).toBe(0);
  });

  it('copied onto another subscription do not open: the attempt fails unsent, and nothing is resealed', async () => {
    const a = await subscribed(OLD);
    const b = await subscribed(OLD);
    const copied = (await stored(a.subscription.id)).secret;
    await db()
      .update(webhookSubscriptions)
      .set({ secret: copied })
      .where(eq(webhookSubscriptions.id, b.subscription.id));
    const { requests } = await deliverOne(b, OLD);
    expect(requests).toHaveLength(0);
    const [delivery] = await db()
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.subscriptionId, b.subscription.id));
    expect(delivery?.status).toBe('pending');
    expect(delivery?.lastError).toContain('signing secret cannot be read');
    expect((await resealSigningSecrets(db(), ROTATED)).unreadable).toBeGreaterThanOrEqual(1);
    expect((await stored(b.subscription.id)).secret).toBe(copied);
  });

  it('cannot be stored in any other form', async () => {
    const { subscription } = await subscribed(OLD);
    await expect(
      db().update(webhookSubscriptions).set({ secret: 'plain' }).where(eq(webhookSubscriptions.id, subscription.id)),
    ).rejects.toThrow();
  });
});
