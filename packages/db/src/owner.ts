import { randomBytes, timingSafeEqual } from 'node:crypto';
import { mkdirSync, readFileSync, realpathSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { type Server, type Socket, connect, createServer } from 'node:net';
import { join, relative } from 'node:path';
import { createInterface } from 'node:readline';

/**
 * One process owns an embedded data directory. PGlite keeps no lock of its own, so two processes opening the
 * same files would each write their own copy and lose the other's acknowledged writes; the owner therefore
 * listens on a Unix socket tied to the directory for as long as it lives.
 *
 * On Linux the socket is in the abstract namespace, named after the directory's device and inode: binding is
 * atomic, and the kernel frees the name the moment the owner dies (even by SIGKILL), so there is no stale lock
 * to judge. Elsewhere it is `owner.sock` in the directory; a file left by a dead owner refuses connections and
 * is replaced.
 *
 * The socket is also how other processes reach the owner's database: the CLI sends its command line and the
 * owner runs it on its own connection, answering with the command's output and exit code. Abstract sockets
 * have no file permissions, so each request carries the token in `owner.token`, a file in the data directory
 * only its owner's user can read (who can read the database files anyway).
 */

export interface OwnerIo {
  out(text: string): void;
  err(text: string): void;
  /** The standard input the requesting process read for the command (a password, say). */
  stdin?: () => Promise<string>;
}

/** Runs one forwarded command line in the owner's process; resolves with its exit code. */
export type OwnerCommandHandler = (argv: string[], io: OwnerIo) => Promise<number>;

export interface DataDirOwner {
  /** Starts answering forwarded commands (they wait until then). */
  serve(handler: OwnerCommandHandler): void;
  /** Stops taking commands and waits for those running. The directory stays claimed. */
  stopServing(): Promise<void>;
  /** Gives the directory up; call after the database is closed. */
  release(): Promise<void>;
}

export class DataDirInUseError extends Error {
  constructor(
    readonly dataDir: string,
    readonly pid: number | null,
  ) {
    super(
      `the embedded database in ${dataDir} is in use by another process${pid ? ` (pid ${pid})` : ''}: stop it, ` +
        'or set DATA_DIR to another directory, or set DATABASE_URL to use Postgres',
    );
    this.name = 'DataDirInUseError';
  }
}

const TOKEN_FILE = 'owner.token';
/** Directories this process has claimed (by real path): the embedded driver opens no other. */
const claimed = new Set<string>();

/** True when this process holds the claim on `dataDir`. */
export function ownsDataDir(dataDir: string): boolean {
  try {
    return claimed.has(realpathSync(dataDir));
  } catch {
    return false;
  }
}
const MAX_REQUEST_BYTES = 64 * 1024;

interface Request {
  token?: string;
  argv?: unknown;
  stdin?: unknown;
}

type Reply = { out: string } | { err: string } | { exit: number } | { pid: number };

/** Where the owner of `dataDir` listens: an abstract socket on Linux, else `owner.sock` in the directory. */
export function socketAddress(dataDir: string): string {
  if (process.platform === 'linux') {
    const { dev, ino } = statSync(dataDir, { bigint: true });
    return `\0firm-ledger-data-${dev}-${ino}`;
  }
  const file = join(dataDir, 'owner.sock');
  const rel = relative(process.cwd(), file);
  // Socket paths are limited to about 100 bytes; a path relative to the working directory is usually shorter.
  return rel.length < file.length ? rel : file;
}

/**
 * Claims `dataDir` for this process, or throws `DataDirInUseError` naming the owner's pid. Creates the directory
 * when missing.
 */
export async function claimDataDir(dataDir: string): Promise<DataDirOwner> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const address = socketAddress(dataDir);
  const token = randomBytes(32).toString('base64url');
  let handler: OwnerCommandHandler | null = null;
  let serving: (h: OwnerCommandHandler) => void = () => {};
  const ready = new Promise<OwnerCommandHandler>((resolve) => {
    serving = resolve;
  });
  let accepting = true;
  const running = new Set<Promise<unknown>>();
  const sockets = new Set<Socket>();

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    const task = answer(socket).finally(() => running.delete(task));
    running.add(task);
  });

  async function answer(socket: Socket): Promise<void> {
    const send = (reply: Reply) => {
      if (!socket.destroyed) socket.write(`${JSON.stringify(reply)}\n`);
    };
    const request = await readRequest(socket);
    if (!request) return void socket.end();
    if (request.argv === undefined) {
      send({ pid: process.pid });
      return void socket.end();
    }
    if (!tokenMatches(request.token, token) || !isStringArray(request.argv)) {
      send({ err: 'refused: the request did not carry this data directory’s owner token' });
      send({ exit: 1 });
      return void socket.end();
    }
    if (!accepting) {
      send({ err: 'the server owning this data directory is shutting down; try again once it has stopped' });
      send({ exit: 1 });
      return void socket.end();
    }
    const run = handler ?? (await ready);
    let exit: number;
    try {
      const stdin = typeof request.stdin === 'string' ? request.stdin : '';
      exit = await run(request.argv, {
        out: (text) => send({ out: text }),
        err: (text) => send({ err: text }),
        stdin: async () => stdin,
      });
    } catch (err) {
      send({ err: `the command failed in the server process: ${(err as Error).message}` });
      exit = 1;
    }
    send({ exit });
    socket.end();
  }

  await listenExclusively(server, address, dataDir);
  writeFileSync(join(dataDir, TOKEN_FILE), token, { mode: 0o600 });
  const realDir = realpathSync(dataDir);
  claimed.add(realDir);

  let released = false;
  return {
    serve(h) {
      handler = h;
      serving(h);
    },
    async stopServing() {
      accepting = false;
      await Promise.allSettled([...running]);
    },
    async release() {
      if (released) return;
      released = true;
      accepting = false;
      await Promise.allSettled([...running]);
      for (const socket of sockets) socket.destroy();
      claimed.delete(realDir);
      rmSync(join(dataDir, TOKEN_FILE), { force: true });
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function listenExclusively(server: Server, address: string, dataDir: string): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(address, () => {
          server.off('error', reject);
          resolve();
        });
      });
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
      const pid = await ownerPid(address);
      if (pid !== undefined || address.startsWith('\0') || attempt > 0)
        throw new DataDirInUseError(dataDir, pid ?? null);
      // A socket file nobody listens on was left by an owner that died: replace it.
      unlinkSync(address);
    }
  }
}

/** The owner's pid (null when it did not say), or undefined when nothing listens at the address. */
async function ownerPid(address: string): Promise<number | null | undefined> {
  try {
    for await (const reply of exchange(address, {})) if ('pid' in reply) return reply.pid;
    return null;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED' || code === 'ENOENT') return undefined;
    return null;
  }
}

/**
 * Runs a command line in the process that owns `dataDir`. Resolves with its exit code, or with null when no
 * process owns the directory (the caller may then open the database itself).
 */
export async function runInOwner(dataDir: string, argv: string[], io: OwnerIo, stdin?: string): Promise<number | null> {
  let address: string;
  let token: string;
  try {
    address = socketAddress(dataDir);
    token = readFileSync(join(dataDir, TOKEN_FILE), 'utf8').trim();
  } catch {
    return null;
  }
  try {
    for await (const reply of exchange(address, { token, argv, ...(stdin === undefined ? {} : { stdin }) })) {
      if ('out' in reply) io.out(reply.out);
      else if ('err' in reply) io.err(reply.err);
      else if ('exit' in reply) return reply.exit;
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ECONNREFUSED' || code === 'ENOENT') return null;
    throw err;
  }
  io.err('the server owning this data directory closed the connection before the command finished');
  return 1;
}

async function* exchange(address: string, request: Request): AsyncGenerator<Reply> {
  const socket = connect(address);
  const failed = new Promise<never>((_, reject) => socket.once('error', reject));
  failed.catch(() => {});
  await Promise.race([new Promise((resolve) => socket.once('connect', resolve)), failed]);
  socket.write(`${JSON.stringify(request)}\n`);
  try {
    for await (const line of createInterface({ input: socket, crlfDelay: Infinity })) {
      if (line) yield JSON.parse(line) as Reply;
    }
  } finally {
    socket.destroy();
  }
}

function readRequest(socket: Socket): Promise<Request | null> {
  return new Promise((resolve) => {
    let buffered = '';
    const onData = (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      const end = buffered.indexOf('\n');
      if (end === -1 && buffered.length <= MAX_REQUEST_BYTES) return;
      socket.off('data', onData);
      try {
        const parsed = end === -1 ? null : (JSON.parse(buffered.slice(0, end)) as unknown);
        resolve(parsed && typeof parsed === 'object' ? (parsed as Request) : null);
      } catch {
        resolve(null);
      }
    };
    socket.on('data', onData);
    socket.once('close', () => resolve(null));
  });
}

function tokenMatches(given: unknown, expected: string): boolean {
  if (typeof given !== 'string') return false;
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}
