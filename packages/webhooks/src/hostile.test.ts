import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type Server as TcpServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { DomainError, newId } from '@firm/core';
import { firms, organizations, outboxEvents, webhookDeliveries, webhookSubscriptions } from '@firm/db';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { asc, eq } from 'drizzle-orm';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { checkWebhookUrl, type Resolver, type UrlPolicy } from './address';
import { getDelivery } from './deliveries';
import { RESPONSE_EXCERPT_BYTES, type SendRequest, sendWebhook } from './sender';
import { createSubscription, rotateSecret } from './subscriptions';
import { type Receiver, startReceiver, verifyDelivery } from './testing';
import { createWebhookWorker } from './worker';
import { DEVELOPMENT_SECRET_KEYS, parseSecretKeys } from './secrets';

const secretKeys = parseSecretKeys(DEVELOPMENT_SECRET_KEYS);

/** A resolver playing DNS from a table; a trailing dot is the same name, as in DNS. */
const dns =
  (answers: Record<string, string[]>): Resolver =>
  async (host) =>
    (answers[host.replace(/\.$/, '')] ?? []).map((address) => ({
      address,
      family: address.includes(':') ? 6 : 4,
    }));

const PUBLIC = '93.184.215.14';
const resolver = dns({
  'hooks.example.com': [PUBLIC],
  localhost: ['127.0.0.1', '::1'],
  'app.localhost': ['127.0.0.1'],
  'internal.example.com': ['10.20.30.40'],
  'home.example.com': ['192.168.1.10'],
  'metadata.example.com': ['169.254.169.254'],
  'v6-loopback.example.com': ['::1'],
  'v6-mapped.example.com': ['::ffff:127.0.0.1'],
  'v6-ula.example.com': ['fd12:3456::1'],
  'cgnat.example.com': ['100.64.0.1'],
  'split.example.com': [PUBLIC, '10.0.0.1'],
  'split6.example.com': ['2606:4700::1111', 'fe80::1'],
  'garbage.example.com': ['not-an-address'],
});
const strict: UrlPolicy = { allowInsecureLocalhost: false, resolve: resolver };
const local: UrlPolicy = { allowInsecureLocalhost: true, resolve: resolver };

async function refusal(url: string, policy: UrlPolicy): Promise<string> {
  try {
    await checkWebhookUrl(url, policy);
  } catch (err) {
    expect(err, url).toBeInstanceOf(DomainError);
    expect((err as DomainError).code, url).toBe('WEBHOOK_URL_REFUSED');
    return (err as DomainError).details?.[0]?.message ?? '';
  }
  throw new Error(`${url} was accepted`);
}

describe('webhook URL checks against hostile input', () => {
  it('refuses credentials in any form', async () => {
    for (const url of [
      'https://user:pass@hooks.example.com/',
      'https://user@hooks.example.com/',
      'https://:pass@hooks.example.com/',
      'https://user%40x:p%3Ass@hooks.example.com/',
      'https://user:pass@93.184.215.14/',
    ]) {
      expect(await refusal(url, strict), url).toMatch(/credentials/);
    }
  });

  it('refuses plain http unless insecure localhost is allowed, and then only to loopback', async () => {
    for (const url of ['http://hooks.example.com/', 'http://93.184.215.14/', 'http://127.0.0.1/', 'http://[::1]/']) {
      expect(await refusal(url, strict), url).toMatch(/https/);
    }
    for (const url of ['http://hooks.example.com/', `http://${PUBLIC}/`, 'http://split.example.com/']) {
      expect(await refusal(url, local), url).toMatch(/loopback|private/);
    }
    for (const url of ['ws://hooks.example.com/', 'file:///etc/passwd', 'gopher://127.0.0.1/', 'javascript:alert(1)']) {
      expect(await refusal(url, local), url).toMatch(/https/);
    }
  });

  it('refuses IPv4 literals written in decimal, octal, hex or short form, in either mode', async () => {
    for (const host of [
      '2130706433',
      '0177.0.0.1',
      '0177.0000.0000.0001',
      '127.000.000.001',
      '0x7f000001',
      '0x7f.0x0.0x0.0x1',
      '0x7F.1',
      '127.1',
      '127.0.1',
      '0',
      '1572395042',
      '%31%32%37.0.0.1',
      '127.0.0.1.',
      '\uff11\uff12\uff17.\uff10.\uff10.\uff11',
      '127\u30020\u30020\u30021',
    ]) {
      for (const policy of [strict, local]) {
        const reason = await refusal(`https://${host}/hooks`, policy);
        expect(reason, host).toMatch(/dotted-decimal|address/);
      }
    }
  });

  it('refuses loopback, private, link-local, metadata, CGNAT, multicast and reserved IPv4 literals', async () => {
    for (const host of [
      '127.0.0.1',
      '127.255.255.254',
      '10.0.0.1',
      '172.31.255.255',
      '192.168.0.1',
      '169.254.169.254',
      '169.254.0.1',
      '100.64.0.1',
      '100.127.255.254',
      '100.100.100.200',
      '0.0.0.0',
      '0.1.2.3',
      '224.0.0.251',
      '239.255.255.250',
      '255.255.255.255',
      '240.0.0.1',
      '198.18.0.1',
      '192.0.0.170',
      '192.0.2.1',
    ]) {
      const reason = await refusal(`https://${host}/`, strict);
      expect(reason, host).toMatch(/is a \w+ address/);
      if (!host.startsWith('127.')) expect(await refusal(`https://${host}/`, local), host).toMatch(/address/);
    }
  });

  it('accepts public addresses right next to the refused ranges', async () => {
    for (const host of [
      '100.63.255.255',
      '100.128.0.0',
      '172.15.255.255',
      '172.32.0.0',
      '169.253.255.255',
      '11.0.0.1',
    ]) {
      const target = await checkWebhookUrl(`https://${host}/`, strict);
      expect(target.address.address, host).toBe(host);
    }
    expect((await checkWebhookUrl('https://[2606:4700::1111]/', strict)).address.family).toBe(6);
  });

  it('refuses IPv6 loopback, mapped, translated, tunnelled, unique-local and link-local literals', async () => {
    for (const host of [
      '[::1]',
      '[0:0:0:0:0:0:0:1]',
      '[::]',
      '[::ffff:127.0.0.1]',
      '[::ffff:7f00:1]',
      '[0:0:0:0:0:ffff:7f00:1]',
      '[::ffff:169.254.169.254]',
      '[::ffff:10.0.0.1]',
      '[::ffff:0:7f00:1]',
      '[64:ff9b::7f00:1]',
      '[64:ff9b::127.0.0.1]',
      '[64:ff9b::a9fe:a9fe]',
      '[64:ff9b:1::a00:1]',
      '[2002:7f00:1::]',
      '[2002:a9fe:a9fe::1]',
      '[2001:0:4136:e378:8000:63bf:3fff:fdd2]',
      '[fd00::1]',
      '[fd00:ec2::254]',
      '[fc00::1]',
      '[fe80::1]',
      '[fec0::1]',
      '[ff02::1]',
      '[2001:db8::1]',
    ]) {
      expect(await refusal(`https://${host}/`, strict), host).toMatch(/address/);
    }
    // Mapped and translated forms are judged by the IPv4 address they carry: loopback passes only in local mode.
    await expect(checkWebhookUrl('https://[::ffff:7f00:1]/', local)).resolves.toBeTruthy();
    expect(await refusal('https://[::ffff:a00:1]/', local)).toMatch(/private/);
  });

  it('refuses IPv4-compatible IPv6 literals, which embed an IPv4 address in ::/96', async () => {
    for (const host of ['[::127.0.0.1]', '[::7f00:1]', '[::a9fe:a9fe]', '[::10.0.0.1]', '[::8.8.8.8]']) {
      expect(await refusal(`https://${host}/`, strict), host).toMatch(/address/);
    }
  });

  it('refuses localhost names, with or without a trailing dot, by what they resolve to', async () => {
    for (const host of ['localhost', 'localhost.', 'LOCALHOST', 'app.localhost', 'app.localhost.']) {
      expect(await refusal(`https://${host}/hooks`, strict), host).toMatch(/loopback/);
    }
    expect(await refusal('http://localhost/hooks', strict)).toMatch(/https/);
    // A trailing dot does not change what a public name is.
    const target = await checkWebhookUrl('https://hooks.example.com./in', strict);
    expect(target.address.address).toBe(PUBLIC);
  });

  it('refuses a host name that resolves to a private address, or to any private address among public ones', async () => {
    const cases: [string, RegExp][] = [
      ['internal.example.com', /private/],
      ['home.example.com', /private/],
      ['metadata.example.com', /linkLocal/],
      ['v6-loopback.example.com', /loopback/],
      ['v6-mapped.example.com', /127\.0\.0\.1 is a loopback/],
      ['v6-ula.example.com', /uniqueLocal/],
      ['cgnat.example.com', /carrierGradeNat/],
      ['split.example.com', /private/],
      ['split6.example.com', /linkLocal/],
      ['garbage.example.com', /not an IP address/],
      ['unknown.example.com', /does not resolve/],
    ];
    for (const [host, reason] of cases) {
      expect(await refusal(`https://${host}/`, strict), host).toMatch(reason);
    }
    expect(await refusal('https://internal.example.com/', local)).toMatch(/private/);
  });

  it('pins the address it checked, even when the resolver answers differently afterwards', async () => {
    let lookups = 0;
    const rebinding: Resolver = async () => {
      lookups++;
      return [{ address: lookups === 1 ? PUBLIC : '127.0.0.1', family: 4 }];
    };
    const target = await checkWebhookUrl('https://rebind.example.com/', {
      allowInsecureLocalhost: false,
      resolve: rebinding,
    });
    expect(target.address).toEqual({ address: PUBLIC, family: 4 });
    expect(lookups).toBe(1);
    // The next check (the one before a delivery) sees the private answer and refuses.
    expect(await refusal('https://rebind.example.com/', { allowInsecureLocalhost: false, resolve: rebinding })).toMatch(
      /loopback/,
    );
  });
});

// ---------------------------------------------------------------------------------------------
// The sender, against receivers that misbehave.

const servers: (Server | TcpServer)[] = [];
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const s of sockets) s.destroy();
  sockets.clear();
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((resolve) => {
          if (s instanceof Object && 'closeAllConnections' in s) s.closeAllConnections();
          s.close(() => resolve());
        }),
    ),
  );
});

async function listen<T extends Server | TcpServer>(server: T, host = '127.0.0.1', port = 0): Promise<number> {
  servers.push(server);
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(port, host, () => resolve()));
  return (server.address() as AddressInfo).port;
}

const request = (url: string, address = '127.0.0.1', timeoutMs = 2000): SendRequest => ({
  target: { url: new URL(url), address: { address, family: 4 } },
  headers: {},
  body: '{"hello":"world"}',
  timeoutMs,
});

describe('the webhook sender against hostile receivers', () => {
  it('connects only to the pinned address, never to what the host name resolves to', async () => {
    const hits: string[] = [];
    const checked = createServer((req, res) => {
      hits.push(`checked ${req.headers.host}`);
      res.writeHead(204).end();
    });
    const rebound = createServer((_req, res) => {
      hits.push('rebound');
      res.writeHead(204).end();
    });
    // The same port on two loopback addresses: `localhost` resolves to the second one only.
    const port = await listen(rebound, '127.0.0.1');
    await listen(checked, '127.0.0.2', port);
    const result = await sendWebhook(request(`http://localhost:${port}/in`, '127.0.0.2'));
    expect(result).toMatchObject({ statusCode: 204, error: null });
    expect(hits).toEqual([`checked localhost:${port}`]);
  });

  it('does not follow redirects of any kind', async () => {
    let followed = 0;
    const elsewhere = createServer((_req, res) => {
      followed++;
      res.writeHead(200).end();
    });
    const elsewherePort = await listen(elsewhere);
    for (const status of [301, 302, 303, 307, 308]) {
      const redirecting = createServer((_req, res) => {
        res.writeHead(status, { location: `http://127.0.0.1:${elsewherePort}/stolen` }).end('moved');
      });
      const port = await listen(redirecting);
      const result = await sendWebhook(request(`http://127.0.0.1:${port}/in`));
      expect(result, String(status)).toMatchObject({ statusCode: status, responseBody: 'moved', error: null });
    }
    expect(followed).toBe(0);
  });

  it('reads at most 1 KB of a response body that never ends, and drops the connection', async () => {
    let closedEarly = false;
    let written = 0;
    const flood = createServer((req, res) => {
      req.resume();
      res.writeHead(500, { 'content-type': 'text/plain' });
      const chunk = Buffer.alloc(64 * 1024, 'z');
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) {
          written += chunk.length;
          if (written > 512 * 1024 * 1024) return;
        }
        if (!res.destroyed) res.once('drain', pump);
      };
      res.on('close', () => {
        closedEarly = !res.writableFinished;
      });
      pump();
    });
    const port = await listen(flood);
    const started = Date.now();
    const result = await sendWebhook(request(`http://127.0.0.1:${port}/in`, '127.0.0.1', 5000));
    expect(result.statusCode).toBe(500);
    expect(result.responseBody).toBe('z'.repeat(RESPONSE_EXCERPT_BYTES));
    expect(Date.now() - started).toBeLessThan(3000);
    await expect.poll(() => closedEarly).toBe(true);
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it('gives up at the timeout on a receiver that never answers, or answers the headers and then stalls', async () => {
    const silentTcp = createTcpServer(() => {});
    const silentPort = await listen(silentTcp);
    const hanging = createServer((req) => req.resume());
    const hangingPort = await listen(hanging);
    const stalling = createServer((req, res) => {
      req.resume();
      res.writeHead(200);
      res.write('half an answ');
    });
    const stallingPort = await listen(stalling);
    for (const port of [silentPort, hangingPort, stallingPort]) {
      const started = Date.now();
      const result = await sendWebhook(request(`http://127.0.0.1:${port}/in`, '127.0.0.1', 300));
      expect(result, String(port)).toMatchObject({ statusCode: null, error: 'no response within 300 ms' });
      expect(Date.now() - started).toBeLessThan(2000);
    }
  });

  it('reports a refused connection and a receiver that hangs up as errors without a status', async () => {
    const hangUp = createTcpServer((socket) => socket.destroy());
    const port = await listen(hangUp);
    const result = await sendWebhook(request(`http://127.0.0.1:${port}/in`));
    expect(result.statusCode).toBeNull();
    expect(result.error).toMatch(/ECONNRESET|socket hang up/);
    const closed = createTcpServer();
    const closedPort = await listen(closed);
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    servers.splice(servers.indexOf(closed), 1);
    expect((await sendWebhook(request(`http://127.0.0.1:${closedPort}/in`))).error).toMatch(/ECONNREFUSED/);
  });
});

// ---------------------------------------------------------------------------------------------
// Delivery outcomes, recorded in the database.

let database: TestDatabase;
const db = () => database.db;
beforeAll(async () => {
  database = await createTestDatabase();
});
afterAll(() => database.close());

let clock: Date;
const now = () => clock;
const receivers: Receiver[] = [];
beforeEach(() => {
  clock = new Date();
});
afterEach(async () => {
  await Promise.all(receivers.splice(0).map((r) => r.close()));
  await db()
    .update(webhookSubscriptions)
    .set({ enabled: false, disabledAt: new Date(), disabledReason: 'test over' })
    .where(eq(webhookSubscriptions.enabled, true));
});

async function firm(resolve?: Resolver) {
  const [f] = await db()
    .insert(firms)
    .values({ slug: `f-${newId()}`, name: 'Hostile receivers' })
    .returning();
  const firmId = (f as { id: string }).id;
  const [org] = await db().insert(organizations).values({ firmId, name: 'Client' }).returning();
  const orgId = (org as { id: string }).id;
  const owner = { firmId, organizationIds: null };
  const policy: UrlPolicy = { allowInsecureLocalhost: true, resolve };
  return {
    owner,
    policy,
    emit: async (data: Record<string, unknown>) => {
      await db()
        .insert(outboxEvents)
        .values({ id: newId(), firmId, organizationId: orgId, type: 'entry.posted', payload: data, createdAt: clock });
    },
    subscribe: (url: string) =>
      createSubscription(db(), owner, { url, eventTypes: ['*'] }, { policy, secretKeys, now }),
  };
}

const worker = (policy: UrlPolicy, timeoutMs = 5000) =>
  createWebhookWorker({ db: db(), policy, secretKeys, timeoutMs, now, random: () => 0.5 });

const deliveriesOf = (subscriptionId: string) =>
  db()
    .select()
    .from(webhookDeliveries)
    .where(eq(webhookDeliveries.subscriptionId, subscriptionId))
    .orderBy(asc(webhookDeliveries.sequence));

describe('delivery outcomes with hostile receivers', () => {
  it('delivers to the address checked at delivery time and never to the one a second lookup gives', async () => {
    const hits: string[] = [];
    const checked = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        hits.push(`checked ${body.length > 0}`);
        res.writeHead(204).end();
      });
    });
    const rebound = createServer((req, res) => {
      req.resume();
      hits.push('rebound');
      res.writeHead(204).end();
    });
    const port = await listen(rebound, '127.0.0.1');
    await listen(checked, '127.0.0.2', port);
    // Lookups alternate: the check at subscription, the check at delivery, then any further lookup.
    const answers = ['127.0.0.2', '127.0.0.2', '127.0.0.1', '10.0.0.7'];
    let lookups = 0;
    const rebinding: Resolver = async () => [
      { address: answers[Math.min(lookups++, answers.length - 1)] as string, family: 4 },
    ];
    const f = await firm(rebinding);
    const { subscription } = await f.subscribe(`http://rebind.webhooks.invalid:${port}/in`);
    await f.emit({ n: 1 });
    await worker(f.policy).drain();
    expect(hits).toEqual(['checked true']);
    // One lookup at subscription, one at the delivery's check: the connection itself looked nothing up.
    expect(lookups).toBe(2);
    const [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'succeeded', lastStatusCode: 204 });
  });

  it('records a response body the database cannot store as text (NUL bytes) instead of failing the round', async () => {
    const r = await startReceiver();
    receivers.push(r);
    r.reply = (_q, i) => (i === 0 ? { status: 500, body: 'bad\u0000byte \u00e9' } : { status: 200, body: '\u0000' });
    const f = await firm();
    const { subscription, secret } = await f.subscribe(r.url);
    await f.emit({ n: 1 });
    const w = worker(f.policy);
    await w.drain();
    let [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'pending', attemptCount: 1, lastStatusCode: 500 });
    expect(d?.lastResponseBody).toMatch(/^bad.byte é$/);
    clock = d?.nextAttemptAt as Date;
    await w.drain();
    [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'succeeded', attemptCount: 2, lastStatusCode: 200 });
    expect(r.received.map((q) => verifyDelivery(secret, q).sequence)).toEqual([1, 1]);
    const detail = await getDelivery(db(), f.owner, subscription.id, d?.id as string);
    expect(detail.attempts.map((a) => [a.attemptNumber, a.outcome, a.statusCode])).toEqual([
      [1, 'retrying', 500],
      [2, 'succeeded', 200],
    ]);
  });

  it('stores a 1 KB excerpt cut inside a multi-byte character without breaking the log', async () => {
    const r = await startReceiver();
    receivers.push(r);
    r.reply = () => ({ status: 502, body: `x${'€'.repeat(2000)}` });
    const f = await firm();
    const { subscription } = await f.subscribe(r.url);
    await f.emit({ n: 1 });
    await worker(f.policy).drain();
    const [d] = await deliveriesOf(subscription.id);
    expect(d).toMatchObject({ status: 'pending', lastStatusCode: 502 });
    expect(Buffer.byteLength(d?.lastResponseBody ?? '')).toBeLessThanOrEqual(RESPONSE_EXCERPT_BYTES + 3);
    expect(d?.lastResponseBody?.startsWith('x€€')).toBe(true);
  });

  it('signs with both secrets during a rotation so that either verifies with standardwebhooks, and rejects tampering', async () => {
    const r = await startReceiver();
    receivers.push(r);
    const f = await firm();
    const { subscription, secret: old } = await f.subscribe(r.url);
    const { secret: fresh } = await rotateSecret(db(), f.owner, subscription.id, { now, secretKeys });
    await f.emit({ n: 1 });
    await worker(f.policy).drain();
    const [q] = r.received;
    expect(q).toBeDefined();
    if (!q) return;
    expect(verifyDelivery(old, q)).toMatchObject({ sequence: 1, data: { n: 1 } });
    expect(verifyDelivery(fresh, q)).toMatchObject({ sequence: 1, data: { n: 1 } });
    expect(() => verifyDelivery(old, { ...q, body: q.body.replace('"n":1', '"n":2') })).toThrow();
    expect(() => verifyDelivery(fresh, { ...q, headers: { ...q.headers, 'webhook-id': newId() } })).toThrow();
    const stranger = 'whsec_' + Buffer.alloc(32, 7).toString('base64');
    expect(() => verifyDelivery(stranger, q)).toThrow();
  });
});
