/**
 * A deposit flood through the command, fed block by block by a double of an sBTC node (the
 * registry's `completed-deposit` prints and the token's mints as the contracts write them):
 * after every block, what the signers compute from `GET /limits` (`pegCap − supply`, their
 * `max mintable`) is the mint window's room, 0 once the window is spent, and the room comes
 * back exactly when the mints leave the window. Each mint is counted at the burn height of
 * its block under the recipient of the same transaction's mint, with the deposit's outpoint
 * (the txid as Bitcoin Core displays it) as its id.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect, test } from 'vitest';
import { expectEmily } from '../../support/emily.js';
import { tempDir } from '../../support/proc.js';
import { SbtcChain, startNodeRpc } from '../../support/sbtc-chain.js';
import { BOB, get, nodes, postBlock, serve, stopAll } from '../../support/sbtc-service.js';

afterAll(stopAll);

const MINT_BLOCKS = 6;
const MINT_CAP = 100_000_000n; // 1 BTC in any 6 burn blocks
const PEG_CAP = 100_000_000_000n; // 1,000 BTC

// A data folder whose configuration sets the global mint window (1 BTC in 6 blocks) and the
// limits given beside it.
function mintConfig(limits: Record<string, unknown> = {}): string {
  const dir = tempDir();
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      historyBlocks: 60,
      limits: { rollingMintBlocks: MINT_BLOCKS, rollingMintCap: Number(MINT_CAP), ...limits },
    }),
  );
  return dir;
}

// Bob's entry with a mint window of its own: 0.5 BTC in 6 blocks.
const BOB_OWN = {
  accountCaps: { [BOB]: { rollingMintBlocks: MINT_BLOCKS, rollingMintCap: 50_000_000 } },
};

interface LimitsBody {
  pegCap: number | null;
  availableToMint: number | null;
  rollingMintCap: number | null;
}

test('a deposit flood: pegCap − supply is the mint window room after every block, 0 once spent, back exactly when the mints leave', async () => {
  const chain = new SbtcChain();
  const dir = mintConfig({ pegCap: Number(PEG_CAP) });
  const node = await startNodeRpc(chain);
  nodes.push(node);
  // Fed from the chain's first block: the mint history is complete from the start.
  const p = await serve(dir, ['--stacks-history-complete']);

  // 0.3 BTC a block from burn height 100 on, each deposit its own transaction: the window
  // (1 BTC in 6 blocks) is spent in the fourth block, and the signers must stop there.
  const minted = new Map<number, bigint>();
  const flood = 30_000_000n;
  for (let h = 100; h <= 115; h++) {
    // The signers mint what the service lets them: min(what arrived, pegCap − supply).
    const before = await get<LimitsBody>(`${p.url}/limits`);
    const supplyBefore = chain.head === undefined ? 0n : chain.supply(chain.head);
    const mintable = BigInt(before.pegCap ?? 0) - supplyBefore;
    const amount = h <= 109 ? (flood < mintable ? flood : mintable) : 0n;
    const ops =
      amount > 0n ? [{ kind: 'deposit' as const, recipient: BOB, amount, vout: h - 100 }] : [];
    const b = chain.mine(ops, { burnHeight: h });
    expect(await postBlock(p, b)).toBe(200);
    if (amount > 0n) minted.set(h, amount);
    // The room as the mint window's rule gives it, recounted from the mints by height.
    let inWindow = 0n;
    for (const [at, a] of minted) if (at > h - MINT_BLOCKS) inWindow += a;
    const room = MINT_CAP > inWindow ? MINT_CAP - inWindow : 0n;
    const supply = chain.supply(b);
    const res = await fetch(`${p.url}/limits`);
    const text = await res.text();
    // Emily's own schema still reads it: the new fields are extras its clients ignore.
    expectEmily('/limits', 'GET', { status: res.status, body: text });
    const limits = JSON.parse(text) as LimitsBody;
    expect(BigInt(limits.availableToMint ?? -1), `burn height ${h}`).toBe(room);
    expect(BigInt(limits.pegCap ?? -1) - supply, `burn height ${h}: pegCap − supply`).toBe(room);
    if (h === 103) {
      expect(room, 'spent in the fourth block').toBe(0n);
      // Each mint at its block's burn height.
      const window = await get<{ sums: Array<{ height: number; amount: number }> }>(
        `${p.url}/mint-window`,
      );
      expect(window.sums.map((s) => [s.height, BigInt(s.amount)])).toEqual([
        [100, flood],
        [101, flood],
        [102, flood],
        [103, MINT_CAP - 3n * flood],
      ]);
      const refused = await get<{ ok: boolean; reason: string; availableAt: number | null }>(
        `${p.url}/limits/${BOB}/deposits/1`,
      );
      // Height 100 leaves the window at 106.
      expect(refused).toEqual({
        ok: false,
        reason: 'rolling_mint_cap_exceeded',
        limit: 0,
        availableAt: 106,
      });
    }
  }
  // Past the flood by a whole window: nothing minted in it, the whole cap is room again.
  const window = await get<{ sums: unknown[]; availableToMint: number }>(`${p.url}/mint-window`);
  expect(window).toMatchObject({ sums: [], availableToMint: Number(MINT_CAP) });
  const check = await get<{ ok: boolean; reason: string | null; availableAt: number | null }>(
    `${p.url}/limits/${BOB}/deposits/1`,
  );
  expect(check).toMatchObject({ ok: true });
}, 60_000);

test("without the token's asset events, the registry names a mint's recipient through the node's RPC, and an entry's own mint window counts it", async () => {
  const chain = new SbtcChain();
  const dir = mintConfig(BOB_OWN);
  const node = await startNodeRpc(chain);
  nodes.push(node);
  const p = await serve(dir, ['--stacks-history-complete', '--stacks-rpc', node.url]);
  for (const [h, amount] of [
    [100, 10_000_000n],
    [101, 20_000_000n],
  ] as const) {
    const b = chain.mine([{ kind: 'deposit', recipient: BOB, amount, noAssetEvent: true }], {
      burnHeight: h,
    });
    expect(await postBlock(p, b)).toBe(200);
  }
  const own = await get<{ sums: Array<{ height: number; amount: number }> }>(
    `${p.url}/mint-window/${BOB}`,
  );
  expect(own.sums.map((s) => [s.height, BigInt(s.amount)])).toEqual([
    [100, 10_000_000n],
    [101, 20_000_000n],
  ]);
  const global = await get<{ withdrawn: number }>(`${p.url}/mint-window`);
  expect(BigInt(global.withdrawn)).toBe(30_000_000n);
}, 60_000);

test('without the RPC or the asset events, a mint still counts in the global mint window, under unknown', async () => {
  const chain = new SbtcChain();
  const dir = mintConfig(BOB_OWN);
  const p = await serve(dir, ['--stacks-history-complete']);
  const b = chain.mine(
    [{ kind: 'deposit', recipient: BOB, amount: 10_000_000n, noAssetEvent: true }],
    { burnHeight: 100 },
  );
  expect(await postBlock(p, b)).toBe(200);
  expect(BigInt((await get<{ withdrawn: number }>(`${p.url}/mint-window`)).withdrawn)).toBe(
    10_000_000n,
  );
  expect(BigInt((await get<{ withdrawn: number }>(`${p.url}/mint-window/${BOB}`)).withdrawn)).toBe(
    0n,
  );
}, 60_000);

test('without --stacks-history-complete the observer declares the mint history from its first block: no room, nothing for the signers, until a whole window has passed', async () => {
  const chain = new SbtcChain();
  const p = await serve(mintConfig({ pegCap: Number(PEG_CAP) }), []);
  const at = async (h: number) => {
    expect(await postBlock(p, chain.mine([], { burnHeight: h }))).toBe(200);
    return get<LimitsBody & { peggedTotal?: number }>(`${p.url}/limits`);
  };
  // Declared complete from 101: the window (6 blocks) holds only known heights from 106 on.
  for (const h of [100, 101, 105]) {
    const l = await at(h);
    expect(l.availableToMint, `burn height ${h}`).toBeNull();
    // A room not known is none: the peg cap the signers read is the supply (0 here).
    expect(l.pegCap, `burn height ${h}`).toBe(0);
  }
  const window = await get<{ complete: boolean; completeAt: number | null }>(
    `${p.url}/mint-window`,
  );
  expect(window).toMatchObject({ complete: false, completeAt: 106 });
  const check = await get<{ reason: string; availableAt: number | null }>(
    `${p.url}/limits/${BOB}/deposits/1`,
  );
  expect(check).toMatchObject({ reason: 'mint_window_incomplete', availableAt: 106 });
  const complete = await at(106);
  expect(BigInt(complete.availableToMint ?? -1)).toBe(MINT_CAP);
}, 60_000);
