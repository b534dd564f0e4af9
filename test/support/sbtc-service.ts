/**
 * The service fed by a double of an sBTC chain's node, for the observer's end-to-end tests:
 * a configuration with a window and an account's own one, the command started beside the
 * chain, blocks posted as the node posts them, a deterministic mix of operations, and every
 * figure the service reports compared with a recount of the contracts' state.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import { killGroup, type Proc, startServe, waitFor } from './proc.js';
import type { ChainBlock, ChainOp, NodeRpc, SbtcChain } from './sbtc-chain.js';

export { CLI } from './proc.js';
export const WINDOW = 10;
export const CAP = 1_000_000n;
export const PEG_CAP = 300_000_000n;
export const ALICE = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';
export const BOB = 'SP2J6ZY48GV1EZ5V2V5RB9MP66SW86PYKKNRV9EJ7';
// Alice's entry keeps a window of her own.
export const ALICE_WINDOW = 20;
export const ALICE_CAP = 400_000n;

export const procs: Proc[] = [];
export const nodes: NodeRpc[] = [];
/** Stops every service and node double started so far (each test file's afterAll). */
export async function stopAll(): Promise<void> {
  for (const p of procs.splice(0)) killGroup(p);
  for (const n of nodes.splice(0)) await n.close();
}

export function config(dir: string): string {
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

export async function serve(
  dir: string,
  args: string[],
  store?: string,
  env: NodeJS.ProcessEnv = {},
): Promise<Proc & { observer: string }> {
  const p = await startServe(
    [
      ...(store === undefined ? ['--data', dir] : ['--store', store]),
      '--config',
      join(dir, 'config.json'),
      '--stacks-observer',
      '127.0.0.1:0',
      ...args,
    ],
    env,
  );
  procs.push(p);
  await waitFor(() => /stacks observer on (http:\S+)/.test(p.stdout), 10_000);
  return Object.assign(p, { observer: /stacks observer on (http:\S+)/.exec(p.stdout)![1]! });
}

export async function postBlock(p: { observer: string }, b: ChainBlock): Promise<number> {
  const r = await fetch(`${p.observer}/new_block`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(b.payload),
  });
  await r.text();
  return r.status;
}

// A deterministic mix of requests, accepts, rejects and deposits.
export function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

export function opsFor(chain: SbtcChain, next: () => number): ChainOp[] {
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
export function mineRange(
  chain: SbtcChain,
  from: number,
  to: number,
  next: () => number,
): ChainBlock[] {
  const out: ChainBlock[] = [];
  for (let h = from; h <= to; h++)
    for (let k = 0; k < 2; k++) out.push(chain.mine(opsFor(chain, next), { burnHeight: h }));
  return out;
}

export interface WindowBody {
  tip: number | null;
  withdrawn: number;
  availableToWithdraw: number | null;
  complete: boolean;
  completeAt: number | null;
  sums: Array<{ height: number; amount: number }>;
}

export async function get<T>(url: string): Promise<T> {
  const r = await fetch(url);
  return (await r.json()) as T;
}

// Every figure the service reports, against the recount from the contracts' state.
export async function expectRecount(p: Proc, chain: SbtcChain, b: ChainBlock, when: string) {
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
