/**
 * The books: the own per-block sums of each account whose entry sets its own window (no
 * other limit reads them), one shelf for withdrawals and one for mints (an entry's own mint
 * window). Heights that leave the history are cleared from a book lazily, the next time it
 * is read or changed.
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
import type { Caps } from './limits.js';
import type { Owner, PMap } from './pmap.js';
import { mapDelete, mapForEach, mapGet, mapSet, ownerToken } from './pmap.js';
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

type BookCache = NonNullable<Draft['bookCache']>;

/** Which books: the withdrawals' (`books`) or the mints' (`mintBooks`), each with its cache. */
type Shelf = 'withdrawals' | 'mints';

/** The draft's cache of the books of `shelf`, made on first use. */
function shelfCache(d: Draft, shelf: Shelf): BookCache {
  if (shelf === 'withdrawals') {
    d.bookCache ??= new Map();
    return d.bookCache;
  }
  d.mintBookCache ??= new Map();
  return d.mintBookCache;
}

function bookOf(d: Draft, cache: BookCache, shelf: Shelf, account: string): Book | undefined {
  let b = cache.get(account);
  if (b === undefined) {
    b = mapGet(shelf === 'withdrawals' ? d.books : d.mintBooks, account) ?? NO_BOOK;
    cache.set(account, b);
  }
  return b === NO_BOOK || b === DROPPED_BOOK ? undefined : b;
}

// A book this call owns, clean up to the draft's highest tip.
function ownBook(d: Draft, cache: BookCache, account: string, book: Book): Book {
  if (book.owner === d.owner && book.upTo === d.highestTip) return book;
  const tree = cleanTree(d, book, d.owner);
  if (book.owner === d.owner) {
    book.tree = tree;
    book.upTo = d.highestTip;
    return book;
  }
  const owned: Book = { tree, upTo: d.highestTip, owner: d.owner };
  cache.set(account, owned);
  return owned;
}

/**
 * An entry gained its own window: its sums over the retained history must be exact (docs/semantics.md,
 * "Account entries"), so the account's held withdrawals are summed once: O(withdrawals held), for this
 * rare operator event only.
 */
function openBook(d: Draft, account: string): void {
  const book: Book = { tree: d.treeShape.empty, upTo: d.highestTip, owner: d.owner };
  forEachHeld(d, (w) => {
    if (w.account === account && !w.rejected)
      book.tree = addAt(d.treeShape, book.tree, w.height, w.amount, 1, undefined, d.owner);
  });
  shelfCache(d, 'withdrawals').set(account, book);
}

/**
 * An entry gained its own mint window: the account's held mints are summed once (O(mints
 * held), for this rare operator event only).
 */
function openMintBook(d: Draft, account: string): void {
  const book: Book = { tree: d.treeShape.empty, upTo: d.highestTip, owner: d.owner };
  mapForEach(d.mints, (m) => {
    if (m.account === account)
      book.tree = addAt(d.treeShape, book.tree, m.height, m.amount, 1, undefined, d.owner);
  });
  shelfCache(d, 'mints').set(account, book);
}

/**
 * An account's entry went from `before` to `after`: only an entry that sets its own window
 * keeps its own per-block sums, so a book opens with the window and is dropped with it (of
 * its withdrawals, and of its mints for its own mint window).
 */
export function entryBooks(d: Draft, account: string, before: Caps, after: Caps): void {
  const had = before.rollingWithdrawalBlocks !== null;
  const has = after.rollingWithdrawalBlocks !== null;
  if (has && !had) openBook(d, account);
  else if (had && !has) shelfCache(d, 'withdrawals').set(account, DROPPED_BOOK);
  const hadMint = before.rollingMintBlocks !== null;
  const hasMint = after.rollingMintBlocks !== null;
  if (hasMint && !hadMint) openMintBook(d, account);
  else if (hadMint && !hasMint) shelfCache(d, 'mints').set(account, DROPPED_BOOK);
}

/** Adds `delta` (and `count` withdrawals) at `height` to the account's own book, when it has one. */
export function bookAdd(
  d: Draft,
  account: string,
  height: Height,
  delta: bigint,
  count: number,
  shelf: Shelf = 'withdrawals',
): void {
  const cache = shelfCache(d, shelf);
  const book = bookOf(d, cache, shelf, account);
  if (book === undefined) return;
  const owned = ownBook(d, cache, account, book);
  owned.tree = addAt(d.treeShape, owned.tree, height, delta, count, undefined, d.owner);
}

/** Writes the books a call changed, opened or dropped into the draft's map of books. */
export function flushBooks(d: Draft): void {
  if (d.bookCache !== undefined) d.books = flushed(d, d.books, d.bookCache);
  if (d.mintBookCache !== undefined) d.mintBooks = flushed(d, d.mintBooks, d.mintBookCache);
}

function flushed(d: Draft, books: PMap<Book>, cache: BookCache): PMap<Book> {
  let out = books;
  for (const [account, book] of cache) {
    if (book === DROPPED_BOOK) out = mapDelete(out, account, d.owner);
    else if (book !== NO_BOOK && book.owner === d.owner) out = mapSet(out, account, book, d.owner);
  }
  return out;
}
