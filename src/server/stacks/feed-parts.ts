/**
 * What the parts of the Stacks feed share: its options, the operators it writes as, where it
 * tells what it did, and what taking a block or an operator's request on the held blocks
 * comes to, as data (the listeners, `observer.ts` and `feed-routes.ts`, turn it into HTTP).
 * Node-only.
 */
import type { BatchAuthor, BatchOutcome, Height, Notice } from 'peg-limits';
import type { BatchRefused, DecodeClarity, HeldBlock, Observed } from '../../internal.js';
import type { BlockMemoryStore } from './block-memory.js';
import type { StacksRpc } from './rpc-client.js';

/** What the feed needs (the observer's options are these and where it listens). */
export interface BlockFeedOptions {
  /** The registry contract whose prints are read. */
  readonly registry: string;
  /** Clarity's hex decoder (`@stacks/transactions`' `hexToCV`). */
  readonly decode: DecodeClarity;
  /** What the observer remembers of the blocks, on the data folder or PostgreSQL. */
  readonly memory: BlockMemoryStore;
  /** Burn heights of blocks remembered below the newest (the command: the reorg bound and a margin). */
  readonly keepBurnBlocks: number;
  /**
   * The same node's RPC (`--stacks-rpc`): the first block (and one after a gap) starts from
   * the node's own state, and the supply is read from it.
   */
  readonly rpc?: StacksRpc | undefined;
  /**
   * The node and the service started together from the registry's deployment
   * (`--stacks-history-complete`): nothing came before the first block.
   */
  readonly historyComplete?: boolean | undefined;
  /** The least time between two tries to start from the node's state while it fails (default 10 s). */
  readonly startRetryMs?: number | undefined;
}

/** The operator the feed writes as: `stacks-node`, with the chain scope alone. */
export const STACKS_NODE: BatchAuthor = { name: 'stacks-node', scopes: ['chain'] };

/**
 * The operator the feed writes as only to pass the chain bounds once the node's own RPC
 * confirmed the jump: `stacks-node-confirmed`, with chain and limits. No token names it: it
 * exists inside the process alone.
 */
export const STACKS_NODE_CONFIRMED: BatchAuthor = {
  name: 'stacks-node-confirmed',
  scopes: ['chain', 'limits'],
};

/** Where the feed tells what it did. */
export interface FeedTell {
  readonly logLine?: ((line: string) => void) | undefined;
  readonly warn?: ((line: string) => void) | undefined;
  /** Tells the operators (an alert; not a change: nothing is recorded). */
  readonly onNotice?: ((notice: Notice) => void) | undefined;
}

/** What an operator asks of the held blocks. */
export type HeldOp = 'list' | 'release' | 'drop';

/** A block the mapping could use. */
export type Block = Extract<Observed, { kind: 'block' }>;

/** A batch the port did not apply: refused, or (a loosening) waiting as a pending change. */
export type NotApplied = Exclude<BatchOutcome, { readonly outcome: 'applied' }>;

/**
 * What became of a posted block:
 * - `known`: remembered already (`held`: as a held block), so it changes nothing;
 * - `skipped`: not a block the mapping can use (`reason`), so it changes nothing;
 * - `applied`: its batch applied (`events` of them: 0 when it changes nothing for the limits);
 * - `held`: the chain bounds refused it, or blocks before it are held: kept durably, in order;
 * - `confirmed`: past the chain bounds, but the node itself confirmed it: the state was read
 *   again from the node and the block applied on it;
 * - `refused`: the port did not apply its batch (`outcome`), and nothing of it is remembered.
 */
export type BlockOutcome =
  | { readonly kind: 'known'; readonly held: boolean }
  | { readonly kind: 'skipped'; readonly reason: string }
  | { readonly kind: 'applied'; readonly events: number }
  | { readonly kind: 'held' }
  | { readonly kind: 'confirmed' }
  | { readonly kind: 'refused'; readonly outcome: NotApplied };

/** A held block as an operator lists it (without its payload). */
type HeldBlockInfo = Omit<HeldBlock, 'payload'>;

/**
 * What became of an operator's request on the held blocks:
 * - `listed`: the blocks held, first to last;
 * - `released`: every held block applied, in order (`released` of them), the tip after them;
 * - `dropped`: the first held block dropped (`dropped` 0 when none was held), `applied` of
 *   the blocks behind it taken again, `held` of them held anew;
 * - `stopped`: a release stopped at block `block` that did not apply (`released` before it);
 * - `refused`: the port did not apply what ending (or starting) the hold needed.
 */
export type HeldOutcome =
  | { readonly kind: 'listed'; readonly blocks: ReadonlyArray<HeldBlockInfo> }
  | { readonly kind: 'released'; readonly released: number; readonly tip: Height | null }
  | {
      readonly kind: 'dropped';
      readonly dropped: 0 | 1;
      readonly applied: number;
      readonly held: number;
    }
  | {
      readonly kind: 'stopped';
      readonly block: string;
      readonly released: number;
      readonly outcome: BatchRefused;
    }
  | { readonly kind: 'refused'; readonly outcome: NotApplied };
