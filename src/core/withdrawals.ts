/**
 * The withdrawal index: the withdrawals a state holds, by id, in one persistent map. A
 * withdrawal leaves the map when its height leaves the history; the ring lists the ids of
 * each height, so forgetting a block costs one delete per withdrawal it held, and the map
 * holds exactly what the state holds, never more.
 *
 * Five operations, all on a draft: {@link getWithdrawal}, {@link putWithdrawal},
 * {@link rejectWithdrawal}, {@link removeWithdrawal} (a reorganization) and
 * {@link forgetBefore} (heights leaving the history). Inside one call, changes go to the
 * draft's pending map (a plain `Map`) and are written into the persistent map once, at the
 * end ({@link flushWithdrawals}): a withdrawal added and forgotten within one batch (most
 * of a long replay) never touches the persistent map.
 */

import { type Draft, type Height, type LimitsState, REMOVED, type Withdrawal } from './draft.js';
import { mapDelete, mapForEach, mapGet, mapSet } from './pmap.js';
import { visitHeights } from './ring.js';

/** The withdrawal held under `id`, or `undefined`. */
export function getWithdrawal(d: Draft, id: string): Withdrawal | undefined {
  const p = d.pending?.get(id);
  if (p !== undefined) return p === REMOVED ? undefined : p;
  return mapGet(d.withdrawals, id);
}

function pendingOf(d: Draft): Map<string, Withdrawal | typeof REMOVED> {
  d.pending ??= new Map();
  return d.pending;
}

/** Holds a new withdrawal (its id must not be held). */
export function putWithdrawal(d: Draft, w: Withdrawal): void {
  pendingOf(d).set(w.id, w);
}

/** Marks a held withdrawal rejected. */
export function rejectWithdrawal(d: Draft, w: Withdrawal): void {
  const rejected: Withdrawal = {
    id: w.id,
    account: w.account,
    amount: w.amount,
    height: w.height,
    rejected: true,
  };
  pendingOf(d).set(w.id, rejected);
}

/** Stops holding the withdrawal `id` (a reorganization dropped its block). */
export function removeWithdrawal(d: Draft, id: string): void {
  pendingOf(d).set(id, REMOVED);
}

/**
 * Forgets the withdrawals at heights `from`…`before - 1`, which leave the history. Reads
 * their ids from the ring, so it must run before the ring clears those heights. A slot of
 * the ring only lists the ids of the one height it holds (heights are cleared as they
 * leave or are reorganized away), so every id listed there is one to forget.
 */
export function forgetBefore(d: Draft, from: Height, before: Height): void {
  const p = d.pending;
  visitHeights(d.ring, d.window, from, before - 1, (id) => {
    p?.delete(id);
    d.withdrawals = mapDelete(d.withdrawals, id, d.owner);
  });
}

/** Writes the changes of one call into the persistent map. */
export function flushWithdrawals(d: Draft): void {
  const p = d.pending;
  if (p === undefined) return;
  let map = d.withdrawals;
  for (const [id, w] of p)
    map = w === REMOVED ? mapDelete(map, id, d.owner) : mapSet(map, id, w, d.owner);
  d.withdrawals = map;
  d.pending = undefined;
}

/** Calls `fn` with every withdrawal a draft holds, the ones this call changed included. */
export function forEachHeld(d: Draft, fn: (w: Withdrawal) => void): void {
  const p = d.pending;
  if (p !== undefined) for (const w of p.values()) if (w !== REMOVED) fn(w);
  mapForEach(d.withdrawals, (w, id) => {
    if (p === undefined || !p.has(id)) fn(w);
  });
}

/**
 * Calls `fn` with every withdrawal `state` holds (requested inside the retained history,
 * not dropped by a reorganization), in no particular order. @internal
 */
export function forEachWithdrawal(
  state: Pick<LimitsState, 'withdrawals'>,
  fn: (w: Withdrawal) => void,
): void {
  mapForEach(state.withdrawals, fn);
}
