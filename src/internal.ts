/**
 * The plumbing the adapters share and embedders do not call: body readers, admission, the
 * route table, the batch codec, the serial queue, the dashboard's page.
 *
 * Built as an entry of its own (`dist/internal.js`, `dist/internal.cjs`) that the package's
 * `exports` do not list, so `peg-limits/server` and the command load the one copy of the core
 * that `peg-limits` loads, while a consumer of the package cannot import it. Nothing here is
 * part of the public API: it may change in any release.
 * @internal
 * @packageDocumentation
 */
export { CHANGE_EVENT_TYPES } from './core/changes.js';
export { located } from './core/errors.js';
export { isTokenHash, MIN_TOKEN_LENGTH } from './core/keys.js';
export { CAP_FIELDS } from './core/limits.js';
export { isScope } from './core/scopes.js';
export { type SnapshotParts, snapshotParts } from './core/snapshot.js';
export { snapshotAmounts } from './core/snapshot-json.js';
export {
  type BodyCollector,
  bodyCollector,
  declaredTooLarge,
  payloadTooLarge,
  readBody,
} from './http/body.js';
export { decodeBatch, encodeBatch } from './http/codec.js';
export { DASHBOARD_HTML } from './http/dashboard.js';
export {
  admitRequest,
  MAX_EVENTS_BODY,
  MAX_THROTTLE_BODY,
  problem,
  type RequestAdmission,
} from './http/handler.js';
export type { PathMatch, Route, RouteParams } from './http/messages.js';
export { ADMIN_OPERATOR, validateOperators } from './http/operators.js';
export { matchPath, ROUTES, routeFor } from './http/routes.js';
export { type SerialQueue, serialQueue } from './http/serial-queue.js';
export { isChange, MAX_PERSIST_ATTEMPTS, readinessOf } from './http/service.js';
export {
  type BlockMemory,
  type ClarityValue,
  type DecodeClarity,
  EMPTY_MEMORY,
  type HeldBlock,
  type Observed,
  type ObserveOptions,
  observeBlock,
  payloadToKeep,
  type RememberedBlock,
  type SkippedEvent,
  withSupply,
} from './http/stacks-blocks.js';
export {
  NodeAnswerError,
  okUintOfClarity,
  type RegistryRequest,
  requestOfClarity,
  startBatch,
  uintOfClarity,
} from './http/stacks-state.js';
