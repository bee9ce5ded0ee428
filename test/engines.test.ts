import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '..');
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } };
const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { engines?: { node?: string } | string[]; dev?: boolean; optional?: boolean }>;
};

describe('declared Node versions', () => {
  it('are ones every installed dependency supports', () => {
    const ours = manifest.engines.node;
    const unsatisfied = Object.entries(lock.packages)
      .filter(([path]) => path.startsWith('node_modules/'))
      .flatMap(([path, pkg]) => {
        const theirs = Array.isArray(pkg.engines) ? undefined : pkg.engines?.node;
        return theirs && !semver.subset(ours, theirs)
          ? [`${path.slice('node_modules/'.length)} needs node ${theirs}`]
          : [];
      });
    expect(unsatisfied).toEqual([]);
  });

  it('include the Node running the tests', () => {
    expect(semver.satisfies(process.version, manifest.engines.node)).toBe(true);
  });
});
