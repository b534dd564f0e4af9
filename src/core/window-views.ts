/**
 * The windows as data for charts: `windowOf` (the rolling withdrawal window, global or an
 * account's own) and `mintWindowOf`, its twin over the mints. Reporting never fails.
 */
import type { Amount } from './amount.js';
import {
  accountShareBasis,
  fixedEntry,
  fixedGlobal,
  globalCapsInForce,
  globalShareBasis,
} from './caps-in-force.js';
import { pegFailure } from './integrity.js';
import type { LimitsState } from './state.js';
import { forEachSum, type SumNode } from './sum-tree.js';
import { accountPeggedTotal, configuredEntry, resolvedCaps } from './views.js';
import {
  accountMintTree,
  accountTree,
  COMPLETE,
  roomIn,
  windowSpan,
  windowsStatus,
} from './window.js';

/** The amount withdrawn at one height. */
export interface HeightSum {
  readonly height: number;
  readonly amount: Amount;
}

/** A rolling window as data for a chart: see {@link windowOf}. */
export interface WindowView {
  /** The account whose own window this is, or `null` for the global window. */
  readonly account: string | null;
  /** The current tip, or `null` before any block is known. */
  readonly tip: number | null;
  /**
   * The window's length in blocks and its cap in force (the lower of the fixed cap and its
   * share of the pegged total, throttle overlay included); null when unset.
   */
  readonly rollingWithdrawalBlocks: Amount | null;
  readonly rollingWithdrawalCap: Amount | null;
  /** The fixed cap beneath the share (throttle overlay included); null when unset. */
  readonly rollingWithdrawalCapFixed: Amount | null;
  /** The cap's share of the pegged total, in basis points; null when none is set. */
  readonly rollingWithdrawalCapShare: Amount | null;
  /**
   * The configured peg cap (the global one, or the account entry's): what `GET /limits`
   * reports beneath a mint window is the peg cap in force; this is the one an operator set.
   */
  readonly pegCapFixed: Amount | null;
  /** The pegged total the share is of: the global one, or the account's for its own window. */
  readonly peggedTotal: Amount;
  /**
   * The total the share applies to: the lowest of that pegged total in force during the
   * window (a fall counts at once, a rise once the lower totals have left the window).
   */
  readonly shareBasis: Amount;
  /** The window's first and last height (`tip − blocks + 1 … tip`); null without a tip or a window. */
  readonly from: number | null;
  readonly to: number | null;
  /**
   * What is withdrawn in the window (rejected withdrawals do not count); while the window is
   * incomplete, what is known of it.
   */
  readonly withdrawn: Amount;
  /**
   * Whether the state was told of every height of the window: false while it reaches below
   * the height from which the history is complete (`historyCompleteFrom`).
   */
  readonly complete: boolean;
  /**
   * The tip at which an incomplete window becomes complete; `null` when it is complete, or
   * while blocks are held (not known until the hold ends).
   */
  readonly completeAt: number | null;
  /**
   * The burn height of the first block a feed holds past the chain bounds, or `null`: while
   * blocks are held, the chain has moved on and the window is not complete.
   */
  readonly heldFrom: number | null;
  /**
   * What may still be withdrawn: the cap less what is withdrawn; null without a window, and
   * while the window is incomplete (unknown).
   */
  readonly availableToWithdraw: Amount | null;
  /** The non-zero per-block sums inside the window, oldest first. */
  readonly sums: ReadonlyArray<HeightSum>;
  /** The next amount to free up: the oldest non-zero block's sum, and the tip at which it leaves. */
  readonly nextRelease: HeightSum | null;
  readonly throttleModeInitiator: string | null;
}

/**
 * The rolling window as data for charts: the tip, the window's heights, the non-zero
 * per-block sums inside it, the cap and what is available, and when the next amount frees
 * up. With `account`, that account's own window (its entry's, counting only its
 * withdrawals), or `undefined` when its entry sets none. Costs O(non-zero blocks in the
 * window × log₁₆ H), whatever the history length.
 *
 * @example
 * ```ts
 * // window 144, cap 1000n, 300n at height 100 and 200n at 150, tip 200:
 * windowOf(state);
 * // { tip: 200, from: 57, to: 200, withdrawn: 500n, complete: true, completeAt: null,
 * //   availableToWithdraw: 500n,
 * //   sums: [{ height: 100, amount: 300n }, { height: 150, amount: 200n }],
 * //   nextRelease: { height: 244, amount: 300n }, … }
 * ```
 */
export function windowOf(state: LimitsState, account?: string): WindowView | undefined {
  return windowView(state, account, false) as WindowView | undefined;
}

/**
 * A mint window as data for charts: {@link windowOf}'s twin, with the same shape
 * (`availableToMint` for `availableToWithdraw`), so a chart draws both alike. Its
 * `rollingWithdrawalBlocks`, `rollingWithdrawalCap`, `rollingWithdrawalCapFixed` and
 * `rollingWithdrawalCapShare` are the mint window's length, cap in force, fixed cap and
 * share, `withdrawn` what is minted in it and `sums` the per-block mints. With `account`,
 * that account's own mint window, or `undefined` when its entry sets none.
 *
 * @example
 * ```ts
 * // mint window 144 blocks, cap 1000n, 300n minted at height 100, tip 200:
 * mintWindowOf(state);
 * // { tip: 200, from: 57, to: 200, withdrawn: 300n, availableToMint: 700n,
 * //   sums: [{ height: 100, amount: 300n }], nextRelease: { height: 244, amount: 300n }, … }
 * ```
 */
export function mintWindowOf(state: LimitsState, account?: string): MintWindowView | undefined {
  return windowView(state, account, true) as MintWindowView | undefined;
}

/** A mint window as data for a chart: see {@link mintWindowOf}. */
export type MintWindowView = Omit<WindowView, 'availableToWithdraw'> & {
  /**
   * What may still be minted: the cap in force less what is minted; null without a mint
   * window and while its room is unknown; 0 while the limits fail closed.
   */
  readonly availableToMint: Amount | null;
};

// A window's view, its room under the name of its kind (in the order windowOf has always
// written its fields).
function windowView(
  state: LimitsState,
  account: string | undefined,
  mints: boolean,
): WindowView | MintWindowView | undefined {
  let blocks: Amount | null;
  let cap: Amount | null;
  let fixed: Amount | null;
  let share: Amount | null;
  let pegCap: Amount | null;
  let total: Amount;
  let basis: Amount;
  let tree: SumNode | undefined;
  const kind = mints ? 'mint' : 'withdrawal';
  if (account === undefined) {
    const caps = globalCapsInForce(state);
    const under = fixedGlobal(state);
    blocks = mints ? caps.rollingMintBlocks : caps.rollingWithdrawalBlocks;
    cap = mints ? caps.rollingMintCap : caps.rollingWithdrawalCap;
    fixed = mints ? under.rollingMintCap : under.rollingWithdrawalCap;
    share = mints ? caps.rollingMintCapShare : caps.rollingWithdrawalCapShare;
    pegCap = state.limits.pegCap;
    total = state.peggedTotal;
    basis = globalShareBasis(state, kind);
    tree = mints ? state.mintSums : state.historySums;
  } else {
    const r = resolvedCaps(state, account);
    blocks = mints ? r.accountRollingMintBlocks : r.accountRollingWithdrawalBlocks;
    cap = mints ? r.accountRollingMintCap : r.accountRollingWithdrawalCap;
    if (blocks === null || cap === null) return undefined;
    const entry = configuredEntry(state, account);
    const under = fixedEntry(state, entry);
    fixed = (mints ? under?.rollingMintCap : under?.rollingWithdrawalCap) ?? null;
    share = mints ? r.accountRollingMintCapShare : r.accountRollingWithdrawalCapShare;
    pegCap = entry?.pegCap ?? null;
    total = accountPeggedTotal(state, account);
    basis = accountShareBasis(state, entry, account, kind);
    tree = mints ? accountMintTree(state, account) : accountTree(state, account);
  }
  const sums: HeightSum[] = [];
  let from: number | null = null;
  let to: number | null = null;
  let withdrawn = 0n;
  if (blocks !== null && state.tip !== null) {
    to = state.tip;
    from = state.tip - Number(blocks) + 1;
    const span = windowSpan(state, blocks);
    if (span !== undefined && tree !== undefined) {
      forEachSum(state.treeShape, tree, span.from, span.to, (height, amount) => {
        sums.push({ height, amount });
        withdrawn += amount;
      });
    }
  }
  const status = windowsStatus(state, blocks, null, mints);
  const oldest = sums[0];
  const release =
    oldest === undefined || blocks === null ? undefined : oldest.height + Number(blocks);
  // Failing closed, nothing may move through a window that is set (with no mint window the
  // mint room stays null: deposits are refused by the peg's check anyway).
  const closed = pegFailure(state) !== null && (!mints || cap !== null);
  // The one key the two views name apart, in its place: built as a record, read as the view.
  const view: Record<string, unknown> = {
    account: account ?? null,
    tip: state.tip,
    rollingWithdrawalBlocks: blocks,
    rollingWithdrawalCap: cap,
    rollingWithdrawalCapFixed: fixed,
    rollingWithdrawalCapShare: share,
    pegCapFixed: pegCap,
    peggedTotal: total,
    shareBasis: basis,
    from,
    to,
    withdrawn,
    // Held blocks leave no window complete, even one whose length is unset.
    complete: status === COMPLETE && state.heldFrom === null,
    completeAt: status.completeAt,
    heldFrom: state.heldFrom,
    [mints ? 'availableToMint' : 'availableToWithdraw']: closed
      ? 0n
      : cap === null
        ? null
        : roomIn(status, cap, withdrawn),
    sums,
    nextRelease:
      oldest === undefined || release === undefined || release > Number.MAX_SAFE_INTEGER
        ? null
        : { height: release, amount: oldest.amount },
    throttleModeInitiator: state.throttleModeInitiator,
  };
  return view as unknown as WindowView | MintWindowView;
}
