/**
 * Never the reason a node stops, never room freed without the chain's word: a node retries
 * any answer but 200 for ever and halts meanwhile, so every well-formed block is answered
 * 200 once durable. A fork that orphans an old rejection goes no deeper than the fork; a
 * block past the chain bounds is held (released or dropped by an operator), not refused; a
 * rejection the node's own state does not show is not applied.
 */

import { spawn } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { afterAll, describe, expect, test } from 'vitest';
import { killGroup, tempDir, waitFor } from '../../support/proc.js';
import { SbtcChain, startNodeRpc } from '../../support/sbtc-chain.js';
import {
  BOB,
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
  type WindowBody,
} from '../../support/sbtc-service.js';

afterAll(stopAll);

describe('a fork that orphans a rejection', () => {
  test('of a request ten Bitcoin blocks old: 200, the withdrawal counts again at its own height, exact after it and across a restart', async () => {
    const chain = new SbtcChain();
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], { burnHeight: 100 });
    const dir = tempDir();
    config(dir);
    let p = await serve(dir, ['--stacks-history-complete']);
    expect(await postBlock(p, chain.head!)).toBe(200);
    expect(
      await postBlock(
        p,
        chain.mine([{ kind: 'request', sender: BOB, amount: 70_000n }], {
          burnHeight: 101,
        }),
      ),
    ).toBe(200);
    for (let h = 102; h <= 110; h++)
      expect(await postBlock(p, chain.mine([], { burnHeight: h }))).toBe(200);
    const base = chain.head!;
    const rejecting = chain.mine([{ kind: 'reject', id: 1n }], { burnHeight: 111 });
    expect(await postBlock(p, rejecting)).toBe(200);
    await expectRecount(p, chain, rejecting, 'the rejection');
    // A sibling of the rejecting block: the rejection is orphaned.
    const sibling = chain.mine([], { parent: base.hash, burnHeight: 111, label: 'sibling' });
    expect(await postBlock(p, sibling)).toBe(200);
    await expectRecount(p, chain, sibling, 'the fork');
    expect(p.stdout + p.stderr).toMatch(/forks the chain from burn height 111/);
    killGroup(p);
    await p.exited;
    p = await serve(dir, ['--stacks-history-complete']);
    const after = chain.mine([], { burnHeight: 112 });
    expect(await postBlock(p, after)).toBe(200);
    await expectRecount(p, chain, after, 'after a restart');
  });
});

describe('a rejection the node does not show', () => {
  test('with --stacks-rpc, a rejection applies only when the node shows it (a forged one is skipped, counted and warned)', async () => {
    const chain = new SbtcChain();
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], { burnHeight: 100 });
    const node = await startNodeRpc(chain);
    nodes.push(node);
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, ['--stacks-rpc', node.url]);
    const requested = chain.mine([{ kind: 'request', sender: BOB, amount: 80_000n }], {
      burnHeight: 101,
    });
    expect(await postBlock(p, requested)).toBe(200);
    // Someone who reaches the observer port posts a block the node never made, rejecting it.
    const forged = new SbtcChain();
    forged.blocks.set(requested.hash, requested);
    forged.head = requested;
    const fake = forged.mine([{ kind: 'reject', id: 1n }], { burnHeight: 101, label: 'forged' });
    expect(await postBlock(p, fake)).toBe(200);
    const w = await get<WindowBody>(`${p.url}/window`);
    expect(BigInt(w.withdrawn)).toBe(80_000n);
    await waitFor(() => /rejection .* not shown by the node/.test(p.stderr), 5_000);
    const metrics = await (await fetch(`${p.url}/metrics`)).text();
    expect(Number(/^peg_limits_observer_skipped_total (\d+)/m.exec(metrics)?.[1])).toBeGreaterThan(
      0,
    );
    // The real rejection, in a block the node has, applies.
    const real = chain.mine([{ kind: 'reject', id: 1n }], { burnHeight: 102 });
    expect(await postBlock(p, real)).toBe(200);
    await expectRecount(p, chain, real, 'the real rejection');
  });

  test('without --stacks-rpc, a posted rejection applies as sent (the docs say so)', async () => {
    const chain = new SbtcChain();
    chain.mine([], { burnHeight: 100 });
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, ['--stacks-history-complete']);
    expect(await postBlock(p, chain.head!)).toBe(200);
    expect(
      await postBlock(
        p,
        chain.mine([{ kind: 'request', sender: BOB, amount: 80_000n }], {
          burnHeight: 101,
        }),
      ),
    ).toBe(200);
    expect(await postBlock(p, chain.mine([{ kind: 'reject', id: 1n }], { burnHeight: 101 }))).toBe(
      200,
    );
    expect(BigInt((await get<WindowBody>(`${p.url}/window`)).withdrawn)).toBe(0n);
  });
});

describe('a jump past the chain bounds with --stacks-rpc', () => {
  test('one the node confirms (a service back after a long stop) is read again from the node: nothing held, exact', async () => {
    const chain = new SbtcChain();
    const next = random(21);
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 50_000_000n }], { burnHeight: 100 });
    mineRange(chain, 101, 110, next);
    const node = await startNodeRpc(chain);
    nodes.push(node);
    const dir = tempDir();
    config(dir);
    let p = await serve(dir, ['--stacks-rpc', node.url]);
    for (const b of mineRange(chain, 111, 112, next)) expect(await postBlock(p, b)).toBe(200);
    killGroup(p);
    await p.exited;
    // While the service is away, the chain moves on 200 burn heights (the bound is 144).
    mineRange(chain, 113, 312, next);
    p = await serve(dir, ['--stacks-rpc', node.url]);
    const b = chain.mine(opsFor(chain, next), { burnHeight: 313 });
    expect(await postBlock(p, b)).toBe(200);
    await expectRecount(p, chain, b, 'after the jump');
    expect((await (await fetch(`${p.url}/readyz`)).json()) as unknown).toEqual({ status: 'ready' });
    await waitFor(
      () => /the node confirms it, so the state was read again/.test(p.stderr + p.stdout),
      5_000,
    );
  });

  test('one the node does not know (a forgery) is held', async () => {
    const chain = new SbtcChain();
    chain.mine([{ kind: 'deposit', recipient: BOB, amount: 250_000_000n }], { burnHeight: 100 });
    const node = await startNodeRpc(chain);
    nodes.push(node);
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, ['--stacks-rpc', node.url]);
    expect(await postBlock(p, chain.mine([], { burnHeight: 101 }))).toBe(200);
    const forged = new SbtcChain();
    forged.blocks.set(chain.head!.hash, chain.head!);
    forged.head = chain.head!;
    expect(await postBlock(p, forged.mine([], { burnHeight: 900, label: 'forged' }))).toBe(200);
    expect((await get<WindowBody>(`${p.url}/window`)).tip).toBe(101);
    const ready = (await (await fetch(`${p.url}/readyz`)).json()) as { heldBlocks?: number };
    expect(ready.heldBlocks).toBe(1);
  });
});

describe("the observer listener's own client limits", () => {
  test("a crowd of stalled connections, capped and timed out, cannot keep the node's block out", async () => {
    const chain = new SbtcChain();
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, ['--stacks-history-complete']);
    const { port, hostname } = new URL(p.observer);
    const stalled: Socket[] = [];
    const closedAt: number[] = [];
    const began = Date.now();
    // Far more than the cap, each sending half a head and nothing more.
    for (let i = 0; i < 30; i++) {
      const s = connect(Number(port), hostname);
      s.on('error', () => undefined);
      s.resume();
      s.on('close', () => closedAt.push(Date.now() - began));
      s.write('POST /new_block HTTP/1.1\r\nHost: node\r\n');
      stalled.push(s);
    }
    // The node's block goes through at once: each new connection past the cap closes the
    // oldest one that is not in a request.
    const t0 = Date.now();
    expect(await postBlock(p, chain.mine([], { burnHeight: 100 }))).toBe(200);
    expect(Date.now() - t0).toBeLessThan(2_000);
    expect((await get<WindowBody>(`${p.url}/window`)).tip).toBe(100);
    // Every stalled one is closed: at the cap at once, the rest within the header time-out.
    await waitFor(() => closedAt.length === 30, 10_000);
    expect(Math.max(...closedAt)).toBeLessThan(8_000);
  }, 30_000);
});

describe('answers in time for a node (its default time-out is 1 s)', () => {
  test('p99 under 100 ms while 16 connections read GET /limits, and while compactions run', async () => {
    const chain = new SbtcChain();
    const dir = tempDir();
    config(dir);
    const p = await serve(dir, [
      '--stacks-history-complete',
      '--snapshot-every',
      '5000',
      '--quiet',
    ]);
    const q99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(0.99 * xs.length)]!;
    const requests = (n: number) =>
      Array.from({ length: n }, () => ({ kind: 'request', sender: BOB, amount: 1_000n }) as const);
    // Quiet first: what this machine gives now, the yardstick on one that is busy anyway.
    const quiet: number[] = [];
    for (let h = 50; h < 100; h++) {
      const b = chain.mine(requests(5), { burnHeight: h });
      const t = performance.now();
      expect(await postBlock(p, b)).toBe(200);
      quiet.push(performance.now() - t);
    }
    // Under a read load, from a process of its own (bounded: 20 s at most, loopback).
    const load = spawn(
      process.execPath,
      ['node_modules/autocannon/autocannon.js', '-c', '16', '-d', '20', `${p.url}/limits`],
      { stdio: 'ignore' },
    );
    await waitFor(async () => {
      const m = await (await fetch(`${p.url}/metrics`)).text();
      return (
        Number(
          /peg_limits_http_requests_total\{route="\/limits",status="200"\} (\d+)/.exec(m)?.[1] ?? 0,
        ) > 1000
      );
    }, 10_000);
    const loaded: number[] = [];
    for (let h = 100; h < 250; h++) {
      const b = chain.mine(requests(5), { burnHeight: h });
      const t = performance.now();
      expect(await postBlock(p, b)).toBe(200);
      loaded.push(performance.now() - t);
    }
    load.kill();
    // While compactions run: 50 requests a block, a compaction every 5,000 events.
    const during: number[] = [];
    for (let h = 250; h < 650; h++) {
      const b = chain.mine(requests(50), { burnHeight: h });
      const t = performance.now();
      expect(await postBlock(p, b)).toBe(200);
      during.push(performance.now() - t);
    }
    // 100 ms is the bar (measured here: quiet p99 18 ms, under the load 37 ms, during
    // compactions 69 ms); on a machine so busy that even quiet answers are slow (two CPU hogs
    // beside the suite: 104 ms under the load), five times the quiet p99 of this same run. A
    // stall of the kind a node times out on (a second) fails either way.
    const bar = Math.max(100, 5 * q99(quiet));
    const said = (what: string, xs: number[]) =>
      `${what}: p99 ${q99(xs).toFixed(1)} ms, quiet p99 ${q99(quiet).toFixed(1)} ms`;
    expect(q99(loaded), said('under load', loaded)).toBeLessThan(bar);
    expect(q99(during), said('with compactions', during)).toBeLessThan(bar);
  }, 120_000);
});
