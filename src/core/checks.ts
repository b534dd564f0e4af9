/**
 * Checks: may this withdrawal or deposit go through now (the README, "Checks"), a batch admitted in
 * order, and when a withdrawal would fit. A cap is inclusive: an amount equal to it passes.
 */
import { type Amount, isInt64, roomLeft } from './amount.js';
import { entryWindowCapAt, globalCapsInForce, globalWindowCapAt } from './caps-in-force.js';
import { oldestRetained } from './draft.js';
import { describe, LimitsError } from './errors.js';
import { pegFailure } from './integrity.js';
import type { ResolvedCaps } from './limits.js';
import { isAccountName } from './limits.js';
import { highestObservedTip } from './pegged-totals.js';
import { mapGet } from './pmap.js';
import type { LimitsState } from './state.js';
import { type SumNode, sumHeights } from './sum-tree.js';
import { accountPeggedTotal, resolvedCaps } from './views.js';
import {
  accountTree,
  COMPLETE,
  heightWithin,
  windowSpan,
  windowsStatus,
  withdrawnIn,
} from './window.js';

/**
 * Why a request is refused. `invalid_amount` and `invalid_account` flag malformed requests;
 * `peg_unbacked` and `reserves_unknown` say that the limits fail closed on the peg's backing
 * (the breaker tripped; the reserves are not known); `window_incomplete` says that what a
 * window holds is unknown: it reaches below the height from which the history is complete,
 * or blocks are held past the chain bounds.
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
  | 'reserves_unknown';

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

// What a batch has admitted so far, counted against the requests after it.
interface Pending {
  total: Amount;
  readonly byAccount: Map<string, Amount>;
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

// Whether a window that applies reports no room now, and the tip from which every one is
// complete (`at`; null while blocks are held: no tip is known); undefined when all are now.
function incompleteFor(
  state: LimitsState,
  r: ResolvedCaps,
): { readonly at: number | null } | undefined {
  const status = windowsStatus(state, r.rollingWithdrawalBlocks, r.accountRollingWithdrawalBlocks);
  if (status === COMPLETE) return undefined;
  return status.held ? HELD : { at: status.completeAt };
}

// While blocks are held, the tip from which the windows have room again is not known.
const HELD = { at: null } as const;

function depositVerdict(state: LimitsState, req: TransferRequest, pending: Pending): Verdict {
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
  return OK;
}

function globalWithdrawn(state: LimitsState): Amount {
  const blocks = globalCapsInForce(state).rollingWithdrawalBlocks;
  return blocks === null ? 0n : withdrawnIn(state, state.historySums, blocks);
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

const NOTHING_PENDING: Pending = { total: 0n, byAccount: new Map() };

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
  return depositVerdict(state, request, NOTHING_PENDING);
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
  return admit(requests, (req, pending) => depositVerdict(state, req, pending));
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
  return availableAt(state, request, NOTHING_PENDING);
}

// The earliest tip height ≥ the tip at which `request` passes, with `pending` (admitted
// earlier in a batch) withdrawn at the tip: they leave a window `blocks` blocks later.
function availableAt(
  state: LimitsState,
  request: TransferRequest,
  pending: Pending,
): number | null {
  if (malformed(request) !== undefined || state.tip === null || pegFailure(state) !== null)
    return null;
  const { account, amount } = request;
  const r = resolvedCaps(state, account);
  if (r.perWithdrawalCap !== null && amount > r.perWithdrawalCap) return null;
  const incomplete = incompleteFor(state, r);
  if (incomplete !== undefined && incomplete.at === null) return null;
  let height = Math.max(state.tip, incomplete?.at ?? state.tip);
  const entry = mapGet(state.entries, account);
  const windows: Array<[Amount | null, Amount | null, SumNode | undefined, Amount, CapAt]> = [
    [
      r.rollingWithdrawalBlocks,
      r.rollingWithdrawalCap,
      state.historySums,
      pending.total,
      r.rollingWithdrawalCapShare === null
        ? undefined
        : { at: (u) => globalWindowCapAt(state, u), top: highestObservedTip(state.totals) },
    ],
    [
      r.accountRollingWithdrawalBlocks,
      r.accountRollingWithdrawalCap,
      accountTree(state, account),
      pending.byAccount.get(account) ?? 0n,
      r.accountRollingWithdrawalCapShare === null || entry === undefined
        ? undefined
        : {
            at: (u) => entryWindowCapAt(state, entry, account, u),
            top: highestObservedTip(mapGet(state.accountTotals, account)),
          },
    ],
  ];
  for (const [blocks, cap, tree, held, capAt] of windows) {
    if (blocks === null || cap === null) continue;
    const h =
      capAt === undefined
        ? amount > cap
          ? undefined
          : heightWith(state, tree, blocks, cap - amount, held)
        : heightUnderShare(state, tree, blocks, amount, held, capAt);
    if (h === undefined) return null;
    height = Math.max(height, h);
  }
  return height;
}

// A window cap set as a share moves with the tip: the basis rises as the lower totals leave
// the window (never falls, absent a new total), while what is withdrawn in it only leaves.
type CapAt =
  | { readonly at: (tip: number) => Amount | null; readonly top: number | null }
  | undefined;

// The earliest tip ≥ the tip at which `amount` fits a window whose cap is `capAt` there, with
// `held` more withdrawn at the tip; undefined when it never does. Fitting only gets easier as
// the tip rises, so the first tip that fits is found by halving.
function heightUnderShare(
  state: LimitsState,
  tree: SumNode | undefined,
  blocks: Amount,
  amount: Amount,
  held: Amount,
  capAt: NonNullable<CapAt>,
): number | undefined {
  const tip = state.tip!;
  const b = Number(blocks);
  const fits = (u: number) => {
    const from = Math.max(u - b + 1, oldestRetained(state));
    const withdrawn =
      tree === undefined || from > tip ? 0n : sumHeights(state.treeShape, tree, from, tip);
    const cap = capAt.at(u) ?? 0n;
    return withdrawn + (u < tip + b ? held : 0n) + amount <= cap;
  };
  let lo = tip;
  if (fits(lo)) return lo;
  // Past every observation and every withdrawal by a window, nothing changes any more; a
  // tip is a safe integer, so that is as far as it is looked for.
  let hi = Math.min(Math.max(tip, capAt.top ?? tip) + b, Number.MAX_SAFE_INTEGER);
  if (!fits(hi)) return undefined;
  while (hi - lo > 1) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (fits(mid)) hi = mid;
    else lo = mid;
  }
  return hi;
}

// heightWithin, with `held` more withdrawn at the tip.
function heightWith(
  state: LimitsState,
  tree: SumNode | undefined,
  blocks: Amount,
  roomLeft: Amount,
  held: Amount,
): number | undefined {
  if (held <= roomLeft) return heightWithin(state, tree, blocks, roomLeft - held);
  // What is held at the tip must leave too: everything withdrawn now has left by then.
  const span = windowSpan(state, blocks);
  if (span === undefined) return undefined;
  const at = span.to + Number(blocks);
  return at > Number.MAX_SAFE_INTEGER ? undefined : at;
}
