/**
 * When a request would pass: the earliest tip at which the windows that apply have room for
 * it (`whenAvailable`, `whenMintable`, and the `availableAt` of a window's refusal), counting
 * a cap set as a share whose basis rises as the lower totals leave the window, and what a
 * batch admitted before it.
 */
import type { Amount } from './amount.js';
import { entryWindowCapAt, globalWindowCapAt } from './caps-in-force.js';
import { oldestRetained } from './draft.js';
import { pegFailure } from './integrity.js';
import type { ResolvedCaps } from './limits.js';
import { highestObservedTip } from './pegged-totals.js';
import { mapGet } from './pmap.js';
import type { LimitsState } from './state.js';
import { type SumNode, sumHeights } from './sum-tree.js';
import { resolvedCaps } from './views.js';
import {
  accountMintTree,
  accountTree,
  COMPLETE,
  heightWithin,
  windowSpan,
  windowsStatus,
} from './window.js';

/** A request of a check: who, and how much in the smallest unit. */
interface Request {
  readonly account: string;
  readonly amount: Amount;
}

/** What a batch has admitted so far (at the tip), counted against the requests after it. */
export interface Pending {
  total: Amount;
  readonly byAccount: Map<string, Amount>;
}

/** Nothing admitted before: a check alone. */
export const NOTHING_PENDING: Pending = { total: 0n, byAccount: new Map() };

/**
 * Whether a window that applies reports no room now, and the tip from which every one is
 * complete (`at`; null while blocks are held: no tip is known); undefined when all are now.
 */
export function incompleteFor(
  state: LimitsState,
  r: ResolvedCaps,
  mints = false,
): { readonly at: number | null } | undefined {
  const status = mints
    ? windowsStatus(state, r.rollingMintBlocks, r.accountRollingMintBlocks, true)
    : windowsStatus(state, r.rollingWithdrawalBlocks, r.accountRollingWithdrawalBlocks);
  if (status === COMPLETE) return undefined;
  return status.held ? HELD : { at: status.completeAt };
}

// While blocks are held, the tip from which the windows have room again is not known.
const HELD = { at: null } as const;

/**
 * The earliest tip height ≥ the tip at which `request` passes, with `pending` (admitted
 * earlier in a batch) withdrawn (or, `mints`, minted) at the tip: they leave a window `blocks`
 * blocks later. For a deposit, only the mint windows are counted: the caller checked the rest.
 */
export function availableAt(
  state: LimitsState,
  request: Request,
  pending: Pending,
  mints = false,
): number | null {
  // The callers checked the request is well formed.
  if (state.tip === null || pegFailure(state) !== null) return null;
  const { account, amount } = request;
  const r = resolvedCaps(state, account);
  if (!mints && r.perWithdrawalCap !== null && amount > r.perWithdrawalCap) return null;
  const incomplete = incompleteFor(state, r, mints);
  if (incomplete !== undefined && incomplete.at === null) return null;
  let height = Math.max(state.tip, incomplete?.at ?? state.tip);
  const entry = mapGet(state.entries, account);
  const kind = mints ? 'mint' : 'withdrawal';
  const windows: Array<[Amount | null, Amount | null, SumNode | undefined, Amount, CapAt]> = [
    [
      mints ? r.rollingMintBlocks : r.rollingWithdrawalBlocks,
      mints ? r.rollingMintCap : r.rollingWithdrawalCap,
      mints ? state.mintSums : state.historySums,
      pending.total,
      (mints ? r.rollingMintCapShare : r.rollingWithdrawalCapShare) === null
        ? undefined
        : { at: (u) => globalWindowCapAt(state, u, kind), top: highestObservedTip(state.totals) },
    ],
    [
      mints ? r.accountRollingMintBlocks : r.accountRollingWithdrawalBlocks,
      mints ? r.accountRollingMintCap : r.accountRollingWithdrawalCap,
      mints ? accountMintTree(state, account) : accountTree(state, account),
      pending.byAccount.get(account) ?? 0n,
      (mints ? r.accountRollingMintCapShare : r.accountRollingWithdrawalCapShare) === null ||
      entry === undefined
        ? undefined
        : {
            at: (u) => entryWindowCapAt(state, entry, account, u, kind),
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
