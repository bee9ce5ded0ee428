import { defineConfig } from 'vitest/config';

/** The parts that measure the server (its memory, its health while it draws exports): alone on the machine. */
const MEASURING = ['test/reliability/memory.test.ts', 'test/reliability/exports.test.ts'];

/** npm run test:reliability: faults the service must survive, run apart from `npm test` (and by `.ci/run`). */
export default defineConfig({
  test: {
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    pool: 'forks',
    projects: [
      {
        extends: true,
        test: {
          // Faults and hostile callers, judged by what is answered and stored, not by how fast: two at a time.
          name: 'faults',
          include: ['test/reliability/**/*.test.ts'],
          exclude: MEASURING,
          maxWorkers: 2,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          // Then the load tests, one at a time with nothing else running: each loads the machine on purpose.
          name: 'load',
          include: MEASURING,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
