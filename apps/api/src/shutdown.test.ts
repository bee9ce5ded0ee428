import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..', '..', '..');

/** Starts a command that serves the API on the embedded database and resolves with its port once it listens. */
async function serve(command: string, args: string[], dataDir: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(command, args, {
    cwd: root,
    env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'warn' },
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
  }, 90_000);

  it('node dist/server.js (the image): the same, on the compiled build', async () => {
    await promisify(execFile)(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root });
    await drainsOnSigterm(process.execPath, ['--enable-source-maps', join(root, 'dist', 'server.js')]);
  }, 90_000);
});
