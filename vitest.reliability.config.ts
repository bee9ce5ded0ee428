import { defineConfig } from 'vitest/config';

/** npm run test:reliability: faults the service must survive, run apart from `npm test` (and by `.ci/run`). */
export default defineConfig({
  test: {
    include: ['test/reliability/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    // One at a time: each part loads the machine on purpose.
    fileParallelism: false,
  },
});
