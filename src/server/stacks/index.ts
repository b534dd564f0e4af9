/**
 * The Stacks node's side of the server: the event observer's listener and its limits, what
 * it does with each block, the start from the node's own state read over its RPC, and what
 * it remembers of the blocks (in the data folder or on PostgreSQL). The meaning of the
 * blocks themselves is pure and lives in `src/stacks/`. Node-only.
 * @packageDocumentation
 */

export type { FeedTell } from './feed-parts.js';
export { feedRoutes, heldNotes } from './feed-routes.js';
export {
  dataBlockMemory,
  isPrivateAddress,
  loadClarityCodec,
  MAINNET_REGISTRY,
  pgBlockMemory,
  STACKS_NODE_CONFIRMED_OPERATOR,
  STACKS_NODE_OPERATOR,
  type StacksObserver,
  type StacksObserverOptions,
  startStacksObserver,
} from './observer.js';
export { type ClarityCodec, StacksRpc } from './rpc-client.js';
