/**
 * The mints (docs/semantics.md, "The mint window"): `depositMinted`, each counted at the
 * base-chain height of the block that minted it, in a ring of per-block sums beside the
 * withdrawals' (and, for an account whose entry sets its own mint window, in its own book);
 * `mintHistoryCompleteFrom`; and what a block and a reorganization do to them. A mint does
 * not move the pegged total: `peggedTotalObserved` does, from the chain.
 */
import { bookAdd } from './books.js';
import { type Draft, type Height, NO_BOOK, oldestRetained } from './draft.js';
import { fail } from './errors.js';
import { requireHeight, requireId, requireTransfer } from './heights.js';
import { mapDelete, mapGet, mapSet } from './pmap.js';
import { addAt, clearHeights, visitHeights } from './sum-tree.js';

/**
 * `depositMinted`: a mint the chain made counts against the mint windows from its height. The
 * same id again with the same payload is a no-op, with another one `duplicate_deposit`; a
 * height above the tip is refused; older than the retained history it counts nowhere.
 */
export function depositMinted(d: Draft, e: Record<string, unknown>): void {
  const id = requireId(e.id, 'id', 'deposit');
  const { account, amount, height } = requireTransfer(d, e);
  const known = mapGet(d.mints, id);
  if (known !== undefined) {
    if (known.account === account && known.amount === amount && known.height === height) return;
    fail(
      'duplicate_deposit',
      `deposit "${id}" is already minted with another payload (account ${JSON.stringify(known.account)}, amount ${known.amount}, height ${known.height})`,
      'id',
    );
  }
  if (height < oldestRetained(d)) return;
  d.mints = mapSet(d.mints, id, { id, account, amount, height }, d.owner);
  d.mintSums = addAt(d.treeShape, d.mintSums, height, amount, 1, id, d.owner);
  if (d.mintBookCache?.get(account) !== NO_BOOK) bookAdd(d, account, height, amount, 1, 'mints');
  d.changed = true;
}

// The mints at heights from..to: out of the id map, and out of the books when `books`.
function removeMints(d: Draft, from: Height, to: Height, books: boolean): void {
  // No mint ever held: nothing to visit (every block of a state without mints comes here).
  if (d.mintSums === d.treeShape.empty) return;
  visitHeights(d.treeShape, d.mintSums, from, to, (id) => {
    const m = mapGet(d.mints, id);
    if (m === undefined || m.height < from || m.height > to) return;
    d.mints = mapDelete(d.mints, id, d.owner);
    if (books) bookAdd(d, m.account, m.height, -m.amount, -1, 'mints');
  });
  d.mintSums = clearHeights(d.treeShape, d.mintSums, from, to, d.owner);
}

/** A reorganization forgets the mints above the new tip, as it forgets withdrawal requests. */
export function dropMints(d: Draft, from: Height, to: Height): void {
  removeMints(d, from, to, true);
}

/**
 * Heights leave the history (the highest tip rose): their mints are forgotten; the books
 * clear those heights when next read or changed.
 */
export function forgetMints(d: Draft, leaving: { from: Height; to: Height } | undefined): void {
  if (leaving !== undefined) removeMints(d, leaving.from, leaving.to, false);
}

/**
 * `mintHistoryCompleteFrom`: every mint at `height` and above is known; a mint window that
 * reaches below it reports no room. Lowering it frees room, so it is a loosening (`changes.ts`
 * and `loosening.ts` hold it where loosening waits).
 */
export function mintHistoryCompleteFrom(d: Draft, e: Record<string, unknown>): void {
  const height = requireHeight(e.height, 'height');
  if (d.mintCompleteFrom === height) return;
  d.mintCompleteFrom = height;
  d.changed = true;
}
