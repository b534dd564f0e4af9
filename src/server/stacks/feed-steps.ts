/**
 * The steps a block goes through, each a function of what it needs (the service's port,
 * the block memory, the node's RPC) that returns data: the payload mapped on what is
 * remembered, the block prepared (the supply as of it, its rejections checked against the
 * node, the keys it rotated to), its events applied through the port. What the steps skip is
 * counted and told in a tally, which the metrics read. Node-only.
 */
import {
  type BatchAuthor,
  type BatchOutcome,
  chainView,
  type LimitsEvent,
  type Notice,
  type Service,
} from 'peg-limits';
import {
  type BatchRefused,
  type BlockMemory,
  type Observed,
  observeBlock,
  type RememberedBlock,
  refusalDetail,
  UNKNOWN_RECIPIENT,
  withKeys,
  withSupply,
} from '../../internal.js';
import type { Block, BlockFeedOptions, FeedTell } from './feed-parts.js';

/** What the feed skipped and told, counted for the metrics. */
export class FeedTally {
  readonly #tell: FeedTell;
  #skipped = 0;
  #notShown = 0;

  constructor(tell: FeedTell) {
    this.#tell = tell;
  }

  /** Payloads and events skipped so far (`peg_limits_observer_skipped_total`). */
  get skipped(): number {
    return this.#skipped;
  }

  /** Rejections skipped because the node did not show them (`peg_limits_observer_rejections_not_shown_total`). */
  get rejectionsNotShown(): number {
    return this.#notShown;
  }

  /** A line of what the feed did. */
  log(line: string): void {
    this.#tell.logLine?.(line);
  }

  /** A warning (`warning: …`), where warnings go. */
  warn(line: string): void {
    (this.#tell.warn ?? this.#tell.logLine)?.(`warning: ${line}`);
  }

  /** Counts and warns of something skipped. */
  skip(what: string): void {
    this.#skipped++;
    this.warn(`stacks observer skipped ${what}`);
  }

  /** Counts a rejection the node did not show (skipped already), and tells the operators. */
  rejectionNotShown(id: string, block: string, status: string): void {
    this.#notShown++;
    this.notice({ type: 'rejectionNotShown', id, block, status });
  }

  /** Tells the operators. */
  notice(notice: Notice): void {
    this.#tell.onNotice?.(notice);
  }
}

/** What every step of the feed reads: the port it applies through, its options, its tally. */
export interface FeedContext {
  /** The service's port (`applyBatch`) and the state it shows. */
  readonly port: Service;
  readonly options: BlockFeedOptions;
  /** The token contract beside the registry. */
  readonly token: string;
  readonly tally: FeedTally;
}

/** The token contract next to a registry (`ADDRESS.sbtc-token`). */
export function tokenOf(registry: string): string {
  return `${registry.split('.')[0]}.sbtc-token`;
}

/** The pure mapping of a payload on what is remembered, at the port's tip. */
export function observe(
  context: FeedContext,
  memory: BlockMemory,
  body: unknown,
  parentSupply: bigint | undefined,
): Observed {
  const { options } = context;
  return observeBlock(memory, body, {
    registry: options.registry,
    decode: options.decode,
    tip: chainView(context.port.state).tip,
    keepBurnBlocks: options.keepBurnBlocks,
    token: context.token,
    parentSupply,
    supplyFromRpc: options.rpc !== undefined,
  });
}

/**
 * The block made ready to apply: the rejections it carries checked against the node, the
 * keys it rotated to remembered (those the node shows), and the supply as of it.
 */
export async function prepare(context: FeedContext, observed: Block): Promise<Block> {
  const { tally } = context;
  let block = await rememberKeys(
    context,
    await recipientsFromRegistry(context, await verifyRejections(context, observed)),
  );
  const at = block.block.hash;
  if (block.needsSupply) {
    const rpc = context.options.rpc;
    if (rpc !== undefined) {
      try {
        block = withSupply(block, await rpc.totalSupply(at));
      } catch (e) {
        tally.skip(`the supply as of block ${at}: ${(e as Error).message}`);
      }
    } else
      tally.skip(
        `the supply as of block ${at}: it changed, and neither the token's asset events (from a known supply) nor --stacks-rpc tell it`,
      );
  }
  for (const s of block.skipped) tally.skip(`event ${s.index} of block ${at}: ${s.reason}`);
  return block;
}

// With the RPC, a rejection the block carries applies only once the node's state as of
// that block shows the request rejected: anyone who reaches the observer port could post
// one, and a rejection frees window room. One not shown (or not checkable: the node did
// not answer) is left out, counted, warned of and alerted: fail closed.
async function verifyRejections(context: FeedContext, observed: Block): Promise<Block> {
  const rpc = context.options.rpc;
  const own = observed.block.events;
  if (rpc === undefined || !own.some((e) => e.type === 'withdrawalRejected')) return observed;
  const at = observed.block.hash;
  const kept: LimitsEvent[] = [];
  for (const e of own) {
    if (e.type !== 'withdrawalRejected') {
      kept.push(e);
      continue;
    }
    let status: string;
    try {
      status = await rpc.withdrawalStatus(BigInt(e.id), at);
    } catch (err) {
      status = `unknown (${(err as Error).message})`;
    }
    if (status === 'rejected') kept.push(e);
    else {
      context.tally.skip(
        `the rejection of withdrawal ${e.id} in block ${at}: not shown by the node as of that block (its status: ${status})`,
      );
      context.tally.rejectionNotShown(e.id, at, status);
    }
  }
  return kept.length === own.length ? observed : withOwnEvents(observed, kept);
}

// The block with its own events replaced (they close the batch: what comes before them is
// the fork's), in the batch and in the memory of blocks.
function withOwnEvents(observed: Block, own: LimitsEvent[]): Block {
  const block: RememberedBlock = { ...observed.block, events: own };
  const lead = observed.events.slice(0, observed.events.length - observed.block.events.length);
  return {
    ...observed,
    block,
    events: [...lead, ...own],
    memory: {
      ...observed.memory,
      blocks: observed.memory.blocks.map((b) => (b === observed.block ? block : b)),
    },
  };
}

// With the RPC, a mint whose recipient the block's asset events did not name (the node sent
// no asset events, or none of the token) is named by the registry's completed deposit as of
// that block; one the node does not know (or could not tell) stays `unknown`: it still
// counts in the global mint window.
async function recipientsFromRegistry(context: FeedContext, observed: Block): Promise<Block> {
  const rpc = context.options.rpc;
  const own = observed.block.events;
  const unnamed = (e: LimitsEvent) => e.type === 'depositMinted' && e.account === UNKNOWN_RECIPIENT;
  if (rpc === undefined || !own.some(unnamed)) return observed;
  const at = observed.block.hash;
  const named: LimitsEvent[] = [];
  for (const e of own) {
    if (e.type !== 'depositMinted' || !unnamed(e)) {
      named.push(e);
      continue;
    }
    const [txid, vout] = e.id.split(':');
    let recipient: string | null = null;
    try {
      recipient = await rpc.completedDepositRecipient(txid!, BigInt(vout!), at);
    } catch (err) {
      context.tally.warn(
        `stacks observer: the recipient of deposit ${e.id} in block ${at}: ${(err as Error).message}; counted under ${UNKNOWN_RECIPIENT}`,
      );
    }
    named.push(recipient === null ? e : { ...e, account: recipient });
  }
  return withOwnEvents(observed, named);
}

// The keys a block's prints rotated to, remembered: with the RPC, only those the node shows
// as the registry's key as of that block (anyone who reaches the observer port could post
// a print, and a key adds the BTC its wallet holds to the reserves read).
async function rememberKeys(context: FeedContext, block: Block): Promise<Block> {
  if (block.rotatedKeys.length === 0) return block;
  const rpc = context.options.rpc;
  const trusted: string[] = [];
  for (const key of block.rotatedKeys) {
    let shown = rpc === undefined;
    if (rpc !== undefined) {
      try {
        shown = (await rpc.currentAggregateKey(block.block.hash)) === key;
      } catch {
        shown = false;
      }
    }
    if (shown) trusted.push(key);
    else
      context.tally.skip(
        `the key rotation to ${key} in block ${block.block.hash}: not shown by the node as of that block`,
      );
  }
  return { ...block, memory: withKeys(block.memory, trusted) };
}

/** How a batch goes through the port: its name on the trail, its sender, who sends it. */
interface FeedBatch {
  readonly requestId: string;
  readonly remote: string | undefined;
  readonly author: BatchAuthor;
  /** Past the chain bounds (the operator holds chain and limits). */
  readonly override?: boolean | undefined;
}

/**
 * Applies events through the port; an event the state cannot take (a rejection of a
 * withdrawal it does not hold, a request it holds with another payload) is dropped and
 * counted, and the rest applied. Resolves with the port's outcome.
 */
export async function applyEvents(
  context: FeedContext,
  events: ReadonlyArray<LimitsEvent>,
  batch: FeedBatch,
): Promise<BatchOutcome> {
  const { port, tally } = context;
  let left = events;
  const requestId = batch.requestId.slice(0, 128);
  for (;;) {
    const outcome = await port.applyBatch({
      events: left,
      operator: batch.author,
      requestId,
      remote: batch.remote,
      override: batch.override ?? false,
    });
    if (outcome.outcome !== 'refused' || outcome.by !== 'state') return outcome;
    const at = outcome.error.event;
    const event = at === undefined ? undefined : left[at];
    const droppable =
      event?.type === 'withdrawalRequested' ||
      event?.type === 'withdrawalRejected' ||
      event?.type === 'withdrawalRejectionUndone';
    if (!droppable) return outcome;
    tally.skip(
      `event ${at} of ${batch.requestId} (${outcome.error.code}): ${refusalDetail(outcome)}`,
    );
    left = left.filter((_, i) => i !== at);
    if (left.length === 0) return { outcome: 'applied', state: port.state, events: [] };
  }
}

/** Whether an outcome is the chain bounds' refusal. */
export function isBoundRefusal(outcome: BatchOutcome): outcome is BatchRefused {
  return outcome.outcome === 'refused' && outcome.by === 'chain-bounds';
}
