// Compiles the server, the webhook worker and the CLI to plain JavaScript under dist/, so production runs
// `node dist/server.js` with no TypeScript toolchain. The workspace packages (@firm/*) are bundled in; every
// other dependency stays an import of node_modules (production dependencies only).
import { readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const root = new URL('..', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', root), 'utf8'));

const entries = {
  server: 'apps/api/src/server.ts',
  worker: 'apps/api/src/worker.ts',
  cli: 'apps/cli/src/bin.ts',
};
// BUILD_OUTDIR and BUILD_ENTRIES (comma-separated names above) build part of it elsewhere, as tests do; the output
// directory must sit inside the repository, where node_modules is found.
const outdir = process.env.BUILD_OUTDIR || 'dist';
const names = process.env.BUILD_ENTRIES?.split(',') ?? Object.keys(entries);
rmSync(new URL(outdir, root), { recursive: true, force: true });
await build({
  absWorkingDir: new URL('.', root).pathname,
  entryPoints: Object.fromEntries(names.map((name) => [name, entries[name]])),
  outdir,
  bundle: true,
  splitting: true,
  platform: 'node',
  format: 'esm',
  target: `node${pkg.engines.node.replace(/[^0-9.]/g, '').split('.')[0]}`,
  external: Object.keys(pkg.dependencies),
  sourcemap: true,
  sourcesContent: false,
  logLevel: 'warning',
});
process.stdout.write(`built ${names.map((name) => `${outdir}/${name}.js`).join(', ')}\n`);
