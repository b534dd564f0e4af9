/**
 * peg-limits: the limits of a token pegged one-to-one to a base currency.
 *
 * Everything here is pure and browser-safe: no `node:` imports.
 * @packageDocumentation
 */
export { type Amount, formatAmount, MAX_AMOUNT, MIN_AMOUNT, parseAmount } from './amount.js';
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
} from './checks.js';
export { eventFromJson, eventsFromJson } from './codec.js';
export { LimitsError, type LimitsErrorCode, type Result } from './errors.js';
export {
  type HandleOptions,
  type HandleResult,
  type HttpErrorCode,
  type HttpRequest,
  type HttpResponse,
  handleRequest,
  MAX_EVENTS_BODY,
  MAX_THROTTLE_BODY,
} from './http.js';
export { decodeJson, encodeJson, tryDecodeJson } from './json.js';
export { generateThrottleSecret, hashThrottleSecret } from './keys.js';
export type { Caps, CapsInput, LimitsConfig, ResolvedCaps } from './limits.js';
export { openApiDocument } from './openapi.js';
export type { PMap } from './pmap.js';
export {
  createFetchHandler,
  createService,
  type FetchHandler,
  type Service,
  type ServiceOptions,
} from './service.js';
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
  type ThrottleKey,
  type ThrottleProfile,
  type Withdrawal,
} from './state.js';
export { type StartThrottleResult, startThrottle } from './throttle.js';
export {
  type AccountLimits,
  type EffectiveLimits,
  effectiveLimits,
  getAccountLimits,
  getLimits,
  type Limits,
} from './views.js';
