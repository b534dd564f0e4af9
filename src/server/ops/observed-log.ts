/**
 * A log that tells an observer of each batch once it is durable: what metrics time and what
 * alerts are sent on. Only the appends of this process are seen (a replica alerts on the
 * changes it wrote, not on those it follows). Node-only.
 */
import type { Appended, EventLog, LimitsEvent, LimitsState } from 'peg-limits';

/** One durable batch, as an observer sees it. */
export interface DurableBatch {
  readonly events: ReadonlyArray<LimitsEvent>;
  readonly base: LimitsState;
  readonly next: LimitsState;
  readonly position: number;
  /** From the append to its durability: the write and the flush, or the commit. */
  readonly seconds: number;
}

/** `log`, telling `observe` of each of its batches once durable (never delaying it). */
export function observeAppends(log: EventLog, observe: (batch: DurableBatch) => void): EventLog {
  return {
    get state() {
      return log.state;
    },
    get position() {
      return log.position;
    },
    get writable() {
      return log.writable;
    },
    get unavailable() {
      return log.unavailable;
    },
    get catchingUp() {
      return log.catchingUp;
    },
    get writeLock() {
      return log.writeLock;
    },
    notificationQueue: log.notificationQueue,
    positionOf: (state) => log.positionOf(state),
    async append(events, next, base, meta): Promise<Appended> {
      const started = performance.now();
      const appended = await log.append(events, next, base, meta);
      appended.durable.then(
        () => {
          try {
            observe({
              events,
              base,
              next,
              position: appended.position,
              seconds: (performance.now() - started) / 1000,
            });
          } catch {
            // An observer's failure is its own: the batch is durable and answered.
          }
        },
        () => undefined,
      );
      return appended;
    },
    audit: log.audit,
    catchUp: (current) => log.catchUp(current),
    follow: (fn) => log.follow(fn),
    snapshot: () => log.snapshot(),
    close: () => log.close(),
  };
}
