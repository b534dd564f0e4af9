/**
 * The service's queue of changes: one computation at a time, in arrival order, on the
 * newest state (`written`); each persisted before it is answered, and shown to reads
 * (`visible`, only ever durable) once it and every change before it are durable. Concurrent
 * changes share a flush: the next is computed as soon as this one is written. Browser-safe.
 */
import type { LimitsEvent, LimitsState } from '../core/state.js';
import { type AuditActor, type BatchMeta, LogBusy, LogConflict } from './event-log.js';
import { serialQueue } from './serial-queue.js';

/**
 * What `ServiceOptions.refresh` is: called before each change is computed, with the state
 * the service would compute it on; resolves with a newer durable state (another writer's) to
 * compute it on instead, or `undefined` when there is none.
 */
export type Refresh = (current: LimitsState) => Promise<LimitsState | undefined>;

/** What `ServiceOptions.persist` may resolve with: written, durable later. */
export interface Persisted {
  /** Resolves once the events are durable (rejects when they never will be). */
  readonly durable: Promise<void>;
}

/** How the queue persists a change: the events, the state after them and before, the record's meta. */
type Persist = (
  events: ReadonlyArray<LimitsEvent>,
  next: LimitsState,
  base: LimitsState,
  meta: BatchMeta,
) => void | Promise<undefined | Persisted> | Promise<void>;

/**
 * One computation in the queue: the state after it, the events to record (none: nothing to
 * persist), who they are from, and what the caller gets.
 */
export interface Turn<T> {
  readonly state: LimitsState;
  readonly events: ReadonlyArray<LimitsEvent>;
  readonly actor: AuditActor | undefined;
  readonly value: T;
}

/** How many times a change is computed again after conflicts before it is refused (503). */
const MAX_PERSIST_ATTEMPTS = 32;

/** The queue of changes of one service. */
export class ChangeQueue {
  readonly #persist: Persist | undefined;
  readonly #refresh: Refresh | undefined;
  readonly #queue = serialQueue();
  readonly #watchers = new Set<(state: LimitsState) => void>();
  // What reads see: only ever durable.
  #visible: LimitsState;
  // What the next change is computed on: ahead of `visible` while a flush is under way.
  #written: LimitsState;
  // Resolves once every change accepted so far is durable (and shown); rejects once a flush
  // has failed, until the log hands over a durable state to go on from (`adopt`).
  #allDurable: Promise<void> = Promise.resolve();

  constructor(initial: LimitsState, persist: Persist | undefined, refresh: Refresh | undefined) {
    this.#visible = initial;
    this.#written = initial;
    this.#persist = persist;
    this.#refresh = refresh;
  }

  /** The state reads see. */
  get visible(): LimitsState {
    return this.#visible;
  }

  /** Calls `fn` with each new state reads see; returns a stop function. */
  watch(fn: (state: LimitsState) => void): () => void {
    this.#watchers.add(fn);
    return () => this.#watchers.delete(fn);
  }

  /**
   * Computes `compute` in its turn on the newest state and persists what it accepted, as
   * `requestId` from `remote`. Resolves with what the caller gets and what it must wait for
   * (the changes before it, and its own, durable); rejects when it could not be kept (the
   * log's error, or `LogBusy` when other writers were first too often).
   */
  run<T>(
    compute: (state: LimitsState) => Turn<T>,
    requestId: string,
    remote: string | null,
  ): Promise<{ value: T; wait: Promise<void> }> {
    return this.#queue.run(() => this.#change(compute, requestId, remote));
  }

  /**
   * Replaces the state with a newer durable one, in turn with the changes (see
   * `Service.replace`): taken only if `newer(current)` says so, when given.
   */
  replace(state: LimitsState, newer?: (current: LimitsState) => boolean): Promise<void> {
    return this.#queue
      .run(() => {
        if (newer === undefined || newer(this.#written)) this.#adopt(state);
      })
      .then(() => this.#allDurable);
  }

  async #change<T>(
    compute: (state: LimitsState) => Turn<T>,
    requestId: string,
    remote: string | null,
  ): Promise<{ value: T; wait: Promise<void> }> {
    try {
      // A log with a write lock takes it here and catches up under it: the change is then
      // computed on the newest state, and no other writer can append before it.
      const newer = await this.#refresh?.(this.#written);
      if (newer !== undefined) this.#adopt(newer);
    } catch (e) {
      if (e instanceof LogBusy) throw e;
      // Nothing newer could be read: the append below says whether the log takes writes.
    }
    for (let attempt = 1; ; attempt++) {
      const turn = compute(this.#written);
      // A refusal or a no-op computed on a state not yet durable waits for that state.
      if (turn.events.length === 0) return { value: turn.value, wait: this.#allDurable };
      let persisted: Persisted | undefined;
      try {
        const meta: BatchMeta = { actor: turn.actor ?? { kind: 'system' }, requestId, remote };
        persisted =
          (await this.#persist?.(turn.events, turn.state, this.#written, meta)) ?? undefined;
      } catch (e) {
        if (!(e instanceof LogConflict)) throw e;
        // Another writer was first: its rows are durable; compute the request again on them.
        this.#adopt(e.state);
        if (attempt >= MAX_PERSIST_ATTEMPTS)
          throw new LogBusy(`other writers were first ${attempt} times in a row; try again`);
        // Writers that keep colliding take turns: a short, growing, random pause.
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)));
        continue;
      }
      this.#written = turn.state;
      this.#allDurable = Promise.all([this.#allDurable, persisted?.durable]).then(() => {
        this.#show(turn.state);
      });
      return { value: turn.value, wait: this.#allDurable };
    }
  }

  // What reads see changes: tell the watchers (`GET /events`).
  #show(state: LimitsState): void {
    if (state === this.#visible) return;
    this.#visible = state;
    for (const fn of this.#watchers) {
      try {
        fn(state);
      } catch {
        // A watcher's failure is its own.
      }
    }
  }

  // `state` is durable (another writer's rows, or what the log holds after a write of this
  // service failed): what comes next is computed on it, and it is shown once the changes
  // before it are settled. A change that failed does not hold back the ones after it.
  #adopt(state: LimitsState): void {
    this.#written = state;
    this.#allDurable = this.#allDurable
      .catch(() => undefined)
      .then(() => {
        this.#show(state);
      });
  }
}
