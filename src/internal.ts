/**
 * The plumbing the adapters share and embedders do not call: body limits, admission, route
 * matching, the batch codec, the serial queue, the Stacks mapping. It exports only what the
 * adapters import (a test holds it to that); tests import the modules themselves.
 *
 * Built as an entry of its own (`dist/internal.js`, `dist/internal.cjs`) that the package's
 * `exports` do not list, so `peg-limits/server` and the command load the one copy of the core
 * that `peg-limits` loads, while a consumer of the package cannot import it. Nothing here is
 * part of the public API: it may change in any release.
 * @internal
 * @packageDocumentation
 */
export { located } from './core/errors.js';
export { MIN_TOKEN_LENGTH } from './core/keys.js';
export { CAP_FIELDS } from './core/limits.js';
export { loosenedBy } from './core/loosening.js';
export type { BatchRefused } from './core/operator-batch.js';
export { holds } from './core/scopes.js';
export { snapshotParts } from './core/snapshot.js';
export { MAX_BLOCK_BODY, readText, scopeDenied } from './http/answers.js';
export { batchAnswer, refusalDetail, refusalStatus } from './http/batches.js';
export { bodyCollector, declaredTooLarge, payloadTooLarge } from './http/body.js';
export { decodeBatch, encodeBatch } from './http/codec.js';
export { admitRequest, problem, routePatternOf } from './http/handler.js';
export type { PathMatch, Route } from './http/messages.js';
export { ADMIN_OPERATOR, operatorsFromJson } from './http/operators.js';
export { routeFor } from './http/route-match.js';
export { ROUTES } from './http/routes.js';
export { serialQueue } from './http/serial-queue.js';
export { handleOptionsOf, isChange, readinessOf } from './http/service.js';
export {
  type ClarityValue,
  type DecodeClarity,
  payloadToKeep,
  reversedHex,
  UNKNOWN_RECIPIENT,
} from './stacks/block-payload.js';
export {
  type BlockMemory,
  EMPTY_MEMORY,
  type HeldBlock,
  type Observed,
  observeBlock,
  type RememberedBlock,
  withKeys,
  withSupply,
} from './stacks/blocks.js';
export {
  aggregateKeyOfClarity,
  NodeAnswerError,
  okUintOfClarity,
  type RegistryRequest,
  requestOfClarity,
  startBatch,
  uintOfClarity,
} from './stacks/rpc-answers.js';
