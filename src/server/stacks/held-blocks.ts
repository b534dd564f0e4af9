/**
 * The blocks the Stacks feed holds: a block the chain bounds refuse is kept durably with
 * every block after it, in order, and the tip does not move until an operator holding chain
 * and limits releases them (they apply in order) or drops the first. A jump the node itself
 * confirms is no forgery: the state is read again from the node, and nothing is held.
 * Node-only.
 */
import { type BatchAuthor, type BatchOutcome, chainView, type HttpResponse } from 'peg-limits';
import {
  type BlockMemory,
  batchAnswer,
  type HeldBlock,
  payloadToKeep,
  problem,
  type RememberedBlock,
  refusalDetail,
  refusalStatus,
} from '../../internal.js';
import { type Block, type FeedCore, STACKS_NODE } from './feed-parts.js';
import { isBoundRefusal, type NodeStart, okJson, parentBurnOf } from './node-start.js';

/** The held blocks of one feed, and how many this process last saw. */
export class HeldBlocks {
  readonly #core: FeedCore;
  readonly #start: NodeStart;
  readonly #token: string;
  #count = 0;

  constructor(core: FeedCore, start: NodeStart, token: string) {
    this.#core = core;
    this.#start = start;
    this.#token = token;
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
  async #markHeld(block: { readonly hash: string; readonly burnHeight: number }) {
    if (chainView(this.#core.service.state).heldFrom !== null) return undefined;
    const outcome = await this.#core.apply(
      [{ type: 'blocksHeld', height: block.burnHeight }],
      `stacks-hold:${block.hash}`,
      undefined,
      STACKS_NODE,
    );
    return outcome.outcome === 'applied' ? undefined : batchAnswer(outcome);
  }

  // The hold ended (nothing is held any more): the windows report their room again. Written
  // as the operator who released or dropped the blocks (it needs the limits scope).
  async #markReleased(requestId: string, author: BatchAuthor) {
    if (chainView(this.#core.service.state).heldFrom === null) return undefined;
    const outcome = await this.#core.apply(
      [{ type: 'blocksReleased' }],
      requestId,
      undefined,
      author,
    );
    return outcome.outcome === 'applied' ? undefined : batchAnswer(outcome);
  }

  // The chain bounds refused the block's batch. A jump the node itself confirms (its burn
  // height at or past the block's, the block known to it) is no forgery: the state is read
  // again from the node as at a start, and the block applied on it. Anything else is held.
  async refusedByBounds(
    memory: BlockMemory,
    observed: Block,
    body: unknown,
    refusal: Extract<BatchOutcome, { readonly outcome: 'refused' }>,
    remote: string | undefined,
    author: BatchAuthor,
  ): Promise<HttpResponse> {
    const reason = refusalDetail(refusal);
    if (await this.#confirmedByNode(observed.block)) {
      const started = await this.#start.fromNode(
        observed.block,
        parentBurnOf(body, observed.block),
        remote,
        author,
        true,
      );
      if (started !== undefined && !('refused' in started)) {
        const again = this.#core.observe({ ...memory, blocks: [], head: '' }, body, started.supply);
        if (again.kind === 'block') {
          const prepared = await this.#core.prepare(again);
          const outcome = await this.#core.apply(
            prepared.events,
            `stacks-block:${prepared.block.hash}`,
            remote,
            author,
          );
          if (outcome.outcome === 'applied') {
            await this.#core.options.memory.save(prepared.memory);
            this.#core.tell.logLine?.(
              `stacks observer: block ${prepared.block.hash} jumps past the chain bounds (${reason}); the node confirms it, so the state was read again from the node`,
            );
            return okJson({ ok: true, confirmed: true });
          }
          if (!isBoundRefusal(outcome)) return batchAnswer(outcome);
        }
      }
    }
    const held: HeldBlock = {
      hash: observed.block.hash,
      height: observed.block.height,
      burnHeight: observed.block.burnHeight,
      reason,
      at: new Date().toISOString(),
      payload: payloadToKeep(body, this.#core.options.registry, this.#token),
    };
    const marked = await this.#markHeld(held);
    if (marked !== undefined) return marked;
    await this.#core.options.memory.save({ ...memory, held: [held] });
    this.#count = 1;
    this.#core.warn(
      `stacks observer: block ${held.hash} (burn height ${held.burnHeight}) is held: ${reason}. Nothing moves until an operator holding chain and limits releases it (POST /admin/held/release) or drops it (DELETE /admin/held); the blocks after it are held too`,
    );
    this.#core.tell.notify?.({
      type: 'blocksHeld',
      block: held.hash,
      burnHeight: held.burnHeight,
      reason,
    });
    return okJson({ ok: true, held: true });
  }

  async #confirmedByNode(block: RememberedBlock): Promise<boolean> {
    const rpc = this.#core.options.rpc;
    if (rpc === undefined) return false;
    try {
      const info = await rpc.info();
      if (info.burnBlockHeight < block.burnHeight) return false;
      // The node knows the block: it answers as of it.
      await rpc.totalSupply(block.hash);
      return true;
    } catch (e) {
      this.#core.warn(
        `stacks observer: the node did not confirm block ${block.hash}: ${(e as Error).message}`,
      );
      return false;
    }
  }

  // While blocks are held, every block after them is held too, in order.
  async holdToo(memory: BlockMemory, block: RememberedBlock, body: unknown): Promise<HttpResponse> {
    const held = memory.held ?? [];
    if (held.some((h) => h.hash === block.hash))
      return okJson({ ok: true, known: true, held: true });
    const next: HeldBlock = {
      hash: block.hash,
      height: block.height,
      burnHeight: block.burnHeight,
      reason: `held after block ${held[0]?.hash}`,
      at: new Date().toISOString(),
      payload: payloadToKeep(body, this.#core.options.registry, this.#token),
    };
    const marked = await this.#markHeld(held[0] ?? next);
    if (marked !== undefined) return marked;
    await this.#core.options.memory.save({ ...memory, held: [...held, next] });
    this.#count = held.length + 1;
    this.#core.warn(
      `stacks observer: block ${block.hash} (burn height ${block.burnHeight}) is held behind ${held.length} held block(s)`,
    );
    return okJson({ ok: true, held: true });
  }

  async list(): Promise<HttpResponse> {
    const memory = await this.#core.options.memory.load();
    this.#count = memory.held?.length ?? 0;
    const blocks = (memory.held ?? []).map(({ payload: _p, ...h }) => h);
    return {
      status: 200,
      headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
      body: JSON.stringify({ blocks }),
    };
  }

  // Drops the first held block (the one the bounds refused: a forgery, say); the blocks
  // held behind it are then taken in order as if just posted: applied, or held again.
  async drop(author: BatchAuthor): Promise<HttpResponse> {
    const by = author.name;
    const memory = await this.#core.options.memory.load();
    const [first, ...rest] = memory.held ?? [];
    if (first === undefined) {
      const ended = await this.#markReleased('stacks-hold-end:drop', author);
      return ended ?? okJson({ dropped: 0, applied: 0, held: 0 });
    }
    await this.#core.options.memory.save({ ...memory, held: [] });
    this.#count = 0;
    this.#core.warn(
      `stacks observer: ${by} dropped the held block ${first.hash} (burn height ${first.burnHeight}); ${rest.length} block(s) held behind it are taken again`,
    );
    this.#core.tell.notify?.({ type: 'heldBlockDropped', by, block: first.hash });
    let applied = 0;
    for (const h of rest) {
      const held = this.#count;
      const response = await this.#core.takeNow(h.payload);
      if (response.status !== 200) break;
      // A block taken again is held anew when the bounds refuse it too.
      if (this.#count === held) applied++;
    }
    // The hold ends once nothing is held again (a block retaken may be held anew).
    if (this.#count === 0) {
      const ended = await this.#markReleased(`stacks-hold-end:drop:${first.hash}`, author);
      if (ended !== undefined) return ended;
    }
    return okJson({ dropped: 1, applied, held: this.#count });
  }

  // The held blocks apply in order, each as a batch of the releasing operator with the
  // override (so the trail names who let them through); one that fails stops the release.
  async release(author: BatchAuthor): Promise<HttpResponse> {
    let memory = await this.#core.options.memory.load();
    let held = [...(memory.held ?? [])];
    let released = 0;
    while (held.length > 0) {
      const h = held[0]!;
      const rest = held.slice(1);
      const observed = this.#core.observe({ ...memory, held: [] }, h.payload, undefined);
      if (observed.kind === 'block') {
        const prepared = await this.#core.prepare(observed);
        if (prepared.events.length > 0) {
          const outcome = await this.#core.apply(
            prepared.events,
            `stacks-release:${h.hash}`,
            undefined,
            author,
            true,
          );
          if (outcome.outcome !== 'applied') {
            this.#count = held.length;
            if (outcome.outcome !== 'refused' || outcome.by === 'operator')
              return batchAnswer(outcome);
            return problem(
              refusalStatus(outcome.error),
              'release_stopped',
              `block ${h.hash} did not apply (${released} released before it): ${refusalDetail(outcome)}`,
            );
          }
        }
        memory = { ...prepared.memory, held: rest };
      } else memory = { ...memory, held: rest };
      await this.#core.options.memory.save(memory);
      held = rest;
      released++;
    }
    this.#count = 0;
    const ended = await this.#markReleased('stacks-hold-end:release', author);
    if (ended !== undefined) return ended;
    this.#core.tell.logLine?.(`stacks observer: ${author.name} released ${released} held block(s)`);
    this.#core.tell.notify?.({ type: 'heldBlocksReleased', by: author.name, blocks: released });
    return okJson({ released, tip: chainView(this.#core.service.state).tip });
  }
}
