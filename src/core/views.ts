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
import type { SumNode } from './sum-tree.js';
import { accountMintTree, accountTree, roomIn, windowsStatus, withdrawnIn } from './window.js';

/** The limits of one account entry, as `GET /limits/{account}` reports them. */
export interface AccountLimits {
  /**
   * The entry's peg cap in force: as configured when the entry sets no mint window of its
   * own, else the lower of it and the account's pegged total plus its mint window's room
   * (what the signers may mint for it now; 0 room while the room is unknown).
   */
  readonly pegCap: Amount | null;
  readonly perDepositCap: Amount | null;
  readonly perDepositMinimum: Amount | null;
  readonly perWithdrawalCap: Amount | null;
  readonly rollingWithdrawalBlocks: Amount | null;
  readonly rollingWithdrawalCap: Amount | null;
  readonly throttleModeInitiator: string | null;
  /** The entry's own mint window: its length, its cap in force and its share, when set. */
  readonly rollingMintBlocks: Amount | null;
  readonly rollingMintCap: Amount | null;
  readonly rollingMintCapShare: Amount | null;
}

/** The global limits, as `GET /limits` reports them. */
export interface Limits {
  readonly availableToWithdraw: Amount | null;
  /**
   * The peg cap in force: as configured without a mint window, else the lower of it and the
   * pegged total plus {@link Limits.availableToMint} (a room of 0 while it is unknown), which
   * is how the signers, who compute `pegCap − supply`, obey the mint window unchanged.
   */
  readonly pegCap: Amount | null;
  readonly perDepositCap: Amount | null;
  readonly perDepositMinimum: Amount | null;
  readonly perWithdrawalCap: Amount | null;
  readonly rollingWithdrawalBlocks: Amount | null;
  readonly rollingWithdrawalCap: Amount | null;
  readonly throttleModeInitiator: string | null;
  /** The mint window's length, its cap in force and its share of the pegged total; null when unset. */
  readonly rollingMintBlocks: Amount | null;
  readonly rollingMintCap: Amount | null;
  readonly rollingMintCapShare: Amount | null;
  /**
   * What may still be minted in the mint window: its cap in force less the mints in it; null
   * without a mint window, while it reaches below the mint history's start or blocks are
   * held; 0 while the limits fail closed on the peg's backing.
   */
  readonly availableToMint: Amount | null;
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
  /**
   * What the account may still have minted in the mint windows that apply to it (the
   * global one, its entry's own): the least room they leave; null when none applies or
   * while one's room is unknown; 0 while the limits fail closed and one applies.
   */
  readonly availableToMint: Amount | null;
  /** The tip from which every mint window that applies is complete; `null` when all are now. */
  readonly mintIncompleteUntil: number | null;
  /** The global mint window's fixed cap, beneath its share; `rollingMintCap` is the one in force. */
  readonly rollingMintCapFixed: Amount | null;
  /** The entry's own mint window's fixed cap, beneath its share of the account's total. */
  readonly accountRollingMintCapFixed: Amount | null;
  /** The total the global mint window cap's share applies to (the lagged basis over its length). */
  readonly mintShareBasis: Amount;
  /** The same for the entry's own mint window, of the account's own totals. */
  readonly accountMintShareBasis: Amount;
}

function entryOf(state: LimitsState, account: string): Caps | undefined {
  return isAccountName(account) ? mapGet(state.entries, account) : undefined;
}

/** @internal The configured global caps, beneath every overlay (what a limits event set). */
export function configuredLimits(state: LimitsState): Caps {
  return state.limits;
}

/** @internal An account's configured entry, beneath every overlay, or `undefined`. */
export function configuredEntry(state: LimitsState, account: string): Caps | undefined {
  return entryOf(state, account);
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

function accountView(state: LimitsState, caps: Caps, account: string): AccountLimits {
  const blocks = caps.rollingMintBlocks;
  return {
    pegCap:
      blocks === null
        ? caps.pegCap
        : pegCapInForce(
            caps.pegCap,
            accountPeggedTotal(state, account),
            mintRoom(state, blocks, caps.rollingMintCap, accountMintTree(state, account)),
          ),
    perDepositCap: caps.perDepositCap,
    perDepositMinimum: caps.perDepositMinimum,
    perWithdrawalCap: caps.perWithdrawalCap,
    rollingWithdrawalBlocks: caps.rollingWithdrawalBlocks,
    rollingWithdrawalCap: caps.rollingWithdrawalCap,
    throttleModeInitiator: state.throttleModeInitiator,
    rollingMintBlocks: blocks,
    rollingMintCap: caps.rollingMintCap,
    rollingMintCapShare: caps.rollingMintCapShare,
  };
}

/**
 * The room a mint window leaves (its cap in force less what is minted in it), `null` without
 * one or while its room is unknown, 0 while the limits fail closed.
 */
function mintRoom(
  state: LimitsState,
  blocks: Amount | null,
  cap: Amount | null,
  tree: SumNode | undefined,
): Amount | null {
  if (blocks === null || cap === null) return null;
  if (pegFailure(state) !== null) return 0n;
  return roomIn(windowsStatus(state, blocks, null, true), cap, withdrawnIn(state, tree, blocks));
}

/** The most the int64 fields of the interface hold: a peg cap in force never reads above it. */
const INT64_MAX = (1n << 63n) - 1n;

/**
 * The peg cap in force where a mint window applies: the total plus the room (0 while the room
 * is unknown), under the configured peg cap when one is set, never above the int64 maximum.
 */
function pegCapInForce(pegCap: Amount | null, total: Amount, room: Amount | null): Amount {
  let cap = total + (room ?? 0n);
  if (pegCap !== null && pegCap < cap) cap = pegCap;
  return cap > INT64_MAX ? INT64_MAX : cap;
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
      state,
      entryCapsInForce(state, mapGet(state.entries, name), name)!,
      name,
    );
  }
  const blocks = caps.rollingWithdrawalBlocks;
  const cap = caps.rollingWithdrawalCap;
  const mintBlocks = caps.rollingMintBlocks;
  const availableToMint = mintRoom(state, mintBlocks, caps.rollingMintCap, state.mintSums);
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
    pegCap:
      mintBlocks === null
        ? caps.pegCap
        : pegCapInForce(caps.pegCap, state.peggedTotal, availableToMint),
    perDepositCap: caps.perDepositCap,
    perDepositMinimum: caps.perDepositMinimum,
    perWithdrawalCap: caps.perWithdrawalCap,
    rollingWithdrawalBlocks: blocks,
    rollingWithdrawalCap: cap,
    throttleModeInitiator: state.throttleModeInitiator,
    rollingMintBlocks: mintBlocks,
    rollingMintCap: caps.rollingMintCap,
    rollingMintCapShare: caps.rollingMintCapShare,
    availableToMint,
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
  return entry === undefined ? undefined : accountView(state, entry, account);
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
  const available = leastRoom(state, status, [
    [blocks, resolved.rollingWithdrawalCap, state.historySums],
    [ownBlocks, resolved.accountRollingWithdrawalCap, accountTree(state, account)],
  ]);
  const mint = mintRoomFor(state, resolved, account);
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
    availableToMint: mint.room,
    mintIncompleteUntil: mint.completeAt,
    rollingMintCapFixed: state.limits.rollingMintCap,
    accountRollingMintCapFixed: rawEntry?.rollingMintCap ?? null,
    mintShareBasis: globalShareBasis(state, 'mint'),
    accountMintShareBasis: accountShareBasis(state, rawEntry, account, 'mint'),
  };
}

/**
 * The least room the mint windows that apply to `account` leave (the global one, its entry's
 * own; null when none applies or one's room is unknown, 0 while failing closed), and the tip
 * from which all of them are complete.
 */
function mintRoomFor(
  state: LimitsState,
  resolved: ResolvedCaps,
  account: string,
): { readonly room: Amount | null; readonly completeAt: number | null } {
  const blocks = resolved.rollingMintBlocks;
  const ownBlocks = resolved.accountRollingMintBlocks;
  const status = windowsStatus(state, blocks, ownBlocks, true);
  if (blocks === null && ownBlocks === null) return { room: null, completeAt: null };
  if (pegFailure(state) !== null) return { room: 0n, completeAt: status.completeAt };
  const room = leastRoom(state, status, [
    [blocks, resolved.rollingMintCap, state.mintSums],
    [ownBlocks, resolved.accountRollingMintCap, accountMintTree(state, account)],
  ]);
  return { room, completeAt: status.completeAt };
}

/**
 * The least room the windows given leave (`[blocks, cap in force, per-block sums]`; a window
 * unset is left out), each counting what is in it: `null` when none applies, or while their
 * room is unknown (`status`).
 */
function leastRoom(
  state: LimitsState,
  status: ReturnType<typeof windowsStatus>,
  windows: ReadonlyArray<readonly [Amount | null, Amount | null, SumNode | undefined]>,
): Amount | null {
  let least: Amount | null = null;
  for (const [blocks, cap, tree] of windows) {
    if (blocks === null || cap === null) continue;
    const room = roomIn(status, cap, withdrawnIn(state, tree, blocks));
    // Unknown for one is unknown for all (the status is shared): null stays null.
    if (room === null) return null;
    if (least === null || room < least) least = room;
  }
  return least;
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
