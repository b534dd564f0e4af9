/**
 * What the Stacks observer does with each block a node posts: the pure mapping
 * (`stacks/blocks.ts`) turned into batches applied through the service's port
 * (`Service.applyBatch`) as the operator `stacks-node` (the `chain` scope alone), or as the
 * operator who posted the block to the service's own port. Around it, what a real chain needs:
 * - a first block, or one after a gap, starts from the node's own state (`--stacks-rpc`), or
 *   declares the history complete only from the next burn height;
 * - the supply is read from the node when a block changes it;
 * - a rejection applies only once the node's state shows it (with the RPC): room is never
 *   freed on the word of whoever reaches the observer port;
 * - a block the chain bounds refuse is held, with every block after it, until an operator
 *   releases or drops them: the node is answered 200 and never stops for it. A jump the node
 *   itself confirms is no forgery: the state is read again from the node, and nothing is held.
 * Blocks and the operators' requests on the held blocks wait in one queue and are taken one
 * at a time, in the order they came; each is answered as data (`BlockOutcome`,
 * `HeldOutcome`), which the listeners turn into HTTP. The steps live in `feed-steps.ts`, the
 * start in `node-start.ts`, the held blocks in `held-blocks.ts`. Node-only.
 */
import type { BatchAuthor, LimitsEvent, Service } from 'peg-limits';
import { type BlockMemory, type Observed, refusalDetail, withKeys } from '../../internal.js';
import {
  type BlockFeedOptions,
  type BlockOutcome,
  type FeedTell,
  type HeldOp,
  type HeldOutcome,
  STACKS_NODE,
} from './feed-parts.js';
import {
  applyEvents,
  type FeedContext,
  FeedTally,
  isBoundRefusal,
  observe,
  prepare,
  tokenOf,
} from './feed-steps.js';
import { HeldBlocks } from './held-blocks.js';
import { mergeStart, NodeStart, parentBurnOf } from './node-start.js';

/** The observer's handling of blocks, one at a time. */
export class BlockFeed {
  readonly #context: FeedContext;
  readonly #start: NodeStart;
  readonly #held: HeldBlocks;
  #queue: Promise<unknown> = Promise.resolve();

  constructor(service: Service, options: BlockFeedOptions, tell: FeedTell) {
    this.#context = {
      port: service,
      options,
      token: options.rpc?.token ?? tokenOf(options.registry),
      tally: new FeedTally(tell),
    };
    this.#start = new NodeStart(this.#context);
    this.#held = new HeldBlocks(this.#context, this.#start);
  }

  /** Payloads and events skipped so far (`peg_limits_observer_skipped_total`). */
  get skipped(): number {
    return this.#context.tally.skipped;
  }

  /** Blocks held as last seen by this process (`peg_limits_observer_held_blocks`). */
  get held(): number {
    return this.#held.count;
  }

  /** Starts from the node's state that failed (`peg_limits_observer_start_failures_total`). */
  get startFailures(): number {
    return this.#start.failures;
  }

  /** Rejections skipped because the node did not show them (`peg_limits_observer_rejections_not_shown_total`). */
  get rejectionsNotShown(): number {
    return this.#context.tally.rejectionsNotShown;
  }

  /** Reads what is remembered (the held blocks among it) once at start, and the registry's key. */
  async open(): Promise<void> {
    const memory = await this.#context.options.memory.load();
    this.#held.saw(memory);
    await this.#held.reconcile(memory);
    await this.#readCurrentKey(memory);
  }

  /**
   * The signers' aggregate keys the registry has had, oldest first (compressed, hex), as
   * remembered once the block in hand is: what the reserves reader scans.
   */
  async aggregateKeys(): Promise<ReadonlyArray<string>> {
    // After the block in hand: its key rotation is remembered once its batch applied.
    await this.settle();
    return (await this.#context.options.memory.load()).keys ?? [];
  }

  // With the RPC, the registry's current aggregate key as the node has it now, remembered.
  async #readCurrentKey(memory: BlockMemory): Promise<void> {
    const { options, tally } = this.#context;
    const rpc = options.rpc;
    if (rpc === undefined) return;
    try {
      const info = await rpc.info();
      const key = await rpc.currentAggregateKey(info.stacksTip);
      if (key === null) return;
      const next = withKeys(memory, [key]);
      if (next !== memory) await options.memory.save(next);
    } catch (e) {
      tally.warn(
        `stacks observer: the registry's aggregate key could not be read from the node (${(e as Error).message}); the reserves reader knows only the keys remembered and rotated to`,
      );
    }
  }

  /**
   * Takes one `/new_block` payload, after everything queued before it, writing as `author`:
   * the operator `stacks-node` for the observer's port, the operator who posted it for the
   * service's own port. Rejects only when what it should record could not be (the store).
   */
  take(payload: unknown, author: BatchAuthor, remote: string | undefined): Promise<BlockOutcome> {
    return this.#serially(() => this.#take(payload, author, remote));
  }

  /** An operator's request on the held blocks (`/admin/held`): `author` lists, releases or drops them. */
  heldBlocks(op: HeldOp, author: BatchAuthor): Promise<HeldOutcome> {
    if (op === 'list') return this.#held.list();
    return this.#serially(() => (op === 'drop' ? this.#drop(author) : this.#held.release(author)));
  }

  /** Waits for what is in hand. */
  async settle(): Promise<void> {
    await this.#queue.catch(() => undefined);
  }

  #serially<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(f);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  // ---- a block ------------------------------------------------------------------------

  async #take(
    body: unknown,
    author: BatchAuthor,
    remote: string | undefined,
  ): Promise<BlockOutcome> {
    const context = this.#context;
    const memory = await context.options.memory.load();
    this.#held.saw(memory);
    let observed = observe(context, memory, body, undefined);
    if (observed.kind !== 'block') return this.#notTaken(observed);
    if (memory.held !== undefined && memory.held.length > 0)
      return this.#held.holdToo(memory, observed.block, body);
    const at = observed.block.hash;
    let prefix: LimitsEvent[] = [];
    const rpc = context.options.rpc;
    if (observed.startsChain || (rpc !== undefined && this.#start.historyIncomplete())) {
      const block = observed.block;
      const started = await this.#start.fromNode(block, parentBurnOf(body, block), remote, author);
      if (started !== undefined && 'refused' in started)
        return isBoundRefusal(started.refused)
          ? this.#held.hold({
              memory,
              observed,
              body,
              reason: refusalDetail(started.refused),
              remote,
              author,
            })
          : { kind: 'refused', outcome: started.refused };
      if (started !== undefined)
        observed = observe(
          context,
          memory,
          body,
          observed.startsChain ? started.supply : undefined,
        );
      else if (observed.startsChain) {
        const first = memory.blocks.length === 0;
        if (first && context.options.historyComplete === true)
          observed = observe(context, memory, body, 0n);
        else prefix = this.#start.lateStart(block, first);
      }
    }
    if (observed.kind !== 'block') return this.#notTaken(observed);
    const prepared = await prepare(context, observed);
    const events = prefix.length === 0 ? prepared.events : mergeStart(prefix, prepared.events);
    if (events.length > 0) {
      const outcome = await applyEvents(context, events, {
        requestId: `stacks-block:${at}`,
        remote,
        author,
      });
      if (isBoundRefusal(outcome))
        return this.#held.hold({
          memory,
          observed: prepared,
          body,
          reason: refusalDetail(outcome),
          remote,
          author,
        });
      if (outcome.outcome !== 'applied') return { kind: 'refused', outcome };
    }
    await context.options.memory.save(prepared.memory);
    if (prepared.forkedAt !== undefined)
      context.tally.log(
        `stacks observer: block ${at} (burn height ${prepared.block.burnHeight}) forks the chain from burn height ${prepared.forkedAt}`,
      );
    return { kind: 'applied', events: events.length };
  }

  // A payload that is no block to take: one remembered already, or one the mapping cannot
  // use (skipped, counted).
  #notTaken(observed: Exclude<Observed, { readonly kind: 'block' }>): BlockOutcome {
    if (observed.kind === 'known') return { kind: 'known', held: false };
    this.#context.tally.skip(`a payload: ${observed.reason}`);
    return { kind: 'skipped', reason: observed.reason };
  }

  // Drops the first held block; the blocks held behind it are then taken in order, in this
  // turn, as if just posted by the node: applied, or held again. The hold ends once nothing
  // is held (a block taken again may be held anew).
  async #drop(author: BatchAuthor): Promise<HeldOutcome> {
    const { first, behind } = await this.#held.dropFirst(author);
    if (first === undefined) {
      const ended = await this.#held.endHold('stacks-hold-end:drop', author);
      return ended !== undefined
        ? { kind: 'refused', outcome: ended }
        : { kind: 'dropped', dropped: 0, applied: 0, held: 0 };
    }
    let applied = 0;
    for (const h of behind) {
      const taken = await this.#take(h.payload, STACKS_NODE, undefined);
      if (taken.kind === 'refused') break;
      if (taken.kind !== 'held') applied++;
    }
    if (this.#held.count === 0) {
      const ended = await this.#held.endHold(`stacks-hold-end:drop:${first.hash}`, author);
      if (ended !== undefined) return { kind: 'refused', outcome: ended };
    }
    return { kind: 'dropped', dropped: 1, applied, held: this.#held.count };
  }
}
