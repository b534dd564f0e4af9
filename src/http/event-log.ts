/**
 * The event log a service keeps its accepted changes in (docs/operating.md, "Reliability", and docs/replicas.md): the contract the
 * data folder and the log on PostgreSQL both keep. Browser-safe: the logs themselves are
 * Node adapters in `peg-limits/server`; the batch text they share is `codec.ts`'s, and the
 * queue that orders their work and the service's is `serial-queue.ts`.
 *
 * The rules every log keeps (`test/server/event-log.test.ts` checks them on both):
 * - A position counts batches: the log's first state is at its snapshot's position, and
 *   each appended batch is the next position. `positionOf` knows every state the log read,
 *   caught up to or appended.
 * - `append(events, next, base)` takes a batch computed on `base`. When `base` is not the
 *   newest state of the log (another writer appended first), it rejects with
 *   {@link LogConflict} carrying the newest state, and nothing is written. While the log
 *   cannot take writes it rejects with {@link LogUnavailable}, and nothing is written. Any
 *   other rejection means the batch was not written either.
 * - An append resolves once the batch holds its position; `durable` resolves once it
 *   survives a crash (rejects when it never will). A batch is answered only then.
 * - `catchUp(current)` reads what other writers appended after `current` and resolves with
 *   the newer state, or `undefined` when there is nothing newer; for a `current` whose
 *   write failed, it resolves with the log's newest durable state. A log with other
 *   writers takes its write lock here ({@link LogBusy} when it cannot in time) and holds it
 *   until the appends that follow are committed, so they cannot conflict.
 * - `follow(fn)` is told of each newer state other writers' batches make, in order.
 * - `snapshot()` writes the newest state as a snapshot; reopening the log gives the same
 *   state and position whether it starts from the snapshot or the batches.
 * - `close()` finishes what was accepted, then releases the log; reopening it gives every
 *   batch that was durable.
 */
import { PegLimitsError } from '../core/errors.js';
import type { LimitsEvent, LimitsState } from '../core/state.js';

/** Who made a batch, as its audit record names them. */
export type AuditActor =
  | { readonly kind: 'operator'; readonly name: string }
  | { readonly kind: 'throttleKey'; readonly name: string }
  | { readonly kind: 'system' };

/** The audit trail's actor for the operator `name`. */
export function operatorActor(name: string): AuditActor {
  return { kind: 'operator', name };
}

/** What a log records of a batch besides its events: who, which request, from where. */
export interface BatchMeta {
  readonly actor: AuditActor;
  /** The request's `Peg-Limits-Request-Id`, or one made up. */
  readonly requestId: string;
  /** The client's address, when there is one. */
  readonly remote: string | null;
}

/** What an append hands back: the answer may be sent once `durable` resolves. */
export interface Appended {
  /** The batch's position in the log. */
  readonly position: number;
  /** Resolves once the batch survives a crash; rejects when it never will. */
  readonly durable: Promise<void>;
}

/** An event log: the data folder, or the log on PostgreSQL that replicas share. */
export interface EventLog {
  /** The newest state the log holds (what it opened with, appended or caught up to). */
  readonly state: LimitsState;
  /** The newest position (the number of batches the log holds). */
  readonly position: number;
  /** Whether the log can take a write now; `unavailable` says why not. */
  readonly writable: boolean;
  /** Why the log cannot take writes now, or `undefined` when it can. */
  readonly unavailable: string | undefined;
  /** Whether it is reading what other writers appended while it was away (not ready yet). */
  readonly catchingUp: boolean;
  /** The position of a state this log read, caught up to or appended, if it did. */
  positionOf(state: LimitsState): number | undefined;
  /**
   * Appends one batch computed on `base`, making `next`.
   *
   * @throws LogConflict when `base` is not the newest state (nothing written)
   * @throws LogUnavailable while the log cannot take writes (nothing written)
   */
  append(
    events: ReadonlyArray<LimitsEvent>,
    next: LimitsState,
    base: LimitsState,
    meta?: BatchMeta,
  ): Promise<Appended>;
  /**
   * For a log that keeps an audit trail: up to `limit` records after position `after`, in
   * order, each the exact text of its line. Absent for a log without one.
   */
  readonly audit?: ((after: number, limit: number) => Promise<ReadonlyArray<string>>) | undefined;
  /** Resolves with the newer state other writers made after `current`, if any. */
  catchUp(current: LimitsState): Promise<LimitsState | undefined>;
  /** Calls `fn` with each newer state other writers' batches make; returns a stop function. */
  follow(fn: (state: LimitsState, position: number) => void): () => void;
  /** Writes the newest state as a snapshot. */
  snapshot(): Promise<void>;
  /** Finishes what was accepted and releases the log. */
  close(): Promise<void>;
  /**
   * For a log whose writers share a write lock (replicas on PostgreSQL): what this writer
   * has spent on it since it opened. Absent for a log with one writer.
   */
  readonly writeLock?: WriteLockFigures | undefined;
  /**
   * For a log whose writers tell each other of their commits through the database (replicas
   * on PostgreSQL): the share (0 to 1) of the database's queue of notifications in use, or
   * undefined while it cannot be read. Absent for a log with one writer.
   */
  readonly notificationQueue?: (() => Promise<number | undefined>) | undefined;
}

/** What one writer has spent on a shared write lock since its log opened (running totals). */
export interface WriteLockFigures {
  /** Write transactions this writer opened (each took the lock, or tried to). */
  readonly transactions: number;
  /** Seconds spent taking the lock and reading the rows committed before it: one round trip, mostly waiting while others hold it. */
  readonly waitedSeconds: number;
  /** Seconds this writer held the lock: from the lock's answer to the commit's. */
  readonly heldSeconds: number;
  /** Times the lock was not free within the wait allowed (each change refused, `LogBusy`). */
  readonly timeouts: number;
}

/**
 * Thrown (rejected) by an append computed on a state that is no longer the newest (another
 * writer was first): the service computes the request again on `state`.
 */
export class LogConflict extends PegLimitsError {
  override readonly name = 'LogConflict';
  /** The newer state to compute the request on. */
  readonly state: LimitsState;
  constructor(state: LimitsState, message = 'another writer was first') {
    super('log_conflict', message);
    this.state = state;
  }
}

/**
 * Thrown (rejected) by a catch-up or an append that waited too long for other writers to
 * release the log's write lock: nothing was written, and the service answers 503
 * `write_conflict` (try again).
 */
export class LogBusy extends PegLimitsError {
  override readonly name = 'LogBusy';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('log_busy', message, options);
  }
}

/**
 * Thrown (rejected) by an append while the log cannot take writes (a database out of
 * reach): nothing was written, and the service answers 503 `store_unavailable`.
 */
export class LogUnavailable extends PegLimitsError {
  override readonly name = 'LogUnavailable';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('log_unavailable', message, options);
  }
}
