import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/helpers/globalSetup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // Two cores: integration files each hold a PGlite instance or a pool; more forks only contend.
    maxWorkers: 2,
  },
});
