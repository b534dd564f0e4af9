/**
 * peg-limits: the limits of a token pegged one-to-one to a base currency.
 *
 * Everything here is pure and browser-safe: no `node:` imports.
 * @packageDocumentation
 */

export {
  type Answered,
  type CheckAnswer,
  createLimitsClient,
  type LimitsClient,
  type LimitsClientOptions,
  type Problem,
} from './client/limits-client.js';
export { type Amount, formatAmount, MAX_AMOUNT, MIN_AMOUNT, parseAmount } from './core/amount.js';
export { type ChainBounds, checkChainBounds, DEFAULT_CHAIN_BOUNDS } from './core/bounds.js';
export { type ChainView, chainView } from './core/chain-view.js';
export {
  type Admission,
  admitDeposits,
  admitWithdrawals,
  checkDeposit,
  checkWithdrawal,
  type TransferRequest,
  type Verdict,
  type VerdictReason,
  whenAvailable,
  whenMintable,
} from './core/checks.js';
export { LimitsError, type LimitsErrorCode, PegLimitsError, type Result } from './core/errors.js';
export {
  DEFAULT_RESERVES_MAX_AGE,
  type PegFailure,
  type PegIntegrity,
  type PegIntegrityState,
  pegIntegrity,
} from './core/integrity.js';
export {
  generateOperatorToken,
  generateThrottleSecret,
  hashOperatorToken,
  hashThrottleSecret,
} from './core/keys.js';
export type { Caps, CapsInput, LimitsConfig, ResolvedCaps } from './core/limits.js';
export {
  checkLooseningPolicy,
  type LoosenedField,
  type Loosening,
  type LooseningPolicy,
  looseningPolicyFromJson,
  loosenings,
  looseningWaits,
  loosens,
  NO_WAITING,
} from './core/loosening.js';
export {
  type BatchAuthor,
  type BatchOutcome,
  type BatchRules,
  decideBatch,
  type OperatorBatch,
} from './core/operator-batch.js';
export { SCOPES, type Scope, scopeOf, scopesOf } from './core/scopes.js';
export {
  type AmountText,
  SNAPSHOT_FORMAT,
  SNAPSHOT_VERSION,
  type Snapshot,
  type SnapshotCaps,
  type SnapshotChange,
  type SnapshotMint,
  type SnapshotObservation,
  type SnapshotProfile,
  type SnapshotWithdrawal,
  snapshotOf,
} from './core/snapshot.js';
export { stateFromSnapshot } from './core/snapshot-reading.js';
export { startThrottle, type ThrottleStarted } from './core/start-throttle.js';
export {
  type Applied,
  apply,
  applyAll,
  createLimitsState,
  DEFAULT_HISTORY_BLOCKS,
  DEFAULT_THROTTLE_PROFILE,
  type Height,
  type IntegrityPolicy,
  type LimitsEvent,
  type LimitsOptions,
  type LimitsState,
  type PendingChange,
  type ReservesReading,
  type SettledChange,
  type ThrottleKey,
  type ThrottleProfile,
  type Tripped,
  type Withdrawal,
} from './core/state.js';
export {
  type AccountLimits,
  type EffectiveLimits,
  effectiveLimits,
  getAccountLimits,
  getLimits,
  type Limits,
  pendingChanges,
} from './core/views.js';
export {
  type HeightSum,
  type MintWindowView,
  mintWindowOf,
  type WindowView,
  windowOf,
} from './core/window-views.js';
export { eventFromJson, eventsFromJson } from './http/codec.js';
export { openApiDocument } from './http/documents/openapi.js';
export {
  type Appended,
  type AuditActor,
  type BatchMeta,
  type EventLog,
  LogBusy,
  LogConflict,
  LogUnavailable,
  type WriteLockFigures,
} from './http/event-log.js';
export { createFetchHandler, type FetchHandler } from './http/fetch-adapter.js';
export {
  type HandleOptions,
  type HandleResult,
  type HttpErrorCode,
  type HttpRequest,
  type HttpResponse,
  handleRequest,
  type Notice,
  type Readiness,
} from './http/handler.js';
export { decodeJson, encodeJson, tryDecodeJson } from './http/json.js';
export type { Operator } from './http/operators.js';
export {
  createService,
  type Persisted,
  type Refresh,
  type Service,
  type ServiceBatch,
  type ServiceOptions,
} from './http/service.js';
