import { execFile } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { type RunningServer, root, shippedNodeArgs, startServer } from '../test/reliability/server';

const SERVER = join(root, 'dist', 'server.js');

/** The newest modification time of the TypeScript sources under `dir` (0 when it has none). */
function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Whether dist/server.js exists and is newer than every source of the apps and packages it is built from. */
function distIsFresh(): boolean {
  const built = statSync(SERVER, { throwIfNoEntry: false })?.mtimeMs ?? 0;
  const sources = ['apps', 'packages'].flatMap((top) =>
    readdirSync(join(root, top)).map((name) => join(root, top, name, 'src')),
  );
  return sources.every((src) => !statSync(src, { throwIfNoEntry: false }) || newestSource(src) < built);
}

/**
 * Starts the server as it ships: `npm run build`'s dist/server.js run with `start:prod`'s node flags (source maps,
 * the 192 MB heap cap, 8 MB semispaces), on a free port. The build runs first unless dist/ is newer than every source, so `npm run bench`
 * builds once and its later scripts reuse it, and one script run alone still measures the current code.
 */
export async function startCompiledServer(
  databaseUrl: string,
  env: Record<string, string> = {},
): Promise<RunningServer> {
  if (!distIsFresh()) await promisify(execFile)(process.execPath, [join(root, 'scripts', 'build.mjs')], { cwd: root });
  return startServer(databaseUrl, { args: [...shippedNodeArgs(), SERVER], env });
}
