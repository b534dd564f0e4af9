/**
 * A service started beside a node that is already synced: the node sends the blocks from
 * now on, never the past. With the node's RPC (`--stacks-rpc`) the service starts from the
 * node's own state and every figure equals a recount of the contracts' state from the first
 * block on (across a fork and a restart); without it, the window is incomplete and reports
 * no room until it holds only blocks the service saw, never more room than the chain has.
 * The pegged total follows the sBTC supply, so `pegCap` binds as the signer computes it.
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  POSTGRES_AVAILABLE,
  POSTGRES_MISSING,
  startPostgres,
  type TestPostgres,
} from '../../support/postgres.js';
import { killGroup, tempDir, waitFor } from '../../support/proc.js';
import { SbtcChain, startNodeRpc } from '../../support/sbtc-chain.js';
import {
  ALICE,
  BOB,
  CAP,
  config,
  expectRecount,
  get,
  mineRange,
  nodes,
  opsFor,
  postBlock,
  random,
  serve,
  stopAll,
  WINDOW,
  type WindowBody,
} from '../../support/sbtc-service.js';

afterAll(stopAll);

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

  test('a start the RPC cannot serve (down, or answering for another block) leaves the window incomplete with a warning until a later block starts it exactly', async () => {
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
