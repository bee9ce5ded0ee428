import { type ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';

export const root = join(import.meta.dirname, '..', '..');

export interface RunningServer {
  child: ChildProcess;
  /** http://127.0.0.1:<port> */
  base: string;
  /** Sends the signal and resolves once the process has exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

/**
 * Starts the API as its own process on a Postgres database (`node` with `args`, by default the sources through tsx)
 * on a free port, and resolves once it listens.
 */
export async function startServer(
  databaseUrl: string,
  options: { args?: string[]; env?: Record<string, string> } = {},
): Promise<RunningServer> {
  const child = spawn(
    process.execPath,
    options.args ?? ['--import', 'tsx', join(root, 'apps', 'api', 'src', 'server.ts')],
    {
      cwd: root,
      env: {
        ...process.env,
        DATABASE_URL: databaseUrl,
        PORT: '0',
        LOG_LEVEL: 'warn',
        RATE_LIMIT_MAX: '100000000',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /API:\s+(http:\/\/\S+)\/api\/v1/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
    child.once('exit', (code) => reject(new Error(`server exited (${code}): ${out}`)));
  });
  return {
    child,
    base,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill(signal);
      await exited;
    },
  };
}
