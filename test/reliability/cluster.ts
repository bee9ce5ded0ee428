import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server, type Socket, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** The machine's Postgres binaries (initdb, pg_ctl), or null when there are none. */
export function postgresBin(): string | null {
  for (const dir of ['/usr/lib/postgresql/17/bin', '/usr/lib/postgresql/16/bin', '/usr/lib/postgresql/15/bin']) {
    if (existsSync(join(dir, 'initdb'))) return dir;
  }
  return null;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export interface Cluster {
  port: number;
  url(database: string): string;
  restart(mode: 'fast' | 'immediate'): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A Postgres cluster of its own in a temporary directory, from the machine's binaries, so faults never touch the
 * shared server. Postgres refuses to run as root: as root, the cluster's files and processes belong to `postgres`.
 */
export async function startCluster(): Promise<Cluster> {
  const bin = postgresBin();
  if (!bin) throw new Error('no Postgres binaries (initdb, pg_ctl) on this machine');
  const dir = await mkdtemp(join(tmpdir(), 'reliability-pg-'));
  const root = process.getuid?.() === 0;
  if (root) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const as = (command: string, args: string[]) =>
    root ? run('runuser', ['-u', 'postgres', '--', join(bin, command), ...args]) : run(join(bin, command), args);
  const port = await freePort();
  const data = join(dir, 'data');
  await as('initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '--no-sync', '-E', 'UTF8']);
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100`;
  const pgCtl = (...args: string[]) => as('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-o', options, ...args]);
  await pgCtl('start', '-w', '-t', '60');
  return {
    port,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async restart(mode) {
      await pgCtl('restart', '-m', mode, '-w', '-t', '60');
    },
    async stop() {
      await pgCtl('stop', '-m', 'immediate', '-w').catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export type ProxyMode = 'pass' | 'drop' | 'stall';

export interface FaultProxy {
  port: number;
  /**
   * pass: bytes flow. drop: every connection is reset and new ones are reset at once. stall: connections stay open
   * but nothing flows either way (a network that loses packets); leaving stall resets what it held.
   */
  set(mode: ProxyMode): void;
  close(): Promise<void>;
}

/** A TCP proxy between the service and Postgres that drops or stalls connections on demand. */
export async function startFaultProxy(targetPort: number): Promise<FaultProxy> {
  let mode: ProxyMode = 'pass';
  const pairs = new Set<[Socket, Socket]>();
  const server: Server = createServer((client) => {
    if (mode === 'drop') {
      client.resetAndDestroy();
      return;
    }
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: [Socket, Socket] = [client, upstream];
    pairs.add(pair);
    const forward = (from: Socket, to: Socket) =>
      from.on('data', (chunk) => {
        if (mode === 'pass') to.write(chunk);
      });
    forward(client, upstream);
    forward(upstream, client);
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const resetAll = () => {
    for (const [client, upstream] of pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    pairs.clear();
  };
  return {
    port: (server.address() as { port: number }).port,
    set(next) {
      if (next === 'drop' || (mode === 'stall' && next !== 'stall')) resetAll();
      mode = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        resetAll();
        server.close(() => resolve());
      }),
  };
}
