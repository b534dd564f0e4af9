import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { killGroup, runToEnd, spawnServer, tempDir } from './support/proc.js';

// The package as a consumer sees it: packed, installed into an empty project, imported.
let project = '';
let tarball = '';
// The version of pg the project is tested with (its lockfile's).
const PG_VERSION = JSON.parse(readFileSync('node_modules/pg/package.json', 'utf8'))
  .version as string;

beforeAll(() => {
  const packDir = tempDir();
  execFileSync('npm', ['pack', '--pack-destination', packDir, '--silent'], { stdio: 'ignore' });
  tarball = join(packDir, readdirSync(packDir).find((f) => f.endsWith('.tgz'))!);
  project = tempDir();
  writeFileSync(join(project, 'package.json'), '{"name":"consumer","private":true}');
  execFileSync('npm', ['install', '--silent', '--no-audit', '--no-fund', resolve(tarball)], {
    cwd: project,
    stdio: 'ignore',
  });
}, 180_000);

function node(args: string[], input = ''): string {
  return execFileSync('node', args, { cwd: project, input, encoding: 'utf8' });
}

const SCRIPT = `
  const s = createLimitsState({ limits: { pegCap: 9223372036854775807n } });
  const r = handleRequest(s, { method: 'GET', path: '/limits' });
  console.log(r.response.status, JSON.stringify(JSON.parse(r.response.body).accountCaps), r.response.body.includes('9223372036854775807'));
`;

describe('the packed package', () => {
  test('imports as ESM', () => {
    const out = node([
      '--input-type=module',
      '-e',
      `import { createLimitsState, handleRequest } from 'peg-limits';${SCRIPT}`,
    ]);
    expect(out.trim()).toBe('200 {} true');
  });

  test('requires as CJS', () => {
    const out = node([
      '-e',
      `const { createLimitsState, handleRequest } = require('peg-limits');${SCRIPT}`,
    ]);
    expect(out.trim()).toBe('200 {} true');
  });

  test('the server entry shares the core: the adapters carry no copy of it, and one is loaded', () => {
    const dist = join(project, 'node_modules/peg-limits/dist');
    const copies = readdirSync(dist).filter(
      (f) =>
        /\.c?js$/.test(f) &&
        /class LimitsError\b|LimitsError = class\b/.test(readFileSync(join(dist, f), 'utf8')),
    );
    // The ES modules keep one file a module (dist/core/errors.js); CommonJS has one shared chunk.
    expect(copies).toHaveLength(1);
    expect(copies[0]).toMatch(/^chunk-.*\.cjs$/);
    const esm = `import { createLimitsState, getLimits } from 'peg-limits'; import { openDataLog } from 'peg-limits/server';
      const log = await openDataLog({ dir: process.argv[1], initial: createLimitsState({ limits: { pegCap: 5n } }) });
      console.log(String(getLimits(log.state).pegCap)); await log.close();`;
    expect(node(['--input-type=module', '-e', esm, tempDir()]).trim()).toBe('5');
    // The EventLog contract's errors are the core's own classes in both entries: a log
    // written elsewhere signals a conflict the service knows.
    const same = `import * as core from 'peg-limits'; import * as server from 'peg-limits/server';
      console.log([core.LogConflict === server.LogConflict, core.LogBusy === server.LogBusy, core.LogUnavailable === server.LogUnavailable].join());`;
    expect(node(['--input-type=module', '-e', same]).trim()).toBe('true,true,true');
    const cjs = `require('peg-limits/server'); require('peg-limits');
      console.log(Object.keys(require.cache).map((f) => f.replace(/.*\\//, '')).filter((f) => f.endsWith('.cjs')).sort().join(' '));`;
    expect(node(['-e', cjs]).trim()).toMatch(
      /^chunk-\S+\.cjs index\.cjs internal\.cjs server\.cjs$/,
    );
  });

  // What each entry exports, name by name: anything more is a promise nobody meant to make.
  const PUBLIC = [
    'DEFAULT_CHAIN_BOUNDS',
    'DEFAULT_HISTORY_BLOCKS',
    'DEFAULT_RESERVES_MAX_AGE',
    'DEFAULT_THROTTLE_PROFILE',
    'LimitsError',
    'LogBusy',
    'LogConflict',
    'LogUnavailable',
    'MAX_AMOUNT',
    'MIN_AMOUNT',
    'NO_WAITING',
    'PegLimitsError',
    'SCOPES',
    'SNAPSHOT_FORMAT',
    'SNAPSHOT_VERSION',
    'admitDeposits',
    'admitWithdrawals',
    'apply',
    'applyAll',
    'chainView',
    'checkChainBounds',
    'checkDeposit',
    'checkLooseningPolicy',
    'checkWithdrawal',
    'createFetchHandler',
    'createLimitsClient',
    'createLimitsState',
    'createService',
    'decideBatch',
    'decodeJson',
    'effectiveLimits',
    'encodeJson',
    'eventFromJson',
    'eventsFromJson',
    'formatAmount',
    'generateOperatorToken',
    'generateThrottleSecret',
    'getAccountLimits',
    'getLimits',
    'handleRequest',
    'hashOperatorToken',
    'hashThrottleSecret',
    'looseningPolicyFromJson',
    'looseningWaits',
    'loosenings',
    'loosens',
    'mintWindowOf',
    'openApiDocument',
    'parseAmount',
    'pegIntegrity',
    'pendingChanges',
    'scopeOf',
    'scopesOf',
    'snapshotOf',
    'startThrottle',
    'stateFromSnapshot',
    'tryDecodeJson',
    'whenAvailable',
    'whenMintable',
    'windowOf',
  ];
  const SERVER = [
    'DEFAULT_SERVER_LIMITS',
    'FlushError',
    'LogBusy',
    'LogConflict',
    'LogUnavailable',
    'PegLimitsError',
    'PgLogError',
    'StoreError',
    'openDataLog',
    'openPgLog',
    'startServer',
  ];

  test.each([
    ['peg-limits', PUBLIC],
    ['peg-limits/server', SERVER],
  ])('%s exports exactly its listed names, as ESM and as CJS', (entry, names) => {
    const esm = `const m = await import('${entry}'); console.log(JSON.stringify(Object.keys(m).sort()));`;
    expect(JSON.parse(node(['--input-type=module', '-e', esm]))).toEqual([...names].sort());
    const cjs = `console.log(JSON.stringify(Object.keys(require('${entry}')).sort()))`;
    expect(JSON.parse(node(['-e', cjs]))).toEqual([...names].sort());
  });

  test.each([
    'peg-limits/dist/internal.js',
    'peg-limits/dist/internal.cjs',
    'peg-limits/dist/command.js',
    'peg-limits/dist/http/routes.js',
    'peg-limits/internal',
  ])('the plumbing cannot be imported: %s', (path) => {
    const esm = `import('${path}').then(() => console.log('imported'), (e) => console.log(e.code));`;
    expect(node(['--input-type=module', '-e', esm]).trim()).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
    const cjs = `try { require('${path}'); console.log('required'); } catch (e) { console.log(e.code); }`;
    expect(node(['-e', cjs]).trim()).toBe('ERR_PACKAGE_PATH_NOT_EXPORTED');
  });

  test('ships the OpenAPI document', () => {
    const out = node(['-e', `console.log(require('peg-limits/openapi.json').openapi)`]);
    expect(out.trim()).toBe('3.1.0');
  });

  test('installs the peg-limits command', async () => {
    const p = await spawnServer(join(project, 'node_modules/.bin/peg-limits'), [
      'serve',
      '--port',
      '0',
      '--data',
      tempDir(),
      '--quiet',
    ]);
    try {
      const r = await fetch(`${p.url}/limits`);
      expect(r.status).toBe(200);
    } finally {
      killGroup(p);
    }
  });
});

describe('what a page pays for', () => {
  // Bundled from the installed package as a page's bundler does it (esbuild, ESM, browser).
  async function bundle(names: string): Promise<string> {
    const { build } = await import('esbuild');
    const r = await build({
      stdin: { contents: `export { ${names} } from 'peg-limits';`, resolveDir: project },
      bundle: true,
      format: 'esm',
      platform: 'browser',
      minify: true,
      write: false,
    });
    return r.outputFiles[0]!.text;
  }
  const DASHBOARD = /<!doctype html>/i;
  const OPENAPI = /3\.1\.0/;

  test.each([
    'createLimitsClient',
    'createLimitsState, applyAll, getLimits, checkWithdrawal, whenAvailable',
    'createLimitsClient, checkWithdrawal, formatAmount, parseAmount',
  ])(
    'a bundle of { %s } carries neither the dashboard page nor the OpenAPI document',
    async (names) => {
      const code = await bundle(names);
      expect(code).not.toMatch(DASHBOARD);
      expect(code).not.toMatch(OPENAPI);
    },
  );

  test('a bundle that serves the interface (handleRequest) carries both', async () => {
    const code = await bundle('handleRequest');
    expect(code).toMatch(DASHBOARD);
    expect(code).toMatch(OPENAPI);
  });
});

describe('the published types', () => {
  const CONSUMER = `
    import { applyAll, createLimitsState, getLimits, type LimitsState } from 'peg-limits';
    const s: LimitsState = createLimitsState();
    const r = applyAll(s, [{ type: 'blockConnected', height: 1 }]);
    if (r.ok) getLimits(r.state).availableToWithdraw;
    // @ts-expect-error: a state's fields are internal
    s.generations;
    // @ts-expect-error: a state's fields are internal
    s.tip;
    // @ts-expect-error: no value made elsewhere is a state
    const fake: LimitsState = {};
    export { fake };
  `;

  test('declare LimitsState opaque, with none of its internals', () => {
    for (const file of ['index.d.ts', 'index.d.cts']) {
      const dts = readFileSync(join(project, 'node_modules/peg-limits/dist', file), 'utf8');
      for (const internal of [
        'HashLog',
        'interface Book',
        'SumNode',
        'Generation',
        'PMap',
        'TreeShape',
      ])
        expect(dts, `${file}: ${internal}`).not.toContain(internal);
      expect(dts).toMatch(/interface LimitsState \{[^}]*readonly \[opaque\]: 'LimitsState';\s*\}/);
    }
  });

  test('a consumer compiles against them, as ESM and as CJS, and cannot reach inside a state', () => {
    writeFileSync(join(project, 'consumer.mts'), CONSUMER);
    writeFileSync(join(project, 'consumer.cts'), CONSUMER);
    // A misuse that compiled would leave its @ts-expect-error unused: an error.
    execFileSync(
      'node',
      [
        resolve('node_modules/typescript/bin/tsc'),
        '--noEmit',
        '--strict',
        '--target',
        'es2022',
        '--module',
        'nodenext',
        '--moduleResolution',
        'nodenext',
        '--lib',
        'es2022,dom',
        'consumer.mts',
        'consumer.cts',
      ],
      { cwd: project, encoding: 'utf8' },
    );
  });
});

describe('the drivers are optional peers', () => {
  const STORE = 'postgres://nobody@127.0.0.1:1/none';

  test('a plain install brings no driver, and the command on a data folder runs without one', async () => {
    const manifest = JSON.parse(
      readFileSync(join(project, 'node_modules/peg-limits/package.json'), 'utf8'),
    );
    expect(manifest.dependencies.pg).toBeUndefined();
    expect(manifest.peerDependencies.pg).toBeDefined();
    expect(manifest.peerDependenciesMeta.pg).toEqual({ optional: true });
    expect(manifest.peerDependenciesMeta['prom-client']).toEqual({ optional: true });
    expect(manifest.peerDependenciesMeta.pino).toEqual({ optional: true });
    expect(manifest.peerDependenciesMeta['@stacks/transactions']).toEqual({ optional: true });
    expect(manifest.dependencies['prom-client']).toBeUndefined();
    expect(() => readFileSync(join(project, 'node_modules/pg/package.json'))).toThrow();
    // The server entry loads without it.
    const out = node([
      '--input-type=module',
      '-e',
      `import { startServer, openDataLog } from 'peg-limits/server'; console.log(typeof startServer, typeof openDataLog);`,
    ]);
    expect(out.trim()).toBe('function function');
  });

  test('without pg, --store stops with exit code 2 and names the package to install', async () => {
    const r = await runToEnd(join(project, 'node_modules/.bin/peg-limits'), [
      'serve',
      '--port',
      '0',
      '--store',
      STORE,
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/needs the package "pg".*npm install pg/);
    const json = await runToEnd(join(project, 'node_modules/.bin/peg-limits'), [
      'serve',
      '--port',
      '0',
      '--log-format',
      'json',
    ]);
    expect(json.code).toBe(2);
    expect(json.stderr).toMatch(/needs the package "pino".*npm install pino/);
    const observer = await runToEnd(join(project, 'node_modules/.bin/peg-limits'), [
      'serve',
      '--port',
      '0',
      '--data',
      tempDir(),
      '--stacks-observer',
      '127.0.0.1:0',
    ]);
    expect(observer.code).toBe(2);
    expect(observer.stderr).toMatch(
      /--stacks-observer needs the package "@stacks\/transactions".*npm install @stacks\/transactions/,
    );
  });

  test('the command installed globally (npm install -g) serves, and loads the pg installed beside it', async () => {
    const prefix = tempDir();
    const install = (what: string[]) =>
      execFileSync(
        'npm',
        ['install', '-g', '--prefix', prefix, '--silent', '--no-audit', '--no-fund', ...what],
        { stdio: 'ignore' },
      );
    install([resolve(tarball)]);
    const bin = join(prefix, 'bin/peg-limits');
    const p = await spawnServer(bin, ['serve', '--port', '0', '--data', tempDir(), '--quiet']);
    try {
      expect((await fetch(`${p.url}/limits`)).status).toBe(200);
      // No prom-client either: it serves without metrics, and says what to install.
      expect((await fetch(`${p.url}/metrics`)).status).toBe(404);
      expect(p.stderr).toMatch(/metrics need the package "prom-client".*--no-metrics/);
    } finally {
      killGroup(p);
    }
    const without = await runToEnd(bin, ['serve', '--port', '0', '--store', STORE]);
    expect(without.stderr).toMatch(/npm install -g pg/);
    install([`pg@${PG_VERSION}`, '--prefer-offline']);
    // Now the driver is found: the error is about the database, not the package.
    const withPg = await runToEnd(bin, [
      'serve',
      '--port',
      '0',
      '--store',
      STORE,
      '--connect-timeout',
      '0.2',
    ]);
    expect(withPg.code).toBe(2);
    expect(withPg.stderr).toMatch(/cannot reach the database/);
    expect(withPg.stderr).not.toMatch(/needs the package "pg"/);
  }, 180_000);

  test('installed beside pg in a project, peg-limits/server loads it', () => {
    execFileSync(
      'npm',
      ['install', '--silent', '--no-audit', '--no-fund', '--prefer-offline', `pg@${PG_VERSION}`],
      { cwd: project, stdio: 'ignore' },
    );
    const out = node([
      '--input-type=module',
      '-e',
      `import { openPgLog } from 'peg-limits/server'; import { createLimitsState } from 'peg-limits';
       openPgLog({ url: '${STORE}', initial: createLimitsState(), connectTimeoutMs: 100 }).catch((e) => console.log(e.name, e.message));`,
    ]);
    expect(out).toMatch(/^PgLogError cannot reach the database/);
  }, 180_000);
});
