import { once } from 'node:events';
import { type AddressInfo, type Server, type Socket, connect, createServer } from 'node:net';
import { Writable } from 'node:stream';
import { type Database, openDatabase } from '@firm/db';
import { adminQuery, createTestDatabase, withDatabase } from '@firm/db/testing';
import { seedDemo } from '@firm/demo';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../app';
import { testConfig } from '../../config';

const baseUrl = process.env.DATABASE_URL;
// A well-formed key of no one: authenticating it needs the database.
const STRANGER = { authorization: `Bearer dk_live_${'A'.repeat(38)}` };

/** Log lines the app writes, parsed. */
function capturedLog() {
  const lines: { level: number; msg: string; err?: unknown }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, logger: { level: 'info', stream } };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('an unmigrated database', () => {
  it('is not ready, and every call is 503 naming the fix until it is migrated', async () => {
    let database: Database;
    if (baseUrl) {
      const name = `test_blank_${Date.now()}_${process.pid}`;
      await adminQuery(baseUrl, `create database ${name}`);
      database = openDatabase({ url: withDatabase(baseUrl, name), poolMax: 2 });
      cleanups.push(async () => {
        await database.close();
        await adminQuery(baseUrl, `drop database if exists ${name} with (force)`);
      });
    } else {
      database = openDatabase({ dataDir: 'memory://' });
      cleanups.push(() => database.close());
    }
    const app = await buildApp({ config: testConfig({ RATE_LIMIT_ANONYMOUS_MAX: 3 }), database });
    cleanups.push(() => app.close());
    await app.ready();

    const ready = await app.inject({ method: 'GET', url: '/api/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({
      status: 'not_ready',
      database: { reachable: true, pendingMigrations: expect.any(Number) },
    });
    expect(ready.json().database.pendingMigrations).toBeGreaterThan(0);

    const health = await app.inject({ method: 'GET', url: '/api/health' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ status: 'degraded' });

    for (const url of ['/api/v1/companies', '/api/v1/accounts']) {
      const res = await app.inject({ method: 'GET', url, headers: STRANGER });
      expect(res.statusCode).toBe(503);
      expect(res.json().error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
      expect(res.json().error.message).toMatch(/not migrated.*cli -- migrate/);
    }

    await database.migrate();
    expect((await app.inject({ method: 'GET', url: '/api/ready' })).statusCode).toBe(200);
    const after = await app.inject({ method: 'GET', url: '/api/v1/companies', headers: STRANGER });
    expect(after.statusCode).toBe(401);
    expect((await app.inject({ method: 'GET', url: '/api/health' })).json()).toMatchObject({ status: 'ok' });
  });
});

describe('probes', () => {
  it('are not rate limited', async () => {
    const database = await createTestDatabase();
    const app = await buildApp({ config: testConfig({ RATE_LIMIT_ANONYMOUS_MAX: 2 }), database });
    cleanups.push(async () => {
      await app.close();
      await database.close();
    });
    for (let i = 0; i < 6; i++) {
      expect((await app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200);
      expect((await app.inject({ method: 'GET', url: '/api/ready' })).statusCode).toBe(200);
    }
    // The same address on another public route is limited.
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await app.inject({ method: 'GET', url: '/login' })).statusCode);
    expect(statuses).toContain(429);
  });
});

/** A TCP relay to Postgres that the test can cut and restore: the database going away and coming back. */
async function relayTo(target: URL): Promise<{ port: number; cut(): Promise<void>; restore(): Promise<void> }> {
  const sockets = new Set<Socket>();
  let server: Server;
  let port = 0;
  const listen = async () => {
    server = createServer((inbound) => {
      const outbound = connect(Number(target.port || 5432), target.hostname);
      for (const s of [inbound, outbound]) {
        sockets.add(s);
        s.on('error', () => {});
        s.on('close', () => sockets.delete(s));
      }
      inbound.pipe(outbound).pipe(inbound);
    });
    server.listen(port, '127.0.0.1');
    await once(server, 'listening');
    port = (server.address() as AddressInfo).port;
  };
  await listen();
  return {
    port,
    async cut() {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const s of sockets) s.destroy();
      await closed;
    },
    restore: listen,
  };
}

describe.skipIf(!baseUrl)('the database going away', () => {
  it('answers 503 on every route, logs once when it goes and once when it is back, and recovers', async () => {
    const direct = await createTestDatabase();
    cleanups.push(() => direct.close());
    const demo = await seedDemo(direct.db);
    const auth = { authorization: `Bearer ${demo.apiKey}` };
    const target = new URL(direct.url as string);
    const relay = await relayTo(target);
    const viaRelay = new URL(target);
    viaRelay.hostname = '127.0.0.1';
    viaRelay.port = String(relay.port);
    const database = openDatabase({ url: viaRelay.toString(), poolMax: 2 });
    const log = capturedLog();
    const app = await buildApp({ config: testConfig({ LOG_LEVEL: 'info' }), database, logger: log.logger });
    cleanups.push(async () => {
      await app.close();
      await database.close();
      await relay.cut().catch(() => {});
    });
    await app.ready();
    expect((await app.inject({ method: 'GET', url: '/api/v1/companies', headers: auth })).statusCode).toBe(200);

    await relay.cut();
    const org = demo.organizations[0]?.id;
    const urls = ['/api/v1/companies', `/api/v1/companies/${org}/accounts`, `/api/v1/companies/${org}/journal-entries`];
    for (const url of urls) {
      const res = await app.inject({ method: 'GET', url, headers: auth });
      expect(res.statusCode, url).toBe(503);
      expect(res.json().error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', retryable: true });
    }
    const ready = await app.inject({ method: 'GET', url: '/api/ready' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json()).toMatchObject({
      status: 'not_ready',
      database: { reachable: false, pendingMigrations: null },
    });
    expect((await app.inject({ method: 'GET', url: '/api/health' })).statusCode).toBe(200);

    const outage = () => log.lines.filter((l) => /database unavailable/.test(l.msg));
    expect(outage()).toHaveLength(1);
    expect(log.lines.filter((l) => l.level >= 50)).toEqual([]);

    await relay.restore();
    await expect
      .poll(async () => (await app.inject({ method: 'GET', url: '/api/ready' })).statusCode, { timeout: 10_000 })
      .toBe(200);
    expect((await app.inject({ method: 'GET', url: '/api/v1/companies', headers: auth })).statusCode).toBe(200);
    expect(log.lines.filter((l) => /database available again/.test(l.msg))).toHaveLength(1);
    expect(outage()).toHaveLength(1);
  }, 30_000);
});
