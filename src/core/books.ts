/**
 * The books: the own per-block sums of each account whose entry sets its own window (no
 * other limit reads them). Heights that leave the history are cleared from a book lazily,
 * the next time it is read or changed.
 */

import {
  type Book,
  DROPPED_BOOK,
  type Draft,
  type Height,
  type LimitsState,
  NO_BOOK,
} from './draft.js';
import { heightsLeaving } from './heights.js';
import type { Owner } from './pmap.js';
import { mapDelete, mapGet, mapSet, ownerToken } from './pmap.js';
import { addAt, clearHeights, type SumNode } from './sum-tree.js';
import { forEachHeld } from './withdrawals.js';

// Heights that left the history since the book was last clean are cleared from its tree.
function cleanTree(
  s: Pick<LimitsState, 'treeShape' | 'historyBlocks' | 'highestTip'>,
  book: Book,
  owner: Owner,
): SumNode {
  const { upTo } = book;
  const highest = s.highestTip;
  if (upTo === null || highest === null || upTo === highest) return book.tree;
  // A reorganization never lowers the highest tip: only heights below it have left.
  if (highest - s.historyBlocks >= upTo) return s.treeShape.empty;
  const leaving = heightsLeaving(s.historyBlocks, upTo, highest);
  return leaving === undefined
    ? book.tree
    : clearHeights(s.treeShape, book.tree, leaving.from, leaving.to, owner);
}

/** The per-block sums of an account's book, with the heights that left the history cleared. @internal */
export function bookTree(state: LimitsState, book: Book): SumNode {
  return cleanTree(state, book, ownerToken(true));
}

function bookOf(d: Draft, account: string): Book | undefined {
  d.bookCache ??= new Map();
  let b = d.bookCache.get(account);
  if (b === undefined) {
    b = mapGet(d.books, account) ?? NO_BOOK;
    d.bookCache.set(account, b);
  }
  return b === NO_BOOK || b === DROPPED_BOOK ? undefined : b;
}

// A book this call owns, clean up to the draft's highest tip.
function ownBook(d: Draft, account: string, book: Book): Book {
  if (book.owner === d.owner && book.upTo === d.highestTip) return book;
  const tree = cleanTree(d, book, d.owner);
  if (book.owner === d.owner) {
    book.tree = tree;
    book.upTo = d.highestTip;
    return book;
  }
  const owned: Book = { tree, upTo: d.highestTip, owner: d.owner };
  d.bookCache!.set(account, owned);
  return owned;
}

/**
 * An entry gained its own window: its sums over the retained history must be exact (docs/semantics.md,
 * "Account entries"), so the account's held withdrawals are summed once: O(withdrawals held), for this
 * rare operator event only.
 */
export function openBook(d: Draft, account: string): void {
  const book: Book = { tree: d.treeShape.empty, upTo: d.highestTip, owner: d.owner };
  forEachHeld(d, (w) => {
    if (w.account === account && !w.rejected)
      book.tree = addAt(d.treeShape, book.tree, w.height, w.amount, 1, undefined, d.owner);
  });
  d.bookCache ??= new Map();
  d.bookCache.set(account, book);
}

/** Adds `delta` (and `count` withdrawals) at `height` to the account's own book, when it has one. */
export function bookAdd(
  d: Draft,
  account: string,
  height: Height,
  delta: bigint,
  count: number,
): void {
  const book = bookOf(d, account);
  if (book === undefined) return;
  const owned = ownBook(d, account, book);
  owned.tree = addAt(d.treeShape, owned.tree, height, delta, count, undefined, d.owner);
}

/** Writes the books a call changed, opened or dropped into the draft's map of books. */
export function flushBooks(d: Draft, cache: NonNullable<Draft['bookCache']>): void {
  for (const [account, book] of cache) {
    if (book === DROPPED_BOOK) d.books = mapDelete(d.books, account, d.owner);
    else if (book !== NO_BOOK && book.owner === d.owner)
      d.books = mapSet(d.books, account, book, d.owner);
  }
}
