import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');

/**
 * The node flags the compiled server ships with: those of `npm run start:prod` (package.json), which the image's
 * NODE_OPTIONS and CMD repeat (test/packaging.test.ts holds them equal), so what is measured is what runs.
 */
export function shippedNodeArgs(): string[] {
  const scripts = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { scripts: Record<string, string> })
    .scripts;
  const flags = /^exec node ((?:--\S+\s+)*)dist\/server\.js$/.exec(scripts['start:prod'] ?? '')?.[1];
  if (flags === undefined) throw new Error('start:prod is not `exec node <flags> dist/server.js`');
  return flags.split(/\s+/).filter(Boolean);
}

/** How much of a process's output is kept for a failure's report. */
const OUTPUT_KEPT = 64 * 1024;

export interface RunningServer {
  child: ChildProcess;
  /** http://127.0.0.1:<port> */
  base: string;
  /** The end of what the process wrote to stdout (and to stderr when started quiet). */
  output(): string;
  /** Sends the signal and resolves once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

export interface ProcessOptions {
  args?: string[];
  env?: Record<string, string>;
  /** Keep stderr with the output instead of passing it through: many processes at once would drown the test's. */
  quiet?: boolean;
}

/**
 * Starts the API as its own process on a Postgres database (`node` with `args`, by default the sources through tsx)
 * on a free port, and resolves once it listens.
 */
export function startServer(databaseUrl: string, options: ProcessOptions = {}): Promise<RunningServer> {
  return startProcess(
    databaseUrl,
    options.args ?? ['--import', 'tsx', join(root, 'apps', 'api', 'src', 'server.ts')],
    options,
    (out) => /API:\s+(http:\/\/\S+)\/api\/v1/.exec(out)?.[1],
  );
}

/** Starts the background worker (`node` with `args`) on a Postgres database, and resolves once its jobs run. */
export function startWorker(databaseUrl: string, args: string[], options: ProcessOptions = {}): Promise<RunningServer> {
  return startProcess(databaseUrl, args, options, (out) => (/worker started:/.test(out) ? '' : undefined));
}

async function startProcess(
  databaseUrl: string,
  args: string[],
  options: ProcessOptions,
  ready: (output: string) => string | undefined,
): Promise<RunningServer> {
  const child = spawn(process.execPath, args, {
    cwd: root,
    env: {
      ...process.env,
      DATABASE_URL: databaseUrl,
      PORT: '0',
      LOG_LEVEL: 'warn',
      RATE_LIMIT_MAX: '100000000',
      ...options.env,
    },
    stdio: ['ignore', 'pipe', options.quiet ? 'pipe' : 'inherit'],
  });
  let out = '';
  const keep = (chunk: Buffer) => {
    out = (out + chunk.toString()).slice(-OUTPUT_KEPT);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  const base = await new Promise<string>((resolve, reject) => {
    child.stdout?.on('data', () => {
      const found = ready(out);
      if (found !== undefined) resolve(found);
    });
    child.once('exit', (code) => reject(new Error(`process exited (${code}): ${out}`)));
  });
  return {
    child,
    base,
    output: () => out,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
  };
}
