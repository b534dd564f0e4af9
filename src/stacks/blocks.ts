/**
 * What a Stacks node's blocks mean for the limits: the pure mapping behind the event
 * observer (`peg-limits serve --stacks-observer`). A node POSTs each block it processes to
 * `/new_block`; the sBTC registry contract's `print` events in it say when a withdrawal was
 * requested and when one was rejected. {@link observeBlock} turns one such payload, and
 * what the observer remembers of the blocks before it, into the limits events that make
 * the state follow the canonical chain, and the memory after it.
 *
 * Forks. The node sends no reorganization message: a Stacks fork is a block whose parent is
 * a remembered block other than the newest, and a Bitcoin reorganization is a burn height
 * seen again with another hash. Either becomes one batch: `chainReorganized` below the
 * lowest burn height it touches, the events of the blocks that stay canonical above it
 * again, then the new block's. A rejection in an orphaned block is undone by an event of its
 * own (`withdrawalRejectionUndone`), so the reorganization goes no deeper than the fork
 * however old the withdrawal it rejected. So every withdrawal counts exactly when its block
 * is on the canonical chain, and a rejection exactly when its block is.
 *
 * The memory keeps the blocks of the last `keepBurnBlocks` burn heights: a fork deeper than
 * that would be a reorganization past the chain bounds, which the service refuses anyway.
 * Reading the payload itself is `block-payload.ts`'s. Pure and browser-safe.
 */
import { MAX_AMOUNT } from '../core/amount.js';
import type { Height, LimitsEvent } from '../core/events.js';
import { isRecord } from '../core/limits.js';
import {
  type BlockEvents,
  eventsOf,
  heightOf,
  hexOf,
  type PayloadReading,
  type SkippedEvent,
} from './block-payload.js';

/** A block the observer remembers. */
export interface RememberedBlock {
  /** `index_block_hash`. */
  readonly hash: string;
  /** `parent_index_block_hash`. */
  readonly parent: string;
  /** The Stacks height. */
  readonly height: number;
  /** The Bitcoin height it was mined in (`burn_block_height`). */
  readonly burnHeight: Height;
  /** `burn_block_hash`. */
  readonly burnHash: string;
  /** The limits events its registry prints gave, in order (with the pegged total it set). */
  readonly events: ReadonlyArray<LimitsEvent>;
  /** The sBTC supply (the pegged total) as of this block, when known. */
  readonly supply?: bigint | undefined;
}

/** A block held back: the chain bounds refused it, or a block before it was held. */
export interface HeldBlock {
  /** `index_block_hash`. */
  readonly hash: string;
  /** The Stacks height and the Bitcoin height it was mined in. */
  readonly height: number;
  readonly burnHeight: Height;
  /** Why the first held block was held (the chain bound it passed), or that one before it was. */
  readonly reason: string;
  /** When it was held (ISO time). */
  readonly at: string;
  /** The payload, cut to what the mapping reads ({@link payloadToKeep}). */
  readonly payload: unknown;
}

/** What the observer remembers: the blocks it has seen, and the canonical chain's newest. */
export interface BlockMemory {
  /** The remembered blocks, oldest first. */
  readonly blocks: ReadonlyArray<RememberedBlock>;
  /** The `index_block_hash` of the canonical chain's newest block (`''` before any). */
  readonly head: string;
  /** Blocks held back, oldest first, applied only when an operator releases them. */
  readonly held?: ReadonlyArray<HeldBlock> | undefined;
  /**
   * The signers' aggregate keys (compressed, hex) the registry has had, as the node's RPC
   * and the registry's `key-rotation` prints told them, oldest first: every wallet whose BTC
   * backs the peg (an old one holds BTC until the next sweep moves it).
   */
  readonly keys?: ReadonlyArray<string> | undefined;
}

/** The memory before the first block. */
export const EMPTY_MEMORY: BlockMemory = { blocks: [], head: '' };

/** What {@link observeBlock} needs besides the memory and the payload. */
export interface ObserveOptions extends PayloadReading {
  /** The state's tip: a block above it connects its burn height first. */
  readonly tip: Height | null;
  /** How many burn heights of blocks below the newest are remembered. */
  readonly keepBurnBlocks: number;
  /** The supply before the block when its parent is not remembered (a first block), if known. */
  readonly parentSupply?: bigint | undefined;
  /**
   * Read the supply from the node's RPC whenever a block changes it (`needsSupply`), rather
   * than from the asset events, which anyone who reaches the observer port could forge.
   */
  readonly supplyFromRpc?: boolean | undefined;
}

/** What one payload gives. */
export type Observed =
  | {
      readonly kind: 'block';
      /** The batch to apply: empty when the block changes nothing for the limits. */
      readonly events: ReadonlyArray<LimitsEvent>;
      /** The memory once the batch is applied. */
      readonly memory: BlockMemory;
      readonly block: RememberedBlock;
      /** The lowest burn height the batch reorganized from (a fork), or `undefined`. */
      readonly forkedAt: Height | undefined;
      readonly skipped: ReadonlyArray<SkippedEvent>;
      /**
       * The block changes the supply (a `completed-deposit` or `withdrawal-accept` print, a
       * mint or burn of the token's assets) and the supply as of it is not known from the
       * events: read it from the node and complete the batch with {@link withSupply}.
       */
      readonly needsSupply: boolean;
      /**
       * Its parent is not remembered: the first block the observer sees, or one after a
       * gap. What came before it is not known from the blocks.
       */
      readonly startsChain: boolean;
      /**
       * The signers' aggregate keys the registry rotated to in the block (`key-rotation`
       * prints), for the feed to remember ({@link withKeys}) once it trusts them.
       */
      readonly rotatedKeys: ReadonlyArray<string>;
    }
  /** A block already remembered: sent again, it changes nothing. */
  | { readonly kind: 'known' }
  /** A payload that is not a block (it is logged and answered 200: the node would retry it for ever). */
  | { readonly kind: 'unusable'; readonly reason: string };

/** `memory` with the aggregate keys `keys` it does not hold yet, added in order. */
export function withKeys(memory: BlockMemory, keys: ReadonlyArray<string>): BlockMemory {
  const known = memory.keys ?? [];
  const fresh = keys.filter((k, i) => !known.includes(k) && keys.indexOf(k) === i);
  return fresh.length === 0 ? memory : { ...memory, keys: [...known, ...fresh] };
}

// The canonical chain ending at `hash`, oldest first (as far back as the memory goes).
function chainTo(byHash: ReadonlyMap<string, RememberedBlock>, hash: string): RememberedBlock[] {
  const chain: RememberedBlock[] = [];
  for (let b = byHash.get(hash); b !== undefined; b = byHash.get(b.parent)) {
    chain.push(b);
    if (chain.length > byHash.size) break;
  }
  return chain.reverse();
}

/**
 * Turns one `/new_block` payload into the limits events it means, given what the observer
 * remembers; see the module's description for forks.
 */
export function observeBlock(
  memory: BlockMemory,
  payload: unknown,
  options: ObserveOptions,
): Observed {
  if (!isRecord(payload)) return { kind: 'unusable', reason: 'the payload is not an object' };
  const hash = hexOf(payload.index_block_hash);
  const parent = hexOf(payload.parent_index_block_hash);
  const height = heightOf(payload.block_height);
  const burnHeight = heightOf(payload.burn_block_height);
  const burnHash = hexOf(payload.burn_block_hash);
  if (hash === undefined || parent === undefined)
    return {
      kind: 'unusable',
      reason: 'index_block_hash or parent_index_block_hash is not a hash',
    };
  if (height === undefined || burnHeight === undefined || burnHash === undefined)
    return {
      kind: 'unusable',
      reason: 'block_height, burn_block_height or burn_block_hash is missing',
    };
  const byHash = new Map(memory.blocks.map((b) => [b.hash, b] as const));
  if (byHash.has(hash)) return { kind: 'known' };
  // Older than every burn height remembered: a block sent again long after, or a fork
  // deeper than the chain bounds allow. Taken as the tip, it would orphan everything since.
  const newestSeen = memory.blocks.reduce((h, b) => Math.max(h, b.burnHeight), -1);
  if (newestSeen >= 0 && burnHeight < newestSeen - options.keepBurnBlocks)
    return {
      kind: 'unusable',
      reason: `block ${hash} is at burn height ${burnHeight}, below the ${options.keepBurnBlocks} remembered under ${newestSeen}`,
    };
  const read = eventsOf(payload.events, options, burnHeight);
  // The supply as of the parent, and as of this block where the events tell it.
  const parentSupply = byHash.has(parent) ? byHash.get(parent)?.supply : options.parentSupply;
  const { supply, needsSupply } = supplyAfter(read, parentSupply, options);
  const own =
    supply !== undefined && supply !== parentSupply
      ? [...read.events, { type: 'peggedTotalObserved', total: supply } as const]
      : read.events;
  const block: RememberedBlock = {
    hash,
    parent,
    height,
    burnHeight,
    burnHash,
    events: own,
    ...(supply === undefined ? {} : { supply }),
  };

  const old = chainTo(byHash, memory.head);
  // The chain the new block extends: its parent's, or, when its parent is unknown (a gap,
  // the first block), the canonical one as it is.
  let path = byHash.has(parent) ? chainTo(byHash, parent) : old;
  // A burn height seen with another hash, or a burn height below the path's: Bitcoin
  // reorganized, and everything from that height is orphaned.
  const cut = path.findIndex(
    (b) => b.burnHeight > burnHeight || (b.burnHeight === burnHeight && b.burnHash !== burnHash),
  );
  if (cut >= 0) path = path.slice(0, cut);
  let same = 0;
  while (same < old.length && same < path.length && old[same] === path[same]) same++;
  const orphaned = old.slice(same);
  const revived = path.slice(same);

  const fork =
    orphaned.length > 0 || revived.length > 0
      ? forkBatch({ old, path, orphaned, revived, burnHeight, tip: options.tip, parentSupply })
      : { events: [], forkedAt: undefined, tip: options.tip };
  const events: LimitsEvent[] = [...fork.events];
  const { forkedAt, tip } = fork;
  if (tip === null || burnHeight > tip) events.push({ type: 'blockConnected', height: burnHeight });
  events.push(...block.events);

  // Remember the new block; forget what is older than the burn heights kept.
  const keepFrom = Math.max(burnHeight, newestSeen) - options.keepBurnBlocks;
  const blocks = [...memory.blocks.filter((b) => b.burnHeight >= keepFrom), block];
  return {
    kind: 'block',
    events,
    memory: { ...memory, blocks, head: hash },
    rotatedKeys: read.keys,
    block,
    forkedAt,
    skipped: read.skipped,
    needsSupply,
    startsChain: !byHash.has(parent),
  };
}

/**
 * The batch a fork gives before the new block's own events: back below the lowest height
 * it touches, the orphaned rejections undone, the events of the blocks that stay canonical
 * above it again, and the supply of the chain kept.
 */
function forkBatch(f: {
  readonly old: ReadonlyArray<RememberedBlock>;
  readonly path: ReadonlyArray<RememberedBlock>;
  readonly orphaned: ReadonlyArray<RememberedBlock>;
  readonly revived: ReadonlyArray<RememberedBlock>;
  readonly burnHeight: Height;
  readonly tip: Height | null;
  readonly parentSupply: bigint | undefined;
}): { events: LimitsEvent[]; forkedAt: Height | undefined; tip: Height | null } {
  const { old, path, orphaned, revived, burnHeight, parentSupply } = f;
  const events: LimitsEvent[] = [];
  let forkedAt: Height | undefined;
  let tip = f.tip;
  let low = Number.POSITIVE_INFINITY;
  for (const b of orphaned) low = Math.min(low, b.burnHeight);
  for (const b of revived) low = Math.min(low, b.burnHeight);
  for (const b of orphaned)
    for (const e of b.events) if (e.type === 'withdrawalRequested') low = Math.min(low, e.height);
  // A rejection an orphaned block carried is undone by an event of its own: the
  // withdrawal counts again at its own height, however old, and the reorganization goes
  // no deeper than the fork. (A request orphaned too is dropped by the reorganization:
  // nothing to undo.)
  const orphanedRequests = new Set<string>();
  for (const b of orphaned)
    for (const e of b.events) if (e.type === 'withdrawalRequested') orphanedRequests.add(e.id);
  const requestedAt = new Map<string, Height>();
  for (const b of [...old, ...path])
    for (const e of b.events) if (e.type === 'withdrawalRequested') requestedAt.set(e.id, e.height);
  // Undone: the rejections of requests that stay (those above the reorganization come
  // back from the blocks that stay canonical, without the orphaned rejection).
  const undone = (below: Height): LimitsEvent[] => {
    const out: LimitsEvent[] = [];
    for (const b of orphaned)
      for (const e of b.events) {
        if (e.type !== 'withdrawalRejected' || orphanedRequests.has(e.id)) continue;
        const h = requestedAt.get(e.id);
        if (h === undefined || h <= below)
          out.push({ type: 'withdrawalRejectionUndone', id: e.id });
      }
    return out;
  };
  // Back below the lowest height touched, or to the new block's burn height when that is
  // lower (the path was cut above it, so it is the new chain's top): every withdrawal above
  // is dropped, and the new chain's blocks above it give theirs again.
  const target = Math.min(low - 1, burnHeight);
  if (tip !== null && target < tip && target >= 0) {
    forkedAt = low;
    tip = target;
    events.push({ type: 'chainReorganized', height: target });
    events.push(...undone(target));
    for (const b of path) {
      if (
        b.burnHeight <= target &&
        !b.events.some((e) => e.type === 'withdrawalRequested' && e.height > target)
      )
        continue;
      if (b.burnHeight > tip) {
        events.push({ type: 'blockConnected', height: b.burnHeight });
        tip = b.burnHeight;
      }
      events.push(...b.events);
    }
  } else {
    events.push(...undone(Number.POSITIVE_INFINITY));
    for (const b of revived) events.push(...b.events);
  }
  // The orphaned blocks may have changed the supply: back to the supply of the chain kept.
  if (parentSupply !== undefined) events.push({ type: 'peggedTotalObserved', total: parentSupply });
  return { events, forkedAt, tip };
}

// The supply as of a block: from its parent's and the token's mint and burn events, or to
// be read from the node (`needsSupply`) when something changed it and that cannot tell.
function supplyAfter(
  read: BlockEvents,
  parentSupply: bigint | undefined,
  options: ObserveOptions,
): { supply: bigint | undefined; needsSupply: boolean } {
  if (!read.supplyTouched) return { supply: parentSupply, needsSupply: false };
  if (
    options.supplyFromRpc !== true &&
    read.supplyDelta !== undefined &&
    parentSupply !== undefined
  ) {
    const supply = parentSupply + read.supplyDelta;
    if (supply >= 0n && supply <= MAX_AMOUNT) return { supply, needsSupply: false };
  }
  return { supply: undefined, needsSupply: true };
}

/**
 * Completes a block that {@link observeBlock} said `needsSupply` with the supply as of it
 * (read from the node): the batch and the remembered block gain its `peggedTotalObserved`.
 */
export function withSupply(
  observed: Extract<Observed, { kind: 'block' }>,
  supply: bigint,
): Extract<Observed, { kind: 'block' }> {
  const event: LimitsEvent = { type: 'peggedTotalObserved', total: supply };
  const block: RememberedBlock = {
    ...observed.block,
    events: [...observed.block.events, event],
    supply,
  };
  const blocks = observed.memory.blocks.map((b) => (b === observed.block ? block : b));
  return {
    ...observed,
    events: [...observed.events, event],
    block,
    memory: { ...observed.memory, blocks },
    needsSupply: false,
  };
}
