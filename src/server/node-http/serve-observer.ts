/**
 * The server's side of the Stacks event observer (`--stacks-observer`): what the metrics
 * read of it, the feed the service hands its blocks to, and the operators it acts as.
 * Node-only.
 */

import type { StacksFeed } from 'peg-limits';
import { problem } from '../../internal.js';
import {
  STACKS_NODE_CONFIRMED_OPERATOR,
  type StacksObserver,
  type StacksObserverOptions,
  stacksNodeOperator,
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

/** What the service hands the Stacks observer (nothing when it is off): its feed. */
export function observerHooks(
  options: ObserverOptions,
  observer: () => StacksObserver | undefined,
) {
  if (options.stacksObserver === undefined) return {};
  return { stacksFeed: stacksFeedOf(observer) };
}

// The Stacks observer's feed, once it is open: its held blocks, and the blocks posted to the
// service's own port.
function stacksFeedOf(observer: () => StacksObserver | undefined): StacksFeed {
  const notOpen = () =>
    Promise.resolve(problem(503, 'store_unavailable', 'the Stacks observer is not open yet'));
  return {
    count: () => observer()?.held ?? 0,
    handle: (op, by, authorization) => observer()?.heldBlocks(op, by, authorization) ?? notOpen(),
    newBlock: (payload, authorization, remote) =>
      observer()?.newBlock(payload, authorization, remote) ?? notOpen(),
  };
}

/**
 * The observer acts as an operator of its own, with the chain scope alone; with the node's
 * RPC, a jump it confirms passes the chain bounds: an operator of the process alone holds
 * chain and limits for that.
 */
export function observerOperators(options: ObserverOptions) {
  return {
    feeder: options.stacksObserver === undefined ? undefined : stacksNodeOperator(),
    confirmer:
      options.stacksObserver?.rpc === undefined
        ? undefined
        : stacksNodeOperator(STACKS_NODE_CONFIRMED_OPERATOR, ['chain', 'limits']),
  };
}
