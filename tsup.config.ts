import { defineConfig } from 'tsup';

export default defineConfig([
  {
    // The browser-safe core as ES modules, one file a module as in src/: a page's bundler
    // takes only the modules it imports (package.json says "sideEffects": false), so a page
    // that imports the client does not carry the core, the dashboard or the OpenAPI document.
    entry: ['src/index.ts', 'src/core/**/*.ts', 'src/http/**/*.ts'],
    outDir: 'dist',
    format: ['esm'],
    bundle: false,
    dts: { entry: { index: 'src/index.ts' } },
    sourcemap: true,
    clean: true,
    target: 'es2022',
    platform: 'neutral',
  },
  {
    // The same entry as one CommonJS file, for require().
    entry: { index: 'src/index.ts' },
    format: ['cjs'],
    dts: { entry: { index: 'src/index.ts' } },
    sourcemap: true,
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
