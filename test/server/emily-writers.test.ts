/**
 * Emily's writers, unchanged, against `peg-limits serve` as a real process: the flows of
 * Emily's own integration tests (`emily/handler/tests/integration/limits.rs`, `throttle.rs`
 * in the sBTC repository) sent as Emily's generated client sends them, on Emily's paths, with
 * Emily's `x-api-key`; every answer read as that client reads it (Emily's private schemas).
 * Then what the operator rules add: the trail names each key's operator, the alerts go out,
 * a loosening waits, and the sidecar's blocks come in on the service's own port.
 */
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { decodeJson, hashOperatorToken } from '../../src/index.js';
import { expectEmily } from '../support/emily.js';
import { killGroup, type Proc, startServe, tempDir, waitFor } from '../support/proc.js';
import { block, create } from '../support/stacks-node.js';

const OPS = 'emily-operations-key-0123456789abcdef';
const SIGNER = 'emily-signer-key-0123456789abcdefgh';
const SIDECAR = 'emily-sidecar-key-0123456789abcdefg';
// A secret of the service's length: Emily's tests use "very secret string" (18 characters).
const SECRET = 'very secret string, made long enough';

const procs: Proc[] = [];
afterAll(() => {
  for (const p of procs) killGroup(p);
});

function config(dir: string, extra: Record<string, unknown> = {}): string {
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      operators: [
        { name: 'emily-ops', tokenHash: hashOperatorToken(OPS), scopes: ['limits', 'keys'] },
        { name: 'signer', tokenHash: hashOperatorToken(SIGNER), scopes: ['chain'] },
        { name: 'sidecar', tokenHash: hashOperatorToken(SIDECAR), scopes: ['chain'] },
      ],
      ...extra,
    }),
  );
  return file;
}

async function serve(args: string[] = [], extra: Record<string, unknown> = {}): Promise<Proc> {
  const dir = tempDir();
  const p = await startServe(['--data', dir, '--config', config(dir, extra), ...args]);
  procs.push(p);
  return p;
}

interface Answer {
  readonly status: number;
  readonly body: string;
  readonly json: unknown;
}

/** What Emily's generated client sends: JSON with `x-api-key` (none on the public reads). */
function emilyClient(url: string) {
  return async (
    method: string,
    path: string,
    template: string,
    body?: unknown,
    key: string | null = OPS,
  ): Promise<Answer> => {
    const r = await fetch(`${url}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(key === null ? {} : { 'x-api-key': key }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await r.text();
    const answer = {
      status: r.status,
      body: text,
      json: text === '' ? undefined : decodeJson(text),
    };
    if (r.status !== 202) expectEmily(template, method, answer);
    return answer;
  };
}

const EMILY_ACCOUNT_FIELDS = [
  'pegCap',
  'perDepositMinimum',
  'perDepositCap',
  'perWithdrawalCap',
  'rollingWithdrawalBlocks',
  'rollingWithdrawalCap',
  'throttleModeInitiator',
];

/**
 * What Emily's own clients read of an answer: its fields, and nothing of the extensions this
 * service adds (the mint window's fields and room), which its generated clients ignore.
 */
function asEmilyReads(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const v = value as Record<string, unknown>;
  const pick = (o: Record<string, unknown>, fields: ReadonlyArray<string>) =>
    Object.fromEntries(fields.filter((f) => f in o).map((f) => [f, o[f]]));
  if (!('accountCaps' in v)) return pick(v, EMILY_ACCOUNT_FIELDS);
  const accounts = v.accountCaps as Record<string, Record<string, unknown>>;
  return {
    ...pick(v, ['availableToWithdraw', ...EMILY_ACCOUNT_FIELDS]),
    accountCaps: Object.fromEntries(
      Object.entries(accounts).map(([k, e]) => [k, pick(e, EMILY_ACCOUNT_FIELDS)]),
    ),
  };
}

// Emily's `Limits` as its tests write it, every field present.
function limits(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    availableToWithdraw: null,
    pegCap: null,
    perDepositMinimum: null,
    perDepositCap: null,
    perWithdrawalCap: null,
    rollingWithdrawalBlocks: null,
    rollingWithdrawalCap: null,
    throttleModeInitiator: null,
    accountCaps: {},
    ...fields,
  };
}

function account(n: number | null): Record<string, unknown> {
  return {
    pegCap: n,
    perDepositMinimum: n,
    perDepositCap: n,
    perWithdrawalCap: n,
    rollingWithdrawalBlocks: n,
    rollingWithdrawalCap: n,
    throttleModeInitiator: null,
  };
}

const chainstate = (height: number) => ({
  stacksBlockHash: `test-hash-${height}-fork-0`,
  stacksBlockHeight: height,
  bitcoinBlockHeight: height,
});

describe("Emily's limits flows (limits.rs)", () => {
  let p: Proc;
  let emily: ReturnType<typeof emilyClient>;
  beforeAll(async () => {
    p = await serve();
    emily = emilyClient(p.url);
  });

  test('the empty default is as Emily answers it', async () => {
    const r = await emily('GET', '/limits', '/limits', undefined, null);
    expect(asEmilyReads(r.json)).toEqual(limits());
  });

  test('adding and then updating single account limits works', async () => {
    const steps: Array<[string, number]> = [
      ['test_account', 100],
      ['test_account_2', 1200],
      ['test_account_2', 200],
      ['test_account', 300],
    ];
    for (const [name, n] of steps) {
      const r = await emily('POST', `/limits/${name}`, '/limits/{account}', account(n));
      expect(r.status).toBe(201);
      expect(asEmilyReads(r.json)).toEqual(decodeJson(JSON.stringify(account(n))));
    }
    for (const [name, n] of [
      ['test_account', 300],
      ['test_account_2', 200],
    ] as const) {
      const r = await emily('GET', `/limits/${name}`, '/limits/{account}', undefined, null);
      expect(r.status).toBe(201);
      expect(asEmilyReads(r.json)).toEqual(decodeJson(JSON.stringify(account(n))));
    }
  });

  test('updating account limits via the global limits works: listed entries replaced, all-null removed, others kept', async () => {
    for (const [name, n] of [
      ['test_account_1', 100],
      ['test_account_2', 150],
      ['test_account_4', 150],
    ] as const)
      expect((await emily('POST', `/limits/${name}`, '/limits/{account}', account(n))).status).toBe(
        201,
      );
    for (let h = 0; h < 103; h++)
      expect(
        (await emily('POST', '/chainstate', '/chainstate', chainstate(h), SIGNER)).status,
      ).toBe(201);
    // Emily's test sets perDepositMinimum 654 above perDepositCap 456, which the caps here
    // refuse (400 minimum_above_cap): the same test with a minimum below the cap.
    const body = limits({
      pegCap: 123,
      perDepositMinimum: 354,
      perDepositCap: 456,
      perWithdrawalCap: 789,
      rollingWithdrawalBlocks: 101,
      rollingWithdrawalCap: 112,
      accountCaps: {
        test_account_2: account(200),
        test_account_3: account(300),
        test_account_4: account(null),
      },
    });
    const set = await emily('POST', '/limits', '/limits', body);
    expect(set.status).toBe(201);
    const expected = decodeJson(
      JSON.stringify(
        limits({
          ...body,
          availableToWithdraw: 112,
          accountCaps: {
            test_account: account(300),
            test_account_1: account(100),
            test_account_2: account(200),
            test_account_3: account(300),
          },
        }),
      ),
    );
    expect(asEmilyReads(set.json)).toEqual(expected);
    expect(asEmilyReads((await emily('GET', '/limits', '/limits', undefined, null)).json)).toEqual(
      expected,
    );
    const gone = await emily(
      'GET',
      '/limits/test_account_4',
      '/limits/{account}',
      undefined,
      undefined,
    );
    expect(gone.status).toBe(404);
  });

  test.each([
    [100, null],
    [null, 100],
  ])('an incomplete rolling window (blocks %s, cap %s) is 400', async (blocks, cap) => {
    const r = await emily(
      'POST',
      '/limits',
      '/limits',
      limits({ rollingWithdrawalBlocks: blocks, rollingWithdrawalCap: cap }),
    );
    expect(r.status).toBe(400);
    expect(r.json).toMatchObject({ code: 'incomplete_rolling_window' });
  });
});

describe("Emily's throttle flows (throttle.rs)", () => {
  let p: Proc;
  let emily: ReturnType<typeof emilyClient>;
  const start = (secret = SECRET) =>
    emily(
      'POST',
      '/start_throttle',
      '/start_throttle',
      { name: 'aaaaaaaaaaaaaaaa', secret },
      undefined,
    );

  beforeAll(async () => {
    p = await serve();
    emily = emilyClient(p.url);
    for (let h = 0; h < 110; h++)
      expect(
        (await emily('POST', '/chainstate', '/chainstate', chainstate(h), SIGNER)).status,
      ).toBe(201);
  });

  test('the base flow: a key registered, a wrong secret refused, throttle started, limits restored, the key deactivated and activated by name', async () => {
    const base = limits({
      perWithdrawalCap: 1_000_000_000,
      rollingWithdrawalBlocks: 1,
      rollingWithdrawalCap: 10_000_000_000,
    });
    expect((await emily('POST', '/limits', '/limits', base)).status).toBe(201);
    const expected = decodeJson(JSON.stringify({ ...base, availableToWithdraw: 10_000_000_000 }));
    // An unknown key (Emily: 404; here 401, the same answer as a wrong secret).
    expect((await start()).status).toBe(401);
    expect(asEmilyReads((await emily('GET', '/limits', '/limits', undefined, null)).json)).toEqual(
      expected,
    );
    expect(
      (await emily('POST', '/throttle', '/throttle', { name: 'aaaaaaaaaaaaaaaa', secret: SECRET }))
        .status,
    ).toBe(201);
    expect((await start('TW9yZSBkYaaaaciB5b3VyIHRlc3Qcc')).status).toBe(401);
    expect(asEmilyReads((await emily('GET', '/limits', '/limits', undefined, null)).json)).toEqual(
      expected,
    );
    const on = await start();
    expect(on.status).toBe(200);
    const throttled = (await emily('GET', '/limits', '/limits', undefined, null)).json;
    expect(throttled).toMatchObject({
      perWithdrawalCap: 150_000_000n,
      rollingWithdrawalBlocks: 18n,
      rollingWithdrawalCap: 200_000_000n,
      pegCap: null,
      perDepositMinimum: null,
      perDepositCap: null,
      throttleModeInitiator: 'aaaaaaaaaaaaaaaa',
    });
    // Restoring the limits with throttleModeInitiator null ends throttle mode.
    expect((await emily('POST', '/limits', '/limits', base)).status).toBe(201);
    expect(asEmilyReads((await emily('GET', '/limits', '/limits', undefined, null)).json)).toEqual(
      expected,
    );
    // Emily deactivates by the key's Argon2 hash; the key's name here.
    expect(
      (await emily('PATCH', '/throttle/deactivate', '/throttle/deactivate', 'aaaaaaaaaaaaaaaa'))
        .status,
    ).toBe(204);
    expect((await start()).status).toBe(403);
    expect(asEmilyReads((await emily('GET', '/limits', '/limits', undefined, null)).json)).toEqual(
      expected,
    );
    expect(
      (await emily('PATCH', '/throttle/activate', '/throttle/activate', 'aaaaaaaaaaaaaaaa')).status,
    ).toBe(204);
    expect((await start()).status).toBe(200);
    expect((await emily('GET', '/limits', '/limits', undefined, null)).json).toMatchObject({
      perWithdrawalCap: 150_000_000n,
      rollingWithdrawalBlocks: 18n,
      rollingWithdrawalCap: 200_000_000n,
    });
  });

  test('the same key again is 409', async () => {
    const key = { name: 'bbbbbbbbbbbbbbbb', secret: SECRET };
    expect((await emily('POST', '/throttle', '/throttle', key)).status).toBe(201);
    expect((await emily('POST', '/throttle', '/throttle', key)).status).toBe(409);
  });

  test("Emily's own 18-character secret is 400, saying the rule", async () => {
    const r = await emily('POST', '/throttle', '/throttle', {
      name: 'cccccccccccccccc',
      secret: 'very secret string',
    });
    expect(r.status).toBe(400);
    expect((r.json as { message: string }).message).toMatch(/22 to 1024 characters/);
  });

  test('the trail names the operator of each key, and the public start its throttle key', async () => {
    const trail = decodeJson(
      await (
        await fetch(`${p.url}/admin/audit?limit=10000`, { headers: { 'x-api-key': OPS } })
      ).text(),
    ) as Array<{ actor: { kind: string; name?: string }; events: Array<{ type: string }> }>;
    const by = (type: string) =>
      new Set(
        trail
          .filter((r) => r.events.some((e) => e.type === type))
          .map((r) => `${r.actor.kind}:${r.actor.name}`),
      );
    expect(by('blockConnected')).toEqual(new Set(['operator:signer']));
    expect(by('limitsSet')).toEqual(new Set(['operator:emily-ops']));
    expect(by('throttleKeyAdded')).toEqual(new Set(['operator:emily-ops']));
    expect(by('throttleKeyRevoked')).toEqual(new Set(['operator:emily-ops']));
    expect(by('throttleStarted')).toEqual(new Set(['throttleKey:aaaaaaaaaaaaaaaa']));
  });
});

describe('the operator rules on Emily paths', () => {
  let alerts: Server;
  const seen: Array<{ type: string; actor?: { name?: string } }> = [];
  beforeAll(async () => {
    alerts = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push(JSON.parse(body));
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => alerts.listen(0, '127.0.0.1', resolve));
  });
  afterAll(() => alerts.close());

  test('a loosening waits (202, nothing applied) where loosening waits, a tightening applies, and both are alerted with their operator', async () => {
    const url = `http://127.0.0.1:${(alerts.address() as AddressInfo).port}/`;
    const p = await serve(['--alert-url', url], { loosening: { delayBlocks: 6, quorum: 0 } });
    const emily = emilyClient(p.url);
    expect(
      (await emily('POST', '/chainstate', '/chainstate', chainstate(1000), SIGNER)).status,
    ).toBe(201);
    expect(
      (await emily('POST', '/limits', '/limits', limits({ perWithdrawalCap: 1000 }))).status,
    ).toBe(201);
    const loosen = await emily('POST', '/limits', '/limits', limits({ perWithdrawalCap: 5000 }));
    expect(loosen.status).toBe(202);
    expect(loosen.json).toMatchObject({ proposedBy: 'emily-ops', effectiveAt: 1006n });
    expect((await emily('GET', '/limits', '/limits', undefined, null)).json).toMatchObject({
      perWithdrawalCap: 1000n,
    });
    // The delay passes: the signers' chain state brings the change due.
    for (let h = 1001; h <= 1006; h++)
      expect((await emily('PUT', '/chainstate', '/chainstate', chainstate(h), SIGNER)).status).toBe(
        201,
      );
    expect((await emily('GET', '/limits', '/limits', undefined, null)).json).toMatchObject({
      perWithdrawalCap: 5000n,
    });
    await waitFor(() => seen.some((a) => a.type === 'changeApplied'), 10_000);
    const types = seen.map((a) => a.type);
    expect(types).toEqual(
      expect.arrayContaining(['limitsChanged', 'changeProposed', 'changeApplied']),
    );
    expect(seen.find((a) => a.type === 'changeProposed')?.actor?.name).toBe('emily-ops');
  });

  test('a wrong or missing key changes nothing', async () => {
    const p = await serve();
    const emily = emilyClient(p.url);
    const before = await emily('GET', '/limits', '/limits', undefined, null);
    for (const key of ['emily-wrong-key-0123456789abcdefghij', null]) {
      expect((await emily('POST', '/limits', '/limits', limits({ pegCap: 1 }), key)).status).toBe(
        401,
      );
      expect((await emily('POST', '/chainstate', '/chainstate', chainstate(5), key)).status).toBe(
        401,
      );
      expect(
        (await emily('POST', '/throttle', '/throttle', { name: 'k', secret: SECRET }, key)).status,
      ).toBe(401);
    }
    expect((await emily('GET', '/limits', '/limits', undefined, null)).json).toEqual(before.json);
    expect((await emily('GET', '/limits', '/limits', undefined, null)).body).toBe(before.body);
  });
});

describe("Emily's sidecar: POST /new_block on the service's port", () => {
  const post = (url: string, body: string, key?: string) =>
    fetch(`${url}/new_block`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'x-api-key': key }),
      },
      body,
    });
  const windowOf = async (p: Proc) =>
    decodeJson(await (await fetch(`${p.url}/window`)).text()) as {
      tip: number | null;
      withdrawn: bigint;
    };

  test("takes the sidecar's forward with a chain key, through the observer's feed, written as the key's operator", async () => {
    const p = await serve(['--stacks-observer', '127.0.0.1:0', '--stacks-history-complete'], {
      limits: { rollingWithdrawalBlocks: 144, rollingWithdrawalCap: 1_000_000_000 },
    });
    const first = block('a', 'g', 1, 870_000, [create(1, 50_000n, 870_000)]);
    // The sidecar forwards the node's payload as a JSON string holding it.
    const r = await post(p.url, JSON.stringify(JSON.stringify(first)), SIDECAR);
    expect(r.status).toBe(200);
    expectEmily('/new_block', 'POST', { status: r.status, body: await r.text() });
    expect(await windowOf(p)).toMatchObject({ tip: 870_000n, withdrawn: 50_000n });
    // The payload itself is taken too, and the observer's own port keeps its order.
    expect(
      (
        await post(
          p.url,
          JSON.stringify(block('b', 'a', 2, 870_001, [create(2, 7n, 870_001)])),
          SIDECAR,
        )
      ).status,
    ).toBe(200);
    expect(await windowOf(p)).toMatchObject({ tip: 870_001n, withdrawn: 50_007n });
    const trail = decodeJson(
      await (await fetch(`${p.url}/admin/audit`, { headers: { 'x-api-key': OPS } })).text(),
    ) as Array<{ actor: { name?: string }; requestId: string }>;
    expect(trail.map((t) => [t.actor.name, t.requestId.split(':')[0]])).toEqual([
      ['sidecar', 'stacks-block'],
      ['sidecar', 'stacks-block'],
    ]);
  });

  test('refuses a forward without a key (401) or with a key that lacks chain (403), and nothing changes', async () => {
    const p = await serve(['--stacks-observer', '127.0.0.1:0', '--stacks-history-complete']);
    const payload = JSON.stringify(block('a', 'g', 1, 870_000, [create(1, 50_000n, 870_000)]));
    const none = await post(p.url, payload);
    expect(none.status).toBe(401);
    expectEmily('/new_block', 'POST', { status: none.status, body: await none.text() });
    const limitsOnly = await post(p.url, payload, OPS);
    expect(limitsOnly.status).toBe(403);
    expectEmily('/new_block', 'POST', { status: limitsOnly.status, body: await limitsOnly.text() });
    expect(await windowOf(p)).toMatchObject({ tip: null, withdrawn: 0n });
  });

  test('without a Stacks feed it is 404', async () => {
    const p = await serve();
    const r = await post(p.url, JSON.stringify(block('a', 'g', 1, 870_000)), SIDECAR);
    expect(r.status).toBe(404);
    expectEmily('/new_block', 'POST', { status: r.status, body: await r.text() });
  });
});
