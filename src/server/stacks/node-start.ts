/**
 * Starting the limits from a Stacks node's own state: every withdrawal request of the
 * retained history as of a block, read from the node's RPC, and what the observer's block
 * handling needs around it. Node-only.
 */
import { type BatchAuthor, chainView, type LimitsEvent } from 'peg-limits';
import type { BatchRefused, RegistryRequest, RememberedBlock } from '../../internal.js';
import { NodeAnswerError, startBatch } from '../../internal.js';
import { STACKS_NODE_CONFIRMED } from './feed-parts.js';
import { applyEvents, type FeedContext } from './feed-steps.js';
import type { StacksRpc } from './rpc-client.js';

// How many requests the start reads at once.
const STRIDE = 16n;

/**
 * Every request whose height is `from` or above as of block `tip` (walking the ids down
 * from the last one until the heights fall below `from`: ids only grow with the height), and
 * the supply. An answer that does not fit the block asked about (a request above its burn
 * height `tipBurnHeight`, an id missing below the last) is refused: it is an answer for
 * another block.
 */
async function readNodeState(
  rpc: StacksRpc,
  at: { readonly tip: string; readonly from: number; readonly tipBurnHeight: number },
): Promise<{ requests: RegistryRequest[]; supply: bigint }> {
  const { tip, from, tipBurnHeight } = at;
  const last = await rpc.lastWithdrawalRequestId(tip);
  const requests: RegistryRequest[] = [];
  let below = false;
  for (let top = last; top >= 1n && !below; top -= STRIDE) {
    const ids: bigint[] = [];
    for (let id = top; id >= 1n && id > top - STRIDE; id--) ids.push(id);
    const got = await Promise.all(ids.map((id) => rpc.withdrawalRequest(id, tip)));
    for (const [i, r] of got.entries()) {
      if (r === null)
        throw new NodeAnswerError(
          `the node has no withdrawal request ${ids[i]} below the last one (${last}) as of block ${tip}: an answer for another block`,
        );
      if (r.height > tipBurnHeight)
        throw new NodeAnswerError(
          `withdrawal request ${r.id} is at burn height ${r.height}, above block ${tip}'s ${tipBurnHeight}: an answer for another block`,
        );
      if (r.height < from) below = true;
      else requests.push(r);
    }
  }
  return { requests, supply: await rpc.totalSupply(tip) };
}

/** The parent's burn height as the payload gives it (the block's own when it does not). */
export function parentBurnOf(body: unknown, block: RememberedBlock): number {
  const given =
    typeof body === 'object' && body !== null
      ? (body as { parent_burn_block_height?: unknown }).parent_burn_block_height
      : undefined;
  return typeof given === 'number' && Number.isSafeInteger(given) && given <= block.burnHeight
    ? given
    : block.burnHeight;
}

/**
 * The declaration of a late start, then the block's own events (without the block's
 * connection, which the declaration made already).
 */
export function mergeStart(
  prefix: LimitsEvent[],
  events: ReadonlyArray<LimitsEvent>,
): LimitsEvent[] {
  const connected = prefix.find((e) => e.type === 'blockConnected');
  const rest = events.filter(
    (e) =>
      !(connected !== undefined && e.type === 'blockConnected' && e.height === connected.height),
  );
  return [...prefix, ...rest];
}

/**
 * The feed's start from the node's state: at a first block, or after a gap, with the RPC;
 * without it, the history declared complete only from the next burn height.
 */
export class NodeStart {
  readonly #context: FeedContext;
  // When the last try to start from the node's state failed (0: none failed).
  #failedAt = 0;
  #failures = 0;

  constructor(context: FeedContext) {
    this.#context = context;
  }

  /** Starts from the node's state that failed so far (`peg_limits_observer_start_failures_total`). */
  get failures(): number {
    return this.#failures;
  }

  /** Whether some heights of the retained history were never reported (a late start). */
  historyIncomplete(): boolean {
    const chain = chainView(this.#context.port.state);
    if (chain.completeFrom === null) return false;
    const tip = chain.tip;
    return tip === null || chain.completeFrom > Math.max(0, tip - chain.historyBlocks + 1);
  }

  /**
   * Blocks before this one were never seen: the history is complete from the next burn
   * height only (others at this one may have come before). The declaration's events.
   */
  lateStart(block: RememberedBlock, first: boolean): LimitsEvent[] {
    const chain = chainView(this.#context.port.state);
    const tip = chain.tip;
    if (this.#context.options.rpc === undefined)
      this.#context.tally.warn(
        `stacks observer: block ${block.hash} ${first ? 'is the first one seen' : 'follows a gap'}, and without --stacks-rpc what came before it is unknown: the window is incomplete (no room reported, withdrawals refused) until it holds only burn heights from ${block.burnHeight + 1}`,
      );
    return [
      ...(tip === null || block.burnHeight > tip
        ? [{ type: 'blockConnected', height: block.burnHeight } as const]
        : []),
      { type: 'historyCompleteFrom', height: block.burnHeight + 1 },
      ...mintHistoryFrom(chain.mintCompleteFrom, block.burnHeight + 1),
    ];
  }

  /**
   * Starts the limits from the node's state as of the block before `block` (its parent), one
   * batch on the trail: the supply as of the parent, the port's refusal, or undefined when
   * the node could not be read (then the history stays incomplete, and a later block tries
   * again, no sooner than the retry time). `confirmed`: the node confirmed a jump past the
   * chain bounds, which the batch passes as the process's own confirmed operator; else it is
   * written as `author`.
   */
  async fromNode(
    block: RememberedBlock,
    parentBurnHeight: number,
    remote: string | undefined,
    author: BatchAuthor,
    confirmed = false,
  ): Promise<{ readonly supply: bigint } | { readonly refused: BatchRefused } | undefined> {
    const { options, tally, port } = this.#context;
    const rpc = options.rpc;
    if (rpc === undefined) return undefined;
    const retry = options.startRetryMs ?? 10_000;
    if (!confirmed && this.#failedAt !== 0 && Date.now() - this.#failedAt < retry) return undefined;
    const began = Date.now();
    const callsBefore = rpc.calls;
    let read: { requests: RegistryRequest[]; supply: bigint };
    try {
      read = await readNodeState(rpc, {
        tip: block.parent,
        from: Math.max(0, block.burnHeight - chainView(port.state).historyBlocks + 1),
        tipBurnHeight: parentBurnHeight,
      });
    } catch (e) {
      this.#failedAt = Date.now();
      this.#failures++;
      tally.warn(
        `stacks observer: could not start from the node's state as of block ${block.parent} (${(e as Error).message}); the window stays incomplete (no room reported, withdrawals refused) until a start succeeds, tried again at a later block`,
      );
      return undefined;
    }
    this.#failedAt = 0;
    const readMs = Date.now() - began;
    const chain = chainView(port.state);
    const events = startBatch({
      tip: chain.tip,
      burnHeight: block.burnHeight,
      historyBlocks: chain.historyBlocks,
      requests: read.requests,
      supply: read.supply,
    }).concat(mintHistoryFrom(chain.mintCompleteFrom, block.burnHeight + 1));
    const requestId = `stacks-start:${block.parent}`;
    const outcome = await applyEvents(
      this.#context,
      events,
      confirmed
        ? { requestId, remote, author: STACKS_NODE_CONFIRMED, override: true }
        : { requestId, remote, author },
    );
    // A start batch takes chain events alone: it applies, or it is refused.
    if (outcome.outcome === 'refused') return { refused: outcome };
    tally.log(
      `stacks observer: started from the node's state as of block ${block.parent} (burn height ${block.burnHeight}): ${read.requests.length} withdrawal request(s) in the history, supply ${read.supply}, ${rpc.calls - callsBefore} RPC calls in ${readMs} ms, applied in ${Date.now() - began - readMs} ms`,
    );
    return { supply: read.supply };
  }
}

/**
 * The mint history declared complete from `from` (the node keeps no index of deposits by
 * height, so what was minted before a feed's first block, or in a gap, is unknown), unless it
 * already starts there or later: a feed only ever raises it (lowering it frees room: an
 * operator's, with the limits scope, once the window's mints are posted).
 */
function mintHistoryFrom(current: number | null, from: number): LimitsEvent[] {
  return current !== null && current >= from
    ? []
    : [{ type: 'mintHistoryCompleteFrom', height: from }];
}
