import { resolve } from 'node:path';
import { defineConfig, type Options } from 'tsup';

type Plugin = NonNullable<Options['esbuildPlugins']>[number];

// The adapters import the plumbing from src/internal.ts. In their bundles that import stays
// an import of the internal entry built beside them (dist/internal.js or .cjs), so that the
// server, the command and `peg-limits` load one copy of the core.
const INTERNAL = resolve('src/internal.ts');
const internalEntry: Plugin = {
  name: 'internal-entry',
  setup(build) {
    const file = build.initialOptions.format === 'cjs' ? './internal.cjs' : './internal.js';
    build.onResolve({ filter: /internal\.js$/ }, (args) =>
      resolve(args.resolveDir, args.path.replace(/\.js$/, '.ts')) === INTERNAL
        ? { path: file, external: true }
        : undefined,
    );
  },
};

// The Node-only builds: the adapters use the core entry itself, and the internal one, so one
// copy of the core is loaded.
const nodeBuild: Options = {
  dts: { entry: { server: 'src/server/index.ts' } },
  sourcemap: true,
  target: 'node20',
  platform: 'node',
  external: ['peg-limits'],
  esbuildPlugins: [internalEntry],
};

export default defineConfig([
  {
    // The browser-safe core as ES modules, one file a module as in src/: a page's bundler
    // takes only the modules it imports (package.json says "sideEffects": false), so a page
    // that imports the client does not carry the core, the dashboard or the OpenAPI document.
    // The internal entry re-exports the same modules: one copy of each is ever loaded.
    entry: [
      'src/index.ts',
      'src/internal.ts',
      'src/core/**/*.ts',
      'src/stacks/**/*.ts',
      'src/http/**/*.ts',
      'src/client/**/*.ts',
    ],
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
    // The same two entries as CommonJS, for require(), sharing one chunk of the core.
    entry: { index: 'src/index.ts', internal: 'src/internal.ts' },
    format: ['cjs'],
    splitting: true,
    dts: { entry: { index: 'src/index.ts' } },
    sourcemap: true,
    target: 'es2022',
    platform: 'neutral',
  },
  {
    // The Node-only adapters as CommonJS, for require().
    ...nodeBuild,
    entry: { server: 'src/server/index.ts' },
    format: ['cjs'],
  },
  {
    // The Node-only adapters, the command (an unlisted entry: it may exit the process) and
    // the binary, as ES modules sharing their chunks.
    ...nodeBuild,
    entry: { server: 'src/server/index.ts', command: 'src/command.ts', cli: 'src/cli.ts' },
    format: ['esm'],
  },
]);
