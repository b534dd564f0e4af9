/**
 * The Stacks feed's held blocks without HTTP: the feed takes payloads and the operators'
 * requests and returns what became of them as data, applying through a service's port over
 * a memory of blocks kept in memory. No listener, no request, no answer is involved.
 */
import { bufferCV, hexToCV, serializeCV, uintCV } from '@stacks/transactions';
import { afterAll, describe, expect, test } from 'vitest';
import {
  type BatchAuthor,
  chainView,
  createLimitsState,
  createService,
} from '../../../src/index.js';
import { type BlockMemory, EMPTY_MEMORY } from '../../../src/internal.js';
import type { BlockMemoryStore } from '../../../src/server/stacks/block-memory.js';
import { BlockFeed } from '../../../src/server/stacks/feed.js';
import { STACKS_NODE } from '../../../src/server/stacks/feed-parts.js';
import { feedRoutes } from '../../../src/server/stacks/feed-routes.js';
import { blockAnswer, type StacksObserver } from '../../../src/server/stacks/observer.js';
import { StacksRpc } from '../../../src/server/stacks/rpc-client.js';
import { type NodeRpc, SbtcChain, startNodeRpc } from '../../support/sbtc-chain.js';
import { SENDER as BOB, REGISTRY } from '../../support/stacks-node.js';

const OPERATOR: BatchAuthor = { name: 'alice', scopes: ['chain', 'limits'] };

function memoryStore(): BlockMemoryStore & { readonly saved: () => BlockMemory } {
  let memory = EMPTY_MEMORY;
  return {
    load: async () => memory,
    save: async (next) => {
      memory = next;
    },
    saved: () => memory,
  };
}

const nodes: NodeRpc[] = [];
afterAll(async () => {
  for (const n of nodes) await n.close();
});

// A feed over a fresh service, its history complete from the first block, and a chain whose
// first block is taken already (burn height 100); with `chain` given, the node's RPC too.
async function fed(given?: SbtcChain) {
  const service = createService({
    state: createLimitsState({
      limits: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 1_000_000n },
    }),
  });
  const memory = memoryStore();
  const notices: string[] = [];
  const chain = given ?? new SbtcChain();
  const first = chain.mine([], { burnHeight: 100 });
  let rpc: StacksRpc | undefined;
  if (given !== undefined) {
    const node = await startNodeRpc(chain);
    nodes.push(node);
    const codec = {
      decode: (hex: string) => hexToCV(hex),
      encodeUint: (n: bigint) => serializeCV(uintCV(n)),
      encodeBuffer: (hex: string) => serializeCV(bufferCV(Buffer.from(hex, 'hex'))),
    };
    rpc = new StacksRpc({ url: node.url, registry: REGISTRY, codec, timeoutMs: 2_000 });
  }
  const feed = new BlockFeed(
    service,
    {
      registry: REGISTRY,
      decode: (hex) => hexToCV(hex) as never,
      memory,
      keepBurnBlocks: 20,
      historyComplete: true,
      rpc,
    },
    { onNotice: (n) => notices.push(n.type) },
  );
  await feed.open();
  expect(await feed.take(first.payload, STACKS_NODE, undefined)).toEqual({
    kind: 'applied',
    events: 1,
  });
  return { service, memory, notices, feed, chain };
}

describe('the held blocks, as data', () => {
  test('a block past the chain bounds is held, and so is every block after it, the tip unmoved', async () => {
    const { service, feed, chain, notices, memory } = await fed();
    const jump = chain.mine([{ kind: 'request', sender: BOB, amount: 5n }], { burnHeight: 400 });
    expect(await feed.take(jump.payload, STACKS_NODE, undefined)).toEqual({ kind: 'held' });
    const after = chain.mine([], { burnHeight: 401 });
    expect(await feed.take(after.payload, STACKS_NODE, undefined)).toEqual({ kind: 'held' });
    expect(await feed.take(after.payload, STACKS_NODE, undefined)).toEqual({
      kind: 'known',
      held: true,
    });
    expect(chainView(service.state)).toMatchObject({ tip: 100, heldFrom: 400 });
    expect(feed.held).toBe(2);
    expect(notices).toEqual(['blocksHeld']);
    expect(memory.saved().held?.map((h) => h.burnHeight)).toEqual([400, 401]);
    const listed = await feed.heldBlocks('list', OPERATOR);
    expect(listed.kind).toBe('listed');
    if (listed.kind === 'listed') {
      expect(listed.blocks.map((b) => `0x${b.hash}`)).toEqual([jump.hash, after.hash]);
      expect(listed.blocks.every((b) => !('payload' in b))).toBe(true);
    }
  });

  test('a release applies the held blocks in order as the releasing operator, and ends the hold', async () => {
    const { service, feed, chain, notices } = await fed();
    chain.mine([{ kind: 'request', sender: BOB, amount: 5n }], { burnHeight: 400 });
    await feed.take(chain.head!.payload, STACKS_NODE, undefined);
    await feed.take(chain.mine([], { burnHeight: 401 }).payload, STACKS_NODE, undefined);
    expect(await feed.heldBlocks('release', OPERATOR)).toEqual({
      kind: 'released',
      released: 2,
      tip: 401,
    });
    expect(chainView(service.state)).toMatchObject({ tip: 401, heldFrom: null });
    expect(feed.held).toBe(0);
    expect(notices).toEqual(['blocksHeld', 'heldBlocksReleased']);
  });

  test('a drop takes the blocks behind the first again, in the same queue, and ends the hold once none is held', async () => {
    const { service, feed, chain, notices } = await fed();
    const base = chain.head!;
    const forged = chain.mine([], { burnHeight: 400, label: 'forged' });
    await feed.take(forged.payload, STACKS_NODE, undefined);
    const honest = chain.mine([{ kind: 'request', sender: BOB, amount: 7n }], {
      parent: base.hash,
      burnHeight: 101,
    });
    expect(await feed.take(honest.payload, STACKS_NODE, undefined)).toEqual({ kind: 'held' });
    expect(await feed.heldBlocks('drop', OPERATOR)).toEqual({
      kind: 'dropped',
      dropped: 1,
      applied: 1,
      held: 0,
    });
    expect(chainView(service.state)).toMatchObject({ tip: 101, heldFrom: null });
    expect(notices).toEqual(['blocksHeld', 'heldBlockDropped']);
    expect(await feed.heldBlocks('drop', OPERATOR)).toEqual({
      kind: 'dropped',
      dropped: 0,
      applied: 0,
      held: 0,
    });
  });

  test('a release by an operator without the limits scope is the port refusing it, and the blocks stay held', async () => {
    const { service, feed, chain } = await fed();
    await feed.take(chain.mine([], { burnHeight: 400 }).payload, STACKS_NODE, undefined);
    const released = await feed.heldBlocks('release', STACKS_NODE);
    expect(released.kind).toBe('refused');
    if (released.kind === 'refused')
      expect(released.outcome).toMatchObject({ outcome: 'refused', by: 'operator' });
    expect(chainView(service.state)).toMatchObject({ tip: 100, heldFrom: 400 });
    expect(feed.held).toBe(1);
  });

  test('a jump the node confirms is no forgery: the state is read again from the node, nothing held', async () => {
    const { service, feed, chain, notices } = await fed(new SbtcChain());
    const jump = chain.mine([{ kind: 'request', sender: BOB, amount: 5n }], { burnHeight: 400 });
    expect(await feed.take(jump.payload, STACKS_NODE, undefined)).toEqual({ kind: 'confirmed' });
    expect(chainView(service.state)).toMatchObject({ tip: 400, heldFrom: null });
    expect(feed.held).toBe(0);
    expect(notices).toEqual([]);
  });
});

describe("the listeners' answers", () => {
  test('a node is answered 200 with what became of its block, a refusal with the problem', () => {
    const body = (o: Parameters<typeof blockAnswer>[0]) => {
      const r = blockAnswer(o);
      return [r.status, JSON.parse(r.body)];
    };
    expect(body({ kind: 'known', held: false })).toEqual([200, { ok: true, known: true }]);
    expect(body({ kind: 'known', held: true })).toEqual([
      200,
      { ok: true, known: true, held: true },
    ]);
    expect(body({ kind: 'skipped', reason: 'not a block' })).toEqual([
      200,
      { ok: true, skipped: 'not a block' },
    ]);
    expect(body({ kind: 'applied', events: 3 })).toEqual([200, { ok: true, events: 3 }]);
    expect(body({ kind: 'held' })).toEqual([200, { ok: true, held: true }]);
    expect(body({ kind: 'confirmed' })).toEqual([200, { ok: true, confirmed: true }]);
  });

  test("an operator is answered the held blocks by the service's routes, a caller without the limits scope refused before the feed, and a drop with what it did", async () => {
    const { feed, chain } = await fed();
    await feed.take(chain.mine([], { burnHeight: 400 }).payload, STACKS_NODE, undefined);
    // The routes over the feed, as the server registers them (no socket: the route's answer).
    const observer = { heldBlocks: (op, author) => feed.heldBlocks(op, author) } as Pick<
      StacksObserver,
      'heldBlocks'
    > as StacksObserver;
    const routes = feedRoutes({ configured: true, observer: () => observer });
    const answer = async (
      method: string,
      path: string,
      scopes: ReadonlyArray<'chain' | 'limits'>,
    ) => {
      const route = routes.find((r) => r.method === method && r.pattern === path)!;
      const r = await route.serve!(
        { method, path, headers: {} },
        { name: 'alice', tokenHash: `sha256:${'0'.repeat(64)}`, scopes },
      );
      return { status: r.status, headers: r.headers, body: JSON.parse(r.body) };
    };
    const listed = await answer('GET', '/admin/held', ['chain', 'limits']);
    expect([listed.status, listed.headers['cache-control']]).toEqual([200, 'no-store']);
    expect(listed.body.blocks).toHaveLength(1);
    const refused = await answer('POST', '/admin/held/release', ['chain']);
    expect([refused.status, refused.body.code]).toEqual([403, 'scope_denied']);
    expect(feed.held).toBe(1);
    const dropped = await answer('DELETE', '/admin/held', ['chain', 'limits']);
    expect([dropped.status, dropped.body]).toEqual([200, { dropped: 1, applied: 0, held: 0 }]);
  });
});
