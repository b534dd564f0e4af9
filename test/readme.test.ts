import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ROUTES } from '../src/http/routes.js';
import {
  applyAll,
  checkWithdrawal,
  createLimitsState,
  getLimits,
  whenAvailable,
} from '../src/index.js';
import { DEFAULT_SERVER_CONFIG, stateFromConfig } from '../src/server/cli/config.js';
import type { RunningServer } from '../src/server/node-http/serve.js';
import { CURL_AVAILABLE } from './support/clients.js';
import { closeServers, serveInProcess } from './support/in-process.js';

afterAll(closeServers);

test('the README example gives the results it shows', () => {
  let state = createLimitsState({
    limits: {
      perWithdrawalCap: 150_000_000n,
      rollingWithdrawalBlocks: 144n,
      rollingWithdrawalCap: 500_000_000n,
    },
  });
  const r = applyAll(state, [
    { type: 'blockConnected', height: 870_000 },
    {
      type: 'withdrawalRequested',
      id: 'tx1',
      account: 'alice',
      amount: 120_000_000n,
      height: 870_000,
    },
  ]);
  if (!r.ok) throw r.error;
  state = r.state;
  expect(getLimits(state).availableToWithdraw).toBe(380_000_000n);
  expect(checkWithdrawal(state, { account: 'bob', amount: 200_000_000n })).toEqual({
    ok: false,
    reason: 'above_per_withdrawal_cap',
    limit: 150_000_000n,
    availableAt: null,
  });
  expect(whenAvailable(state, { account: 'bob', amount: 150_000_000n })).toBe(870_000);
});

test('the README throttle example gives the results it shows', async () => {
  const { apply, generateThrottleSecret, hashThrottleSecret, startThrottle } = await import(
    '../src/index.js'
  );
  const secret = generateThrottleSecret();
  let state = createLimitsState();
  const r = apply(state, {
    type: 'throttleKeyAdded',
    name: 'ops-1',
    secretHash: hashThrottleSecret(secret),
  });
  if (r.ok) state = r.state;
  const t = startThrottle(state, { name: 'ops-1', secret });
  expect(t.ok).toBe(true);
  if (t.ok) {
    expect(t.limits.perWithdrawalCap).toBe(150_000_000n);
    expect(t.limits.throttleModeInitiator).toBe('ops-1');
  }
});

describe('the README stays a ten-minute read that matches the code', () => {
  const readme = readFileSync('README.md', 'utf8');

  test('is at most 300 lines', () => {
    expect(readme.trimEnd().split('\n').length).toBeLessThanOrEqual(300);
  });

  test('reads in order: install, the example, the two commands, the API, the service, the semantics, performance', () => {
    const sections = [...readme.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(sections).toEqual([
      'Install',
      'Example',
      'The two commands',
      'API',
      'The service',
      'Semantics',
      'Performance',
      'More',
    ]);
  });

  test('its error table names every code the library and the service can answer with', () => {
    const codes = (file: string, type: string) => {
      const text = readFileSync(file, 'utf8');
      const union = text.slice(text.indexOf(`export type ${type} =`));
      return [...union.slice(0, union.indexOf(';')).matchAll(/'([a-z_]+)'/g)].map((m) => m[1]!);
    };
    const table = readme.slice(readme.indexOf('### Error codes'), readme.indexOf('## More'));
    const all = [
      ...codes('src/core/errors.ts', 'LimitsErrorCode'),
      ...codes('src/http/answers.ts', 'HttpErrorCode'),
      'window_not_found',
    ];
    expect(all.length).toBeGreaterThan(35);
    expect(all.filter((c) => !table.includes(`\`${c}\``))).toEqual([]);
  });

  test('its HTTP table has a row for every route of the route table', () => {
    const table = readme.slice(readme.indexOf('## The service'), readme.indexOf('## Semantics'));
    const rows = ROUTES.map((r) => `\`${r.method} ${r.pattern}`);
    expect(rows.filter((row) => !table.includes(row))).toEqual([]);
  });
});

if (!CURL_AVAILABLE) console.warn('SKIPPING the README curl lines: no curl (apt-get install curl)');

describe.skipIf(!CURL_AVAILABLE)('the README curl lines', () => {
  let server: RunningServer;
  beforeAll(async () => {
    const initial = stateFromConfig(DEFAULT_SERVER_CONFIG, 'embedded configuration');
    server = await serveInProcess({ initial });
  });
  afterAll(() => server?.close());

  const readme = readFileSync('README.md', 'utf8');
  const block = readme.slice(
    readme.indexOf('```sh\ncurl'),
    readme.indexOf('```', readme.indexOf('```sh\ncurl') + 5),
  );
  const lines = block.split('\n').filter((l) => l.startsWith('curl '));

  test('are there', () => {
    expect(lines.length).toBeGreaterThanOrEqual(5);
  });

  test.each(lines)('%s', async (line) => {
    const [command, comment] = line.split(/\s+# /);
    const expected = /^(\d{3})/.exec(comment ?? '')?.[1];
    expect(expected, 'each line says the status it gives').toBeDefined();
    const host = server.url.replace('http://', '');
    // Run apart from this process, which serves the requests.
    const { stdout: out } = await promisify(execFile)('bash', [
      '-c',
      command!.replaceAll('localhost:8080', host),
    ]);
    expect(out.split(' ')[1]).toBe(expected);
    // What the comment names after the status is in the answer.
    const code = /[a-z]+_[a-z_]+/.exec(comment!.slice(4))?.[0];
    if (code !== undefined) expect(out).toContain(code);
    if (comment!.includes('Allow: ')) expect(out.toLowerCase()).toContain('allow: get, head');
  });
});
