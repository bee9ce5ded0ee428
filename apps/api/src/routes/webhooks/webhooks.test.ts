import { webhookDeliveries, webhookSubscriptions } from '@firm/db';
import { createApiKey } from '@firm/identity';
import { count, eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

// The default configuration: https only, loopback refused.
let t: TestApp;
beforeAll(async () => {
  t = await createTestApp();
});
afterAll(() => t.close());

const PUBLIC_URL = 'https://93.184.215.14/hooks';

type Headers = Record<string, string>;
const call = (method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object, headers: Headers = t.auth) =>
  t.app.inject({ method, url: `/api/v1${url}`, headers, ...(payload ? { payload } : {}) });

const subscriptionCount = async () =>
  (await t.database.db.select({ n: count() }).from(webhookSubscriptions))[0]?.n ?? 0;

async function subscribe(body: object = {}, headers: Headers = t.auth) {
  const res = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes: ['*'], ...body }, headers);
  expect(res.statusCode, res.body).toBe(201);
  return res.json().data as { id: string; secret: string; organizationIds: string[] | null };
}

describe('webhook subscriptions', () => {
  it('publishes the event catalogue', async () => {
    const res = await call('GET', '/webhooks/event-types');
    expect(res.statusCode).toBe(200);
    const types = res.json().data as { type: string; subscribable: boolean }[];
    for (const type of [
      'entry.posted',
      'entry.voided',
      'account.created',
      'account.updated',
      'account.deleted',
      'books.closed',
      'books.reopened',
      'invoice.created',
      'bill.voided',
      'customer_payment.created',
      'bill_payment.created',
    ]) {
      expect(
        types.find((e) => e.type === type),
        type,
      ).toMatchObject({ subscribable: true });
    }
    expect(types.find((e) => e.type === 'webhook.test')).toMatchObject({ subscribable: false });
  });

  it('creates, reads, lists, changes, disables, re-enables and deletes a subscription', async () => {
    const created = await call('POST', '/webhooks', {
      url: PUBLIC_URL,
      eventTypes: ['entry.posted', 'entry.voided', 'entry.posted'],
      description: 'Books sync',
    });
    expect(created.statusCode).toBe(201);
    const sub = created.json().data;
    expect(sub).toMatchObject({
      url: PUBLIC_URL,
      eventTypes: ['entry.posted', 'entry.voided'],
      organizationIds: null,
      description: 'Books sync',
      enabled: true,
      disabledReason: null,
      previousSecretExpiresAt: null,
    });
    expect(sub.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);

    const read = await call('GET', `/webhooks/${sub.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json().data).not.toHaveProperty('secret');
    const list = await call('GET', '/webhooks?limit=1000');
    expect(list.json().data.map((s: { id: string }) => s.id)).toContain(sub.id);
    expect(JSON.stringify(list.json())).not.toContain(sub.secret);

    const patched = await call('PATCH', `/webhooks/${sub.id}`, { eventTypes: ['*'], description: null });
    expect(patched.statusCode).toBe(200);
    expect(patched.json().data).toMatchObject({ eventTypes: ['*'], description: null });

    const disabled = await call('PATCH', `/webhooks/${sub.id}`, { enabled: false });
    expect(disabled.json().data).toMatchObject({ enabled: false, disabledReason: 'disabled by its owner' });
    expect(disabled.json().data.disabledAt).toEqual(expect.any(String));
    const test = await call('POST', `/webhooks/${sub.id}/test`);
    expect(test.statusCode).toBe(409);
    expect(test.json().error.code).toBe('INVALID_STATE');
    const enabled = await call('PATCH', `/webhooks/${sub.id}`, { enabled: true });
    expect(enabled.json().data).toMatchObject({ enabled: true, disabledReason: null, disabledAt: null });

    expect((await call('DELETE', `/webhooks/${sub.id}`)).statusCode).toBe(204);
    const gone = await call('GET', `/webhooks/${sub.id}`);
    expect(gone.statusCode).toBe(404);
    expect(gone.json().error).toMatchObject({ code: 'WEBHOOK_NOT_FOUND', retryable: false });
  });

  it('refuses unsafe URLs with 422 WEBHOOK_URL_REFUSED and writes nothing', async () => {
    const before = await subscriptionCount();
    for (const url of [
      'http://93.184.215.14/hooks',
      'https://user:secret@93.184.215.14/hooks',
      'https://127.0.0.1/hooks',
      'https://localhost/hooks',
      'https://10.0.0.8/hooks',
      'https://169.254.169.254/latest/meta-data/',
      'https://[::1]/hooks',
      'https://[::ffff:127.0.0.1]/hooks',
      'https://2130706433/hooks',
      'https://0177.0.0.1/hooks',
      'https://100.64.0.1/hooks',
      'https://224.0.0.251/hooks',
      'not a url',
    ]) {
      const res = await call('POST', '/webhooks', { url, eventTypes: ['*'] });
      expect(res.statusCode, url).toBe(422);
      expect(res.json().error).toMatchObject({ code: 'WEBHOOK_URL_REFUSED', retryable: false });
      expect(res.json().error.details[0]).toMatchObject({ field: 'url' });
    }
    const sub = await subscribe();
    const patched = await call('PATCH', `/webhooks/${sub.id}`, { url: 'https://192.168.0.1/' });
    expect(patched.statusCode).toBe(422);
    expect((await call('GET', `/webhooks/${sub.id}`)).json().data.url).toBe(PUBLIC_URL);
    expect(await subscriptionCount()).toBe(before + 1);
  });

  it('refuses an unknown event type, or the test ping, with 400', async () => {
    const before = await subscriptionCount();
    for (const eventTypes of [['entry.deleted'], ['webhook.test'], [], ['entry.posted', 'nope']]) {
      const res = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes });
      expect(res.statusCode, JSON.stringify(eventTypes)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
    const extra = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes: ['*'], secret: 'mine' });
    expect(extra.statusCode).toBe(400);
    expect(await subscriptionCount()).toBe(before);
  });

  it('hides subscriptions of another firm (404) and refuses its organizations', async () => {
    const other = await createOtherFirm(t.database.db, 'webhooks-other');
    const theirs = await subscribe({}, { authorization: other.authorization });
    const mine = await subscribe();
    for (const [method, url] of [
      ['GET', `/webhooks/${theirs.id}`],
      ['PATCH', `/webhooks/${theirs.id}`],
      ['DELETE', `/webhooks/${theirs.id}`],
      ['POST', `/webhooks/${theirs.id}/rotate-secret`],
      ['POST', `/webhooks/${theirs.id}/test`],
      ['GET', `/webhooks/${theirs.id}/deliveries`],
      ['GET', `/webhooks/${theirs.id}/deliveries/${theirs.id}`],
      ['POST', `/webhooks/${theirs.id}/deliveries/${theirs.id}/redeliver`],
    ] as const) {
      const res = await call(method, url, method === 'PATCH' ? { description: 'x' } : undefined);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error.code).toBe('WEBHOOK_NOT_FOUND');
    }
    const list = await call('GET', '/webhooks?limit=1000');
    const ids = list.json().data.map((s: { id: string }) => s.id);
    expect(ids).toContain(mine.id);
    expect(ids).not.toContain(theirs.id);

    const before = await subscriptionCount();
    const foreign = await call('POST', '/webhooks', {
      url: PUBLIC_URL,
      eventTypes: ['*'],
      organizationIds: [other.orgId],
    });
    expect(foreign.statusCode).toBe(404);
    expect(foreign.json().error.code).toBe('ORGANIZATION_NOT_FOUND');
    expect(await subscriptionCount()).toBe(before);
  });

  it('needs webhooks:read to read and webhooks:write to change; a narrowed key sees its organizations only', async () => {
    expect((await t.app.inject({ method: 'GET', url: '/api/v1/webhooks' })).statusCode).toBe(401);
    const { key } = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['webhooks:read'],
    });
    const readOnly = { authorization: `Bearer ${key}` };
    expect((await call('GET', '/webhooks', undefined, readOnly)).statusCode).toBe(200);
    const refused = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes: ['*'] }, readOnly);
    expect(refused.statusCode).toBe(403);
    expect(refused.json().error.code).toBe('INSUFFICIENT_SCOPE');

    const [first, second] = t.demo.organizations.map((o) => o.id) as [string, string];
    const narrowed = await createApiKey(t.database.db, {
      firmId: t.demo.firmId,
      scopes: ['webhooks:read', 'webhooks:write'],
      organizationIds: [first],
    });
    const narrow = { authorization: `Bearer ${narrowed.key}` };
    const own = await subscribe({}, narrow);
    expect(own.organizationIds).toEqual([first]);
    const wide = await subscribe();
    const ids = (await call('GET', '/webhooks?limit=1000', undefined, narrow))
      .json()
      .data.map((s: { id: string }) => s.id);
    expect(ids).toContain(own.id);
    expect(ids).not.toContain(wide.id);
    expect((await call('GET', `/webhooks/${wide.id}`, undefined, narrow)).statusCode).toBe(404);
    const beyond = await call(
      'POST',
      '/webhooks',
      { url: PUBLIC_URL, eventTypes: ['*'], organizationIds: [second] },
      narrow,
    );
    expect(beyond.statusCode).toBe(404);
  });

  it('rotates the secret, keeping the old one signing for 24 hours', async () => {
    const sub = await subscribe();
    const res = await call('POST', `/webhooks/${sub.id}/rotate-secret`);
    expect(res.statusCode).toBe(200);
    const rotated = res.json().data;
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(sub.secret);
    const hours = (Date.parse(rotated.previousSecretExpiresAt) - Date.now()) / 3_600_000;
    expect(hours).toBeGreaterThan(23.9);
    expect(hours).toBeLessThanOrEqual(24);
  });

  it('queues a test event, lists deliveries with filters, and redelivers only finished deliveries', async () => {
    const sub = await subscribe();
    const test = await call('POST', `/webhooks/${sub.id}/test`);
    expect(test.statusCode).toBe(202);
    const delivery = test.json().data;
    expect(delivery).toMatchObject({
      subscriptionId: sub.id,
      eventType: 'webhook.test',
      organizationId: null,
      sequence: 1,
      status: 'pending',
      attemptCount: 0,
    });

    const all = await call('GET', `/webhooks/${sub.id}/deliveries`);
    expect(all.statusCode).toBe(200);
    expect(all.json()).toMatchObject({ data: [{ id: delivery.id }], nextCursor: null });
    for (const [query, n] of [
      ['status=pending', 1],
      ['status=succeeded', 0],
      ['eventType=webhook.test', 1],
      ['eventType=entry.posted', 0],
      [`since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, 0],
      [`until=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`, 1],
    ] as const) {
      const res = await call('GET', `/webhooks/${sub.id}/deliveries?${query}`);
      expect(res.json().data, query).toHaveLength(n);
    }
    expect((await call('GET', `/webhooks/${sub.id}/deliveries?status=lost`)).statusCode).toBe(400);

    const pending = await call('POST', `/webhooks/${sub.id}/deliveries/${delivery.id}/redeliver`);
    expect(pending.statusCode).toBe(409);
    expect(pending.json().error.code).toBe('INVALID_STATE');
    const detail = await call('GET', `/webhooks/${sub.id}/deliveries/${delivery.id}`);
    expect(detail.json().data).toMatchObject({ id: delivery.id, attempts: [] });
    const unknown = await call('GET', `/webhooks/${sub.id}/deliveries/${sub.id}`);
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().error.code).toBe('WEBHOOK_DELIVERY_NOT_FOUND');
    const missing = await call('POST', `/webhooks/${sub.id}/deliveries/${sub.id}/redeliver`);
    expect(missing.statusCode).toBe(404);
    expect(missing.json().error.code).toBe('WEBHOOK_DELIVERY_NOT_FOUND');

    await t.database.db
      .update(webhookDeliveries)
      .set({ status: 'failed', nextAttemptAt: null, completedAt: new Date(), attemptCount: 14 })
      .where(eq(webhookDeliveries.id, delivery.id));
    const again = await call('POST', `/webhooks/${sub.id}/deliveries/${delivery.id}/redeliver`);
    expect(again.statusCode).toBe(202);
    expect(again.json().data).toMatchObject({ id: delivery.id, status: 'pending', attemptCount: 0, sequence: 1 });
  });

  it('documents every webhook route with its error responses in the OpenAPI document', async () => {
    const doc = (await t.app.inject({ method: 'GET', url: '/api/openapi.json' })).json();
    const post = doc.paths['/api/v1/webhooks'].post;
    expect(Object.keys(post.responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '404', '422']));
    expect(JSON.stringify(post.requestBody)).toContain('invoice.created');
    for (const path of [
      '/api/v1/webhooks/event-types',
      '/api/v1/webhooks/{id}',
      '/api/v1/webhooks/{id}/rotate-secret',
      '/api/v1/webhooks/{id}/test',
      '/api/v1/webhooks/{id}/deliveries',
      '/api/v1/webhooks/{id}/deliveries/{deliveryId}',
      '/api/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver',
    ]) {
      expect(doc.paths[path], path).toBeDefined();
    }
    expect(JSON.stringify(doc)).toContain('WEBHOOK_URL_REFUSED');
  });
});
