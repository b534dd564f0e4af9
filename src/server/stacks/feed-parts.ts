/**
 * What the parts of the Stacks feed share: its options, the operators it writes as, where it
 * tells what it did, and the steps of the feed that its start from the node's state
 * (`node-start.ts`) and its held blocks (`held-blocks.ts`) call back. Node-only.
 */
import type { BatchAuthor, BatchOutcome, HttpResponse, LimitsEvent, Service } from 'peg-limits';
import type { BlockMemory, DecodeClarity, Observed } from '../../internal.js';
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
  /** Alerts the operators (not a change: nothing is recorded). */
  readonly notify?:
    | ((alert: { readonly type: string } & Record<string, unknown>) => void)
    | undefined;
}

/** What an operator asks of the held blocks. */
export type HeldOp = 'list' | 'release' | 'drop';

/** A block the mapping could use. */
export type Block = Extract<Observed, { kind: 'block' }>;

/** The feed's own steps, as its start and its held blocks call them. */
export interface FeedCore {
  readonly service: Service;
  readonly options: BlockFeedOptions;
  readonly tell: FeedTell;
  /** Warns (`warning: …`). */
  warn(line: string): void;
  /** Counts and warns of something skipped. */
  skip(what: string): void;
  /** The pure mapping of a payload, on what is remembered. */
  observe(memory: BlockMemory, body: unknown, parentSupply: bigint | undefined): Observed;
  /** The supply as of the block, and its rejections checked against the node. */
  prepare(observed: Block): Promise<Block>;
  /**
   * Applies events through the service's port as `author` (with the override: past the
   * chain bounds); an event the state cannot take that a feed may drop is dropped and the
   * rest applied. Resolves with the outcome.
   */
  apply(
    events: ReadonlyArray<LimitsEvent>,
    requestId: string,
    remote: string | undefined,
    author: BatchAuthor,
    override?: boolean,
  ): Promise<BatchOutcome>;
  /** Takes a payload now, in the turn of the block in hand (as a drop takes the blocks behind it). */
  takeNow(body: unknown): Promise<HttpResponse>;
}
