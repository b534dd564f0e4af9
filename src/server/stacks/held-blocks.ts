/**
 * The blocks the Stacks feed holds: a block the chain bounds refuse is kept durably with
 * every block after it, in order, and the tip does not move until an operator holding chain
 * and limits releases them (they apply in order) or drops the first. A jump the node itself
 * confirms is no forgery: the state is read again from the node, and nothing is held. Each
 * step takes what it needs (the port, the block memory, the node's RPC) and returns what
 * became of it as data. Node-only.
 */
import { type BatchAuthor, chainView } from 'peg-limits';
import {
  type BlockMemory,
  type HeldBlock,
  payloadToKeep,
  type RememberedBlock,
} from '../../internal.js';
import {
  type Block,
  type BlockOutcome,
  type HeldOutcome,
  type NotApplied,
  STACKS_NODE,
} from './feed-parts.js';
import { applyEvents, type FeedContext, isBoundRefusal, observe, prepare } from './feed-steps.js';
import { type NodeStart, parentBurnOf } from './node-start.js';

/** A held block's refusal by the chain bounds, as the feed met it. */
interface BoundRefusal {
  /** What is remembered, the block's payload and what the mapping made of it. */
  readonly memory: BlockMemory;
  readonly observed: Block;
  readonly body: unknown;
  /** Why the bounds refused it. */
  readonly reason: string;
  readonly remote: string | undefined;
  /** Who posted it. */
  readonly author: BatchAuthor;
}

/** The held blocks of one feed, and how many this process last saw. */
export class HeldBlocks {
  readonly #context: FeedContext;
  readonly #start: NodeStart;
  #count = 0;

  constructor(context: FeedContext, start: NodeStart) {
    this.#context = context;
    this.#start = start;
  }

  /** Blocks held as last seen by this process (`peg_limits_observer_held_blocks`). */
  get count(): number {
    return this.#count;
  }

  /** What is remembered was read: it says how many are held. */
  saw(memory: BlockMemory): void {
    this.#count = memory.held?.length ?? 0;
  }

  /**
   * At start: blocks remembered as held that the state does not show held (a stop between
   * the two writes) are marked held now, so that no window reports room meanwhile.
   */
  async reconcile(memory: BlockMemory): Promise<void> {
    const first = memory.held?.[0];
    if (first !== undefined) await this.#markHeld(first);
  }

  // The state says blocks are held (no window reports room until the hold ends), written
  // before the blocks are kept: a stop in between fails closed. A no-op once it says so.
  async #markHeld(block: {
    readonly hash: string;
    readonly burnHeight: number;
  }): Promise<NotApplied | undefined> {
    if (chainView(this.#context.port.state).heldFrom !== null) return undefined;
    const outcome = await applyEvents(
      this.#context,
      [{ type: 'blocksHeld', height: block.burnHeight }],
      { requestId: `stacks-hold:${block.hash}`, remote: undefined, author: STACKS_NODE },
    );
    return outcome.outcome === 'applied' ? undefined : outcome;
  }

  /**
   * The hold ended (nothing is held any more): the windows report their room again. Written
   * as the operator who released or dropped the blocks (it needs the limits scope). What the
   * port did not apply, or undefined.
   */
  async endHold(requestId: string, author: BatchAuthor): Promise<NotApplied | undefined> {
    if (chainView(this.#context.port.state).heldFrom === null) return undefined;
    const outcome = await applyEvents(this.#context, [{ type: 'blocksReleased' }], {
      requestId,
      remote: undefined,
      author,
    });
    return outcome.outcome === 'applied' ? undefined : outcome;
  }

  /**
   * The chain bounds refused the block's batch. A jump the node itself confirms (its burn
   * height at or past the block's, the block known to it) is no forgery: the state is read
   * again from the node as at a start, and the block applied on it. Anything else is held.
   */
  async hold(refusal: BoundRefusal): Promise<BlockOutcome> {
    const { memory, observed, body } = refusal;
    const confirmed = await this.#confirmedJump(refusal);
    if (confirmed !== undefined) return confirmed;
    const { options, tally, token } = this.#context;
    const held: HeldBlock = {
      hash: observed.block.hash,
      height: observed.block.height,
      burnHeight: observed.block.burnHeight,
      reason: refusal.reason,
      at: new Date().toISOString(),
      payload: payloadToKeep(body, options.registry, token),
    };
    const marked = await this.#markHeld(held);
    if (marked !== undefined) return { kind: 'refused', outcome: marked };
    await options.memory.save({ ...memory, held: [held] });
    this.#count = 1;
    tally.warn(
      `stacks observer: block ${held.hash} (burn height ${held.burnHeight}) is held: ${refusal.reason}. Nothing moves until an operator holding chain and limits releases it (POST /admin/held/release) or drops it (DELETE /admin/held); the blocks after it are held too`,
    );
    tally.notice({
      type: 'blocksHeld',
      block: held.hash,
      burnHeight: held.burnHeight,
      reason: refusal.reason,
    });
    return { kind: 'held' };
  }

  // A jump the node confirms, applied on the state read again from it: `confirmed`, or what
  // the port refused other than the bounds; undefined when the block is to be held.
  async #confirmedJump(refusal: BoundRefusal): Promise<BlockOutcome | undefined> {
    const { memory, observed, body, remote, author } = refusal;
    if (!(await this.#confirmedByNode(observed.block))) return undefined;
    const parentBurn = parentBurnOf(body, observed.block);
    const started = await this.#start.fromNode(observed.block, parentBurn, remote, author, true);
    if (started === undefined || 'refused' in started) return undefined;
    const again = observe(this.#context, { ...memory, blocks: [], head: '' }, body, started.supply);
    if (again.kind !== 'block') return undefined;
    const prepared = await prepare(this.#context, again);
    const outcome = await applyEvents(this.#context, prepared.events, {
      requestId: `stacks-block:${prepared.block.hash}`,
      remote,
      author,
    });
    if (outcome.outcome !== 'applied')
      return isBoundRefusal(outcome) ? undefined : { kind: 'refused', outcome };
    await this.#context.options.memory.save(prepared.memory);
    this.#context.tally.log(
      `stacks observer: block ${prepared.block.hash} jumps past the chain bounds (${refusal.reason}); the node confirms it, so the state was read again from the node`,
    );
    return { kind: 'confirmed' };
  }

  async #confirmedByNode(block: RememberedBlock): Promise<boolean> {
    const rpc = this.#context.options.rpc;
    if (rpc === undefined) return false;
    try {
      const info = await rpc.info();
      if (info.burnBlockHeight < block.burnHeight) return false;
      // The node knows the block: it answers as of it.
      await rpc.totalSupply(block.hash);
      return true;
    } catch (e) {
      this.#context.tally.warn(
        `stacks observer: the node did not confirm block ${block.hash}: ${(e as Error).message}`,
      );
      return false;
    }
  }

  /** While blocks are held, every block after them is held too, in order. */
  async holdToo(memory: BlockMemory, block: RememberedBlock, body: unknown): Promise<BlockOutcome> {
    const held = memory.held ?? [];
    if (held.some((h) => h.hash === block.hash)) return { kind: 'known', held: true };
    const { options, tally, token } = this.#context;
    const next: HeldBlock = {
      hash: block.hash,
      height: block.height,
      burnHeight: block.burnHeight,
      reason: `held after block ${held[0]?.hash}`,
      at: new Date().toISOString(),
      payload: payloadToKeep(body, options.registry, token),
    };
    const marked = await this.#markHeld(held[0] ?? next);
    if (marked !== undefined) return { kind: 'refused', outcome: marked };
    await options.memory.save({ ...memory, held: [...held, next] });
    this.#count = held.length + 1;
    tally.warn(
      `stacks observer: block ${block.hash} (burn height ${block.burnHeight}) is held behind ${held.length} held block(s)`,
    );
    return { kind: 'held' };
  }

  /** The blocks held, first to last. */
  async list(): Promise<HeldOutcome> {
    const memory = await this.#context.options.memory.load();
    this.#count = memory.held?.length ?? 0;
    return { kind: 'listed', blocks: (memory.held ?? []).map(({ payload: _p, ...h }) => h) };
  }

  /**
   * Drops the first held block (the one the bounds refused: a forgery, say), by `author`:
   * the block dropped and the blocks held behind it, which the feed then takes in order as
   * if just posted (applied, or held again); nothing dropped when none is held.
   */
  async dropFirst(
    author: BatchAuthor,
  ): Promise<{ readonly first: HeldBlock | undefined; readonly behind: ReadonlyArray<HeldBlock> }> {
    const { options, tally } = this.#context;
    const memory = await options.memory.load();
    const [first, ...behind] = memory.held ?? [];
    if (first === undefined) return { first, behind: [] };
    await options.memory.save({ ...memory, held: [] });
    this.#count = 0;
    tally.warn(
      `stacks observer: ${author.name} dropped the held block ${first.hash} (burn height ${first.burnHeight}); ${behind.length} block(s) held behind it are taken again`,
    );
    tally.notice({ type: 'heldBlockDropped', by: author.name, block: first.hash });
    return { first, behind };
  }

  /**
   * The held blocks apply in order, each as a batch of the releasing operator with the
   * override (so the trail names who let them through); one that fails stops the release.
   */
  async release(author: BatchAuthor): Promise<HeldOutcome> {
    const { options, tally } = this.#context;
    let memory = await options.memory.load();
    let held = [...(memory.held ?? [])];
    let released = 0;
    while (held.length > 0) {
      const h = held[0]!;
      const rest = held.slice(1);
      const observed = observe(this.#context, { ...memory, held: [] }, h.payload, undefined);
      if (observed.kind === 'block') {
        const prepared = await prepare(this.#context, observed);
        if (prepared.events.length > 0) {
          const outcome = await applyEvents(this.#context, prepared.events, {
            requestId: `stacks-release:${h.hash}`,
            remote: undefined,
            author,
            override: true,
          });
          if (outcome.outcome !== 'applied') {
            this.#count = held.length;
            return outcome.outcome !== 'refused' || outcome.by === 'operator'
              ? { kind: 'refused', outcome }
              : { kind: 'stopped', block: h.hash, released, outcome };
          }
        }
        memory = { ...prepared.memory, held: rest };
      } else memory = { ...memory, held: rest };
      await options.memory.save(memory);
      held = rest;
      released++;
    }
    this.#count = 0;
    const ended = await this.endHold('stacks-hold-end:release', author);
    if (ended !== undefined) return { kind: 'refused', outcome: ended };
    tally.log(`stacks observer: ${author.name} released ${released} held block(s)`);
    tally.notice({ type: 'heldBlocksReleased', by: author.name, blocks: released });
    return { kind: 'released', released, tip: chainView(this.#context.port.state).tip };
  }
}
