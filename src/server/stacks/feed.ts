/**
 * What the Stacks observer does with each block a node posts: the pure mapping
 * (`stacks/blocks.ts`) turned into batches of the service, applied as the operator
 * `stacks-node` (the `chain` scope alone). Around it, what a real chain needs:
 * - a first block, or one after a gap, starts from the node's own state (`--stacks-rpc`), or
 *   declares the history complete only from the next burn height;
 * - the supply is read from the node when a block changes it;
 * - a rejection applies only once the node's state shows it (with the RPC): room is never
 *   freed on the word of whoever reaches the observer port;
 * - a block the chain bounds refuse is held, with every block after it, until an operator
 *   releases or drops them: the node is answered 200 and never stops for it. A jump the node
 *   itself confirms is no forgery: the state is read again from the node, and nothing is held.
 * Blocks are taken one at a time, in the order they came. Node-only.
 */
import {
  encodeJson,
  type HttpResponse,
  type LimitsEvent,
  type Service,
  windowOf,
} from 'peg-limits';
import {
  type BlockMemory,
  type HeldBlock,
  type Observed,
  observeBlock,
  payloadToKeep,
  problem,
  type RegistryRequest,
  type RememberedBlock,
  startBatch,
  withSupply,
} from '../../internal.js';
import type { BlockMemoryStore } from './block-memory.js';
import {
  isBoundRefusal,
  mergeStart,
  ok,
  parentBurnOf,
  readNodeState,
  tokenOf,
} from './node-start.js';
import type { StacksRpc } from './rpc-client.js';

/** What {@link BlockFeed} needs. */
interface BlockFeedOptions {
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
interface FeedCredentials {
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

type Block = Extract<Observed, { kind: 'block' }>;

/** The observer's handling of blocks, one at a time. */
export class BlockFeed {
  readonly #service: Service;
  readonly #credentials: FeedCredentials;
  readonly #options: BlockFeedOptions;
  readonly #tell: FeedTell;
  readonly #token: string;
  #queue: Promise<unknown> = Promise.resolve();
  #skipped = 0;
  #held = 0;
  // When the last try to start from the node's state failed (0: none failed).
  #startFailedAt = 0;

  constructor(
    service: Service,
    credentials: FeedCredentials,
    options: BlockFeedOptions,
    tell: FeedTell,
  ) {
    this.#service = service;
    this.#credentials = credentials;
    this.#options = options;
    this.#tell = tell;
    this.#token = options.rpc?.token ?? tokenOf(options.registry);
  }

  /** Payloads and events skipped so far (`peg_limits_observer_skipped_total`). */
  get skipped(): number {
    return this.#skipped;
  }

  /** Blocks held as last seen by this process (`peg_limits_observer_held_blocks`). */
  get held(): number {
    return this.#held;
  }

  /** Reads what is remembered (the held blocks among it) once at start. */
  async open(): Promise<void> {
    this.#held = (await this.#options.memory.load()).held?.length ?? 0;
  }

  /** Takes one `/new_block` payload, after every one before it. */
  newBlock(body: unknown, remote: string | undefined): Promise<HttpResponse> {
    return this.#serially(() => this.#newBlock(body, remote));
  }

  /** An operator's request on the held blocks (`/admin/held`), `by` the operator's name. */
  heldBlocks(op: HeldOp, by: string, authorization: string): Promise<HttpResponse> {
    if (op === 'list') return this.#list();
    return this.#serially(() =>
      op === 'drop' ? this.#drop(by) : this.#release(by, authorization),
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
      tip: windowOf(this.#service.state)?.tip ?? null,
      keepBurnBlocks: this.#options.keepBurnBlocks,
      token: this.#token,
      parentSupply,
      supplyFromRpc: this.#options.rpc !== undefined,
    });
  }

  // ---- a block ------------------------------------------------------------------------

  async #newBlock(body: unknown, remote: string | undefined): Promise<HttpResponse> {
    const memory = await this.#options.memory.load();
    this.#held = memory.held?.length ?? 0;
    let observed = this.#observe(memory, body, undefined);
    if (observed.kind === 'known') return ok({ ok: true, known: true });
    if (observed.kind === 'unusable') {
      this.#skip(`a payload: ${observed.reason}`);
      return ok({ ok: true, skipped: observed.reason });
    }
    if (memory.held !== undefined && memory.held.length > 0)
      return this.#holdToo(memory, observed.block, body);
    const at = observed.block.hash;
    let prefix: LimitsEvent[] = [];
    const rpc = this.#options.rpc;
    if (observed.startsChain || (rpc !== undefined && this.#historyIncomplete())) {
      const started = await this.#startFromNode(
        observed.block,
        parentBurnOf(body, observed.block),
        remote,
        false,
      );
      if (started !== undefined && 'response' in started)
        return isBoundRefusal(started.response)
          ? this.#refusedByBounds(memory, observed, body, started.response, remote)
          : started.response;
      if (started !== undefined)
        observed = this.#observe(memory, body, observed.startsChain ? started.supply : undefined);
      else if (observed.startsChain) {
        const first = memory.blocks.length === 0;
        if (first && this.#options.historyComplete === true)
          observed = this.#observe(memory, body, 0n);
        else prefix = this.#lateStart(observed.block, first);
      }
    }
    if (observed.kind !== 'block') return ok({ ok: true });
    const prepared = await this.#prepare(observed);
    const events = prefix.length === 0 ? prepared.events : mergeStart(prefix, prepared.events);
    if (events.length > 0) {
      const response = await this.#apply(events, `stacks-block:${at}`, remote);
      if (isBoundRefusal(response))
        return this.#refusedByBounds(memory, prepared, body, response, remote);
      if (response.status !== 200) return response;
    }
    await this.#options.memory.save(prepared.memory);
    if (prepared.forkedAt !== undefined)
      this.#tell.logLine?.(
        `stacks observer: block ${at} (burn height ${prepared.block.burnHeight}) forks the chain from burn height ${prepared.forkedAt}`,
      );
    return ok({ ok: true, events: events.length });
  }

  // The supply as of the block and the rejections it carries checked against the node.
  async #prepare(observed: Block): Promise<Block> {
    let block = await this.#verifyRejections(observed);
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

  // Applies events as the operator stacks-node (or, to pass the chain bounds, the given
  // credentials with the override); an event the state cannot take (a rejection of a
  // withdrawal it does not hold, a request it holds with another payload) is dropped and
  // counted, and the rest applied.
  async #apply(
    events: ReadonlyArray<LimitsEvent>,
    requestId: string,
    remote: string | undefined,
    authorization = `Bearer ${this.#credentials.token}`,
    override = false,
  ): Promise<HttpResponse> {
    let batch = events;
    for (;;) {
      const response = await this.#service.handle({
        method: 'POST',
        path: '/admin/events',
        headers: {
          authorization,
          'content-type': 'application/json',
          'peg-limits-request-id': requestId.slice(0, 128),
          ...(override ? { 'peg-limits-override': 'chain-bounds' } : {}),
        },
        body: encodeJson(batch),
        remote,
      });
      if (response.status === 200) return response;
      const p = JSON.parse(response.body) as { code?: string; path?: string; detail?: string };
      const index = /^\[(\d+)\]/.exec(p.path ?? '')?.[1];
      const event = index === undefined ? undefined : batch[Number(index)];
      const droppable =
        (response.status === 400 || response.status === 409) &&
        p.code !== 'chain_bound_exceeded' &&
        (event?.type === 'withdrawalRequested' ||
          event?.type === 'withdrawalRejected' ||
          event?.type === 'withdrawalRejectionUndone');
      if (!droppable) return response;
      this.#skip(`event ${index} of ${requestId} (${p.code}): ${p.detail ?? ''}`);
      batch = batch.filter((_, i) => i !== Number(index));
      if (batch.length === 0) return ok({ ok: true });
    }
  }

  // ---- a start ------------------------------------------------------------------------

  // Whether some heights of the retained history were never reported (a late start).
  #historyIncomplete(): boolean {
    const s = this.#service.state;
    if (s.completeFrom === null) return false;
    const tip = windowOf(s)?.tip ?? null;
    return tip === null || s.completeFrom > Math.max(0, tip - s.historyBlocks + 1);
  }

  // Blocks before this one were never seen: the history is complete from the next burn
  // height only (others at this one may have come before).
  #lateStart(block: RememberedBlock, first: boolean): LimitsEvent[] {
    const tip = windowOf(this.#service.state)?.tip ?? null;
    if (this.#options.rpc === undefined)
      this.#warn(
        `stacks observer: block ${block.hash} ${first ? 'is the first one seen' : 'follows a gap'}, and without --stacks-rpc what came before it is unknown: the window is incomplete (no room reported, withdrawals refused) until it holds only burn heights from ${block.burnHeight + 1}`,
      );
    return [
      ...(tip === null || block.burnHeight > tip
        ? [{ type: 'blockConnected', height: block.burnHeight } as const]
        : []),
      { type: 'historyCompleteFrom', height: block.burnHeight + 1 },
    ];
  }

  // Starts the limits from the node's state as of the block before `block` (its parent), one
  // batch on the trail; the supply as of the parent, or undefined when it failed (then the
  // history stays incomplete, and a later block tries again, no sooner than the retry time).
  // `confirmed`: the node confirmed a jump past the chain bounds, which the batch passes.
  async #startFromNode(
    block: RememberedBlock,
    parentBurnHeight: number,
    remote: string | undefined,
    confirmed: boolean,
  ): Promise<{ supply: bigint } | { response: HttpResponse } | undefined> {
    const rpc = this.#options.rpc;
    if (rpc === undefined) return undefined;
    const retry = this.#options.startRetryMs ?? 10_000;
    if (!confirmed && this.#startFailedAt !== 0 && Date.now() - this.#startFailedAt < retry)
      return undefined;
    const began = Date.now();
    const callsBefore = rpc.calls;
    let read: { requests: RegistryRequest[]; supply: bigint };
    try {
      read = await readNodeState(rpc, {
        tip: block.parent,
        from: Math.max(0, block.burnHeight - this.#service.state.historyBlocks + 1),
        tipBurnHeight: parentBurnHeight,
      });
    } catch (e) {
      this.#startFailedAt = Date.now();
      this.#warn(
        `stacks observer: could not start from the node's state as of block ${block.parent} (${(e as Error).message}); the window stays incomplete (no room reported, withdrawals refused) until a start succeeds, tried again at a later block`,
      );
      return undefined;
    }
    this.#startFailedAt = 0;
    const readMs = Date.now() - began;
    const events = startBatch({
      tip: windowOf(this.#service.state)?.tip ?? null,
      burnHeight: block.burnHeight,
      historyBlocks: this.#service.state.historyBlocks,
      requests: read.requests,
      supply: read.supply,
    });
    const confirmedToken = this.#credentials.confirmedToken;
    const response =
      confirmed && confirmedToken !== undefined
        ? await this.#apply(
            events,
            `stacks-start:${block.parent}`,
            remote,
            `Bearer ${confirmedToken}`,
            true,
          )
        : await this.#apply(events, `stacks-start:${block.parent}`, remote);
    if (response.status !== 200) return { response };
    this.#tell.logLine?.(
      `stacks observer: started from the node's state as of block ${block.parent} (burn height ${block.burnHeight}): ${read.requests.length} withdrawal request(s) in the history, supply ${read.supply}, ${rpc.calls - callsBefore} RPC calls in ${readMs} ms, applied in ${Date.now() - began - readMs} ms`,
    );
    return { supply: read.supply };
  }

  // ---- held blocks --------------------------------------------------------------------

  // The chain bounds refused the block's batch. A jump the node itself confirms (its burn
  // height at or past the block's, the block known to it) is no forgery: the state is read
  // again from the node as at a start, and the block applied on it. Anything else is held.
  async #refusedByBounds(
    memory: BlockMemory,
    observed: Block,
    body: unknown,
    refusal: HttpResponse,
    remote: string | undefined,
  ): Promise<HttpResponse> {
    const reason =
      (JSON.parse(refusal.body) as { detail?: string }).detail ?? 'past the chain bounds';
    if (await this.#confirmedByNode(observed.block)) {
      const started = await this.#startFromNode(
        observed.block,
        parentBurnOf(body, observed.block),
        remote,
        true,
      );
      if (started !== undefined && !('response' in started)) {
        const again = this.#observe({ ...memory, blocks: [], head: '' }, body, started.supply);
        if (again.kind === 'block') {
          const prepared = await this.#prepare(again);
          const response = await this.#apply(
            prepared.events,
            `stacks-block:${prepared.block.hash}`,
            remote,
          );
          if (response.status === 200) {
            await this.#options.memory.save(prepared.memory);
            this.#tell.logLine?.(
              `stacks observer: block ${prepared.block.hash} jumps past the chain bounds (${reason}); the node confirms it, so the state was read again from the node`,
            );
            return ok({ ok: true, confirmed: true });
          }
          if (!isBoundRefusal(response)) return response;
        }
      }
    }
    const held: HeldBlock = {
      hash: observed.block.hash,
      height: observed.block.height,
      burnHeight: observed.block.burnHeight,
      reason,
      at: new Date().toISOString(),
      payload: payloadToKeep(body, this.#options.registry, this.#token),
    };
    await this.#options.memory.save({ ...memory, held: [held] });
    this.#held = 1;
    this.#warn(
      `stacks observer: block ${held.hash} (burn height ${held.burnHeight}) is held: ${reason}. Nothing moves until an operator holding chain and limits releases it (POST /admin/held/release) or drops it (DELETE /admin/held); the blocks after it are held too`,
    );
    this.#tell.notify?.({
      type: 'blocksHeld',
      block: held.hash,
      burnHeight: held.burnHeight,
      reason,
    });
    return ok({ ok: true, held: true });
  }

  async #confirmedByNode(block: RememberedBlock): Promise<boolean> {
    const rpc = this.#options.rpc;
    if (rpc === undefined || this.#credentials.confirmedToken === undefined) return false;
    try {
      const info = await rpc.info();
      if (info.burnBlockHeight < block.burnHeight) return false;
      // The node knows the block: it answers as of it.
      await rpc.totalSupply(block.hash);
      return true;
    } catch (e) {
      this.#warn(
        `stacks observer: the node did not confirm block ${block.hash}: ${(e as Error).message}`,
      );
      return false;
    }
  }

  // While blocks are held, every block after them is held too, in order.
  async #holdToo(
    memory: BlockMemory,
    block: RememberedBlock,
    body: unknown,
  ): Promise<HttpResponse> {
    const held = memory.held ?? [];
    if (held.some((h) => h.hash === block.hash)) return ok({ ok: true, known: true, held: true });
    const next: HeldBlock = {
      hash: block.hash,
      height: block.height,
      burnHeight: block.burnHeight,
      reason: `held after block ${held[0]?.hash}`,
      at: new Date().toISOString(),
      payload: payloadToKeep(body, this.#options.registry, this.#token),
    };
    await this.#options.memory.save({ ...memory, held: [...held, next] });
    this.#held = held.length + 1;
    this.#warn(
      `stacks observer: block ${block.hash} (burn height ${block.burnHeight}) is held behind ${held.length} held block(s)`,
    );
    return ok({ ok: true, held: true });
  }

  async #list(): Promise<HttpResponse> {
    const memory = await this.#options.memory.load();
    this.#held = memory.held?.length ?? 0;
    const blocks = (memory.held ?? []).map(({ payload: _p, ...h }) => h);
    return {
      status: 200,
      headers: { 'content-type': 'application/json', 'cache-control': 'no-store' },
      body: JSON.stringify({ blocks }),
    };
  }

  // Drops the first held block (the one the bounds refused: a forgery, say); the blocks
  // held behind it are then taken in order as if just posted: applied, or held again.
  async #drop(by: string): Promise<HttpResponse> {
    const memory = await this.#options.memory.load();
    const [first, ...rest] = memory.held ?? [];
    if (first === undefined) return ok({ dropped: 0, applied: 0, held: 0 });
    await this.#options.memory.save({ ...memory, held: [] });
    this.#held = 0;
    this.#warn(
      `stacks observer: ${by} dropped the held block ${first.hash} (burn height ${first.burnHeight}); ${rest.length} block(s) held behind it are taken again`,
    );
    this.#tell.notify?.({ type: 'heldBlockDropped', by, block: first.hash });
    let applied = 0;
    for (const h of rest) {
      const response = await this.#newBlock(h.payload, undefined);
      if (response.status !== 200) break;
      if (!(JSON.parse(response.body) as { held?: boolean }).held) applied++;
    }
    return ok({ dropped: 1, applied, held: this.#held });
  }

  // The held blocks apply in order, each as a batch of the releasing operator with the
  // override (so the trail names who let them through); one that fails stops the release.
  async #release(by: string, authorization: string): Promise<HttpResponse> {
    let memory = await this.#options.memory.load();
    let held = [...(memory.held ?? [])];
    let released = 0;
    while (held.length > 0) {
      const h = held[0]!;
      const rest = held.slice(1);
      const observed = this.#observe({ ...memory, held: [] }, h.payload, undefined);
      if (observed.kind === 'block') {
        const prepared = await this.#prepare(observed);
        if (prepared.events.length > 0) {
          const response = await this.#apply(
            prepared.events,
            `stacks-release:${h.hash}`,
            undefined,
            authorization,
            true,
          );
          if (response.status !== 200) {
            this.#held = held.length;
            return response.status === 403 || response.status === 401
              ? response
              : problem(
                  response.status,
                  'release_stopped',
                  `block ${h.hash} did not apply (${released} released before it): ${(JSON.parse(response.body) as { detail?: string }).detail ?? response.status}`,
                );
          }
        }
        memory = { ...prepared.memory, held: rest };
      } else memory = { ...memory, held: rest };
      await this.#options.memory.save(memory);
      held = rest;
      released++;
    }
    this.#held = 0;
    this.#tell.logLine?.(`stacks observer: ${by} released ${released} held block(s)`);
    this.#tell.notify?.({ type: 'heldBlocksReleased', by, blocks: released });
    return ok({ released, tip: windowOf(this.#service.state)?.tip ?? null });
  }
}
