/**
 * Load with bounded memory: the compiled server (as the image runs it, with its heap cap) under twice the bench's
 * posting load (20 connections where `npm run bench` uses 10) for a fixed time, then under a flood of refusals. Its
 * resident memory stays under 300 MB throughout and comes back near where it started once the load stops. Memory is
 * sampled from /proc, so this runs on Linux only.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { createTestDatabase, type TestDatabase } from '@firm/db/testing';
import { seedDemo } from '@firm/demo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { root, type RunningServer, shippedNodeArgs, startServer } from './server';

const LOAD_SECONDS = Number(process.env.RELIABILITY_LOAD_SECONDS ?? 15);
const CONNECTIONS = 20;
const LIMIT_MB = 300;

const rssMb = (pid: number) => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]) / 1024;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// The limit is the API process's own: on the embedded database the process also holds PGlite (Postgres compiled to
// WebAssembly, some 600 MB more), so these run on a Postgres server (DATABASE_URL, as CI sets it).
const measurable = existsSync('/proc/self/status') && Boolean(process.env.DATABASE_URL);

let database: TestDatabase;
let server: RunningServer;
let base: string;
let headers: Record<string, string>;
let lines: { debit: string; credit: string };

beforeAll(async () => {
  if (!measurable) return;
  await promisify(execFile)(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root });
  database = await createTestDatabase();
  const seeded = await seedDemo(database.db, {});
  server = await startServer(database.url as string, {
    args: [...shippedNodeArgs(), join(root, 'dist', 'server.js')],
  });
  base = server.base;
  const apiKey = seeded.apiKey;
  const companies = (await (
    await fetch(`${base}/api/v1/companies`, { headers: { authorization: `Bearer ${apiKey}` } })
  ).json()) as { data: { id: string }[] };
  const organizationId = companies.data[0]?.id as string;
  headers = {
    authorization: `Bearer ${apiKey}`,
    'x-organization-id': organizationId,
    'content-type': 'application/json',
  };
  const chart = (await (await fetch(`${base}/api/v1/accounts?limit=1000`, { headers })).json()) as {
    data: { id: string; code: string }[];
  };
  const byCode = (code: string) => chart.data.find((a) => a.code === code)?.id;
  lines = { debit: byCode('6000') as string, credit: byCode('1000') as string };
}, 180_000);

afterAll(async () => {
  await server?.stop();
  await database?.close();
});

const entry = () =>
  JSON.stringify({
    txnDate: '2026-06-15',
    memo: 'memory under load',
    lines: [
      { accountId: lines.debit, postingType: 'debit', amount: 1250 },
      { accountId: lines.credit, postingType: 'credit', amount: 1250 },
    ],
  });

async function post(connections: number, seconds: number, body: () => string = entry) {
  return autocannon({
    url: `${base}/api/v1/journal-entries`,
    connections,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        setupRequest: (request) => ({
          ...request,
          headers: { ...headers, 'idempotency-key': randomUUID() },
          body: body(),
        }),
      },
    ],
  });
}

describe.runIf(measurable)('memory under load', () => {
  it('posts', async () => {
    const res = await fetch(`${base}/api/v1/journal-entries`, {
      method: 'POST',
      headers: { ...headers, 'idempotency-key': randomUUID() },
      body: entry(),
    });
    expect(res.status, await res.text()).toBe(201);
  });

  it(`stays under ${LIMIT_MB} MB with ${CONNECTIONS} connections posting, and comes back near its start`, async () => {
    const pid = server.child.pid as number;
    await post(4, 3); // warm: code compiled, pool filled, caches populated
    await sleep(2000);
    const start = rssMb(pid);
    let peak = start;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid));
    }, 100);
    const result = await post(CONNECTIONS, LOAD_SECONDS);
    clearInterval(sampler);
    await sleep(5000);
    const after = rssMb(pid);
    process.stdout.write(
      `memory: start ${start.toFixed(0)} MB, peak ${peak.toFixed(0)} MB, after ${after.toFixed(0)} MB; ` +
        `${result.requests.total} postings (${result.non2xx} non-2xx, ${result.errors} errors) in ${LOAD_SECONDS} s\n`,
    );
    expect(result.non2xx + result.errors).toBe(0);
    expect(result.requests.total).toBeGreaterThan(0);
    expect(peak).toBeLessThan(LIMIT_MB);
    expect(after).toBeLessThan(start + 60);
  }, 120_000);
});

describe.runIf(measurable)('memory under a flood of refused requests', () => {
  it(`stays under ${LIMIT_MB} MB while refusing invalid postings as fast as they come`, async () => {
    const pid = server.child.pid as number;
    const start = rssMb(pid);
    let peak = start;
    const sampler = setInterval(() => {
      peak = Math.max(peak, rssMb(pid));
    }, 100);
    const invalid = () => JSON.stringify({ txnDate: '2026-02-30', lines: [{ accountId: 'x', amount: -1 }] });
    const result = await post(CONNECTIONS, LOAD_SECONDS, invalid);
    clearInterval(sampler);
    process.stdout.write(
      `memory (refusals): start ${start.toFixed(0)} MB, peak ${peak.toFixed(0)} MB; ${result.requests.total} requests, ` +
        `${result['4xx']} answered 4xx\n`,
    );
    expect(result['4xx']).toBe(result.requests.total);
    expect(peak).toBeLessThan(LIMIT_MB);
  }, 120_000);
});
