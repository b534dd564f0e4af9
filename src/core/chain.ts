/**
 * What the chain reports (the README, "Events"): blocks, reorganizations, withdrawals and their
 * rejections (mints are `mints.ts`'s). Each rule validates its event, then changes the draft:
 * the ring of per-block sums, the withdrawal index and the books of the accounts with a window
 * of their own.
 */
import { bookAdd } from './books.js';
import { type Draft, type Height, NO_BOOK, oldestRetained } from './draft.js';
import { fail } from './errors.js';
import { heightsLeaving, requireHeight, requireId, requireTransfer } from './heights.js';
import { dropMints, forgetMints } from './mints.js';
import { addAt, clearHeights, visitHeights } from './sum-tree.js';
import {
  findWithdrawal,
  forgetBefore,
  putWithdrawal,
  rejectWithdrawal,
  removeWithdrawal,
} from './withdrawals.js';

// Removes every withdrawal at heights from..to (all inside the history) from the id map,
// the books and the ring: a reorganization, rare and shallow, so one by one.
function dropHeights(d: Draft, from: Height, to: Height): void {
  visitHeights(d.treeShape, d.historySums, from, to, (id) => {
    const held = findWithdrawal(d, id);
    if (held === undefined) return;
    const w = held.withdrawal;
    if (w.height < from || w.height > to) return;
    removeWithdrawal(d, held);
    if (!w.rejected) bookAdd(d, w.account, w.height, -w.amount, -1);
  });
  d.historySums = clearHeights(d.treeShape, d.historySums, from, to, d.owner);
  dropMints(d, from, to);
  d.changed = true;
}

// The highest tip rises to `after`: the heights that leave the history are forgotten in
// bulk. The index first (it reads their ids in the ring), then the ring clears them as a
// range; the books clear them when next read or changed.
function forget(d: Draft, after: Height): void {
  const leaving = heightsLeaving(d.historyBlocks, d.highestTip, after);
  forgetBefore(d, after, leaving);
  if (leaving !== undefined)
    d.historySums = clearHeights(d.treeShape, d.historySums, leaving.from, leaving.to, d.owner);
  forgetMints(d, leaving);
}

/** `blockConnected`: the tip moves up to `height`; the heights that leave the window are cleared. */
export function blockConnected(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.tip !== null && height <= d.tip) {
    fail(
      'height_not_above_tip',
      `a connected block must be above the tip ${d.tip}, got ${height}`,
      'height',
    );
  }
  if (d.highestTip === null || height > d.highestTip) {
    forget(d, height);
    d.highestTip = height;
  }
  d.tip = height;
  d.changed = true;
}

/** `chainReorganized`: the tip goes back to `height`; what was requested above it is dropped. */
export function chainReorganized(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.tip === null || height >= d.tip) {
    fail(
      'height_not_below_tip',
      d.tip === null
        ? 'no block is known yet, so there is nothing to reorganize'
        : `a reorganization must go below the tip ${d.tip}, got ${height}`,
      'height',
    );
  }
  const oldest = oldestRetained(d);
  if (height < oldest) {
    fail(
      'reorg_too_deep',
      `height ${height} is below the retained history (${oldest}…${d.highestTip}); raise historyBlocks to allow deeper reorganizations`,
      'height',
    );
  }
  dropHeights(d, height + 1, d.tip);
  d.tip = height;
}

/** `withdrawalRequested`: a withdrawal counts against the windows from its height. */
export function withdrawalRequested(d: Draft, e: Record<string, unknown>): void {
  const id = requireId(e.id, 'id');
  const { account, amount, height } = requireTransfer(d, e);
  const held = findWithdrawal(d, id);
  if (held !== undefined) {
    const known = held.withdrawal;
    if (known.account === account && known.amount === amount && known.height === height) return;
    fail(
      'duplicate_withdrawal',
      `withdrawal "${id}" is already known with another payload (account ${JSON.stringify(known.account)}, amount ${known.amount}, height ${known.height})`,
      'id',
    );
  }
  // Older than the retained history: accepted, counted nowhere.
  if (height < oldestRetained(d)) return;
  putWithdrawal(d, { id, account, amount, height, rejected: false });
  d.historySums = addAt(d.treeShape, d.historySums, height, amount, 1, id, d.owner);
  // A book looked up earlier in this call may say the account keeps none.
  if (d.bookCache?.get(account) !== NO_BOOK) bookAdd(d, account, height, amount, 1);
  d.changed = true;
}

// The withdrawal an event names by its id, which the state must hold.
function heldOf(d: Draft, e: Record<string, unknown>) {
  const id = requireId(e.id, 'id');
  const held = findWithdrawal(d, id);
  if (held === undefined) {
    fail(
      'unknown_withdrawal',
      `no withdrawal "${id}" is held (never requested, dropped by a reorganization, or older than the history)`,
      'id',
    );
  }
  return held;
}

/** `withdrawalRejected`: a held withdrawal stops counting; it is kept to be undone by a fork. */
export function withdrawalRejected(d: Draft, e: Record<string, unknown>): void {
  const held = heldOf(d, e);
  const w = held.withdrawal;
  if (w.rejected) return;
  rejectWithdrawal(d, held);
  d.historySums = addAt(d.treeShape, d.historySums, w.height, -w.amount, 0, undefined, d.owner);
  bookAdd(d, w.account, w.height, -w.amount, -1);
  d.changed = true;
}

/**
 * A rejection undone (the block that carried it was orphaned): the withdrawal counts again,
 * at its own height. Undoing a rejection that is not there changes nothing.
 */
export function withdrawalRejectionUndone(d: Draft, e: Record<string, unknown>): void {
  const held = heldOf(d, e);
  const w = held.withdrawal;
  if (!w.rejected) return;
  rejectWithdrawal(d, held, false);
  d.historySums = addAt(d.treeShape, d.historySums, w.height, w.amount, 0, undefined, d.owner);
  bookAdd(d, w.account, w.height, w.amount, 1);
  d.changed = true;
}
