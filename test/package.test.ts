import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { beforeAll, describe, expect, test } from 'vitest';
import { killGroup, spawnServer, tempDir } from './support/proc.js';

// The package as a consumer sees it: packed, installed into an empty project, imported.
let project = '';

beforeAll(() => {
  const packDir = tempDir();
  execFileSync('npm', ['pack', '--pack-destination', packDir, '--silent'], { stdio: 'ignore' });
  const tarball = join(packDir, readdirSync(packDir).find((f) => f.endsWith('.tgz'))!);
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

  test('the server entry shares the core: a state from one is served by the other', () => {
    const esm = `import { createLimitsState, LimitsError } from 'peg-limits'; import { stateFromConfig } from 'peg-limits/server';
      try { stateFromConfig({ limits: { pegCap: -1n } }); } catch (e) { console.log(e instanceof LimitsError, e.code); }`;
    expect(node(['--input-type=module', '-e', esm]).trim()).toBe('true invalid_amount');
    const cjs = `const { LimitsError } = require('peg-limits'); const { stateFromConfig } = require('peg-limits/server');
      try { stateFromConfig({ limits: { pegCap: -1n } }); } catch (e) { console.log(e instanceof LimitsError, e.code); }`;
    expect(node(['-e', cjs]).trim()).toBe('true invalid_amount');
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
      for (const internal of ['HashLog', 'interface Book', 'SumNode', 'Generation', 'PMap', 'Ring'])
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
