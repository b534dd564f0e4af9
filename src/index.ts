/**
 * peg-limits: the limits of a token pegged one-to-one to a base currency.
 *
 * Everything here is pure and browser-safe: no `node:` imports.
 * @packageDocumentation
 */
export { type Amount, formatAmount, MAX_AMOUNT, MIN_AMOUNT, parseAmount } from './core/amount.js';
export { type ChainBounds, checkChainBounds, DEFAULT_CHAIN_BOUNDS } from './core/bounds.js';
export {
  CHANGE_EVENT_TYPES,
  checkLooseningPolicy,
  type LooseningPolicy,
  looseningWaits,
  NO_WAITING,
} from './core/changes.js';
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
} from './core/checks.js';
export { LimitsError, type LimitsErrorCode, type Result } from './core/errors.js';
export {
  generateOperatorToken,
  generateThrottleSecret,
  hashOperatorToken,
  hashThrottleSecret,
  isTokenHash,
  MIN_TOKEN_LENGTH,
} from './core/keys.js';
export type { Caps, CapsInput, LimitsConfig, ResolvedCaps } from './core/limits.js';
export {
  type LoosenedField,
  type Loosening,
  loosenings,
  loosens,
} from './core/loosening.js';
export { isScope, SCOPES, type Scope, scopeOf, scopesOf } from './core/scopes.js';
export {
  SNAPSHOT_FORMAT,
  SNAPSHOT_VERSION,
  type Snapshot,
  type SnapshotParts,
  type SnapshotResult,
  snapshotOf,
  snapshotParts,
  stateFromSnapshot,
} from './core/snapshot.js';
export { type StartThrottleResult, startThrottle } from './core/start.js';
export {
  type ApplyResult,
  apply,
  applyAll,
  createLimitsState,
  DEFAULT_HISTORY_BLOCKS,
  DEFAULT_THROTTLE_PROFILE,
  type Height,
  type LimitsEvent,
  type LimitsOptions,
  type LimitsState,
  type PendingChange,
  type SettledChange,
  type ThrottleKey,
  type ThrottleProfile,
  type Withdrawal,
} from './core/state.js';
export {
  type AccountLimits,
  type EffectiveLimits,
  effectiveLimits,
  getAccountLimits,
  getLimits,
  type HeightSum,
  type Limits,
  pendingChanges,
  type WindowView,
  windowOf,
} from './core/views.js';
export {
  type BodyCollector,
  bodyCollector,
  declaredTooLarge,
  payloadTooLarge,
  readBody,
} from './http/body.js';
export {
  type CheckAnswer,
  type ClientResult,
  createLimitsClient,
  type LimitsClient,
  type LimitsClientOptions,
  type Problem,
} from './http/client.js';
export { eventFromJson, eventsFromJson } from './http/codec.js';
export { DASHBOARD_HTML } from './http/dashboard.js';
export {
  admitRequest,
  type HandleOptions,
  type HandleResult,
  type HttpErrorCode,
  type HttpRequest,
  type HttpResponse,
  handleRequest,
  MAX_EVENTS_BODY,
  MAX_THROTTLE_BODY,
  problem,
  type Readiness,
  type RequestAdmission,
} from './http/handler.js';
export { decodeJson, encodeJson, tryDecodeJson } from './http/json.js';
export {
  type Appended,
  type AuditActor,
  type BatchMeta,
  decodeBatch,
  type EventLog,
  encodeBatch,
  LogBusy,
  LogConflict,
  LogUnavailable,
  type SerialQueue,
  serialQueue,
  type WriteLockFigures,
} from './http/log.js';
export type { PathMatch, Route, RouteParams } from './http/messages.js';
export { openApiDocument } from './http/openapi.js';
export { ADMIN_OPERATOR, type Operator, validateOperators } from './http/operators.js';
export { matchPath, ROUTES, routeFor } from './http/routes.js';
export {
  createFetchHandler,
  createService,
  type FetchHandler,
  isChange,
  MAX_PERSIST_ATTEMPTS,
  type Persisted,
  type Refresh,
  readinessOf,
  type Service,
  type ServiceOptions,
} from './http/service.js';
