import { randomUUID } from 'node:crypto';
import { accounts, webhookSubscriptions } from '@firm/db';
import { createWebhookWorker } from '@firm/webhooks';
import { type Receiver, startReceiver } from '@firm/webhooks/testing';
import { count, eq } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOtherFirm, createTestApp, type TestApp } from '../../testing';

type Headers = Record<string, string>;
type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';
const PUBLIC_URL = 'https://93.184.215.14/hooks';

const caller =
  (t: TestApp) =>
  (method: Method, url: string, payload?: unknown, headers: Headers = t.auth) =>
    t.app.inject({
      method,
      url: `/api/v1${url}`,
      headers,
      ...(payload === undefined ? {} : { payload: payload as object }),
    });

const subscriptionCount = async (t: TestApp) =>
  (await t.database.db.select({ n: count() }).from(webhookSubscriptions))[0]?.n ?? 0;

describe('webhook subscriptions against hostile input (https only)', () => {
  let t: TestApp;
  let call: ReturnType<typeof caller>;
  beforeAll(async () => {
    t = await createTestApp();
    call = caller(t);
  });
  afterAll(() => t.close());

  const refusedUrls = [
    'https://user:pass@93.184.215.14/hooks',
    'https://user@93.184.215.14/hooks',
    'http://93.184.215.14/hooks',
    'http://127.0.0.1:8080/hooks',
    'https://2130706433/hooks',
    'https://0177.0.0.1/hooks',
    'https://0x7f.0.0.1/hooks',
    'https://0x7f000001/hooks',
    'https://127.1/hooks',
    'https://127.0.0.1./hooks',
    'https://[::1]/hooks',
    'https://[::ffff:127.0.0.1]/hooks',
    'https://[::ffff:7f00:1]/hooks',
    'https://[::127.0.0.1]/hooks',
    'https://[64:ff9b::7f00:1]/hooks',
    'https://[2002:7f00:1::]/hooks',
    'https://169.254.169.254/latest/meta-data/',
    'https://[::ffff:169.254.169.254]/latest/meta-data/',
    'https://[fd00::1]/hooks',
    'https://[fd00:ec2::254]/hooks',
    'https://[fe80::1]/hooks',
    'https://100.64.0.1/hooks',
    'https://0.0.0.0/hooks',
    'https://[::]/hooks',
    'https://10.0.0.1/hooks',
    'https://192.168.1.1/hooks',
    'https://172.16.0.1/hooks',
    'https://239.255.255.250/hooks',
    'ftp://93.184.215.14/hooks',
    '//93.184.215.14/hooks',
  ];

  it('refuses every unsafe URL at creation with 422 WEBHOOK_URL_REFUSED, writing nothing', async () => {
    const before = await subscriptionCount(t);
    for (const url of refusedUrls) {
      const res = await call('POST', '/webhooks', { url, eventTypes: ['entry.posted'] });
      expect(res.statusCode, url).toBe(422);
      expect(res.json().error, url).toMatchObject({ code: 'WEBHOOK_URL_REFUSED', retryable: false });
      expect(res.json().error.details[0], url).toMatchObject({ field: 'url' });
    }
    expect(await subscriptionCount(t)).toBe(before);
  });

  it('refuses every unsafe URL on change too, keeping the stored URL', async () => {
    const created = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes: ['*'] });
    expect(created.statusCode, created.body).toBe(201);
    const id = created.json().data.id as string;
    for (const url of refusedUrls) {
      const res = await call('PATCH', `/webhooks/${id}`, { url });
      expect(res.statusCode, url).toBe(422);
      expect(res.json().error.code, url).toBe('WEBHOOK_URL_REFUSED');
    }
    expect((await call('GET', `/webhooks/${id}`)).json().data.url).toBe(PUBLIC_URL);
  });

  it('refuses unknown event types and malformed lists with 400', async () => {
    const before = await subscriptionCount(t);
    for (const eventTypes of [
      ['entry.deleted'],
      ['ENTRY.POSTED'],
      ['entry.posted '],
      [''],
      ['__proto__'],
      ['constructor'],
      ['toString'],
      ['*', 'nope'],
      ['webhook.test'],
      [],
      'entry.posted',
      '*',
      [1],
      null,
    ]) {
      const res = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes });
      expect(res.statusCode, JSON.stringify(eventTypes)).toBe(400);
      expect(res.json().error.code).toBe('VALIDATION_ERROR');
    }
    expect(await subscriptionCount(t)).toBe(before);
    const created = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes: ['entry.posted'] });
    const id = created.json().data.id as string;
    const patched = await call('PATCH', `/webhooks/${id}`, { eventTypes: ['entry.exploded'] });
    expect(patched.statusCode).toBe(400);
    expect((await call('PATCH', `/webhooks/${id}`, {})).statusCode).toBe(400);
    expect((await call('GET', `/webhooks/${id}/deliveries?eventType=entry.exploded`)).statusCode).toBe(400);
    expect((await call('GET', `/webhooks/${id}`)).json().data.eventTypes).toEqual(['entry.posted']);
  });

  it('answers 404 for another firm’s subscriptions and deliveries, whichever id is mixed in', async () => {
    const other = await createOtherFirm(t.database.db, 'webhooks-hostile');
    const theirHeaders = { authorization: other.authorization };
    const theirs = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes: ['*'] }, theirHeaders);
    expect(theirs.statusCode, theirs.body).toBe(201);
    const theirId = theirs.json().data.id as string;
    const theirPing = await call('POST', `/webhooks/${theirId}/test`, undefined, theirHeaders);
    expect(theirPing.statusCode).toBe(202);
    const theirDelivery = theirPing.json().data.id as string;

    const mine = await call('POST', '/webhooks', { url: PUBLIC_URL, eventTypes: ['*'] });
    const myId = mine.json().data.id as string;

    for (const [method, url, code] of [
      ['GET', `/webhooks/${theirId}`, 'WEBHOOK_NOT_FOUND'],
      ['GET', `/webhooks/${theirId}/deliveries`, 'WEBHOOK_NOT_FOUND'],
      ['GET', `/webhooks/${theirId}/deliveries/${theirDelivery}`, 'WEBHOOK_NOT_FOUND'],
      ['POST', `/webhooks/${theirId}/deliveries/${theirDelivery}/redeliver`, 'WEBHOOK_NOT_FOUND'],
      ['POST', `/webhooks/${theirId}/rotate-secret`, 'WEBHOOK_NOT_FOUND'],
      ['DELETE', `/webhooks/${theirId}`, 'WEBHOOK_NOT_FOUND'],
      // Their delivery under my subscription is no delivery of mine.
      ['GET', `/webhooks/${myId}/deliveries/${theirDelivery}`, 'WEBHOOK_DELIVERY_NOT_FOUND'],
      ['POST', `/webhooks/${myId}/deliveries/${theirDelivery}/redeliver`, 'WEBHOOK_DELIVERY_NOT_FOUND'],
    ] as const) {
      const res = await call(method, url);
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json().error.code, `${method} ${url}`).toBe(code);
    }
    const patch = await call('PATCH', `/webhooks/${theirId}`, { url: 'https://93.184.215.15/stolen' });
    expect(patch.statusCode).toBe(404);
    // Still theirs, unchanged.
    const still = await call('GET', `/webhooks/${theirId}`, undefined, theirHeaders);
    expect(still.json().data.url).toBe(PUBLIC_URL);
    const theirLog = await call('GET', `/webhooks/${theirId}/deliveries`, undefined, theirHeaders);
    expect(theirLog.json().data.map((d: { id: string }) => d.id)).toEqual([theirDelivery]);
    // Ids that are not ids are refused before any lookup.
    expect((await call('GET', '/webhooks/not-a-uuid')).statusCode).toBe(400);
    expect((await call('GET', `/webhooks/${myId}/deliveries/1%20or%201=1`)).statusCode).toBe(400);
  });
});

describe('webhook delivery against hostile receivers, end to end', () => {
  let t: TestApp;
  let call: ReturnType<typeof caller>;
  const receivers: Receiver[] = [];
  beforeAll(async () => {
    t = await createTestApp({ config: { WEBHOOKS_ALLOW_INSECURE_LOCALHOST: true } });
    call = caller(t);
  });
  afterAll(async () => {
    await Promise.all(receivers.map((r) => r.close()));
    await t.close();
  });

  const receiver = async () => {
    const r = await startReceiver();
    receivers.push(r);
    return r;
  };
  let clock = new Date();
  const drain = () =>
    createWebhookWorker({
      db: t.database.db,
      policy: { allowInsecureLocalhost: true },
      secretKeys: t.app.webhookSecretKeys,
      timeoutMs: 2000,
      now: () => clock,
      random: () => 0.5,
    }).drain();

  async function postEntry(cents: number): Promise<string> {
    const rows = await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId));
    const id = (code: string) => rows.find((r) => r.code === code)?.id as string;
    const res = await t.app.inject({
      method: 'POST',
      url: '/api/v1/journal-entries',
      headers: { ...t.orgHeaders, 'idempotency-key': randomUUID() },
      payload: {
        txnDate: '2026-06-01',
        lines: [
          { accountId: id('6400'), postingType: 'debit', amount: cents },
          { accountId: id('2000'), postingType: 'credit', amount: cents },
        ],
      },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json().journalEntryId;
  }

  it('still refuses encoded loopback literals over http when insecure localhost is allowed', async () => {
    const r = await receiver();
    const port = new URL(r.url).port;
    for (const host of ['2130706433', '0177.0.0.1', '0x7f.0.0.1', '127.1', '10.0.0.1', '169.254.169.254']) {
      const res = await call('POST', '/webhooks', { url: `http://${host}:${port}/hooks`, eventTypes: ['*'] });
      expect(res.statusCode, host).toBe(422);
      expect(res.json().error.code).toBe('WEBHOOK_URL_REFUSED');
    }
    const credentials = await call('POST', '/webhooks', {
      url: `http://u:p@127.0.0.1:${port}/hooks`,
      eventTypes: ['*'],
    });
    expect(credentials.statusCode).toBe(422);
  });

  it('disables a subscription on 410 Gone, tells its owner why, and sends it nothing more until re-enabled', async () => {
    const r = await receiver();
    r.reply = () => ({ status: 410, body: 'unsubscribed' });
    const created = await call('POST', '/webhooks', { url: r.url, eventTypes: ['entry.posted'] });
    expect(created.statusCode, created.body).toBe(201);
    const { id } = created.json().data as { id: string };
    clock = new Date();
    await postEntry(111);
    await drain();
    const sub = (await call('GET', `/webhooks/${id}`)).json().data;
    expect(sub).toMatchObject({ enabled: false, disabledReason: 'the endpoint answered 410 Gone' });
    expect(sub.disabledAt).toEqual(expect.any(String));
    const log = (await call('GET', `/webhooks/${id}/deliveries?status=failed`)).json().data;
    expect(log).toMatchObject([{ status: 'failed', lastStatusCode: 410, lastResponseBody: 'unsubscribed' }]);

    await postEntry(222);
    await drain();
    expect(r.received).toHaveLength(1);
    const ping = await call('POST', `/webhooks/${id}/test`);
    expect(ping.statusCode).toBe(409);

    r.reply = () => ({ status: 200 });
    const enabled = await call('PATCH', `/webhooks/${id}`, { enabled: true });
    expect(enabled.json().data).toMatchObject({ enabled: true, disabledReason: null });
    await postEntry(333);
    await drain();
    expect(r.received).toHaveLength(2);
  });

  it('does not follow a redirect to another receiver, and records the 3xx', async () => {
    const target = await receiver();
    const r = await receiver();
    r.reply = () => ({ status: 307, headers: { location: target.url } });
    const created = await call('POST', '/webhooks', { url: r.url, eventTypes: ['entry.posted'] });
    const { id } = created.json().data as { id: string };
    clock = new Date();
    await postEntry(444);
    await drain();
    expect(target.received).toHaveLength(0);
    expect(r.received).toHaveLength(1);
    const [delivery] = (await call('GET', `/webhooks/${id}/deliveries`)).json().data;
    expect(delivery).toMatchObject({ status: 'pending', lastStatusCode: 307, attemptCount: 1 });
  });

  it('sends as data the resource exactly as the API returns it', async () => {
    const r = await receiver();
    const created = await call('POST', '/webhooks', { url: r.url, eventTypes: ['entry.posted', 'entry.voided'] });
    const { secret } = created.json().data as { secret: string };
    clock = new Date();
    const entryId = await postEntry(777);
    const posted = await t.app.inject({ method: 'GET', url: `/api/v1/entries/${entryId}`, headers: t.orgHeaders });
    const voided = await t.app.inject({
      method: 'POST',
      url: `/api/v1/entries/${entryId}/void`,
      headers: t.orgHeaders,
      payload: { reason: 'typo' },
    });
    expect(voided.statusCode, voided.body).toBe(200);
    const afterVoid = await t.app.inject({ method: 'GET', url: `/api/v1/entries/${entryId}`, headers: t.orgHeaders });
    await drain();
    const envelopes = r.received.map((q) => {
      const headers = {
        'webhook-id': String(q.headers['webhook-id']),
        'webhook-timestamp': String(q.headers['webhook-timestamp']),
        'webhook-signature': String(q.headers['webhook-signature']),
      };
      return new Webhook(secret).verify(q.body, headers) as { type: string; organizationId: string; data: unknown };
    });
    expect(envelopes.map((e) => e.type)).toEqual(['entry.posted', 'entry.voided']);
    expect(envelopes[0]?.organizationId).toBe(t.orgId);
    expect(envelopes[0]?.data).toEqual(posted.json().data);
    expect(envelopes[1]?.data).toEqual(afterVoid.json().data);
  });

  it('sends a subscriber of every event only types of the published catalogue, and can list what it sent', async () => {
    const r = await receiver();
    const created = await call('POST', '/webhooks', { url: r.url, eventTypes: ['*'] });
    const { id, secret } = created.json().data as { id: string; secret: string };
    clock = new Date();
    const rows = await t.database.db.select().from(accounts).where(eq(accounts.organizationId, t.orgId));
    const account = (code: string) => rows.find((a) => a.code === code)?.id as string;
    const draft = await t.app.inject({
      method: 'POST',
      url: '/api/v1/entries',
      headers: t.orgHeaders,
      payload: {
        date: '2026-06-02',
        lines: [
          { accountId: account('6400'), debitCents: 900 },
          { accountId: account('2000'), creditCents: 900 },
        ],
      },
    });
    expect(draft.statusCode, draft.body).toBe(201);
    const books = await t.app.inject({
      method: 'PATCH',
      url: '/api/v1/books',
      headers: t.orgHeaders,
      payload: { fiscalYearStartMonth: 4 },
    });
    expect(books.statusCode, books.body).toBe(200);
    await drain();

    const catalogue = (await call('GET', '/webhooks/event-types')).json().data as { type: string }[];
    const published = new Set(catalogue.map((e) => e.type));
    const sent = r.received.map((q) => {
      const headers = {
        'webhook-id': String(q.headers['webhook-id']),
        'webhook-timestamp': String(q.headers['webhook-timestamp']),
        'webhook-signature': String(q.headers['webhook-signature']),
      };
      return (new Webhook(secret).verify(q.body, headers) as { type: string }).type;
    });
    expect(sent).toEqual(expect.arrayContaining(['entry.created', 'books.fiscal_year_changed']));
    for (const type of sent) expect(published.has(type), type).toBe(true);
    const log = await call('GET', `/webhooks/${id}/deliveries`);
    expect(log.statusCode, log.body).toBe(200);
    expect(
      log
        .json()
        .data.map((d: { eventType: string }) => d.eventType)
        .sort(),
    ).toEqual([...sent].sort());
    for (const type of sent) {
      const filtered = await call('GET', `/webhooks/${id}/deliveries?eventType=${type}`);
      expect(filtered.statusCode, type).toBe(200);
    }
  });

  it('signs so that standardwebhooks verifies with the current and the rotated-out secret during rotation', async () => {
    const r = await receiver();
    const created = await call('POST', '/webhooks', { url: r.url, eventTypes: ['entry.posted'] });
    const { id, secret: old } = created.json().data as { id: string; secret: string };
    const rotated = await call('POST', `/webhooks/${id}/rotate-secret`);
    expect(rotated.statusCode).toBe(200);
    const fresh = rotated.json().data.secret as string;
    expect(fresh).not.toBe(old);
    clock = new Date();
    const entryId = await postEntry(555);
    await drain();
    const [q] = r.received;
    expect(q).toBeDefined();
    if (!q) return;
    const headers = {
      'webhook-id': String(q.headers['webhook-id']),
      'webhook-timestamp': String(q.headers['webhook-timestamp']),
      'webhook-signature': String(q.headers['webhook-signature']),
    };
    for (const secret of [old, fresh]) {
      expect(new Webhook(secret).verify(q.body, headers)).toMatchObject({
        type: 'entry.posted',
        sequence: 1,
        data: { id: entryId },
      });
    }
    expect(() => new Webhook(old).verify(q.body.replace('"sequence":1', '"sequence":2'), headers)).toThrow();
    expect(() =>
      new Webhook(fresh).verify(q.body, {
        ...headers,
        'webhook-timestamp': String(Number(headers['webhook-timestamp']) + 1),
      }),
    ).toThrow();

    // A second rotation ends the first old secret's overlap: only the two latest secrets sign.
    const again = await call('POST', `/webhooks/${id}/rotate-secret`);
    const newest = again.json().data.secret as string;
    await postEntry(666);
    await drain();
    const second = r.received[1];
    expect(second).toBeDefined();
    if (!second) return;
    const secondHeaders = {
      'webhook-id': String(second.headers['webhook-id']),
      'webhook-timestamp': String(second.headers['webhook-timestamp']),
      'webhook-signature': String(second.headers['webhook-signature']),
    };
    expect(new Webhook(newest).verify(second.body, secondHeaders)).toMatchObject({ sequence: 2 });
    expect(new Webhook(fresh).verify(second.body, secondHeaders)).toMatchObject({ sequence: 2 });
    expect(() => new Webhook(old).verify(second.body, secondHeaders)).toThrow();
  });
});
