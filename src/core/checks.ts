/**
 * Checks: may this withdrawal or deposit go through now (the README, "Checks"), a batch admitted in
 * order, and when a withdrawal would fit. A cap is inclusive: an amount equal to it passes.
 */
import { type Amount, isInt64, roomLeft } from './amount.js';
import { availableAt, incompleteFor, NOTHING_PENDING, type Pending } from './availability.js';
import { globalCapsInForce } from './caps-in-force.js';
import { describe, LimitsError } from './errors.js';
import { pegFailure } from './integrity.js';
import { isAccountName } from './limits.js';
import type { LimitsState } from './state.js';
import { accountPeggedTotal, resolvedCaps } from './views.js';
import { accountMintTree, accountTree, withdrawnIn } from './window.js';

/**
 * Why a request is refused. `invalid_amount` and `invalid_account` flag malformed requests;
 * `peg_unbacked` and `reserves_unknown` say that the limits fail closed on the peg's backing
 * (the breaker tripped; the reserves are not known); `window_incomplete` says that what a
 * window holds is unknown: it reaches below the height from which the history is complete,
 * or blocks are held past the chain bounds. A deposit's three reasons of the mint window come
 * after the others: `mint_window_incomplete` (what a mint window holds is unknown), then
 * `rolling_mint_cap_exceeded` and `account_rolling_mint_cap_exceeded`.
 */
export type VerdictReason =
  | 'above_per_withdrawal_cap'
  | 'window_incomplete'
  | 'rolling_cap_exceeded'
  | 'account_rolling_cap_exceeded'
  | 'below_minimum'
  | 'above_per_deposit_cap'
  | 'peg_cap_exceeded'
  | 'account_peg_cap_exceeded'
  | 'invalid_amount'
  | 'invalid_account'
  | 'peg_unbacked'
  | 'reserves_unknown'
  | 'mint_window_incomplete'
  | 'rolling_mint_cap_exceeded'
  | 'account_rolling_mint_cap_exceeded';

/**
 * A check's answer. When refused, `limit` is the bound the rule would have allowed: the
 * cap, the minimum, or for a window or peg cap the room left (never negative); `null` for a
 * malformed request and for `window_incomplete` (the room is unknown). `availableAt` says
 * when the request would pass: for a refusal by a window cap (`rolling_cap_exceeded`,
 * `account_rolling_cap_exceeded`), the {@link whenAvailable} height; for
 * `window_incomplete`, the tip at which the window becomes complete; `null` when there is no
 * such height (any other refusal, a window refusal that never passes, or blocks held: the
 * height is not known until the hold ends).
 */
export type Verdict =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly reason: VerdictReason;
      readonly limit: Amount | null;
      readonly availableAt: number | null;
    };

/** A withdrawal or deposit to check: who, and how much in the smallest unit. */
export interface TransferRequest {
  readonly account: string;
  readonly amount: Amount;
}

/** The outcome of a batch: the admitted requests and the refused ones with their reasons, in order. */
export interface Admission<R extends TransferRequest> {
  readonly admitted: ReadonlyArray<R>;
  readonly refused: ReadonlyArray<{
    readonly request: R;
    readonly reason: VerdictReason;
    readonly limit: Amount | null;
    /** For a window cap: when this request would pass after those admitted before it; else `null`. */
    readonly availableAt: number | null;
  }>;
}

const OK: Verdict = { ok: true };

function refuse(reason: VerdictReason, limit: Amount | null): Verdict {
  return { ok: false, reason, limit, availableAt: null };
}

function refuseWindow(reason: VerdictReason, limit: Amount, at: number | null): Verdict {
  return { ok: false, reason, limit, availableAt: at };
}

function malformed(request: unknown): Verdict | undefined {
  if (typeof request !== 'object' || request === null) return refuse('invalid_account', null);
  const { account, amount } = request as Record<string, unknown>;
  if (!isAccountName(account)) return refuse('invalid_account', null);
  if (!isInt64(amount) || amount <= 0n) return refuse('invalid_amount', null);
  return undefined;
}

// Failing closed on the peg's backing: refused whatever the request, nothing allowed.
function closed(state: LimitsState): Verdict | undefined {
  const failure = pegFailure(state);
  return failure === null ? undefined : refuse(failure, 0n);
}

function withdrawalVerdict(
  state: LimitsState,
  req: TransferRequest,
  pending: Pending,
  globalUsed: Amount,
): Verdict {
  const bad = malformed(req) ?? closed(state);
  if (bad !== undefined) return bad;
  const r = resolvedCaps(state, req.account);
  if (r.perWithdrawalCap !== null && req.amount > r.perWithdrawalCap) {
    return refuse('above_per_withdrawal_cap', r.perWithdrawalCap);
  }
  const incomplete = incompleteFor(state, r);
  if (incomplete !== undefined)
    return { ok: false, reason: 'window_incomplete', limit: null, availableAt: incomplete.at };
  if (r.rollingWithdrawalCap !== null) {
    const left = roomLeft(r.rollingWithdrawalCap, globalUsed + pending.total);
    if (req.amount > left)
      return refuseWindow('rolling_cap_exceeded', left, availableAt(state, req, pending));
  }
  if (r.accountRollingWithdrawalBlocks !== null && r.accountRollingWithdrawalCap !== null) {
    const used =
      withdrawnIn(state, accountTree(state, req.account), r.accountRollingWithdrawalBlocks) +
      (pending.byAccount.get(req.account) ?? 0n);
    const left = roomLeft(r.accountRollingWithdrawalCap, used);
    if (req.amount > left)
      return refuseWindow('account_rolling_cap_exceeded', left, availableAt(state, req, pending));
  }
  return OK;
}

function depositVerdict(
  state: LimitsState,
  req: TransferRequest,
  pending: Pending,
  globalMinted: Amount,
): Verdict {
  const bad = malformed(req) ?? closed(state);
  if (bad !== undefined) return bad;
  const r = resolvedCaps(state, req.account);
  if (r.perDepositMinimum !== null && req.amount < r.perDepositMinimum)
    return refuse('below_minimum', r.perDepositMinimum);
  if (r.perDepositCap !== null && req.amount > r.perDepositCap)
    return refuse('above_per_deposit_cap', r.perDepositCap);
  if (r.pegCap !== null) {
    const left = roomLeft(r.pegCap, state.peggedTotal + pending.total);
    if (req.amount > left) return refuse('peg_cap_exceeded', left);
  }
  if (r.accountPegCap !== null) {
    const left = roomLeft(
      r.accountPegCap,
      accountPeggedTotal(state, req.account) + (pending.byAccount.get(req.account) ?? 0n),
    );
    if (req.amount > left) return refuse('account_peg_cap_exceeded', left);
  }
  const incomplete = incompleteFor(state, r, true);
  if (incomplete !== undefined)
    return { ok: false, reason: 'mint_window_incomplete', limit: null, availableAt: incomplete.at };
  if (r.rollingMintCap !== null) {
    const left = roomLeft(r.rollingMintCap, globalMinted + pending.total);
    if (req.amount > left)
      return refuseWindow(
        'rolling_mint_cap_exceeded',
        left,
        availableAt(state, req, pending, true),
      );
  }
  if (r.accountRollingMintBlocks !== null && r.accountRollingMintCap !== null) {
    const used =
      withdrawnIn(state, accountMintTree(state, req.account), r.accountRollingMintBlocks) +
      (pending.byAccount.get(req.account) ?? 0n);
    const left = roomLeft(r.accountRollingMintCap, used);
    if (req.amount > left)
      return refuseWindow(
        'account_rolling_mint_cap_exceeded',
        left,
        availableAt(state, req, pending, true),
      );
  }
  return OK;
}

function globalWithdrawn(state: LimitsState): Amount {
  const blocks = globalCapsInForce(state).rollingWithdrawalBlocks;
  return blocks === null ? 0n : withdrawnIn(state, state.historySums, blocks);
}

function globalMinted(state: LimitsState): Amount {
  const blocks = state.limits.rollingMintBlocks;
  return blocks === null ? 0n : withdrawnIn(state, state.mintSums, blocks);
}

function isIterable(value: unknown): value is Iterable<unknown> {
  return (
    value !== null &&
    value !== undefined &&
    typeof (value as { [Symbol.iterator]?: unknown })[Symbol.iterator] === 'function'
  );
}

function admit<R extends TransferRequest>(
  requests: Iterable<R>,
  verdict: (req: R, pending: Pending) => Verdict,
): Admission<R> {
  const pending: Pending = { total: 0n, byAccount: new Map() };
  const admitted: R[] = [];
  const refused: Array<{
    request: R;
    reason: VerdictReason;
    limit: Amount | null;
    availableAt: number | null;
  }> = [];
  // Checks never throw on data: what cannot be iterated holds no request, so admits nothing.
  if (!isIterable(requests)) return { admitted, refused };
  for (const req of requests) {
    const v = verdict(req, pending);
    if (v.ok) {
      admitted.push(req);
      pending.total += req.amount;
      pending.byAccount.set(req.account, (pending.byAccount.get(req.account) ?? 0n) + req.amount);
    } else {
      refused.push({ request: req, reason: v.reason, limit: v.limit, availableAt: v.availableAt });
    }
  }
  return { admitted, refused };
}

/**
 * Whether a withdrawal would be admitted now: the per-withdrawal cap (the account's, else
 * the global), the global window, and the account's own window if its entry sets one.
 *
 * @example
 * ```ts
 * checkWithdrawal(state, { account: 'alice', amount: 10n }); // { ok: true }
 * checkWithdrawal(state, { account: 'alice', amount: 10n ** 12n });
 * // { ok: false, reason: 'rolling_cap_exceeded', limit: 999990n, availableAt: null }
 * ```
 */
export function checkWithdrawal(state: LimitsState, request: TransferRequest): Verdict {
  return withdrawalVerdict(state, request, NOTHING_PENDING, globalWithdrawn(state));
}

/**
 * Whether a deposit would be admitted now: the minimum, the per-deposit cap, the global
 * peg cap and the account's own peg cap, against the pegged totals last observed.
 *
 * @example
 * ```ts
 * checkDeposit(state, { account: 'alice', amount: 1n });
 * // { ok: false, reason: 'below_minimum', limit: 10000n, availableAt: null }
 * ```
 */
export function checkDeposit(state: LimitsState, request: TransferRequest): Verdict {
  return depositVerdict(state, request, NOTHING_PENDING, globalMinted(state));
}

/**
 * Admits withdrawals in the given order, each admitted one counting against those after
 * it in the current window (how a signer filters one block's requests). Anything that
 * cannot be iterated holds no request and admits nothing.
 *
 * @example
 * ```ts
 * const { admitted, refused } = admitWithdrawals(state, [
 *   { id: 'a', account: 'alice', amount: 600n },
 *   { id: 'b', account: 'bob', amount: 600n }, // refused when only 1000n is left
 * ]);
 * ```
 */
export function admitWithdrawals<R extends TransferRequest>(
  state: LimitsState,
  requests: Iterable<R>,
): Admission<R> {
  const used = globalWithdrawn(state);
  return admit(requests, (req, pending) => withdrawalVerdict(state, req, pending, used));
}

/**
 * Admits deposits in the given order, each admitted one counting against the peg caps of
 * those after it.
 *
 * @example
 * ```ts
 * admitDeposits(state, [{ account: 'alice', amount: 5000n }]).admitted.length; // 1
 * ```
 */
export function admitDeposits<R extends TransferRequest>(
  state: LimitsState,
  requests: Iterable<R>,
): Admission<R> {
  const minted = globalMinted(state);
  return admit(requests, (req, pending) => depositVerdict(state, req, pending, minted));
}

/**
 * The earliest tip height (≥ the current tip) at which {@link checkWithdrawal} would admit
 * `amount` if nothing else were withdrawn; `null` when it never would (the amount is above
 * a cap), no block is known yet, or blocks are held past the chain bounds (`blocksHeld`: not
 * known until the hold ends). While a window is incomplete, never before it becomes
 * complete.
 *
 * @throws LimitsError `invalid_amount` or `invalid_account` (with its `path`) for a malformed
 *   request: it has no height, and `null` means "never", so it is not answered with one
 *
 * @example
 * ```ts
 * // window 144 blocks, cap 1000n, 800n withdrawn at height 100, tip 120:
 * whenAvailable(state, { account: 'alice', amount: 500n }); // 244 (when height 100 leaves the window)
 * ```
 */
export function whenAvailable(state: LimitsState, request: TransferRequest): number | null {
  requireRequest(request);
  return availableAt(state, request, NOTHING_PENDING);
}

/**
 * {@link whenAvailable}'s twin for a deposit: the earliest tip height (≥ the current tip) at
 * which {@link checkDeposit} would admit `amount` if nothing else were minted, counting a
 * mint window cap's basis that rises as lower totals leave the window; `null` when it never
 * would (below the minimum, above the per-deposit cap, beyond a peg cap, above a mint window's
 * cap), no block is known yet, the limits fail closed, or blocks are held. While a mint window
 * is incomplete, never before it becomes complete.
 *
 * @throws LimitsError `invalid_amount` or `invalid_account` (with its `path`) for a malformed
 *   request, as {@link whenAvailable} does
 *
 * @example
 * ```ts
 * // mint window 144 blocks, cap 1000n, 800n minted at height 100, tip 120:
 * whenMintable(state, { account: 'alice', amount: 500n }); // 244 (when height 100 leaves the window)
 * ```
 */
export function whenMintable(state: LimitsState, request: TransferRequest): number | null {
  requireRequest(request);
  if (state.tip === null || pegFailure(state) !== null) return null;
  // What no tip changes: the per-deposit rules and the peg caps against the totals observed.
  const now = depositVerdict(state, request, NOTHING_PENDING, globalMinted(state));
  if (now.ok || now.reason === 'mint_window_incomplete')
    return availableAt(state, request, NOTHING_PENDING, true);
  // Refused by a mint window's cap: the verdict's height is this search's, already made.
  if (
    now.reason === 'rolling_mint_cap_exceeded' ||
    now.reason === 'account_rolling_mint_cap_exceeded'
  )
    return now.availableAt;
  return null;
}

// A malformed request has no height: thrown, since `null` means "never".
function requireRequest(request: TransferRequest): void {
  const bad = malformed(request);
  if (bad !== undefined && !bad.ok) {
    const given = request as { amount?: unknown; account?: unknown } | null;
    if (bad.reason === 'invalid_amount')
      throw new LimitsError(
        'invalid_amount',
        `expected an amount from 1 to 2^63−1, got ${describe(given?.amount)}`,
        'amount',
      );
    throw new LimitsError(
      'invalid_account',
      `expected an account name of 1 to 256 characters without control characters, got ${describe(given?.account)}`,
      'account',
    );
  }
}
