import { defineConfig } from 'vitest/config';

/**
 * Files that start `npm start` itself: its sandbox aggregator listens on a fixed port (4010), so two of them at once
 * would answer each other's banks. They run one at a time, after the rest.
 */
const ONE_AT_A_TIME = ['apps/api/src/server.test.ts', 'apps/api/src/shutdown.test.ts'];

export default defineConfig({
  test: {
    // The reliability suite runs on its own: npm run test:reliability (vitest.reliability.config.ts).
    exclude: ['test/reliability/**', 'node_modules/**'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          name: 'files',
          include: ['apps/*/src/**/*.test.ts', 'packages/*/src/**/*.test.ts', 'test/**/*.test.ts'],
          exclude: ['test/reliability/**', 'node_modules/**', ...ONE_AT_A_TIME],
          // Each file has its own database, and most of a file's time is waiting on it: two at once keep both cores
          // of a small machine busy where vitest's default (cores - 1) would leave one idle. TEST_WORKERS overrides.
          maxWorkers: Number(process.env.TEST_WORKERS ?? 2),
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'processes',
          include: ONE_AT_A_TIME,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
