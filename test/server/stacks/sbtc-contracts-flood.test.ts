/**
 * A deposit flood through the sBTC contracts themselves (test/data/sbtc-simnet-flood.json, with
 * its provenance): sbtc-deposit, sbtc-registry and sbtc-token run in Clarinet's simnet, this
 * service in the loop, the signers minting what `pegCap − supply` allowed before each block.
 * Each block is fed to the observer as the node posts it, the prints as the Clarity VM
 * serialized them. After every block, the signers' own computation (`pegCap − supply`, with
 * the supply the token contract reported) is the mint window's room recounted from the
 * registry's prints, 0 while the window is spent, and the room comes back exactly as the mints
 * leave. Before every deposit block, the service answers what the signers read when the
 * contracts ran, so the recorded mints are the ones this build lets through.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ClarityValue, hexToCV } from '@stacks/transactions';
import { afterAll, expect, test } from 'vitest';
import { expectEmily } from '../../support/emily.js';
import { tempDir } from '../../support/proc.js';
import { get, serve, stopAll } from '../../support/sbtc-service.js';

afterAll(stopAll);

interface RecordedBlock {
  /** sbtc-token's `get-total-supply` after the block. */
  readonly supply: string;
  /** `pegCap − supply` the signers read before the block (deposit blocks only). */
  readonly signersRead?: string;
  /** The amounts the block's `complete-deposit-wrapper` calls minted. */
  readonly minted?: ReadonlyArray<string>;
  readonly payload: {
    readonly burn_block_height: number;
    readonly events: ReadonlyArray<{
      readonly type: string;
      readonly contract_event?: {
        readonly contract_identifier: string;
        readonly raw_value: string;
      };
      readonly ft_mint_event?: { readonly asset_identifier: string; readonly amount: string };
    }>;
  };
}

const FLOOD = JSON.parse(
  readFileSync(new URL('../../data/sbtc-simnet-flood.json', import.meta.url), 'utf8'),
) as {
  readonly registry: string;
  readonly pegCap: string;
  readonly rollingMintBlocks: number;
  readonly rollingMintCap: string;
  readonly blocks: ReadonlyArray<RecordedBlock>;
};

const MINT_BLOCKS = FLOOD.rollingMintBlocks;
const MINT_CAP = BigInt(FLOOD.rollingMintCap);
const TOKEN = `${FLOOD.registry.split('.')[0]}.sbtc-token::sbtc-token`;
// A depositor of the flood (a simnet wallet).
const RECIPIENT = 'ST1YEHRRYJ4GF9CYBFFN0ZVCXX1APSBEEQ5KEDN7M';

// The amounts of the registry's `completed-deposit` prints in a block, read here from the
// serialized Clarity values (not through the service).
function completedDeposits(b: RecordedBlock): bigint[] {
  const out: bigint[] = [];
  for (const e of b.payload.events) {
    if (e.type !== 'contract_event' || e.contract_event?.contract_identifier !== FLOOD.registry)
      continue;
    const cv = hexToCV(e.contract_event.raw_value);
    if (cv.type !== 'tuple') continue;
    const t = cv.value as Record<string, ClarityValue>;
    const topic = t.topic;
    if (topic?.type !== 'ascii' || topic.value !== 'completed-deposit') continue;
    const amount = t.amount;
    if (amount?.type !== 'uint') throw new Error('a completed-deposit print without a uint amount');
    out.push(BigInt(amount.value));
  }
  return out;
}

function tokenMints(b: RecordedBlock): bigint {
  let sum = 0n;
  for (const e of b.payload.events)
    if (e.type === 'ft_mint_event' && e.ft_mint_event?.asset_identifier === TOKEN)
      sum += BigInt(e.ft_mint_event.amount);
  return sum;
}

interface LimitsBody {
  pegCap: number | null;
  availableToMint: number | null;
}

test('the recording is the contracts at work: each supply is the sum of the mints so far, each print paired with a mint of the token', () => {
  let supply = 0n;
  let deposits = 0;
  for (const b of FLOOD.blocks) {
    const printed = completedDeposits(b);
    const sum = printed.reduce((a, x) => a + x, 0n);
    expect(tokenMints(b)).toBe(sum);
    expect(printed.map(String)).toEqual(b.minted ?? []);
    supply += sum;
    deposits += printed.length;
    expect(BigInt(b.supply)).toBe(supply);
  }
  // A flood, not a trickle: the window is spent several times over.
  expect(supply).toBeGreaterThan(3n * MINT_CAP);
  expect(deposits).toBeGreaterThan(20);
});

test("a deposit flood through the sBTC contracts: pegCap − supply is the mint window's room after every block, 0 while spent, back exactly as the mints leave", async () => {
  const dir = tempDir();
  writeFileSync(
    join(dir, 'config.json'),
    JSON.stringify({
      historyBlocks: 60,
      limits: {
        pegCap: Number(FLOOD.pegCap),
        rollingMintBlocks: MINT_BLOCKS,
        rollingMintCap: Number(MINT_CAP),
      },
    }),
  );
  const p = await serve(dir, ['--sbtc-registry', FLOOD.registry, '--stacks-history-complete']);
  const mintedAt = new Map<number, bigint>();
  let spent = 0;
  let cameBack = 0;
  let previousRoom = MINT_CAP;
  for (const b of FLOOD.blocks) {
    const h = b.payload.burn_block_height;
    if (b.signersRead !== undefined) {
      // What the signers read before this block is what this build answers.
      const before = await get<LimitsBody>(`${p.url}/limits`);
      const supplyBefore = BigInt(b.supply) - tokenMints(b);
      expect(BigInt(before.pegCap ?? 0) - supplyBefore, `before the block at ${h}`).toBe(
        BigInt(b.signersRead),
      );
    }
    const r = await fetch(`${p.observer}/new_block`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(b.payload),
    });
    expect(r.status, await r.text()).toBe(200);
    const sum = completedDeposits(b).reduce((a, x) => a + x, 0n);
    if (sum > 0n) mintedAt.set(h, (mintedAt.get(h) ?? 0n) + sum);
    // The window's rule, recounted from the prints by burn height.
    let inWindow = 0n;
    for (const [at, a] of mintedAt) if (at > h - MINT_BLOCKS) inWindow += a;
    const room = MINT_CAP > inWindow ? MINT_CAP - inWindow : 0n;
    const res = await fetch(`${p.url}/limits`);
    const text = await res.text();
    expectEmily('/limits', 'GET', { status: res.status, body: text });
    const limits = JSON.parse(text) as LimitsBody;
    expect(
      BigInt(limits.pegCap ?? -1) - BigInt(b.supply),
      `burn height ${h}: pegCap − supply`,
    ).toBe(room);
    expect(BigInt(limits.availableToMint ?? -1), `burn height ${h}`).toBe(room);
    if (room === 0n && spent++ === 0) {
      // A depositor's check while the window is spent: the room as the limit, and the height
      // at which enough of the window's mints have left it.
      let at = h + 1;
      for (; ; at++) {
        let left = 0n;
        for (const [m, a] of mintedAt) if (m > at - MINT_BLOCKS) left += a;
        if (left < MINT_CAP) break;
      }
      const check = await get<Record<string, unknown>>(`${p.url}/limits/${RECIPIENT}/deposits/1`);
      expect(check).toEqual({
        ok: false,
        reason: 'rolling_mint_cap_exceeded',
        limit: 0,
        availableAt: at,
      });
    }
    if (previousRoom === 0n && room > 0n) cameBack++;
    previousRoom = room;
  }
  // The flood spent the window more than once, and each time the room came back.
  expect(spent).toBeGreaterThan(5);
  expect(cameBack).toBeGreaterThan(1);
}, 60_000);
