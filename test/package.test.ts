import { execFileSync } from 'node:child_process';
import { readdirSync, writeFileSync } from 'node:fs';
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
