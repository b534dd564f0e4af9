import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: { alias: { 'peg-limits': fileURLToPath(new URL('./src/index.ts', import.meta.url)) } },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    globalSetup: ['test/global-setup.ts'],
    benchmark: { include: ['bench/**/*.bench.ts'] },
  },
});
