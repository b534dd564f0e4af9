/**
 * A service started beside a node that is already synced: the node sends the blocks from
 * now on, never the past. With the node's RPC (`--stacks-rpc`) the service starts from the
 * node's own state and every figure equals a recount of the contracts' state from the first
 * block on (across a fork and a restart); without it, the window is incomplete and reports
 * no room until it holds only blocks the service saw, never more room than the chain has.
 * The pegged total follows the sBTC supply, so `pegCap` binds as the signer computes it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  POSTGRES_AVAILABLE,
  POSTGRES_MISSING,
  startPostgres,
  type TestPostgres,
} from '../support/postgres.js';
import { killGroup, type Proc, spawnServer, tempDir, waitFor } from '../support/proc.js';
import {
  type ChainBlock,
  type ChainOp,
  type NodeRpc,
  SbtcChain,
  startNodeRpc,
} from '../support/sbtc-chain.js';

const CLI = 'dist/cli.js';
const WINDOW = 10;
const CAP = 1_000_000n;
const PEG_CAP = 300_000_000n;
const ALICE = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';
const BOB = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
// Alice's entry keeps a window of her own.
const ALICE_WINDOW = 20;
const ALICE_CAP = 400_000n;

const procs: Proc[] = [];
const nodes: NodeRpc[] = [];
afterAll(async () => {
  for (const p of procs) killGroup(p);
  for (const n of nodes) await n.close();
});

function config(dir: string): string {
  const file = join(dir, 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      historyBlocks: 60,
      limits: {
        pegCap: Number(PEG_CAP),
        rollingWithdrawalBlocks: WINDOW,
        rollingWithdrawalCap: Number(CAP),
        accountCaps: {
          [ALICE]: {
            rollingWithdrawalBlocks: ALICE_WINDOW,
            rollingWithdrawalCap: Number(ALICE_CAP),
          },
        },
      },
    }),
  );
  return file;
}

async function serve(
  dir: string,
  args: string[],
  store?: string,
): Promise<Proc & { observer: string }> {
  const p = await spawnServer('node', [
    CLI,
    'serve',
    '--port',
    '0',
    ...(store === undefined ? ['--data', dir] : ['--store', store]),
    '--config',
    join(dir, 'config.json'),
    '--stacks-observer',
    '127.0.0.1:0',
    ...args,
  ]);
  procs.push(p);
  await waitFor(() => /stacks observer on (http:\S+)/.test(p.stdout), 10_000);
  return Object.assign(p, { observer: /stacks observer on (http:\S+)/.exec(p.stdout)![1]! });
}

async function postBlock(p: { observer: string }, b: ChainBlock): Promise<number> {
  const r = await fetch(`${p.observer}/new_block`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(b.payload),
  });
  await r.text();
  return r.status;
}

// A deterministic mix of requests, accepts, rejects and deposits.
function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

function opsFor(chain: SbtcChain, next: () => number): ChainOp[] {
  const ops: ChainOp[] = [];
  const pending = [...(chain.head?.state.requests ?? new Map()).entries()]
    .filter(([, r]) => r.status === undefined)
    .map(([id]) => id);
  const n = Math.floor(next() * 4);
  for (let i = 0; i < n; i++) {
    const roll = next();
    if (roll < 0.4)
      ops.push({
        kind: 'request',
        sender: next() < 0.5 ? ALICE : BOB,
        amount: BigInt(1000 + Math.floor(next() * 90_000)),
      });
    else if (roll < 0.6 && pending.length > 0)
      ops.push({ kind: 'reject', id: pending.splice(Math.floor(next() * pending.length), 1)[0]! });
    else if (roll < 0.8 && pending.length > 0)
      ops.push({ kind: 'accept', id: pending.splice(Math.floor(next() * pending.length), 1)[0]! });
    else
      ops.push({
        kind: 'deposit',
        recipient: BOB,
        amount: BigInt(100_000 + Math.floor(next() * 2_000_000)),
      });
  }
  return ops;
}

/** Mines two Stacks blocks at each burn height of [from, to]. */
function mineRange(chain: SbtcChain, from: number, to: number, next: () => number): ChainBlock[] {
  const out: ChainBlock[] = [];
  for (let h = from; h <= to; h++)
    for (let k = 0; k < 2; k++) out.push(chain.mine(opsFor(chain, next), { burnHeight: h }));
  return out;
}

interface WindowBody {
  tip: number | null;
  withdrawn: number;
  availableToWithdraw: number | null;
  complete: boolean;
  completeAt: number | null;
  sums: Array<{ height: number; amount: number }>;
}

async function get<T>(url: string): Promise<T> {
  const r = await fetch(url);
  return (await r.json()) as T;
}

// Every figure the service reports, against the recount from the contracts' state.
async function expectRecount(p: Proc, chain: SbtcChain, b: ChainBlock, when: string) {
  const expected = chain.window(b, WINDOW);
  const w = await get<WindowBody>(`${p.url}/window`);
  expect(w.tip, when).toBe(b.burnHeight);
  expect(w.complete, when).toBe(true);
  expect(BigInt(w.withdrawn), when).toBe(expected.withdrawn);
  expect(
    w.sums.map((s) => [s.height, BigInt(s.amount)]),
    when,
  ).toEqual([...expected.sums.entries()].sort((x, y) => x[0] - y[0]));
  const room = CAP > expected.withdrawn ? CAP - expected.withdrawn : 0n;
  expect(BigInt(w.availableToWithdraw ?? -1), when).toBe(room);
  const limits = await get<{ availableToWithdraw: number | null }>(`${p.url}/limits`);
  expect(BigInt(limits.availableToWithdraw ?? -1), when).toBe(room);
  // Alice's own window.
  const own = await get<WindowBody>(`${p.url}/window/${ALICE}`);
  let aliceSum = 0n;
  for (const r of b.state.requests.values())
    if (r.sender === ALICE && r.status !== false && r.height > b.burnHeight - ALICE_WINDOW)
      aliceSum += r.amount;
  expect(BigInt(own.withdrawn), when).toBe(aliceSum);
  // pegCap binds on the supply, as the signer computes what may still be minted.
  const supply = chain.supply(b);
  const left = PEG_CAP > supply ? PEG_CAP - supply : 0n;
  expect(left > 0n, `${when}: the supply ${supply} leaves room under the peg cap`).toBe(true);
  const fits = await get<{ ok: boolean }>(
    `${p.url}/limits/${BOB}/deposits/${left === 0n ? 1 : left}`,
  );
  expect(fits.ok, `${when}: a deposit of the room left (${left})`).toBe(left > 0n);
  const over = await get<{ ok: boolean; reason: string }>(
    `${p.url}/limits/${BOB}/deposits/${left + 1n}`,
  );
  expect([over.ok, over.reason], when).toEqual([false, 'peg_cap_exceeded']);
}

describe('a service started beside a synced node', () => {
  test('with --stacks-rpc: every figure equals a recount of the contracts from the first block, across a restart and a fork', async () => {
    const chain = new SbtcChain();
    const next = random(7);
    // The past the node never sends: 30 burn heights of withdrawals, deposits and rulings.
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], { burnHeight: 100 });
    mineRange(chain, 101, 130, next);
    const node = await startNodeRpc(chain);
    nodes.push(node);
    const dir = tempDir();
    config(dir);
    let p = await serve(dir, ['--stacks-rpc', node.url]);
    const live = mineRange(chain, 131, 136, next);
    for (const [i, b] of live.entries()) {
      expect(await postBlock(p, b)).toBe(200);
      await expectRecount(p, chain, b, `block ${i} at ${b.burnHeight}`);
    }
    expect(p.stdout + p.stderr).toMatch(/started from the node's state as of block/);
    // The start is one batch on the trail, by stacks-node, naming the block.
    expect(p.stdout + p.stderr).not.toMatch(/window is incomplete/);

    // A restart (SIGKILL) keeps it exact.
    killGroup(p);
    await p.exited;
    p = await serve(dir, ['--stacks-rpc', node.url]);
    for (const b of mineRange(chain, 137, 139, next)) {
      expect(await postBlock(p, b)).toBe(200);
      await expectRecount(p, chain, b, `after the restart, at ${b.burnHeight}`);
    }

    // A Stacks fork orphans the newest block (a request and a deposit in it).
    const base = chain.head!;
    const orphan = chain.mine(
      [
        { kind: 'request', sender: BOB, amount: 77_000n },
        { kind: 'deposit', recipient: BOB, amount: 3_000_000n },
      ],
      { burnHeight: 140 },
    );
    expect(await postBlock(p, orphan)).toBe(200);
    await expectRecount(p, chain, orphan, 'the block later orphaned');
    const fork = chain.mine([{ kind: 'request', sender: ALICE, amount: 5_000n }], {
      parent: base.hash,
      burnHeight: 140,
      label: 'fork',
    });
    expect(await postBlock(p, fork)).toBe(200);
    await expectRecount(p, chain, fork, 'the fork');
  });

  test('with --stacks-history-complete from the deployment: complete from the first block, the pegged total following the token’s mint and burn events', async () => {
    const chain = new SbtcChain();
    const next = random(3);
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, ['--stacks-history-complete']);
    const first = chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], {
      burnHeight: 100,
    });
    expect(await postBlock(p, first)).toBe(200);
    await expectRecount(p, chain, first, 'the first block');
    for (const b of mineRange(chain, 101, 112, next)) {
      expect(await postBlock(p, b)).toBe(200);
      await expectRecount(p, chain, b, `at ${b.burnHeight}`);
    }
  });

  test('without --stacks-rpc: the window is incomplete (no room, withdrawals refused) until it holds only blocks it saw, never more room than the chain has', async () => {
    const chain = new SbtcChain();
    const next = random(11);
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], { burnHeight: 100 });
    mineRange(chain, 101, 130, next);
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, []);
    const first = chain.mine([{ kind: 'request', sender: BOB, amount: 1_000n }], {
      burnHeight: 131,
    });
    expect(await postBlock(p, first)).toBe(200);
    const w = await get<WindowBody>(`${p.url}/window`);
    expect([w.complete, w.completeAt, w.availableToWithdraw]).toEqual([false, 141, null]);
    expect(
      (await get<{ availableToWithdraw: unknown }>(`${p.url}/limits`)).availableToWithdraw,
    ).toBeNull();
    expect(await get(`${p.url}/limits/${BOB}/withdrawals/1`)).toEqual({
      ok: false,
      reason: 'window_incomplete',
      limit: null,
      availableAt: 141,
    });
    expect(p.stderr).toMatch(/without --stacks-rpc what came before it is unknown/);
    // Block by block: never more room than the chain has; exact once complete.
    for (const b of mineRange(chain, 132, 142, next)) {
      expect(await postBlock(p, b)).toBe(200);
      const got = await get<WindowBody>(`${p.url}/window`);
      const room = CAP - chain.window(b, WINDOW).withdrawn;
      if (b.burnHeight < 141) expect(got.availableToWithdraw, `at ${b.burnHeight}`).toBeNull();
      else
        expect(BigInt(got.availableToWithdraw ?? -1), `at ${b.burnHeight}`).toBe(
          room < 0n ? 0n : room,
        );
    }
  });

  test('an RPC that is down, or answers for another block, at the start: the window stays incomplete with a warning; once it answers, a later block starts from it and is exact', async () => {
    const chain = new SbtcChain();
    const next = random(5);
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], { burnHeight: 100 });
    mineRange(chain, 101, 120, next);
    const node = await startNodeRpc(chain);
    nodes.push(node);
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, ['--stacks-rpc', node.url, '--stacks-rpc-retry', '0.05']);
    node.fault = 'down';
    const first = chain.mine([], { burnHeight: 121 });
    expect(await postBlock(p, first)).toBe(200);
    expect((await get<WindowBody>(`${p.url}/window`)).complete).toBe(false);
    expect(p.stderr).toMatch(/could not start from the node's state as of block .*unreachable/);
    // A node that answers with its newest state whatever block is asked about is refused.
    node.fault = 'latest';
    await new Promise((r) => setTimeout(r, 100));
    const second = chain.mine([{ kind: 'request', sender: BOB, amount: 9_000n }], {
      burnHeight: 122,
    });
    expect(await postBlock(p, second)).toBe(200);
    expect((await get<WindowBody>(`${p.url}/window`)).complete).toBe(false);
    expect(p.stderr).toMatch(/an answer for another block/);
    node.fault = 'garbage';
    await new Promise((r) => setTimeout(r, 100));
    expect(await postBlock(p, chain.mine([], { burnHeight: 123 }))).toBe(200);
    expect(p.stderr).toMatch(/not a JSON object/);
    expect(
      (await get<{ availableToWithdraw: unknown }>(`${p.url}/limits`)).availableToWithdraw,
    ).toBeNull();
    node.fault = 'none';
    await new Promise((r) => setTimeout(r, 100));
    const b = chain.mine(opsFor(chain, next), { burnHeight: 124 });
    expect(await postBlock(p, b)).toBe(200);
    await expectRecount(p, chain, b, 'once the node answers');
  });
});

describe('the cost of a start', () => {
  test('2,000 requests in the history: one RPC call each, with the last id and the supply, read 16 at a time', async () => {
    const chain = new SbtcChain();
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], { burnHeight: 50 });
    // 100 requests below the history (heights 50…59), then 2,000 inside it (60…109).
    for (let h = 50; h < 110; h++) {
      const n = h < 60 ? 10 : 40;
      chain.mine(
        Array.from(
          { length: n },
          () => ({ kind: 'request', sender: BOB, amount: 1_000n }) as const,
        ),
        { burnHeight: h },
      );
    }
    const node = await startNodeRpc(chain);
    nodes.push(node);
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, ['--stacks-rpc', node.url]);
    const b = chain.mine([], { burnHeight: 110 });
    const began = performance.now();
    expect(await postBlock(p, b)).toBe(200);
    const ms = performance.now() - began;
    // historyBlocks 60 at burn height 110: heights 51…110, so 1,990 of the 2,000 + 90 older
    // ones are inside it (the 10 at height 50 are not).
    const said =
      /started from the node's state .*: (\d+) withdrawal request\(s\) in the history, supply \d+, (\d+) RPC calls in (\d+) ms, applied in (\d+) ms/;
    await waitFor(() => said.test(p.stdout + p.stderr), 10_000);
    const line = said.exec(p.stdout + p.stderr);
    expect(line, p.stdout + p.stderr).not.toBeNull();
    const [, held, calls, readMs, appliedMs] = line!.map(Number);
    expect(held).toBe(2090);
    // The last id, every request in the history and up to one stride below it, the supply.
    expect(calls).toBeGreaterThanOrEqual(2090 + 2 + 1);
    expect(calls).toBeLessThanOrEqual(2090 + 2 + 16);
    const w = await get<WindowBody>(`${p.url}/window`);
    expect(w.complete).toBe(true);
    expect(BigInt(w.withdrawn)).toBe(chain.window(b, WINDOW).withdrawn);
    // Measured (the README has the figure); bounded here with room for a slow machine.
    expect(ms).toBeLessThan(30_000);
    console.log(
      `start from the node's state: ${held} requests, ${calls} RPC calls in ${readMs} ms, applied in ${appliedMs} ms; the first block answered in ${Math.round(ms)} ms`,
    );
  }, 60_000);
});

if (!POSTGRES_AVAILABLE) console.warn(`SKIPPING the replicas' start test: ${POSTGRES_MISSING}`);

describe.skipIf(!POSTGRES_AVAILABLE)('replicas on PostgreSQL', () => {
  let db: TestPostgres;
  beforeAll(() => {
    db = startPostgres();
  });
  afterAll(() => db?.destroy(), 60_000);

  test('one start from the node for all of them: blocks reaching either replica, each exact against the recount', async () => {
    const chain = new SbtcChain();
    const next = random(13);
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], { burnHeight: 100 });
    mineRange(chain, 101, 125, next);
    const node = await startNodeRpc(chain);
    nodes.push(node);
    const url = await db.database();
    const dir = tempDir();
    config(dir);
    const one = await serve(dir, ['--stacks-rpc', node.url], url);
    const two = await serve(dir, ['--stacks-rpc', node.url], url);
    const live = mineRange(chain, 126, 129, next);
    for (const [i, b] of live.entries()) {
      const to = i % 2 === 0 ? one : two;
      expect(await postBlock(to, b)).toBe(200);
      for (const p of [one, two]) {
        // A follower applies the newest batch shortly after: wait for it, then compare all.
        await waitFor(async () => {
          const w = await get<WindowBody>(`${p.url}/window`);
          return (
            w.tip === b.burnHeight && BigInt(w.withdrawn) === chain.window(b, WINDOW).withdrawn
          );
        }, 5_000);
        await expectRecount(p, chain, b, `block ${i} read through ${p === one ? 'one' : 'two'}`);
      }
    }
    const starts = (one.stdout + one.stderr + two.stdout + two.stderr).match(
      /started from the node's state/g,
    );
    expect(starts?.length).toBe(1);
  });
});
