import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { shippedNodeArgs } from '../../../test/reliability/server';

const root = join(import.meta.dirname, '..', '..', '..');

/** Starts a command that serves the API on the embedded database and resolves with its port once it listens. */
async function serve(command: string, args: string[], dataDir: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(command, args, {
    cwd: root,
    // The demo's year of books is not what these tests are about: they start on empty books, more quickly.
    env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn', DEMO_HISTORY: 'false' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const match = /API:\s+http:\/\/127\.0\.0\.1:(\d+)\/api\/v1/.exec(output);
      if (match?.[1]) resolve(Number(match[1]));
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => reject(new Error(`exited early (${code}): ${output}`)));
  });
  return { child, port };
}

function refused(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ECONNREFUSED'));
  });
}

/**
 * Sends SIGTERM to the process that was started (npm, or node itself) while a request is in flight: the request
 * is answered, new connections are refused, and everything exits 0.
 */
async function drainsOnSigterm(command: string, args: string[]) {
  const dataDir = await mkdtemp(join(tmpdir(), 'shutdown-'));
  try {
    const { child, port } = await serve(command, args, dataDir);
    const saved = JSON.parse(await readFile(join(dataDir, 'demo-credentials.json'), 'utf8'));
    const body = JSON.stringify({ code: '6960', name: 'Conferences', type: 'expense' });

    // A request whose body is still arriving when the signal comes.
    const socket = connect(port, '127.0.0.1');
    await once(socket, 'connect');
    let response = '';
    socket.on('data', (chunk) => (response += chunk.toString()));
    socket.write(
      [
        'POST /api/v1/accounts HTTP/1.1',
        `host: 127.0.0.1:${port}`,
        `authorization: Bearer ${saved.apiKey}`,
        `x-organization-id: ${saved.organizations[0].id}`,
        'content-type: application/json',
        `content-length: ${Buffer.byteLength(body)}`,
        'connection: close',
        '',
        body.slice(0, 10),
      ].join('\r\n'),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));

    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    await expect.poll(() => refused(port), { timeout: 10_000 }).toBe(true);

    socket.write(body.slice(10));
    await once(socket, 'close');
    expect(response).toMatch(/^HTTP\/1\.1 201 /);
    expect(response).toContain('"name":"Conferences"');
    expect(await exited).toBe(0);
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

describe('SIGTERM to the process that was started', () => {
  it('npm start (the quick start): finishes the request in flight and refuses new connections', async () => {
    await drainsOnSigterm('npm', ['start', '--silent']);
  }, 180_000);

  it('node dist/server.js (the image): the same, on the compiled build', async () => {
    await promisify(execFile)(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root });
    await drainsOnSigterm(process.execPath, [...shippedNodeArgs(), join(root, 'dist', 'server.js')]);
  }, 180_000);
});

describe('npm start’s sandbox bank', () => {
  it('serves the sandbox aggregator: the demo feed syncs again and a new sandbox feed connects', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'quickstart-bank-'));
    const { child, port } = await serve('npm', ['start', '--silent'], dataDir);
    try {
      const saved = JSON.parse(await readFile(join(dataDir, 'demo-credentials.json'), 'utf8'));
      const [first, second] = saved.organizations as { id: string }[];
      const api = (path: string, org: string, init: RequestInit = {}) =>
        fetch(`http://127.0.0.1:${port}/api/v1${path}`, {
          ...init,
          headers: {
            authorization: `Bearer ${saved.apiKey}`,
            'x-organization-id': org,
            'content-type': 'application/json',
            ...(init.headers as Record<string, string> | undefined),
          },
        });
      const data = async <T>(res: Promise<Response>) => ((await (await res).json()) as { data: T }).data;
      const feeds = await data<{ id: string }[]>(api('/bank-feeds', first?.id as string));
      expect(feeds).toHaveLength(1);

      // The demo feed was synced in process by the seed; the running server syncs it through the sandbox server.
      const sync = await promisify(execFile)(
        process.execPath,
        [
          '--import',
          'tsx',
          'apps/cli/src/bin.ts',
          'bank-feed',
          'sync',
          '--org',
          first?.id as string,
          '--feed',
          feeds[0]?.id as string,
        ],
        { cwd: root, env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir } },
      );
      expect(sync.stdout).toMatch(/: \d+ page\(s\), \d+ added, \d+ modified, \d+ removed/);
      const health = await data<object[]>(api('/bank-feeds/health', first?.id as string));
      expect(health[0]).toMatchObject({ status: 'active', lastError: null });

      const token = await fetch('http://127.0.0.1:4010/sandbox/public_token/create', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ client_id: 'sandbox-client-id', secret: 'sandbox-secret' }),
      });
      const { public_token: publicToken } = (await token.json()) as { public_token: string };
      const accounts = await data<{ id: string; code: string }[]>(api('/accounts', second?.id as string));
      const checking = accounts.find((a) => a.code === '1000');
      const connected = await api('/bank-feeds', second?.id as string, {
        method: 'POST',
        body: JSON.stringify({
          publicToken,
          institutionName: 'First Platypus Bank (sandbox)',
          accounts: [{ mask: '0000', accountId: checking?.id }],
        }),
      });
      expect(connected.status).toBe(201);
      const unreviewed = await data<object[]>(
        api('/bank-transactions?status=unreviewed&limit=100', second?.id as string),
      );
      expect(unreviewed.length).toBeGreaterThan(5);
    } finally {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 180_000);
});
