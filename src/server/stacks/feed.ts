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
 * Blocks are taken one at a time, in the order they came. The start lives in
 * `node-start.ts`, the held blocks in `held-blocks.ts`. Node-only.
 */
import {
  type BatchAuthor,
  type BatchOutcome,
  chainView,
  type HttpResponse,
  type LimitsEvent,
  type Service,
} from 'peg-limits';
import {
  type BlockMemory,
  batchAnswer,
  type Observed,
  observeBlock,
  type RememberedBlock,
  refusalDetail,
  withKeys,
  withSupply,
} from '../../internal.js';
import {
  type Block,
  type BlockFeedOptions,
  type FeedCore,
  type FeedTell,
  type HeldOp,
  STACKS_NODE,
} from './feed-parts.js';
import { HeldBlocks } from './held-blocks.js';
import {
  isBoundRefusal,
  mergeStart,
  NodeStart,
  okJson,
  parentBurnOf,
  tokenOf,
} from './node-start.js';

/** The observer's handling of blocks, one at a time. */
export class BlockFeed {
  readonly #service: Service;
  readonly #options: BlockFeedOptions;
  readonly #tell: FeedTell;
  readonly #token: string;
  readonly #start: NodeStart;
  readonly #held: HeldBlocks;
  #queue: Promise<unknown> = Promise.resolve();
  #skipped = 0;
  #notShown = 0;

  constructor(service: Service, options: BlockFeedOptions, tell: FeedTell) {
    this.#service = service;
    this.#options = options;
    this.#tell = tell;
    this.#token = options.rpc?.token ?? tokenOf(options.registry);
    const core: FeedCore = {
      service,
      options,
      tell,
      warn: (line) => this.#warn(line),
      skip: (what) => this.#skip(what),
      observe: (memory, body, parentSupply) => this.#observe(memory, body, parentSupply),
      prepare: (observed) => this.#prepare(observed),
      apply: (events, requestId, remote, author, override) =>
        this.#apply(events, requestId, remote, author, override),
      takeNow: (body) => this.#newBlock(body, undefined, STACKS_NODE),
    };
    this.#start = new NodeStart(core);
    this.#held = new HeldBlocks(core, this.#start, this.#token);
  }

  /** Payloads and events skipped so far (`peg_limits_observer_skipped_total`). */
  get skipped(): number {
    return this.#skipped;
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
    return this.#notShown;
  }

  /** Reads what is remembered (the held blocks among it) once at start, and the registry's key. */
  async open(): Promise<void> {
    const memory = await this.#options.memory.load();
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
    return (await this.#options.memory.load()).keys ?? [];
  }

  // With the RPC, the registry's current aggregate key as the node has it now, remembered.
  async #readCurrentKey(memory: BlockMemory): Promise<void> {
    const rpc = this.#options.rpc;
    if (rpc === undefined) return;
    try {
      const info = await rpc.info();
      const key = await rpc.currentAggregateKey(info.stacksTip);
      if (key === null) return;
      const next = withKeys(memory, [key]);
      if (next !== memory) await this.#options.memory.save(next);
    } catch (e) {
      this.#warn(
        `stacks observer: the registry's aggregate key could not be read from the node (${(e as Error).message}); the reserves reader knows only the keys remembered and rotated to`,
      );
    }
  }

  // The keys a block's prints rotated to, remembered: with the RPC, only those the node shows
  // as the registry's key as of that block (anyone who reaches the observer port could post
  // a print, and a key adds the BTC its wallet holds to the reserves read).
  async #rememberKeys(block: Block): Promise<Block> {
    if (block.rotatedKeys.length === 0) return block;
    const rpc = this.#options.rpc;
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
        this.#skip(
          `the key rotation to ${key} in block ${block.block.hash}: not shown by the node as of that block`,
        );
    }
    return { ...block, memory: withKeys(block.memory, trusted) };
  }

  /**
   * Takes one `/new_block` payload, after every one before it, writing as the operator
   * `stacks-node` or, for a block posted to the service's own port, as the operator who
   * posted it (`author`).
   */
  newBlock(
    body: unknown,
    remote: string | undefined,
    author: BatchAuthor = STACKS_NODE,
  ): Promise<HttpResponse> {
    return this.#serially(() => this.#newBlock(body, remote, author));
  }

  /** An operator's request on the held blocks (`/admin/held`): `author` lists, releases or drops them. */
  heldBlocks(op: HeldOp, author: BatchAuthor): Promise<HttpResponse> {
    if (op === 'list') return this.#held.list();
    return this.#serially(() =>
      op === 'drop' ? this.#held.drop(author) : this.#held.release(author),
    );
  }

  /** Waits for the block in hand. */
  async settle(): Promise<void> {
    await this.#queue.catch(() => undefined);
  }

  #serially<T>(f: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(f);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  #warn(line: string): void {
    (this.#tell.warn ?? this.#tell.logLine)?.(`warning: ${line}`);
  }

  #skip(what: string): void {
    this.#skipped++;
    this.#warn(`stacks observer skipped ${what}`);
  }

  #observe(memory: BlockMemory, body: unknown, parentSupply: bigint | undefined): Observed {
    return observeBlock(memory, body, {
      registry: this.#options.registry,
      decode: this.#options.decode,
      tip: chainView(this.#service.state).tip,
      keepBurnBlocks: this.#options.keepBurnBlocks,
      token: this.#token,
      parentSupply,
      supplyFromRpc: this.#options.rpc !== undefined,
    });
  }

  // ---- a block ------------------------------------------------------------------------

  async #newBlock(
    body: unknown,
    remote: string | undefined,
    author: BatchAuthor,
  ): Promise<HttpResponse> {
    const memory = await this.#options.memory.load();
    this.#held.saw(memory);
    let observed = this.#observe(memory, body, undefined);
    if (observed.kind === 'known') return okJson({ ok: true, known: true });
    if (observed.kind === 'unusable') {
      this.#skip(`a payload: ${observed.reason}`);
      return okJson({ ok: true, skipped: observed.reason });
    }
    if (memory.held !== undefined && memory.held.length > 0)
      return this.#held.holdToo(memory, observed.block, body);
    const at = observed.block.hash;
    let prefix: LimitsEvent[] = [];
    const rpc = this.#options.rpc;
    if (observed.startsChain || (rpc !== undefined && this.#start.historyIncomplete())) {
      const started = await this.#start.fromNode(
        observed.block,
        parentBurnOf(body, observed.block),
        remote,
        author,
      );
      if (started !== undefined && 'refused' in started)
        return isBoundRefusal(started.refused)
          ? this.#held.refusedByBounds(memory, observed, body, started.refused, remote, author)
          : batchAnswer(started.refused);
      if (started !== undefined)
        observed = this.#observe(memory, body, observed.startsChain ? started.supply : undefined);
      else if (observed.startsChain) {
        const first = memory.blocks.length === 0;
        if (first && this.#options.historyComplete === true)
          observed = this.#observe(memory, body, 0n);
        else prefix = this.#start.lateStart(observed.block, first);
      }
    }
    if (observed.kind !== 'block') return okJson({ ok: true });
    const prepared = await this.#prepare(observed);
    const events = prefix.length === 0 ? prepared.events : mergeStart(prefix, prepared.events);
    if (events.length > 0) {
      const outcome = await this.#apply(events, `stacks-block:${at}`, remote, author);
      if (isBoundRefusal(outcome))
        return this.#held.refusedByBounds(memory, prepared, body, outcome, remote, author);
      if (outcome.outcome !== 'applied') return batchAnswer(outcome);
    }
    await this.#options.memory.save(prepared.memory);
    if (prepared.forkedAt !== undefined)
      this.#tell.logLine?.(
        `stacks observer: block ${at} (burn height ${prepared.block.burnHeight}) forks the chain from burn height ${prepared.forkedAt}`,
      );
    return okJson({ ok: true, events: events.length });
  }

  // The supply as of the block, the rejections it carries checked against the node, and the
  // keys it rotated to remembered.
  async #prepare(observed: Block): Promise<Block> {
    let block = await this.#rememberKeys(await this.#verifyRejections(observed));
    const at = block.block.hash;
    if (block.needsSupply) {
      const rpc = this.#options.rpc;
      if (rpc !== undefined) {
        try {
          block = withSupply(block, await rpc.totalSupply(at));
        } catch (e) {
          this.#skip(`the supply as of block ${at}: ${(e as Error).message}`);
        }
      } else
        this.#skip(
          `the supply as of block ${at}: it changed, and neither the token's asset events (from a known supply) nor --stacks-rpc tell it`,
        );
    }
    for (const s of block.skipped) this.#skip(`event ${s.index} of block ${at}: ${s.reason}`);
    return block;
  }

  // With the RPC, a rejection the block carries applies only once the node's state as of
  // that block shows the request rejected: anyone who reaches the observer port could post
  // one, and a rejection frees window room. One not shown (or not checkable: the node did
  // not answer) is left out, counted, warned of and alerted: fail closed.
  async #verifyRejections(observed: Block): Promise<Block> {
    const rpc = this.#options.rpc;
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
        this.#skip(
          `the rejection of withdrawal ${e.id} in block ${at}: not shown by the node as of that block (its status: ${status})`,
        );
        this.#notShown++;
        this.#tell.notify?.({ type: 'rejectionNotShown', id: e.id, block: at, status });
      }
    }
    if (kept.length === own.length) return observed;
    const block: RememberedBlock = { ...observed.block, events: kept };
    const lead = observed.events.slice(0, observed.events.length - own.length);
    return {
      ...observed,
      block,
      events: [...lead, ...kept],
      memory: {
        ...observed.memory,
        blocks: observed.memory.blocks.map((b) => (b === observed.block ? block : b)),
      },
    };
  }

  // Applies events through the service's port as `author` (with the override: past the
  // chain bounds); an event the state cannot take (a rejection of a withdrawal it does not
  // hold, a request it holds with another payload) is dropped and counted, and the rest
  // applied.
  async #apply(
    events: ReadonlyArray<LimitsEvent>,
    requestId: string,
    remote: string | undefined,
    author: BatchAuthor,
    override = false,
  ): Promise<BatchOutcome> {
    let batch = events;
    const id = requestId.slice(0, 128);
    for (;;) {
      const outcome = await this.#service.applyBatch({
        events: batch,
        operator: author,
        requestId: id,
        remote,
        override,
      });
      if (outcome.outcome !== 'refused' || outcome.by !== 'state') return outcome;
      const at = outcome.error.event;
      const event = at === undefined ? undefined : batch[at];
      const droppable =
        event?.type === 'withdrawalRequested' ||
        event?.type === 'withdrawalRejected' ||
        event?.type === 'withdrawalRejectionUndone';
      if (!droppable) return outcome;
      this.#skip(`event ${at} of ${requestId} (${outcome.error.code}): ${refusalDetail(outcome)}`);
      batch = batch.filter((_, i) => i !== at);
      if (batch.length === 0) return { outcome: 'applied', state: this.#service.state, events: [] };
    }
  }
}
