/**
 * The server's side of the Stacks event observer (`--stacks-observer`): what the metrics
 * read of it, the routes its feed adds to the service's port, and what `GET /readyz` says
 * while it holds blocks. The feed applies its batches through the service's port as
 * operators of the process alone (`stacks-node`, `stacks-node-confirmed`). Node-only.
 */

import type { EventLog, Readiness, Service } from 'peg-limits';
import { type Route, readinessOf } from '../../internal.js';
import {
  type FeedTell,
  feedRoutes,
  heldNotes,
  type StacksObserver,
  type StacksObserverOptions,
  startStacksObserver,
} from '../stacks/index.js';

// What of the server's options the observer's wiring reads: the observer's options (off
// when undefined).
type ObserverOptions = { readonly stacksObserver?: StacksObserverOptions | undefined };

/** What the metrics read of the Stacks observer (nothing when it is off). */
export function observerSources(
  options: ObserverOptions,
  observer: () => StacksObserver | undefined,
) {
  if (options.stacksObserver === undefined) return {};
  return {
    observerSkipped: () => observer()?.skipped ?? 0,
    observerHeld: () => observer()?.held ?? 0,
    observerStartFailures: () => observer()?.startFailures ?? 0,
    observerRejectionsNotShown: () => observer()?.rejectionsNotShown ?? 0,
  };
}

/** The feed's routes on the service's port (404 without an observer, saying what serves them). */
export function observerRoutes(
  options: ObserverOptions,
  observer: () => StacksObserver | undefined,
): ReadonlyArray<Route> {
  return feedRoutes({ configured: options.stacksObserver !== undefined, observer });
}

/** `GET /readyz`: the log's readiness, with the blocks the observer holds. */
export function observerHealth(
  log: EventLog,
  observer: () => StacksObserver | undefined,
): () => Readiness {
  return () => heldNotes(readinessOf(log), observer()?.held ?? 0);
}

/**
 * Opens the observer's listener over the service when the server has one (undefined
 * otherwise); when it cannot, `undo` runs (the server's own listener closed) before the
 * error is thrown on.
 */
export async function openObserver(
  options: ObserverOptions,
  service: Service,
  tell: FeedTell,
  undo: () => Promise<void>,
): Promise<StacksObserver | undefined> {
  if (options.stacksObserver === undefined) return undefined;
  try {
    return await startStacksObserver(service, options.stacksObserver, tell);
  } catch (e) {
    await undo();
    throw e;
  }
}
