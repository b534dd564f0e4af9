// The event observer's mapping (src/stacks/blocks.ts): a Stacks node's blocks, forks
// included, turned into limits events, checked against a naive recount of the canonical chain.
import { fc, test as fcTest } from '@fast-check/vitest';
import { hexToCV } from '@stacks/transactions';
import { describe, expect, test } from 'vitest';
import {
  applyAll,
  createLimitsState,
  effectiveLimits,
  type LimitsState,
  windowOf,
} from '../../src/index.js';
import {
  type BlockMemory,
  type ClarityValue,
  EMPTY_MEMORY,
  type Observed,
  observeBlock,
  type RegistryRequest,
  startBatch,
  withSupply,
} from '../../src/internal.js';
import type { ObserveOptions } from '../../src/stacks/blocks.js';
import { SbtcChain, TOKEN } from '../support/sbtc-chain.js';
import {
  block,
  create,
  hash,
  newBlock,
  type Print,
  REGISTRY,
  SENDER,
} from '../support/stacks-node.js';

const decode = (hex: string) => hexToCV(hex) as unknown as ClarityValue;
const WINDOW = 10n;

function fresh(): LimitsState {
  return createLimitsState({
    historyBlocks: 200,
    limits: { rollingWithdrawalBlocks: WINDOW, rollingWithdrawalCap: 1_000_000n },
  });
}

// Feeds one body: the mapping, then the batch, as the service would.
function feed(
  s: { state: LimitsState; memory: BlockMemory },
  body: unknown,
  keepBurnBlocks = 1000,
): Observed {
  const o = observeBlock(s.memory, body, {
    registry: REGISTRY,
    decode,
    tip: windowOf(s.state)?.tip ?? null,
    keepBurnBlocks,
  });
  if (o.kind !== 'block') return o;
  const r = applyAll(s.state, o.events);
  if (!r.ok) throw new Error(`${r.error.code} at ${r.error.path}: ${r.error.message}`);
  s.state = r.state;
  s.memory = o.memory;
  return o;
}

describe('a block and its registry prints', () => {
  test('withdrawal-create, -accept and -reject: counted, ignored, uncounted', () => {
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    const a = feed(s, block('a', 'genesis', 1, 100, [create(1, 5000n, 100), create(2, 700n, 100)]));
    expect(a.kind === 'block' && a.events).toEqual([
      { type: 'blockConnected', height: 100 },
      { type: 'withdrawalRequested', id: '1', account: SENDER, amount: 5000n, height: 100 },
      { type: 'withdrawalRequested', id: '2', account: SENDER, amount: 700n, height: 100 },
    ]);
    feed(
      s,
      block('b', 'a', 2, 100, [
        { topic: 'withdrawal-accept', id: 1n },
        { topic: 'withdrawal-reject', id: 2n },
      ]),
    );
    expect(windowOf(s.state)?.withdrawn).toBe(5000n);
    expect(windowOf(s.state)?.tip).toBe(100);
  });

  test('only committed print events of the registry give events', () => {
    const first = block('x', 'y', 1, 1, [create(9, 1n, 1)], 'z').events[0] as {
      contract_event: { raw_value: string };
    };
    const hex = first.contract_event.raw_value;
    const body = newBlock({
      hash: hash('a'),
      parent: hash('genesis'),
      height: 1,
      burnHeight: 100,
      burnHash: hash('b100'),
      extra: [
        {
          committed: false,
          type: 'contract_event',
          contract_event: { contract_identifier: REGISTRY, topic: 'print', raw_value: hex },
        },
        {
          committed: true,
          type: 'contract_event',
          contract_event: {
            contract_identifier: `${SENDER}.other`,
            topic: 'print',
            raw_value: hex,
          },
        },
        {
          committed: true,
          type: 'contract_event',
          contract_event: { contract_identifier: REGISTRY, topic: 'other', raw_value: hex },
        },
        { committed: true, type: 'stx_transfer_event', stx_transfer_event: {} },
      ],
    });
    const o = feed({ state: fresh(), memory: EMPTY_MEMORY }, body);
    expect(o.kind === 'block' && o.events).toEqual([{ type: 'blockConnected', height: 100 }]);
  });

  test('a raw_value that is not hex, not Clarity, or a print whose fields do not fit is skipped, with its index', () => {
    const body = newBlock({
      hash: hash('a'),
      parent: hash('genesis'),
      height: 1,
      burnHeight: 100,
      burnHash: hash('b100'),
      prints: [create(1, 0n, 100), create(2, 2n ** 64n - 1n, 100), create(3, 5n, 100)],
      extra: [
        {
          committed: true,
          type: 'contract_event',
          contract_event: { contract_identifier: REGISTRY, topic: 'print', raw_value: 'zz' },
        },
        {
          committed: true,
          type: 'contract_event',
          contract_event: { contract_identifier: REGISTRY, topic: 'print', raw_value: '0xff00' },
        },
      ],
    });
    const o = feed({ state: fresh(), memory: EMPTY_MEMORY }, body);
    if (o.kind !== 'block') throw new Error(o.kind);
    expect(o.skipped.map((k) => k.index)).toEqual([0, 1, 3, 4]);
    expect(o.events).toEqual([
      { type: 'blockConnected', height: 100 },
      { type: 'withdrawalRequested', id: '3', account: SENDER, amount: 5n, height: 100 },
    ]);
  });

  test('raw_value is read with or without 0x', () => {
    const body = block('a', 'g', 1, 100, [create(1, 5n, 100)]);
    const event = body.events[0] as { contract_event: { raw_value: string } };
    event.contract_event.raw_value = event.contract_event.raw_value.replace(/^0x/, '');
    const o = feed({ state: fresh(), memory: EMPTY_MEMORY }, body);
    expect(o.kind === 'block' && o.events[1]).toEqual({
      type: 'withdrawalRequested',
      id: '1',
      account: SENDER,
      amount: 5n,
      height: 100,
    });
  });

  test('a block whose parent is unknown (a gap) becomes the new tip above what came before, which still counts', () => {
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    feed(s, block('a', 'g', 1, 100, [create(1, 7n, 100)]));
    // The node skipped some blocks: c's parent was never seen.
    const o = feed(s, block('c', 'b', 3, 102, [create(2, 3n, 102)]));
    expect(o.kind === 'block' && o.forkedAt).toBeUndefined();
    expect(s.memory.head).toBe(hash('c').slice(2));
    expect(windowOf(s.state)).toMatchObject({ tip: 102, withdrawn: 10n });
  });

  test('a block sent again changes nothing', () => {
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    const body = block('a', 'g', 1, 100, [create(1, 5n, 100)]);
    feed(s, body);
    const state = s.state;
    expect(feed(s, body)).toEqual({ kind: 'known' });
    expect(s.state).toBe(state);
  });

  test('a payload that is not a block is unusable', () => {
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    expect(feed(s, { hello: 'world' }).kind).toBe('unusable');
    expect(feed(s, 'text').kind).toBe('unusable');
  });
});

describe('forks', () => {
  test('a Stacks fork: the orphaned block stops counting, a withdrawal requested again on the new branch counts once', () => {
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    feed(s, block('a', 'g', 1, 100, [create(1, 100n, 100)]));
    feed(s, block('b', 'a', 2, 101, [create(2, 20n, 101), create(3, 3n, 101)]));
    expect(windowOf(s.state)?.withdrawn).toBe(123n);
    // b' forks off a: b is orphaned; 2 is requested again, 3 is not.
    const o = feed(s, block("b'", 'a', 2, 101, [create(2, 20n, 101)]));
    expect(o.kind === 'block' && o.forkedAt).toBe(101);
    expect(o.kind === 'block' && o.events[0]).toEqual({ type: 'chainReorganized', height: 100 });
    expect(windowOf(s.state)?.withdrawn).toBe(120n);
    // Back to the first branch: c extends b, so b counts again and b' stops.
    feed(s, block('c', 'b', 3, 102));
    expect(windowOf(s.state)?.withdrawn).toBe(123n);
    expect(windowOf(s.state)?.tip).toBe(102);
  });

  test('a rejection in an orphaned block is undone', () => {
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    feed(s, block('a', 'g', 1, 100, [create(1, 100n, 100)]));
    feed(s, block('b', 'a', 2, 103, [{ topic: 'withdrawal-reject', id: 1n }]));
    expect(windowOf(s.state)?.withdrawn).toBe(0n);
    feed(s, block("b'", 'a', 2, 103));
    expect(windowOf(s.state)?.withdrawn).toBe(100n);
  });

  test('a Bitcoin reorganization: a burn height seen again with another hash orphans everything from it', () => {
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    feed(s, block('a', 'g', 1, 100, [create(1, 1n, 100)]));
    feed(s, block('b', 'a', 2, 101, [create(2, 10n, 101)]));
    feed(s, block('c', 'b', 3, 102, [create(3, 100n, 102)]));
    // A block at 101 with another burn hash, on top of c: b and c are orphaned.
    const o = feed(s, block('d', 'c', 4, 101, [create(4, 1000n, 101)], "b101'"));
    expect(o.kind === 'block' && o.forkedAt).toBe(101);
    expect(windowOf(s.state)?.withdrawn).toBe(1001n);
    expect(windowOf(s.state)?.tip).toBe(101);
  });
});

// --- The property: random block trees, fed in an order a node could deliver them ---------

interface GenBlock {
  readonly label: string;
  readonly parent: number; // index, -1 for the first
  readonly burnHeight: number;
  readonly btc: number; // which Bitcoin branch its burn block is on
  readonly prints: Print[];
}

// What a node could send: each block after its parent, branches interleaved; a child keeps
// its parent's burn height or moves up, and now and then moves onto another Bitcoin branch
// (above its parent's burn height). Requests are new ids, or an id of another branch sent
// again; rejections name a request on the block's own chain.
const trees = fc
  .array(
    fc.record({
      parentBack: fc.nat({ max: 6 }),
      burnStep: fc.integer({ min: 0, max: 2 }),
      newBtc: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      requests: fc.array(
        fc.record({ amount: fc.bigInt({ min: 1n, max: 500n }), again: fc.boolean() }),
        { maxLength: 3 },
      ),
      rejects: fc.array(fc.nat(), { maxLength: 2 }),
    }),
    { minLength: 1, maxLength: 30 },
  )
  .map((steps) => {
    const blocks: GenBlock[] = [];
    let nextId = 1;
    let btcs = 1;
    const chainOf = (i: number): GenBlock[] => {
      const out: GenBlock[] = [];
      for (let j = i; j >= 0; j = blocks[j]!.parent) out.push(blocks[j]!);
      return out.reverse();
    };
    for (const step of steps) {
      const parent = blocks.length === 0 ? -1 : Math.max(0, blocks.length - 1 - step.parentBack);
      const p = parent < 0 ? undefined : blocks[parent]!;
      const newBtc = p !== undefined && step.newBtc;
      const burnHeight =
        p === undefined
          ? 1000
          : p.burnHeight + (newBtc ? Math.max(1, step.burnStep) : step.burnStep);
      const chain = p === undefined ? [] : chainOf(parent);
      const requested = chain.flatMap((b) =>
        b.prints.filter((x) => x.topic === 'withdrawal-create'),
      );
      const rejected = new Set(
        chain.flatMap((b) =>
          b.prints.filter((x) => x.topic === 'withdrawal-reject').map((x) => x.id),
        ),
      );
      const elsewhere = blocks
        .flatMap((b) => b.prints)
        .filter(
          (x): x is Extract<Print, { topic: 'withdrawal-create' }> =>
            x.topic === 'withdrawal-create' &&
            !requested.some((r) => r.topic === 'withdrawal-create' && r.id === x.id),
        );
      const prints: Print[] = [];
      for (const r of step.requests) {
        const old = r.again ? elsewhere.find((x) => !prints.some((y) => y.id === x.id)) : undefined;
        prints.push(
          create(
            old === undefined ? nextId++ : Number(old.id),
            old?.amount ?? r.amount,
            burnHeight,
          ),
        );
      }
      for (const k of step.rejects) {
        const open = requested.filter(
          (r) =>
            !rejected.has(r.id) &&
            !prints.some((x) => x.topic === 'withdrawal-reject' && x.id === r.id),
        );
        if (open.length > 0)
          prints.push({ topic: 'withdrawal-reject', id: open[k % open.length]!.id });
      }
      blocks.push({
        label: `s${blocks.length}`,
        parent,
        burnHeight,
        btc: newBtc ? btcs++ : (p?.btc ?? 0),
        prints,
      });
    }
    return { blocks, chainOf };
  });

// The window a naive recount of the canonical chain gives: the sums of the requests not
// rejected on it, by height, inside the window at its tip.
function recount(chain: ReadonlyArray<GenBlock>): {
  tip: number;
  sums: Array<{ height: number; amount: bigint }>;
} {
  const tip = chain[chain.length - 1]!.burnHeight;
  const rejected = new Set(
    chain.flatMap((b) => b.prints.filter((p) => p.topic === 'withdrawal-reject').map((p) => p.id)),
  );
  const byHeight = new Map<number, bigint>();
  for (const b of chain)
    for (const p of b.prints)
      if (p.topic === 'withdrawal-create' && !rejected.has(p.id) && p.height > tip - Number(WINDOW))
        byHeight.set(p.height, (byHeight.get(p.height) ?? 0n) + p.amount);
  return {
    tip,
    sums: [...byHeight]
      .filter(([, a]) => a !== 0n)
      .sort(([a], [b]) => a - b)
      .map(([height, amount]) => ({ height, amount })),
  };
}

const burnHashOf = (b: GenBlock) => hash(`burn/${b.btc}/${b.burnHeight}`);

fcTest.prop([trees], { numRuns: 300 })(
  'after every block, the window equals a naive recount of the withdrawals on the canonical chain',
  ({ blocks, chainOf }) => {
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    blocks.forEach((b, i) => {
      const body = newBlock({
        hash: hash(b.label),
        parent: b.parent < 0 ? hash('genesis') : hash(blocks[b.parent]!.label),
        height: chainOf(i).length,
        burnHeight: b.burnHeight,
        burnHash: burnHashOf(b),
        prints: b.prints,
      });
      const o = feed(s, body);
      expect(o.kind).toBe('block');
      const want = recount(chainOf(i));
      const got = windowOf(s.state)!;
      expect({ tip: got.tip, sums: got.sums }, `after ${b.label}`).toEqual(want);
      // Sent again, it changes nothing.
      expect(feed(s, body)).toEqual({ kind: 'known' });
    });
  },
);

test('the memory keeps the blocks of the last burn heights only', () => {
  const s = { state: fresh(), memory: EMPTY_MEMORY };
  for (let i = 0; i < 40; i++) feed(s, block(`m${i}`, `m${i - 1}`, i, 100 + i, [], `mb${i}`), 8);
  expect(s.memory.blocks.map((b) => b.burnHeight)).toEqual(
    Array.from({ length: 9 }, (_, k) => 131 + k),
  );
  // A block from below them, sent long after: not taken as the tip (it would orphan all since).
  const state = s.state;
  const old = feed(s, block('old', 'm3', 4, 104, [], 'mb4'), 8);
  expect(old.kind).toBe('unusable');
  expect(s.state).toBe(state);
});

describe('the pegged total follows the supply', () => {
  const chainBlocks = () => {
    const chain = new SbtcChain();
    const a = chain.mine([{ kind: 'deposit', recipient: SENDER, amount: 9_000n }], {
      burnHeight: 100,
      label: 'a',
    });
    const b = chain.mine([{ kind: 'request', sender: SENDER, amount: 1_000n }], {
      burnHeight: 101,
      label: 'b',
    });
    const c = chain.mine([{ kind: 'accept', id: 1n }], { burnHeight: 102, label: 'c' });
    return { chain, a, b, c };
  };
  const observe = (memory: BlockMemory, body: unknown, extra: Partial<ObserveOptions>) =>
    observeBlock(memory, body, {
      registry: REGISTRY,
      decode,
      tip: null,
      keepBurnBlocks: 100,
      token: TOKEN,
      ...extra,
    });

  test("from the token's mint and burn events, given the supply before: a deposit adds, a request moves it to locked, an accept burns", () => {
    const { chain, a, b, c } = chainBlocks();
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    const totals: bigint[] = [];
    for (const blk of [a, b, c]) {
      const o = observe(s.memory, blk.payload, {
        tip: windowOf(s.state)?.tip ?? null,
        parentSupply: 0n,
      });
      if (o.kind !== 'block') throw new Error(o.kind);
      expect(o.needsSupply).toBe(false);
      const r = applyAll(s.state, o.events);
      if (!r.ok) throw r.error;
      s.state = r.state;
      s.memory = o.memory;
      totals.push(effectiveLimits(s.state, SENDER).peggedTotal);
      expect(o.block.supply).toBe(chain.supply(blk));
    }
    expect(totals).toEqual([9_000n, 9_000n, 8_000n]);
  });

  test('without the supply before (a start without the RPC), the block needs it read', () => {
    const { a } = chainBlocks();
    const o = observe(EMPTY_MEMORY, a.payload, {});
    expect(o.kind === 'block' && o.needsSupply).toBe(true);
    expect(o.kind === 'block' && o.events.some((e) => e.type === 'peggedTotalObserved')).toBe(
      false,
    );
  });

  test('with the RPC, the supply is read from it, never taken from the events anyone could forge', () => {
    const { a } = chainBlocks();
    const o = observe(EMPTY_MEMORY, a.payload, { parentSupply: 0n, supplyFromRpc: true });
    if (o.kind !== 'block') throw new Error(o.kind);
    expect(o.needsSupply).toBe(true);
    const done = withSupply(o, 9_000n);
    expect(done.events.at(-1)).toEqual({ type: 'peggedTotalObserved', total: 9_000n });
    expect(done.memory.blocks.at(-1)?.supply).toBe(9_000n);
    expect(done.needsSupply).toBe(false);
  });

  test('a fork puts back the supply of the chain kept', () => {
    const { chain, a, b } = chainBlocks();
    const s = { state: fresh(), memory: EMPTY_MEMORY };
    const feedOne = (body: unknown) => {
      const o = observe(s.memory, body, {
        tip: windowOf(s.state)?.tip ?? null,
        parentSupply: 0n,
      });
      if (o.kind !== 'block') throw new Error(o.kind);
      const r = applyAll(s.state, o.events);
      if (!r.ok) throw r.error;
      s.state = r.state;
      s.memory = o.memory;
    };
    feedOne(a.payload);
    feedOne(b.payload);
    // A deposit in a block that is then orphaned by a sibling without one.
    const d = chain.mine([{ kind: 'deposit', recipient: SENDER, amount: 50_000n }], {
      parent: b.hash,
      burnHeight: 101,
      label: 'd',
    });
    feedOne(d.payload);
    expect(effectiveLimits(s.state, SENDER).peggedTotal).toBe(59_000n);
    const e = chain.mine([], { parent: b.hash, burnHeight: 101, label: 'e' });
    feedOne(e.payload);
    expect(effectiveLimits(s.state, SENDER).peggedTotal).toBe(9_000n);
  });
});

describe('the batch that starts from the node', () => {
  test('every request of the retained history, oldest first, the rejected ones rejected, the supply, and the history complete', () => {
    const requests: RegistryRequest[] = [
      { id: 3n, amount: 30n, sender: SENDER, height: 150, status: 'rejected' },
      { id: 2n, amount: 20n, sender: SENDER, height: 120, status: 'accepted' },
      { id: 1n, amount: 10n, sender: SENDER, height: 99, status: 'pending' },
    ];
    expect(
      startBatch({ tip: null, burnHeight: 200, historyBlocks: 100, requests, supply: 77n }),
    ).toEqual([
      { type: 'blockConnected', height: 200 },
      { type: 'withdrawalRequested', id: '2', account: SENDER, amount: 20n, height: 120 },
      { type: 'withdrawalRequested', id: '3', account: SENDER, amount: 30n, height: 150 },
      { type: 'withdrawalRejected', id: '3' },
      { type: 'peggedTotalObserved', total: 77n },
      { type: 'historyCompleteFrom', height: 101 },
    ]);
  });
});
