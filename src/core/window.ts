/**
 * The rolling window's arithmetic: which heights a window of `B` blocks at the tip covers
 * (the retained ones), what was withdrawn in it, and from which tip height it has room for
 * an amount. The per-block sums it reads are the ring's (`sum-tree.ts`): the global ones, or an
 * account's own book.
 */
import { type Amount, roomLeft } from './amount.js';
import { bookTree } from './books.js';
import { type LimitsState, oldestRetained } from './draft.js';
import { isAccountName } from './limits.js';
import { mapGet } from './pmap.js';
import { firstHeightReaching, type SumNode, sumHeights } from './sum-tree.js';

/** The first height of a window of `blocks` at the tip that still has data, and the tip. */
export function windowSpan(
  state: LimitsState,
  blocks: Amount,
): { from: number; to: number } | undefined {
  if (state.tip === null) return undefined;
  const from = Math.max(state.tip - Number(blocks) + 1, oldestRetained(state));
  return { from, to: state.tip };
}

/**
 * When a window of `blocks` at the tip reaches below the height from which the history is
 * complete (`historyCompleteFrom`), the tip at which it no longer does: the first tip whose
 * window holds only heights the state was told of. `null` when the window is complete now.
 * Before any block, a state whose history starts late knows no window: incomplete.
 */
function incompleteUntil(state: LimitsState, blocks: Amount, from: number | null): number | null {
  if (from === null) return null;
  const at = from + Number(blocks) - 1;
  if (state.tip !== null && state.tip >= at) return null;
  return Math.min(at, Number.MAX_SAFE_INTEGER);
}

// The last window sum read of each tree (a state's ring of withdrawals or of mints, a book):
// a tree of a state never changes once the state is made, so every view and check of one
// state reads its window's sum once.
const windowSums = new WeakMap<SumNode, { from: number; to: number; sum: Amount }>();

/**
 * The sum withdrawn (not rejected) in the window of `blocks` ending at the tip, of the tree
 * given (the withdrawals', the mints', a book).
 */
export function withdrawnIn(state: LimitsState, tree: SumNode | undefined, blocks: Amount): Amount {
  const span = windowSpan(state, blocks);
  if (span === undefined || tree === undefined) return 0n;
  const known = windowSums.get(tree);
  if (known !== undefined && known.from === span.from && known.to === span.to) return known.sum;
  const sum = sumHeights(state.treeShape, tree, span.from, span.to);
  windowSums.set(tree, { from: span.from, to: span.to, sum });
  return sum;
}

/**
 * The smallest tip height ≥ the current tip at which the window of `blocks` ending there
 * has at most `room` withdrawn, counting only what is withdrawn now.
 */
export function heightWithin(
  state: LimitsState,
  tree: SumNode | undefined,
  blocks: Amount,
  room: Amount,
): number | undefined {
  const span = windowSpan(state, blocks);
  if (span === undefined) return undefined;
  if (tree === undefined) return span.to;
  const need = sumHeights(state.treeShape, tree, span.from, span.to) - room;
  if (need <= 0n) return span.to;
  const p = firstHeightReaching(state.treeShape, tree, span.from, span.to, need);
  // p exists: the whole span sums to more than `need`.
  if (p === undefined) return undefined;
  // The window frees up at p + blocks; past the largest safe height no block can reach it.
  const at = p + Number(blocks);
  return at > Number.MAX_SAFE_INTEGER ? undefined : at;
}

/**
 * The per-block sums of one account's own withdrawals, kept only when its entry sets its own
 * window (no other limit reads them); `undefined` otherwise, or for a malformed name.
 */
export function accountTree(state: LimitsState, account: string): SumNode | undefined {
  if (!isAccountName(account)) return undefined;
  const book = mapGet(state.books, account);
  return book === undefined ? undefined : bookTree(state, book);
}

/** The same of one account's own mints, kept only when its entry sets its own mint window. */
export function accountMintTree(state: LimitsState, account: string): SumNode | undefined {
  if (!isAccountName(account)) return undefined;
  const book = mapGet(state.mintBooks, account);
  return book === undefined ? undefined : bookTree(state, book);
}

/** Whether the room of the windows that apply is known now: see {@link windowsStatus}. */
interface WindowStatus {
  /**
   * The tip from which every one of them holds only heights the state was told of
   * ({@link incompleteUntil}); `null` when they all do now.
   */
  readonly completeAt: number | null;
  /** Whether a feed holds blocks past the chain bounds (`blocksHeld`): no room is known. */
  readonly held: boolean;
}

/** The status of windows whose room is known. */
export const COMPLETE: WindowStatus = { completeAt: null, held: false };

/**
 * Whether the windows of these lengths (`null`: no such window) report their room now: not
 * while one reaches below the height from which the history is complete (the mints' own,
 * `mintHistoryCompleteFrom`, for mint windows) (then `completeAt`
 * says from which tip all do), nor while blocks are held. The one rule every view and check
 * of a window follows; {@link COMPLETE} when the room is known.
 */
export function windowsStatus(
  state: LimitsState,
  blocks: Amount | null,
  ownBlocks: Amount | null = null,
  mints = false,
): WindowStatus {
  if (blocks === null && ownBlocks === null) return COMPLETE;
  // Withdrawals and mints each have their own complete history.
  const from = mints ? state.mintCompleteFrom : state.completeFrom;
  let completeAt: number | null = null;
  for (const b of [blocks, ownBlocks]) {
    if (b === null) continue;
    const u = incompleteUntil(state, b, from);
    if (u !== null && (completeAt === null || u > completeAt)) completeAt = u;
  }
  const held = state.heldFrom !== null;
  return completeAt === null && !held ? COMPLETE : { completeAt, held };
}

/**
 * The room a window leaves: its cap less what is withdrawn in it (never negative), or `null`
 * while its room is not known (`status` is not {@link COMPLETE}).
 */
export function roomIn(status: WindowStatus, cap: Amount, withdrawn: Amount): Amount | null {
  return status === COMPLETE ? roomLeft(cap, withdrawn) : null;
}
