/**
 * The queue that orders a log's work and the service's: one task at a time, in order.
 */

/** Runs tasks one at a time, in the order they were queued; a failed task does not stop the next. */
interface SerialQueue {
  /** Queues `task` after every task queued before it; resolves or rejects as it does. */
  run<T>(task: () => T | Promise<T>): Promise<T>;
  /** Resolves once every task queued so far has finished. */
  idle(): Promise<void>;
}

/** A new, empty {@link SerialQueue}. */
export function serialQueue(): SerialQueue {
  let tail: Promise<unknown> = Promise.resolve();
  return {
    run(task) {
      const run = tail.then(task);
      tail = run.catch(() => undefined);
      return run;
    },
    idle: () => tail.then(() => undefined),
  };
}
