/**
 * What the parts of the Stacks feed share: its options, its credentials, where it tells
 * what it did, and the steps of the feed that its start from the node's state
 * (`node-start.ts`) and its held blocks (`held-blocks.ts`) call back. Node-only.
 */
import type { HttpResponse, LimitsEvent, Service } from 'peg-limits';
import type { BlockMemory, Observed, observeBlock } from '../../internal.js';
import type { BlockMemoryStore } from './block-memory.js';
import type { StacksRpc } from './rpc-client.js';

/** What the feed needs. */
export interface BlockFeedOptions {
  /** The registry contract whose prints are read. */
  readonly registry: string;
  readonly decode: Parameters<typeof observeBlock>[2]['decode'];
  readonly memory: BlockMemoryStore;
  /** Burn heights of blocks remembered below the newest. */
  readonly keepBurnBlocks: number;
  /** The same node's RPC (`--stacks-rpc`). */
  readonly rpc?: StacksRpc | undefined;
  /** The node and the service started together (`--stacks-history-complete`). */
  readonly historyComplete?: boolean | undefined;
  /** The least time between two tries to start from the node's state while it fails. */
  readonly startRetryMs?: number | undefined;
}

/** The credentials the feed writes with. */
export interface FeedCredentials {
  /** The operator `stacks-node` (the chain scope alone). */
  readonly token: string;
  /**
   * An operator holding chain and limits, used only to pass the chain bounds once the
   * node's own RPC confirmed the jump (its token never leaves the process).
   */
  readonly confirmedToken?: string | undefined;
}

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
  readonly credentials: FeedCredentials;
  readonly tell: FeedTell;
  /** Warns (`warning: …`). */
  warn(line: string): void;
  /** Counts and warns of something skipped. */
  skip(what: string): void;
  /** The pure mapping of a payload, on what is remembered. */
  observe(memory: BlockMemory, body: unknown, parentSupply: bigint | undefined): Observed;
  /** The supply as of the block, and its rejections checked against the node. */
  prepare(observed: Block): Promise<Block>;
  /** Applies events as the operator whose token `authorization` carries (`Bearer <token>`). */
  apply(
    events: ReadonlyArray<LimitsEvent>,
    requestId: string,
    remote: string | undefined,
    authorization: string,
    override?: boolean,
  ): Promise<HttpResponse>;
  /** The credential of the operator `stacks-node`, as `apply` takes it. */
  feeder(): string;
  /** Takes a payload now, in the turn of the block in hand (as a drop takes the blocks behind it). */
  takeNow(body: unknown): Promise<HttpResponse>;
}
