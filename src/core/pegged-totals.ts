/**
 * The pegged totals observed (`peggedTotalObserved`), global and per account, and the basis a
 * window cap's share applies to (docs/semantics.md, "A share an attack cannot raise"): not
 * the latest total, which a forged mint raises at once, but the lowest total in force during
 * the window. Each observation is kept with the tip at which it was applied; at tip `t` with
 * a window of `B` blocks, the basis is the lowest of the totals applied at a tip at or above
 * `t − B + 1` and of the last one applied at a lower tip (or before any block). A fall counts
 * at once; a rise once the lower totals have left the window. Nothing observed is a total of 0.
 */
import { type Amount, requireCap } from './amount.js';
import type { Draft, Height, Observation } from './draft.js';
import { requireAccount } from './limits.js';
import { mapDelete, mapGet, mapSet } from './pmap.js';

const NONE: ReadonlyArray<Observation> = [];

// `list` with `observation` added: the draft's own copy (made once per call), the oldest
// observations no window can reach again left out. A window starts at t − B + 1 with t no
// lower than the oldest height retained and B no longer than the history, so at or above
// `floor`; below it only the last observation applied can still be "the one in force".
function appended(
  d: Draft,
  list: ReadonlyArray<Observation>,
  observation: Observation,
  owned: boolean,
) {
  const out = owned ? (list as Observation[]) : list.slice();
  out.push(observation);
  if (d.highestTip !== null) {
    const floor = d.highestTip - 2 * d.historyBlocks + 2;
    const low = (o: Observation) => o.tip === null || o.tip < floor;
    let drop = 0;
    while (drop + 1 < out.length && low(out[drop]!) && low(out[drop + 1]!)) drop++;
    if (drop > 0) out.splice(0, drop);
  }
  return out;
}

// Whether `observation` repeats the last one of `list` (the same total at the same tip): it
// moves no basis. The same total at another tip is a new observation: after a
// reorganization below it, it is what keeps a later mint from raising its own cap.
function repeats(list: ReadonlyArray<Observation>, observation: Observation): boolean {
  const last = list[list.length - 1];
  return last !== undefined && last.total === observation.total && last.tip === observation.tip;
}

/**
 * `peggedTotalObserved`: the pegged-in total, global or of one account, as read from the
 * chain, recorded with the tip, whether or not it equals the last one (the same total at
 * the same tip again is one observation).
 */
export function peggedTotalObserved(d: Draft, e: Record<string, unknown>): void {
  const total = requireCap(e.total, 'total');
  const observation: Observation = { tip: d.tip, total };
  if (e.account === undefined) {
    if (d.peggedTotal !== total) d.changed = true;
    d.peggedTotal = total;
    if (repeats(d.totals, observation)) return;
    d.totals = appended(d, d.totals, observation, d.totalsOwned);
    d.totalsOwned = true;
    d.changed = true;
    return;
  }
  const account = requireAccount(e.account, 'account');
  const list = mapGet(d.accountTotals, account) ?? NONE;
  if ((mapGet(d.accountPegged, account) ?? 0n) !== total) {
    d.accountPegged =
      total === 0n
        ? mapDelete(d.accountPegged, account, d.owner)
        : mapSet(d.accountPegged, account, total, d.owner);
    d.changed = true;
  }
  if (repeats(list, observation)) return;
  // An account's list is copied whole when it changes: accounts with a share are few.
  d.accountTotals = mapSet(
    d.accountTotals,
    account,
    appended(d, list, observation, false),
    d.owner,
  );
  d.changed = true;
}

// The last bases computed for a list, one per window length (the withdrawal window's and the
// mint window's; lists are shared by the states that did not change them, so a view of an
// unchanged state finds them here).
interface Computed {
  tip: Height | null;
  blocks: Amount;
  basis: Amount;
  other: Computed | undefined;
}
const computed = new WeakMap<ReadonlyArray<Observation>, Computed>();

/**
 * The basis of a window of `blocks` at `tip` over the observations `list`: the lowest total
 * in force during the window (see the module's rule); 0 when nothing was observed.
 */
export function shareBasis(
  list: ReadonlyArray<Observation> | undefined,
  tip: Height | null,
  blocks: Amount,
): Amount {
  if (list === undefined || list.length === 0) return 0n;
  const known = computed.get(list);
  for (let k = known; k !== undefined; k = k.other)
    if (k.tip === tip && k.blocks === blocks) return k.basis;
  // Before any block every observation is "before": the last one applied is in force.
  const from = tip === null ? Number.POSITIVE_INFINITY : tip - Number(blocks) + 1;
  let basis: Amount | undefined;
  let lastBefore = false;
  for (let i = list.length - 1; i >= 0; i--) {
    const o = list[i]!;
    const inWindow = o.tip !== null && o.tip >= from;
    if (!inWindow) {
      if (lastBefore) continue;
      lastBefore = true;
    }
    if (basis === undefined || o.total < basis) basis = o.total;
  }
  const result = basis ?? 0n;
  // Kept beside the last one of the other length (two windows read one list).
  const other = known === undefined || known.blocks === blocks ? known?.other : known;
  computed.set(list, {
    tip,
    blocks,
    basis: result,
    other: other && { ...other, other: undefined },
  });
  return result;
}

/**
 * The highest tip any of `list` was applied at (`null` when none was applied at a tip): past
 * it and one window, every observation is before the window, and the basis is the total
 * last applied.
 */
export function highestObservedTip(list: ReadonlyArray<Observation> | undefined): Height | null {
  let top: Height | null = null;
  for (const o of list ?? NONE) if (o.tip !== null && (top === null || o.tip > top)) top = o.tip;
  return top;
}
