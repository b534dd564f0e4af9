/**
 * `peg-limits serve --stacks-observer`: a Stacks node's `/new_block` bodies, as the node
 * posts them (test/support/stacks-node.ts), fed to the real command: withdrawals created and
 * rejected, a Stacks fork, a Bitcoin reorganization, a bound exceeded, a restart between two
 * blocks of a fork, and replicas on PostgreSQL sharing what the observer remembers.
 */
import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { hashOperatorToken } from '../../../src/index.js';
import {
  POSTGRES_AVAILABLE,
  POSTGRES_MISSING,
  startPostgres,
  type TestPostgres,
} from '../../support/postgres.js';
import {
  CLI,
  killGroup,
  type Proc,
  runToEnd,
  startServe,
  tempDir,
  waitFor,
} from '../../support/proc.js';
import { block, create, type Print, REGISTRY } from '../../support/stacks-node.js';

const ADMIN = 'admin-token-0123456789abcdefghij';
const procs: Proc[] = [];
afterAll(() => {
  for (const p of procs) killGroup(p);
});

async function serve(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<Proc & { observer: string }> {
  const p = await startServe(['--stacks-observer', '127.0.0.1:0', ...args], env);
  procs.push(p);
  await waitFor(() => /stacks observer on (http:\S+)/.test(p.stdout), 10_000);
  return Object.assign(p, { observer: /stacks observer on (http:\S+)/.exec(p.stdout)![1]! });
}

const post = (url: string, body: unknown, raw = false) =>
  fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: raw ? (body as string) : JSON.stringify(body),
  });

async function window(p: Proc): Promise<{ tip: number | null; withdrawn: number }> {
  const w = (await (await fetch(`${p.url}/window`)).json()) as {
    tip: number | null;
    withdrawn: number;
  };
  return { tip: w.tip, withdrawn: w.withdrawn };
}

describe('a node feeding the command', () => {
  test("the observer's listener maps withdrawals created, accepted and rejected, answers the node's other paths without effect, and serves nothing of the service's", async () => {
    const p = await serve(['--data', tempDir()], { PEG_LIMITS_ADMIN_TOKEN: ADMIN });
    expect(
      (
        await post(
          `${p.observer}/new_block`,
          block('a', 'g', 1, 870_000, [create(1, 50_000n, 870_000), create(2, 7_000n, 870_000)]),
        )
      ).status,
    ).toBe(200);
    expect(await window(p)).toEqual({ tip: 870_000, withdrawn: 57_000 });
    const r = await post(
      `${p.observer}/new_block`,
      block('b', 'a', 2, 870_001, [
        { topic: 'withdrawal-accept', id: 1n },
        { topic: 'withdrawal-reject', id: 2n },
      ]),
    );
    expect(r.status).toBe(200);
    expect(await window(p)).toEqual({ tip: 870_001, withdrawn: 50_000 });
    // The node's other paths: 200, and nothing changes.
    for (const path of [
      '/new_burn_block',
      '/attachments/new',
      '/new_mempool_tx',
      '/drop_mempool_tx',
      '/new_microblocks',
    ])
      expect((await post(`${p.observer}${path}`, { any: 'thing' })).status, path).toBe(200);
    // A body that is a JSON string holding the payload (Emily's sidecar) is read too.
    expect(
      (
        await post(
          `${p.observer}/new_block`,
          JSON.stringify(JSON.stringify(block('c', 'b', 3, 870_002, [create(3, 1n, 870_002)]))),
          true,
        )
      ).status,
    ).toBe(200);
    expect(await window(p)).toEqual({ tip: 870_002, withdrawn: 50_001 });
    // The service's routes are not on the observer; the observer's are not on the service.
    expect((await fetch(`${p.observer}/limits`)).status).toBe(404);
    expect((await post(`${p.observer}/admin/events`, [])).status).toBe(404);
    // Every path of the service's route table, Emily's writers' and the integrity check's too.
    for (const path of ['/integrity', '/throttle', '/chainstate', '/limits/alice', '/'])
      expect((await post(`${p.observer}${path}`, {})).status, path).toBe(404);
    // On the service's port a block needs an operator's token (Emily's sidecar sends one).
    expect((await post(`${p.url}/new_block`, block('d', 'c', 4, 870_003))).status).toBe(401);
    expect(await window(p)).toEqual({ tip: 870_002, withdrawn: 50_001 });
    expect(p.stdout).toMatch(/stacks observer on http:\/\/127\.0\.0\.1:\d+/);
    // The record says who fed it: the operator stacks-node, whose scope is the chain alone.
    const trail = (await (
      await fetch(`${p.url}/admin/audit?after=0`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as Array<{ actor: { kind: string; name?: string }; requestId: string }>;
    const actors = trail.map((r) => r.actor.name);
    expect(trail.every((r) => r.requestId.startsWith('stacks-block:'))).toBe(true);
    expect(actors).toEqual(['stacks-node', 'stacks-node', 'stacks-node']);
    expect(p.stderr + p.stdout).toMatch(/stacks-node \(chain\)/);
  });

  test('bad input changes nothing: malformed JSON is 400, a payload or event it cannot use 200, skipped and counted', async () => {
    const p = await serve(['--data', tempDir()]);
    await post(`${p.observer}/new_block`, block('a', 'g', 1, 100, [create(1, 5n, 100)]));
    const before = await window(p);
    expect((await post(`${p.observer}/new_block`, '{"not json', true)).status).toBe(400);
    expect((await post(`${p.observer}/new_block`, { hello: 'node' })).status).toBe(200);
    const broken = block('b', 'a', 2, 100);
    broken.events.push(
      {
        committed: true,
        type: 'contract_event',
        contract_event: { contract_identifier: REGISTRY, topic: 'print', raw_value: '0xzz' },
      } as never,
      {
        committed: true,
        type: 'contract_event',
        contract_event: {
          contract_identifier: REGISTRY,
          topic: 'print',
          raw_value: '0x0100000000000000000000000000000005',
        },
      } as never,
    );
    expect((await post(`${p.observer}/new_block`, broken)).status).toBe(200);
    // A request id past int64, and a rejection of a withdrawal the state never held.
    const prints: Print[] = [
      { ...create(0, 1n, 100), id: 2n ** 64n - 1n },
      { topic: 'withdrawal-reject', id: 99n },
    ];
    expect((await post(`${p.observer}/new_block`, block('c', 'b', 3, 100, prints))).status).toBe(
      200,
    );
    expect(await window(p)).toEqual(before);
    const metrics = await (await fetch(`${p.url}/metrics`)).text();
    expect(metrics).toMatch(/^# TYPE peg_limits_observer_skipped_total counter$/m);
    expect(Number(/^peg_limits_observer_skipped_total (\d+)/m.exec(metrics)?.[1])).toBe(5);
    expect(p.stderr + p.stdout).toMatch(/stacks observer skipped event \d+ of block/);
  });

  test('a Stacks fork and a Bitcoin reorganization: what is orphaned stops counting', async () => {
    const p = await serve(['--data', tempDir()]);
    await post(`${p.observer}/new_block`, block('a', 'g', 1, 100, [create(1, 1n, 100)]));
    await post(`${p.observer}/new_block`, block('b', 'a', 2, 101, [create(2, 10n, 101)]));
    await post(`${p.observer}/new_block`, block('c', 'b', 3, 102, [create(3, 100n, 102)]));
    expect(await window(p)).toEqual({ tip: 102, withdrawn: 111 });
    // Stacks: c' forks off b; 3 is requested again there, 4 is new.
    await post(
      `${p.observer}/new_block`,
      block("c'", 'b', 3, 102, [create(3, 100n, 102), create(4, 1000n, 102)]),
    );
    expect(await window(p)).toEqual({ tip: 102, withdrawn: 1111 });
    // Bitcoin: burn height 101 seen again with another hash, on top of c'.
    await post(
      `${p.observer}/new_block`,
      block('d', "c'", 4, 101, [create(5, 5000n, 101)], "b101'"),
    );
    expect(await window(p)).toEqual({ tip: 101, withdrawn: 5001 });
    expect(p.stdout + p.stderr).toMatch(/forks the chain from burn height 101/);
  });

  test('a block past the chain bounds is held with the blocks after it (200, durable, said, counted, alerted) until chain and limits release them in order', async () => {
    // The operators' alert receiver.
    const alerts: Array<{ type: string; actor?: { name?: string } }> = [];
    const receiver = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        alerts.push(JSON.parse(text));
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', () => r()));
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`;
    const dir = tempDir();
    const config = join(dir, 'config.json');
    const chainOnly = 'chain-only-token-0123456789abcdef';
    writeFileSync(
      config,
      JSON.stringify({
        limits: { rollingWithdrawalBlocks: 144, rollingWithdrawalCap: 10_000_000_000 },
        operators: [{ name: 'feeder', tokenHash: hashOperatorToken(chainOnly), scopes: ['chain'] }],
      }),
    );
    const args = ['--data', dir, '--config', config, '--alert-url', hook];
    let p = await serve(args, { PEG_LIMITS_ADMIN_TOKEN: ADMIN });
    await post(`${p.observer}/new_block`, block('a', 'g', 1, 1000, [create(1, 1n, 1000)]));
    for (let attempt = 0; attempt < 2; attempt++) {
      const r = await post(
        `${p.observer}/new_block`,
        block('far', 'a', 2, 9_000_000, [create(2, 5n, 9_000_000)]),
      );
      expect(r.status).toBe(200);
    }
    // The blocks after it are held behind it, in order.
    expect(
      (
        await post(
          `${p.observer}/new_block`,
          block('next', 'far', 3, 9_000_000, [create(3, 7n, 9_000_000)]),
        )
      ).status,
    ).toBe(200);
    expect(await window(p)).toEqual({ tip: 1000, withdrawn: 1 });
    await waitFor(() => /block \S+ \(burn height 9000000\) is held/.test(p.stderr), 5_000);
    const ready = (await (await fetch(`${p.url}/readyz`)).json()) as {
      status: string;
      heldBlocks: number;
    };
    expect([ready.status, ready.heldBlocks]).toEqual(['ready', 2]);
    const metrics = await (await fetch(`${p.url}/metrics`)).text();
    expect(/^peg_limits_observer_held_blocks (\d+)/m.exec(metrics)?.[1]).toBe('2');
    const auth = (token: string) => ({ authorization: `Bearer ${token}` });
    const listed = (await (
      await fetch(`${p.url}/admin/held`, { headers: auth(ADMIN) })
    ).json()) as {
      blocks: Array<{ burnHeight: number; reason: string }>;
    };
    expect(listed.blocks.map((b) => b.burnHeight)).toEqual([9_000_000, 9_000_000]);
    expect(listed.blocks[0]?.reason).toMatch(/maxTipAdvance/);
    await waitFor(() => alerts.some((a) => a.type === 'blocksHeld'), 10_000);
    expect(alerts.find((a) => a.type === 'chainBoundRefused')?.actor?.name).toBe('stacks-node');
    // Held blocks are durable: a restart still holds them.
    killGroup(p);
    await p.exited;
    p = await serve(args, { PEG_LIMITS_ADMIN_TOKEN: ADMIN });
    expect(await window(p)).toEqual({ tip: 1000, withdrawn: 1 });
    // Only an operator holding chain and limits releases them.
    const denied = await fetch(`${p.url}/admin/held/release`, {
      method: 'POST',
      headers: auth(chainOnly),
    });
    expect(denied.status).toBe(403);
    expect((await fetch(`${p.url}/admin/held/release`, { method: 'POST' })).status).toBe(401);
    const released = await fetch(`${p.url}/admin/held/release`, {
      method: 'POST',
      headers: auth(ADMIN),
    });
    expect(released.status).toBe(200);
    expect(((await released.json()) as { released: number }).released).toBe(2);
    expect(await window(p)).toEqual({ tip: 9_000_000, withdrawn: 12 });
    // The trail names who let them through.
    const trail = (await (
      await fetch(`${p.url}/admin/audit?after=0`, { headers: auth(ADMIN) })
    ).json()) as Array<{ actor: { name?: string }; requestId: string }>;
    expect(
      trail.filter((r) => r.requestId.startsWith('stacks-release:')).map((r) => r.actor.name),
    ).toEqual(['admin', 'admin']);
    // And the next block of the node goes on from there.
    expect(
      (await post(`${p.observer}/new_block`, block('after', 'next', 4, 9_000_001))).status,
    ).toBe(200);
    expect((await window(p)).tip).toBe(9_000_001);
    receiver.close();
  });

  test('a forged far block dropped: the real blocks held behind it apply, in order', async () => {
    const p = await serve(['--data', tempDir()], { PEG_LIMITS_ADMIN_TOKEN: ADMIN });
    await post(`${p.observer}/new_block`, block('a', 'g', 1, 1000, [create(1, 1n, 1000)]));
    // Someone posts a block far ahead; the node's own next blocks are held behind it.
    expect((await post(`${p.observer}/new_block`, block('forged', 'a', 2, 9_000_000))).status).toBe(
      200,
    );
    expect(
      (await post(`${p.observer}/new_block`, block('b', 'a', 2, 1001, [create(2, 10n, 1001)])))
        .status,
    ).toBe(200);
    expect((await post(`${p.observer}/new_block`, block('c', 'b', 3, 1002))).status).toBe(200);
    expect(await window(p)).toEqual({ tip: 1000, withdrawn: 1 });
    const dropped = await fetch(`${p.url}/admin/held`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(await dropped.json()).toEqual({ dropped: 1, applied: 2, held: 0 });
    expect(await window(p)).toEqual({ tip: 1002, withdrawn: 11 });
    expect(await (await fetch(`${p.url}/readyz`)).json()).toEqual({ status: 'ready' });
    expect(p.stderr).toMatch(/admin dropped the held block/);
  });

  test('while blocks are held, no figure leaves out what they request: no room is reported, across a restart, until the hold ends', async () => {
    const dir = tempDir();
    const args = ['--data', dir, '--stacks-history-complete'];
    let p = await serve(args, { PEG_LIMITS_ADMIN_TOKEN: ADMIN });
    const limits = async () =>
      ((await (await fetch(`${p.url}/limits`)).json()) as { availableToWithdraw: number | null })
        .availableToWithdraw;
    await post(`${p.observer}/new_block`, block('a', 'g', 1, 1000, [create(1, 7_700n, 1000)]));
    expect(await limits()).toBe(10_000_000_000 - 7_700);
    // A forged (or mistaken) jump is held; the node's real next block, requesting 300, is
    // held behind it: the chain has that request, the window at the tip does not.
    expect((await post(`${p.observer}/new_block`, block('forged', 'a', 2, 9_000_000))).status).toBe(
      200,
    );
    expect(
      (await post(`${p.observer}/new_block`, block('b', 'a', 2, 1001, [create(2, 300n, 1001)])))
        .status,
    ).toBe(200);
    expect(await limits()).toBeNull();
    const w = (await (await fetch(`${p.url}/window`)).json()) as Record<string, unknown>;
    expect(w).toMatchObject({
      tip: 1000,
      complete: false,
      heldFrom: 9_000_000,
      availableToWithdraw: null,
    });
    const check = await (await fetch(`${p.url}/limits/bob/withdrawals/1`)).json();
    expect(check).toEqual({
      ok: false,
      reason: 'window_incomplete',
      limit: null,
      availableAt: null,
    });
    // Across a restart too.
    killGroup(p);
    await p.exited;
    p = await serve(args, { PEG_LIMITS_ADMIN_TOKEN: ADMIN });
    expect(await limits()).toBeNull();
    // The forged block dropped, the real one applies: the room counts its request, exactly.
    const dropped = await fetch(`${p.url}/admin/held`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${ADMIN}` },
    });
    expect(await dropped.json()).toEqual({ dropped: 1, applied: 1, held: 0 });
    expect(await limits()).toBe(10_000_000_000 - 8_000);
    const trail = (await (
      await fetch(`${p.url}/admin/audit`, { headers: { authorization: `Bearer ${ADMIN}` } })
    ).json()) as Array<{ actor: { name?: string }; events: Array<{ type: string }> }>;
    const of = (type: string) =>
      trail.filter((r) => r.events.some((e) => e.type === type)).map((r) => r.actor.name);
    expect(of('blocksHeld')).toEqual(['stacks-node']);
    expect(of('blocksReleased')).toEqual(['admin']);
  });

  test('a restart between two blocks of a fork keeps it exact (SIGKILL)', async () => {
    const dir = tempDir();
    const first = await serve(['--data', dir]);
    await post(`${first.observer}/new_block`, block('a', 'g', 1, 100, [create(1, 1n, 100)]));
    await post(`${first.observer}/new_block`, block('b', 'a', 2, 101, [create(2, 10n, 101)]));
    killGroup(first);
    await first.exited;
    const second = await serve(['--data', dir]);
    expect(await window(second)).toEqual({ tip: 101, withdrawn: 11 });
    // b' forks off a: only what the restarted observer remembers says b is orphaned.
    expect(
      (await post(`${second.observer}/new_block`, block("b'", 'a', 2, 101, [create(3, 100n, 101)])))
        .status,
    ).toBe(200);
    expect(await window(second)).toEqual({ tip: 101, withdrawn: 101 });
    // And b sent again (the node retrying) changes nothing.
    expect(
      (await post(`${second.observer}/new_block`, block('b', 'a', 2, 101, [create(2, 10n, 101)])))
        .status,
    ).toBe(200);
    expect(await window(second)).toEqual({ tip: 101, withdrawn: 101 });
  });

  test('a public address needs --stacks-observer-public, and is warned about', async () => {
    const refused = await runToEnd('node', [
      CLI,
      'serve',
      '--port',
      '0',
      '--data',
      tempDir(),
      '--stacks-observer',
      '0.0.0.0:0',
    ]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/not a loopback or private address.*--stacks-observer-public/);
    const p = await startServe([
      '--data',
      tempDir(),
      '--stacks-observer',
      '0.0.0.0:0',
      '--stacks-observer-public',
    ]);
    procs.push(p);
    await waitFor(
      () => /stacks observer on/.test(p.stdout) && /not private/.test(p.stderr + p.stdout),
      10_000,
    );
    // The observer's operator name is its own: a configured operator may not take it.
    const dir = tempDir();
    const config = join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        operators: [
          { name: 'stacks-node', tokenHash: `sha256:${'a'.repeat(64)}`, scopes: ['limits'] },
        ],
      }),
    );
    const taken = await runToEnd('node', [
      CLI,
      'serve',
      '--port',
      '0',
      '--data',
      dir,
      '--config',
      config,
      '--stacks-observer',
      '127.0.0.1:0',
    ]);
    expect(taken.code).toBe(2);
    expect(taken.stderr).toMatch(/"stacks-node" is taken already/);
    const bad = await runToEnd('node', [
      CLI,
      'serve',
      '--port',
      '0',
      '--stacks-observer',
      'nowhere',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--stacks-observer takes HOST:PORT/);
  });
});

if (!POSTGRES_AVAILABLE) console.warn(`SKIPPING the observer's replica test: ${POSTGRES_MISSING}`);

describe.skipIf(!POSTGRES_AVAILABLE)('replicas on PostgreSQL', () => {
  let db: TestPostgres;
  beforeAll(() => {
    db = startPostgres();
  });
  afterAll(() => db?.destroy(), 60_000);

  test('a fork whose blocks reach two replicas is handled as on one: they share what the observer remembers', async () => {
    const url = await db.database();
    const one = await serve([], { PEG_LIMITS_STORE: url });
    const two = await serve([], { PEG_LIMITS_STORE: url });
    await post(`${one.observer}/new_block`, block('a', 'g', 1, 100, [create(1, 1n, 100)]));
    await post(`${one.observer}/new_block`, block('b', 'a', 2, 101, [create(2, 10n, 101)]));
    expect(
      (await post(`${two.observer}/new_block`, block("b'", 'a', 2, 101, [create(3, 100n, 101)])))
        .status,
    ).toBe(200);
    await waitFor(async () => (await window(one)).withdrawn === 101, 5_000);
    expect(await window(two)).toEqual({ tip: 101, withdrawn: 101 });
  });

  test('held blocks are shared: held through one replica, listed and released through the other', async () => {
    const url = await db.database();
    const env = { PEG_LIMITS_STORE: url, PEG_LIMITS_ADMIN_TOKEN: ADMIN };
    const one = await serve(['--stacks-history-complete'], env);
    const two = await serve(['--stacks-history-complete'], env);
    const room = async (p: Proc) =>
      ((await (await fetch(`${p.url}/limits`)).json()) as { availableToWithdraw: number | null })
        .availableToWithdraw;
    await post(`${one.observer}/new_block`, block('a', 'g', 1, 1000, [create(1, 1n, 1000)]));
    await waitFor(async () => (await room(two)) === 10_000_000_000 - 1, 5_000);
    expect(await room(two)).toBe(10_000_000_000 - 1);
    expect((await post(`${one.observer}/new_block`, block('far', 'a', 2, 9_000_000))).status).toBe(
      200,
    );
    expect(
      (await post(`${two.observer}/new_block`, block('next', 'far', 3, 9_000_001))).status,
    ).toBe(200);
    const auth = { authorization: `Bearer ${ADMIN}` };
    const listed = (await (await fetch(`${two.url}/admin/held`, { headers: auth })).json()) as {
      blocks: Array<{ burnHeight: number }>;
    };
    expect(listed.blocks.map((b) => b.burnHeight)).toEqual([9_000_000, 9_000_001]);
    // Held through one replica, no room on the other either.
    await waitFor(async () => (await room(one)) === null, 5_000);
    expect(await room(two)).toBeNull();
    const r = await fetch(`${two.url}/admin/held/release`, { method: 'POST', headers: auth });
    expect(((await r.json()) as { released: number }).released).toBe(2);
    await waitFor(async () => (await window(one)).tip === 9_000_001, 5_000);
    // Released: the room of the window at the new tip (the withdrawal at 1000 has left it).
    await waitFor(async () => (await room(one)) !== null, 5_000);
    expect(await room(one)).toBe(10_000_000_000);
    expect(await (await fetch(`${one.url}/admin/held`, { headers: auth })).json()).toEqual({
      blocks: [],
    });
  });

  test('a block that comes while the database is away is answered 503 and counts once when the node sends it again', async () => {
    const url = await db.database();
    const p = await serve([], { PEG_LIMITS_STORE: url });
    await post(`${p.observer}/new_block`, block('a', 'g', 1, 100, [create(1, 1n, 100)]));
    db.stop();
    try {
      const away = await post(
        `${p.observer}/new_block`,
        block('b', 'a', 2, 101, [create(2, 10n, 101)]),
      );
      expect(away.status).toBe(503);
    } finally {
      db.start();
    }
    // The node retries until a 2xx.
    await waitFor(
      async () =>
        (await post(`${p.observer}/new_block`, block('b', 'a', 2, 101, [create(2, 10n, 101)])))
          .status === 200,
      20_000,
      200,
    );
    expect(await window(p)).toEqual({ tip: 101, withdrawn: 11 });
  });
});
