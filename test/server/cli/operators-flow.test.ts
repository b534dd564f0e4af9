// Operators with least privilege, chain bounds and loosening that waits, through
// `peg-limits serve` as a real process: a feeder and two governors walk the whole flow.
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, test } from 'vitest';
import {
  decodeJson,
  generateOperatorToken,
  hashOperatorToken,
  hashThrottleSecret,
} from '../../../src/index.js';
import { serverConfigFrom } from '../../../src/server/cli/config.js';
import {
  CLI,
  killGroup,
  type Proc,
  runToEnd,
  startServe,
  tempDir,
  waitFor,
} from '../../support/proc.js';

const FEEDER = generateOperatorToken();
const GOV1 = generateOperatorToken();
const GOV2 = generateOperatorToken();
const SECRET = 'a-throttle-secret-of-enough-length';

const procs: Proc[] = [];
afterEach(() => {
  for (const p of procs.splice(0)) killGroup(p);
});

async function serve(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Proc> {
  const p = await startServe(args, env);
  procs.push(p);
  return p;
}

interface Answer {
  status: number;
  json: Record<string, unknown> & Array<Record<string, unknown>>;
  body: string;
}

async function send(url: string, path: string, init: RequestInit = {}): Promise<Answer> {
  const r = await fetch(`${url}${path}`, init);
  const body = await r.text();
  return { status: r.status, body, json: decodeJson(body) as Answer['json'] };
}

function as(
  token: string,
  init: RequestInit = {},
  headers: Record<string, string> = {},
): RequestInit {
  return {
    ...init,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...headers },
  };
}

const post = (url: string, token: string, events: unknown, headers: Record<string, string> = {}) =>
  send(url, '/admin/events', as(token, { method: 'POST', body: JSON.stringify(events) }, headers));
const approve = (url: string, token: string, id: unknown) =>
  send(url, `/admin/changes/${id}/approve`, as(token, { method: 'POST' }));
const changes = async (url: string, token: string) =>
  (await send(url, '/admin/changes', as(token))).json;
const limits = async (url: string) => (await send(url, '/limits')).json;

const governors = [
  { name: 'gov-1', tokenHash: hashOperatorToken(GOV1), scopes: ['chain', 'limits', 'keys'] },
  { name: 'gov-2', tokenHash: hashOperatorToken(GOV2), scopes: ['limits', 'keys'] },
];

function config(dir: string, operators: unknown[], extra: Record<string, unknown> = {}): string {
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      limits: { perWithdrawalCap: 1000, rollingWithdrawalBlocks: 144, rollingWithdrawalCap: 5000 },
      throttleKeys: [{ name: 'ops-1', secretHash: hashThrottleSecret(SECRET) }],
      operators,
      loosening: { delayBlocks: 6, quorum: 2 },
      ...extra,
    }),
  );
  return file;
}

const feederOp = { name: 'feeder', tokenHash: hashOperatorToken(FEEDER), scopes: ['chain'] };
const raise = (cap: number) => ({
  type: 'limitsSet',
  limits: { perWithdrawalCap: cap, rollingWithdrawalBlocks: 144, rollingWithdrawalCap: 5000 },
});

describe('a feeder and two governors', () => {
  test('walk the whole flow: scopes, bounds, waiting, quorum, throttle, restarts and a SIGHUP', async () => {
    const dir = tempDir();
    const file = config(dir, [feederOp, ...governors]);
    const data = join(dir, 'data');
    let p = await serve(['--config', file, '--data', data]);
    await waitFor(() =>
      p.stderr.includes(
        'operators: feeder (chain), gov-1 (chain, limits, keys), gov-2 (limits, keys)',
      ),
    );

    // The feeder feeds the chain; the first block has no bound.
    expect((await post(p.url, FEEDER, [{ type: 'blockConnected', height: 870_000 }])).status).toBe(
      200,
    );

    // …and nothing else: a stolen feeder token cannot lift the caps.
    const lift = await post(p.url, FEEDER, [
      { type: 'blockConnected', height: 870_001 },
      { type: 'limitsSet', limits: {} },
    ]);
    expect(lift.status).toBe(403);
    expect(lift.json).toMatchObject({ code: 'scope_denied', path: '[1]' });
    expect((await limits(p.url)).perWithdrawalCap).toBe(1000n);
    expect((await send(p.url, '/window')).json.tip).toBe(870_000n);

    // One wrong height is refused, for the feeder and a governor alike; the window stays.
    for (const token of [FEEDER, GOV1]) {
      const forged = await post(p.url, token, [{ type: 'blockConnected', height: 9_000_000_000 }]);
      expect(forged.status).toBe(409);
      expect(forged.json.code).toBe('chain_bound_exceeded');
    }
    const overridden = [{ type: 'blockConnected', height: 870_150 }];
    expect(
      (await post(p.url, FEEDER, overridden, { 'peg-limits-override': 'chain-bounds' })).status,
    ).toBe(403);
    expect(
      (await post(p.url, GOV2, overridden, { 'peg-limits-override': 'chain-bounds' })).status,
    ).toBe(403);
    expect(
      (await post(p.url, GOV1, overridden, { 'peg-limits-override': 'chain-bounds' })).status,
    ).toBe(200);
    expect((await send(p.url, '/window')).json.tip).toBe(870_150n);

    // A loosening waits for its blocks…
    const waiting = await post(p.url, GOV1, [raise(2000)]);
    expect(waiting.status).toBe(202);
    expect(waiting.json).toMatchObject({
      id: 1n,
      proposedAt: 870_150n,
      effectiveAt: 870_156n,
      approvals: ['gov-1'],
    });
    const pending = async () =>
      /^peg_limits_pending_changes (\d+)$/m.exec(
        await (await fetch(`${p.url}/metrics`)).text(),
      )?.[1];
    expect(await pending()).toBe('1');
    for (let h = 870_151; h <= 870_155; h++)
      expect((await post(p.url, FEEDER, [{ type: 'blockConnected', height: h }])).status).toBe(200);
    expect((await limits(p.url)).perWithdrawalCap).toBe(1000n);
    const due = await post(p.url, FEEDER, [{ type: 'blockConnected', height: 870_156 }]);
    expect(due.status).toBe(200);
    expect(due.json.perWithdrawalCap).toBe(2000n);
    await waitFor(() => /change 1 \(proposed by gov-1\) applied at position \d+/.test(p.stderr));
    expect(await pending()).toBe('0');

    // …or for a quorum of two.
    expect((await post(p.url, GOV1, [raise(3000)])).status).toBe(202);
    expect((await approve(p.url, FEEDER, 2)).status).toBe(403);
    const applied = await approve(p.url, GOV2, 2);
    expect(applied.status).toBe(200);
    expect(applied.json.perWithdrawalCap).toBe(3000n);

    // Pulling the brake cancels what waits.
    expect((await post(p.url, GOV1, [raise(4000)])).status).toBe(202);
    const brake = await send(p.url, '/start_throttle', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'ops-1', secret: SECRET }),
    });
    expect(brake.status).toBe(200);
    expect(await changes(p.url, GOV1)).toEqual([]);
    await waitFor(() => /change 3 \(proposed by gov-1\) cancelled/.test(p.stderr));
    // Releasing it is a loosening too.
    expect((await post(p.url, GOV2, [{ type: 'throttleEnded' }])).status).toBe(202);
    expect((await approve(p.url, GOV1, 4)).json.throttleModeInitiator).toBeNull();

    // A change pending across a clean restart (a snapshot) and a crash (the journal).
    expect((await post(p.url, GOV1, [raise(5000)])).status).toBe(202);
    p.child.kill('SIGTERM');
    await p.exited;
    p = await serve(['--config', file, '--data', data]);
    expect((await changes(p.url, GOV2)).map((c) => c.id)).toEqual([5n]);
    expect(
      (
        await post(p.url, GOV2, [
          { type: 'accountLimitsSet', account: 'alice', limits: {} },
          raise(6000),
        ])
      ).status,
    ).toBe(202);
    // An approval in the journal too: change 7 applies at its quorum, before the crash.
    expect((await post(p.url, GOV1, [raise(7000)])).status).toBe(202);
    expect((await approve(p.url, GOV2, 7)).json.perWithdrawalCap).toBe(7000n);
    killGroup(p, 'SIGKILL');
    await p.exited;
    p = await serve(['--config', file, '--data', data]);
    expect((await limits(p.url)).perWithdrawalCap).toBe(7000n);
    const kept = await changes(p.url, GOV1);
    expect(kept.map((c) => [c.id, c.effectiveAt])).toEqual([
      [5n, 870_162n],
      [6n, 870_162n],
    ]);
    for (let h = 870_157; h <= 870_162; h++)
      expect((await post(p.url, FEEDER, [{ type: 'blockConnected', height: h }])).status).toBe(200);
    expect((await limits(p.url)).perWithdrawalCap).toBe(6000n);
    expect(await changes(p.url, GOV1)).toEqual([]);

    // SIGHUP: gov-2 is removed, and refused from then on.
    config(dir, [feederOp, governors[0]]);
    p.child.kill('SIGHUP');
    await waitFor(() => /SIGHUP: operators reloaded/.test(p.stderr));
    expect((await post(p.url, GOV2, [raise(1)])).status).toBe(401);
    expect((await post(p.url, GOV1, [raise(1)])).status).toBe(200);

    // A broken file keeps the operators there were, and says why.
    writeFileSync(file, '{"operators": [');
    p.child.kill('SIGHUP');
    await waitFor(() => /SIGHUP: the operators were not reloaded/.test(p.stderr));
    expect((await post(p.url, FEEDER, [{ type: 'blockConnected', height: 870_163 }])).status).toBe(
      200,
    );
    const tighten = (account: string) => [
      { type: 'accountLimitsSet', account, limits: { pegCap: 10 } },
    ];
    expect((await post(p.url, GOV1, tighten('bob'))).status).toBe(200);
    // …and a file with an unknown scope too.
    config(dir, [{ ...feederOp, scopes: ['chain', 'root'] }]);
    p.child.kill('SIGHUP');
    await waitFor(
      () => (p.stderr.match(/SIGHUP: the operators were not reloaded/g) ?? []).length === 2,
    );
    expect(p.stderr).toContain('operators[0].scopes[1]');
    expect((await post(p.url, GOV1, tighten('carol'))).status).toBe(200);

    // A change that no longer applies when its height comes is dropped, and a warning says why.
    const key = { type: 'throttleKeyAdded', name: 'ops-2', secretHash: hashThrottleSecret(SECRET) };
    const doomed = await post(p.url, GOV1, [raise(10), key]);
    expect(doomed.status).toBe(202);
    expect((await post(p.url, GOV1, [key])).status).toBe(200);
    for (let h = 870_164; h <= Number(doomed.json.effectiveAt); h++)
      expect((await post(p.url, FEEDER, [{ type: 'blockConnected', height: h }])).status).toBe(200);
    await waitFor(() =>
      /warning: change 8 \(proposed by gov-1\) dropped at position \d+: it no longer applies: .*ops-2/.test(
        p.stderr,
      ),
    );
    expect((await limits(p.url)).perWithdrawalCap).toBe(1n);
    expect(await changes(p.url, GOV1)).toEqual([]);
  }, 60_000);
});

describe('bad options stop the start (exit 2), saying why', () => {
  const start = async (configValue: unknown, env: NodeJS.ProcessEnv = {}) => {
    const dir = tempDir();
    const file = join(dir, 'config.json');
    writeFileSync(file, JSON.stringify(configValue));
    return runToEnd(
      'node',
      [CLI, 'serve', '--port', '0', '--config', file, '--data', join(dir, 'data')],
      env,
    );
  };

  test.each([
    [
      'an unknown scope',
      { operators: [{ ...feederOp, scopes: ['root'] }] },
      'operators[0].scopes[0]',
    ],
    [
      'a name twice',
      { operators: [feederOp, { ...governors[0], name: 'feeder' }] },
      'operators[1].name',
    ],
    [
      'a token twice',
      { operators: [feederOp, { ...governors[0], tokenHash: feederOp.tokenHash }] },
      'operators[1].tokenHash',
    ],
    [
      'a token hash that is none',
      { operators: [{ ...feederOp, tokenHash: FEEDER }] },
      'operators[0].tokenHash',
    ],
    [
      'a negative maxTipAdvance',
      { chainBounds: { maxTipAdvance: -1 } },
      'chainBounds.maxTipAdvance',
    ],
    ['a quorum of one', { loosening: { delayBlocks: 6, quorum: 1 } }, 'loosening.quorum'],
    [
      'a quorum with no delay',
      { loosening: { delayBlocks: 0, quorum: 2 } },
      'loosening.delayBlocks',
    ],
  ])('%s', async (_, value, path) => {
    const r = await start(value);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(path);
  });

  test('an admin token under 22 characters', async () => {
    const r = await start({}, { PEG_LIMITS_ADMIN_TOKEN: 'short-token' });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('PEG_LIMITS_ADMIN_TOKEN has 11 characters');
    expect(r.stderr).toContain('peg-limits token');
  });

  test("the admin token is no operator's token, and admin no operator's name", async () => {
    const admin = generateOperatorToken();
    const same = await start(
      { operators: [{ ...feederOp, tokenHash: hashOperatorToken(admin) }] },
      { PEG_LIMITS_ADMIN_TOKEN: admin },
    );
    expect(same.code).toBe(2);
    expect(same.stderr).toContain('token of the operator "feeder"');
    const named = await start(
      { operators: [{ ...feederOp, name: 'admin' }] },
      { PEG_LIMITS_ADMIN_TOKEN: admin },
    );
    expect(named.code).toBe(2);
    expect(named.stderr).toContain('operators[0].name');
  });

  test('a huge maxTipAdvance is taken: no bound', async () => {
    const dir = tempDir();
    const file = join(dir, 'config.json');
    writeFileSync(
      file,
      `{"operators":[${JSON.stringify(feederOp)}],"chainBounds":{"maxTipAdvance":99999999999999999999999}}`,
    );
    const p = await serve(['--config', file, '--data', join(dir, 'data')]);
    expect((await post(p.url, FEEDER, [{ type: 'blockConnected', height: 1 }])).status).toBe(200);
    expect(
      (await post(p.url, FEEDER, [{ type: 'blockConnected', height: 9_000_000_000 }])).status,
    ).toBe(200);
  });
});

describe('peg-limits token', () => {
  test('prints a new 256-bit token and the sha256 hash to configure', async () => {
    const a = await runToEnd('node', [CLI, 'token', '--json']);
    const b = await runToEnd('node', [CLI, 'token', '--json']);
    expect(a.code).toBe(0);
    const { token, tokenHash } = JSON.parse(a.stdout) as { token: string; tokenHash: string };
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(tokenHash).toBe(`sha256:${createHash('sha256').update(token).digest('hex')}`);
    expect(JSON.parse(b.stdout).token).not.toBe(token);
    const text = await runToEnd('node', [CLI, 'token']);
    expect(text.stdout).toMatch(/^token {6}[A-Za-z0-9_-]{43}\ntokenHash {2}sha256:[0-9a-f]{64}\n/);
    expect((await runToEnd('node', [CLI, 'token', '--yaml'])).code).toBe(2);
  });
});

describe('the production configuration docs/operating.md prints', () => {
  test('is taken as printed, once its hashes are real: a feeder, two governors, a delay of 6 and a quorum of 2', () => {
    const page = readFileSync('docs/operating.md', 'utf8');
    const from = page.indexOf('```json\n', page.indexOf('A production `--config`')) + 8;
    const text = page
      .slice(from, page.indexOf('```', from))
      .replace('"sha256:…:…"', JSON.stringify(hashThrottleSecret(SECRET)))
      .replace(/"sha256:…"/g, () => JSON.stringify(hashOperatorToken(generateOperatorToken())));
    const config = serverConfigFrom(decodeJson(text), 'docs/operating.md');
    expect(config.operators.map((o) => [o.name, o.scopes])).toEqual([
      ['feeder', ['chain']],
      ['gov-alice', ['chain', 'limits', 'keys']],
      ['gov-bob', ['limits', 'keys']],
    ]);
    expect(config.loosening).toEqual({ delayBlocks: 6, quorum: 2 });
    expect(config.chainBounds).toEqual({ maxTipAdvance: 144, maxReorgDepth: 6 });
  });
});
