import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The browser-safe core.
    entry: { index: 'src/index.ts' },
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'es2022',
    platform: 'neutral',
  },
  {
    // The Node-only adapters and the command.
    entry: { server: 'src/server/index.ts', cli: 'src/cli.ts' },
    format: ['esm', 'cjs'],
    dts: { entry: { server: 'src/server/index.ts' } },
    sourcemap: true,
    target: 'node20',
    platform: 'node',
    // The adapters use the core entry itself, so one copy of the core is loaded.
    external: ['peg-limits'],
  },
]);
