/**
 * The views: what `GET /limits` and `GET /limits/{account}` report, and the resolved
 * limits of one account. Reporting never fails: before any block, nothing is withdrawn.
 */
import type { Amount } from './amount.js';
import {
  accountShareBasis,
  entryCapsInForce,
  fixedEntry,
  fixedGlobal,
  globalCapsInForce,
  globalShareBasis,
} from './caps-in-force.js';
import { pegFailure } from './integrity.js';
import { type Caps, isAccountName, type ResolvedCaps, resolveCaps } from './limits.js';
import { mapForEach, mapGet } from './pmap.js';
import type { LimitsState, PendingChange } from './state.js';
import { forEachSum, type SumNode } from './sum-tree.js';
import { accountTree, COMPLETE, roomIn, windowSpan, windowsStatus, withdrawnIn } from './window.js';

/** The limits of one account entry, as `GET /limits/{account}` reports them. */
export interface AccountLimits {
  readonly pegCap: Amount | null;
  readonly perDepositCap: Amount | null;
  readonly perDepositMinimum: Amount | null;
  readonly perWithdrawalCap: Amount | null;
  readonly rollingWithdrawalBlocks: Amount | null;
  readonly rollingWithdrawalCap: Amount | null;
  readonly throttleModeInitiator: string | null;
}

/** The global limits, as `GET /limits` reports them. */
export interface Limits {
  readonly availableToWithdraw: Amount | null;
  readonly pegCap: Amount | null;
  readonly perDepositCap: Amount | null;
  readonly perDepositMinimum: Amount | null;
  readonly perWithdrawalCap: Amount | null;
  readonly rollingWithdrawalBlocks: Amount | null;
  readonly rollingWithdrawalCap: Amount | null;
  readonly throttleModeInitiator: string | null;
  /** Every account entry, by account name (a prototype-free object, sorted by name). */
  readonly accountCaps: Readonly<Record<string, AccountLimits>>;
}

/** The limits that apply to one account, resolved (the account fallback) and with what is left. */
export interface EffectiveLimits extends ResolvedCaps {
  readonly account: string;
  /** Whether the account has an entry of its own. */
  readonly hasEntry: boolean;
  /**
   * What the account may still withdraw in the windows that apply to it; null when none
   * applies, when one reaches below the height from which the history is complete, or
   * while blocks are held past the chain bounds.
   */
  readonly availableToWithdraw: Amount | null;
  /**
   * The tip from which every window that applies holds only heights the state was told of;
   * `null` when they all do now (see `historyCompleteFrom`).
   */
  readonly incompleteUntil: number | null;
  /**
   * The burn height of the first block a feed holds past the chain bounds (`blocksHeld`), or
   * `null`: while blocks are held, no window reports room.
   */
  readonly heldFrom: number | null;
  /**
   * The global window's fixed cap, beneath its share of the pegged total (throttle overlay
   * included); `rollingWithdrawalCap` is the cap in force, the lower of the two.
   */
  readonly rollingWithdrawalCapFixed: Amount | null;
  /** The entry's own window's fixed cap, beneath its share of the account's pegged total. */
  readonly accountRollingWithdrawalCapFixed: Amount | null;
  readonly peggedTotal: Amount;
  readonly accountPeggedTotal: Amount;
  /**
   * The total the global window cap's share applies to: the lowest pegged total in force
   * during the window (a rise counts once the lower totals have left it); the pegged total
   * when no window is set.
   */
  readonly shareBasis: Amount;
  /** The same for the entry's own window, of the account's own totals. */
  readonly accountShareBasis: Amount;
  readonly throttleModeInitiator: string | null;
}

function entryOf(state: LimitsState, account: string): Caps | undefined {
  return isAccountName(account) ? mapGet(state.entries, account) : undefined;
}

/** The caps that apply to `account` (fallback resolved, throttle overlay applied). */
export function resolvedCaps(state: LimitsState, account: string): ResolvedCaps {
  return resolveCaps(
    globalCapsInForce(state),
    entryCapsInForce(state, entryOf(state, account), account),
  );
}

/** The pegged total last observed for one account (0 when none was). */
export function accountPeggedTotal(state: LimitsState, account: string): Amount {
  return isAccountName(account) ? (mapGet(state.accountPegged, account) ?? 0n) : 0n;
}

function accountView(caps: Caps, initiator: string | null): AccountLimits {
  return {
    pegCap: caps.pegCap,
    perDepositCap: caps.perDepositCap,
    perDepositMinimum: caps.perDepositMinimum,
    perWithdrawalCap: caps.perWithdrawalCap,
    rollingWithdrawalBlocks: caps.rollingWithdrawalBlocks,
    rollingWithdrawalCap: caps.rollingWithdrawalCap,
    throttleModeInitiator: initiator,
  };
}

/**
 * The global limits: the body of `GET /limits` as values, throttle overlay included.
 * Never fails: with no block known, `availableToWithdraw` is the whole window cap; while the
 * window reaches below the height from which the history is complete, it is `null` (unknown).
 *
 * @example
 * ```ts
 * const s = createLimitsState({ limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 1000n } });
 * getLimits(s).availableToWithdraw; // 1000n
 * getLimits(s).perWithdrawalCap;    // null (no cap)
 * ```
 */
export function getLimits(state: LimitsState): Limits {
  const caps = globalCapsInForce(state);
  const names: string[] = [];
  mapForEach(state.entries, (_, name) => names.push(name));
  names.sort();
  const accountCaps: Record<string, AccountLimits> = Object.create(null);
  for (const name of names) {
    accountCaps[name] = accountView(
      entryCapsInForce(state, mapGet(state.entries, name), name)!,
      state.throttleModeInitiator,
    );
  }
  const blocks = caps.rollingWithdrawalBlocks;
  const cap = caps.rollingWithdrawalCap;
  return {
    availableToWithdraw:
      pegFailure(state) !== null
        ? 0n
        : blocks === null || cap === null
          ? null
          : roomIn(
              windowsStatus(state, blocks),
              cap,
              withdrawnIn(state, state.historySums, blocks),
            ),
    pegCap: caps.pegCap,
    perDepositCap: caps.perDepositCap,
    perDepositMinimum: caps.perDepositMinimum,
    perWithdrawalCap: caps.perWithdrawalCap,
    rollingWithdrawalBlocks: blocks,
    rollingWithdrawalCap: cap,
    throttleModeInitiator: state.throttleModeInitiator,
    accountCaps,
  };
}

/**
 * The limits of one account's entry (the body of `GET /limits/{account}`), or `undefined`
 * when the account has no entry, in which case the global limits apply. A null
 * per-deposit or per-withdrawal cap means the global one applies.
 *
 * @example
 * ```ts
 * getAccountLimits(state, 'alice'); // { pegCap: 5000n, perDepositCap: null, …, throttleModeInitiator: null }
 * getAccountLimits(state, 'nobody'); // undefined
 * ```
 */
export function getAccountLimits(state: LimitsState, account: string): AccountLimits | undefined {
  if (!isAccountName(account)) return undefined;
  const entry = entryCapsInForce(state, mapGet(state.entries, account), account);
  return entry === undefined ? undefined : accountView(entry, state.throttleModeInitiator);
}

/**
 * The limits that apply to one account with the account fallback resolved, the
 * throttle overlay applied, and what it may still withdraw now. An account without an
 * entry (or an invalid name, which cannot have one) gets the global values.
 *
 * @example
 * ```ts
 * const e = effectiveLimits(state, 'alice');
 * e.perWithdrawalCap;    // the entry's cap, else the global one
 * e.availableToWithdraw; // min(global window room, alice's own window room)
 * ```
 */
export function effectiveLimits(state: LimitsState, account: string): EffectiveLimits {
  const rawEntry = entryOf(state, account);
  const resolved = resolveCaps(
    globalCapsInForce(state),
    entryCapsInForce(state, rawEntry, account),
  );
  const blocks = resolved.rollingWithdrawalBlocks;
  const ownBlocks = resolved.accountRollingWithdrawalBlocks;
  const status = windowsStatus(state, blocks, ownBlocks);
  // The least room the windows that apply leave (each counts what is withdrawn in it).
  let available: Amount | null = null;
  if (blocks !== null && resolved.rollingWithdrawalCap !== null)
    available = roomIn(
      status,
      resolved.rollingWithdrawalCap,
      withdrawnIn(state, state.historySums, blocks),
    );
  if (ownBlocks !== null && resolved.accountRollingWithdrawalCap !== null) {
    const own = roomIn(
      status,
      resolved.accountRollingWithdrawalCap,
      withdrawnIn(state, accountTree(state, account), ownBlocks),
    );
    available = available === null || (own !== null && own < available) ? own : available;
  }
  return {
    ...resolved,
    account,
    hasEntry: rawEntry !== undefined,
    // Failing closed on the peg's backing, nothing may be withdrawn, with no window too.
    availableToWithdraw: pegFailure(state) !== null ? 0n : available,
    incompleteUntil: status.completeAt,
    heldFrom: state.heldFrom,
    rollingWithdrawalCapFixed: fixedGlobal(state).rollingWithdrawalCap,
    accountRollingWithdrawalCapFixed: fixedEntry(state, rawEntry)?.rollingWithdrawalCap ?? null,
    peggedTotal: state.peggedTotal,
    accountPeggedTotal: accountPeggedTotal(state, account),
    shareBasis: globalShareBasis(state),
    accountShareBasis: accountShareBasis(state, rawEntry, account),
    throttleModeInitiator: state.throttleModeInitiator,
  };
}

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
  let blocks: Amount | null;
  let cap: Amount | null;
  let fixed: Amount | null;
  let share: Amount | null;
  let total: Amount;
  let basis: Amount;
  let tree: SumNode | undefined;
  if (account === undefined) {
    const caps = globalCapsInForce(state);
    blocks = caps.rollingWithdrawalBlocks;
    cap = caps.rollingWithdrawalCap;
    fixed = fixedGlobal(state).rollingWithdrawalCap;
    share = caps.rollingWithdrawalCapShare;
    total = state.peggedTotal;
    basis = globalShareBasis(state);
    tree = state.historySums;
  } else {
    const r = resolvedCaps(state, account);
    blocks = r.accountRollingWithdrawalBlocks;
    cap = r.accountRollingWithdrawalCap;
    if (blocks === null || cap === null) return undefined;
    fixed = fixedEntry(state, entryOf(state, account))?.rollingWithdrawalCap ?? null;
    share = r.accountRollingWithdrawalCapShare;
    total = accountPeggedTotal(state, account);
    basis = accountShareBasis(state, entryOf(state, account), account);
    tree = accountTree(state, account);
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
  const status = windowsStatus(state, blocks);
  const oldest = sums[0];
  const release =
    oldest === undefined || blocks === null ? undefined : oldest.height + Number(blocks);
  return {
    account: account ?? null,
    tip: state.tip,
    rollingWithdrawalBlocks: blocks,
    rollingWithdrawalCap: cap,
    rollingWithdrawalCapFixed: fixed,
    rollingWithdrawalCapShare: share,
    peggedTotal: total,
    shareBasis: basis,
    from,
    to,
    withdrawn,
    // Held blocks leave no window complete, even one whose length is unset.
    complete: status === COMPLETE && state.heldFrom === null,
    completeAt: status.completeAt,
    heldFrom: state.heldFrom,
    availableToWithdraw:
      pegFailure(state) !== null ? 0n : cap === null ? null : roomIn(status, cap, withdrawn),
    sums,
    nextRelease:
      oldest === undefined || release === undefined || release > Number.MAX_SAFE_INTEGER
        ? null
        : { height: release, amount: oldest.amount },
    throttleModeInitiator: state.throttleModeInitiator,
  };
}

/**
 * The pending changes: batches that loosen the limits, waiting for their height or their
 * quorum, oldest first. They are not in force: every other view shows what is.
 *
 * @example
 * ```ts
 * pendingChanges(state);
 * // [{ id: 1, events: [{ type: 'limitsSet', … }], proposedBy: 'gov-1', proposedAt: 870000,
 * //    delayBlocks: 6, effectiveAt: 870006, quorum: 2, approvals: ['gov-1'] }]
 * ```
 */
export function pendingChanges(state: LimitsState): ReadonlyArray<PendingChange> {
  return state.changes;
}
