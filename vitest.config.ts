import { BaseSequencer, type TestSpecification } from 'vitest/node';
import { defineConfig } from 'vitest/config';

/**
 * The files that take longest, each mostly in a process of its own (`npm start` seeding a year of books into the
 * embedded database, the CLI): started first, so that they run beside the many short files rather than after them.
 */
const LONGEST = ['apps/api/src/server.test.ts', 'apps/api/src/shutdown.test.ts', 'apps/cli/src/cli.test.ts'];

class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rank = (file: TestSpecification) => {
      const at = LONGEST.findIndex((path) => file.moduleId.endsWith(path));
      return at === -1 ? LONGEST.length : at;
    };
    // A stable sort: the rest keep vitest's order.
    return (await super.sort(files)).sort((a, b) => rank(a) - rank(b));
  }
}

export default defineConfig({
  test: {
    // The reliability suite runs on its own: npm run test:reliability (vitest.reliability.config.ts).
    exclude: ['test/reliability/**', 'node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Each file has its own database, and much of a file's time is waiting on it or on a process it started: two at
    // once keep both cores of a small machine busy where vitest's default (cores - 1) would leave one idle.
    // TEST_WORKERS overrides. The files that start `npm start` (server.test.ts, shutdown.test.ts) run among the others:
    // only shutdown.test.ts serves the sandbox bank on its fixed port (4010).
    include: ['apps/*/src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
    maxWorkers: Number(process.env.TEST_WORKERS ?? 2),
    // A worker runs its files one after another in one module graph instead of loading the service's modules again
    // for each (half the suite's CPU). Files share no state but the modules': each has its own database and builds its
    // own app, and nothing here mocks a module or changes the environment.
    isolate: false,
    sequence: { sequencer: LongestFirst },
  },
});
