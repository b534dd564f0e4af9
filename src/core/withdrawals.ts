/**
 * The withdrawal index: the withdrawals a state holds, by id, behind six operations on a
 * draft: {@link findWithdrawal}, {@link putWithdrawal}, {@link rejectWithdrawal},
 * {@link removeWithdrawal} (a reorganization), {@link forgetBefore} (the highest tip rises)
 * and {@link flushWithdrawals} (the end of a call). Nothing outside this module sees how it
 * stores them.
 *
 * They live in generations, youngest first: a generation takes the withdrawals requested
 * while it is the youngest, is sealed (with a Bloom filter of its ids) once it spans
 * 1/GENERATIONS of the history, and is dropped whole once everything in it has left the
 * history, so forgetting costs nothing per withdrawal. The youngest also carries a filter
 * of every sealed generation's ids, so a new id costs one bit test, not one per
 * generation. Inside one call, changes go through the draft's pending map and are written
 * into the generations once, at the end.
 *
 * Why not one persistent map, with forgetting fed by the ring's per-block id lists? It
 * was built and measured (docs/design.md, "The withdrawal index"): it passes every bar but
 * one, a chain of single applies at 100k held, where its deletes and its inserts into a
 * map of the whole history cost about twice what the generations do.
 */

import {
  type Draft,
  type Generation,
  type Height,
  type LimitsState,
  oldestRetained,
  REMOVED,
  type Withdrawal,
} from './draft.js';
import {
  emptyMap,
  hashOf,
  mapDelete,
  mapForEach,
  mapGet,
  mapSet,
  mapWalk,
  type PMap,
} from './pmap.js';
import { visitHeights } from './sum-tree.js';

/** How many generations the history is split into: at most 1/GENERATIONS of it lingers. */
const GENERATIONS = 8;

// A blocked Bloom filter: each id sets three bits in one 32-bit word, so a lookup costs one
// memory load. The word comes from the low bits of the id's hash, the three bits from other
// bits of a second hash. About 16 bits an id: ~1.5% false positives.
function filterWord(hash: number, mask: number): number {
  return hash & mask;
}

function filterBits(hash: number): number {
  const h = Math.imul(hash ^ (hash >>> 16), 0x45d9f3b);
  return (1 << (h & 31)) | (1 << ((h >>> 5) & 31)) | (1 << ((h >>> 10) & 31));
}

function mapKeysHashed(map: PMap<Withdrawal>): Uint32Array {
  const out = new Uint32Array(map.size);
  let n = 0;
  mapForEach(map, (_, id) => {
    out[n++] = hashOf(id);
  });
  return out;
}

// A filter sized for `n` ids, holding the ids of each hash list.
function filterOfHashes(lists: ReadonlyArray<Uint32Array>, n: number): Uint32Array {
  let words = 2;
  while (words * 32 < n * 16) words *= 2;
  const filter = new Uint32Array(words);
  const mask = words - 1;
  for (const hashes of lists) {
    for (let k = 0; k < hashes.length; k++) {
      const h = hashes[k]!;
      filter[filterWord(h, mask)]! |= filterBits(h);
    }
  }
  return filter;
}

// The filter of every sealed generation's ids (see Generation.older).
function olderFilterOf(gens: ReadonlyArray<Generation>): Uint32Array {
  const lists: Uint32Array[] = [];
  let n = 0;
  for (let i = 1; i < gens.length; i++) {
    const hashes = gens[i]!.hashes!;
    lists.push(hashes);
    n += hashes.length;
  }
  return filterOfHashes(lists, n);
}

function mayHold(filter: Uint32Array, hash: number): boolean {
  const bits = filterBits(hash);
  return (filter[filterWord(hash, filter.length - 1)]! & bits) === bits;
}

/**
 * A withdrawal the draft holds, and where: what {@link rejectWithdrawal} and
 * {@link removeWithdrawal} take, so that neither looks it up again.
 */
interface Held {
  readonly withdrawal: Withdrawal;
  /** The generation holding it (by the tip it was opened at); undefined: this call's own. */
  readonly home: Height | undefined;
}

/** The withdrawal the draft holds under `id` (inside the history), or `undefined`. */
export function findWithdrawal(d: Draft, id: string): Held | undefined {
  const oldest = oldestRetained(d);
  const p = d.pending?.get(id);
  if (p !== undefined) {
    // Ids are unique among the withdrawals held, so a pending entry decides.
    return p === REMOVED || p.height < oldest ? undefined : { withdrawal: p, home: undefined };
  }
  const gens = d.generations;
  const young = gens[0]!;
  // Hashed only when some map is looked in: a long batch holds its own in `pending`.
  let hash = -1;
  if (young.map.size !== 0) {
    hash = hashOf(id);
    const w = mapGet(young.map, id, hash);
    if (w !== undefined && w.height >= oldest)
      return { withdrawal: w, home: young.opened ?? undefined };
  }
  if (young.older !== undefined) {
    if (hash < 0) hash = hashOf(id);
    if (!mayHold(young.older, hash)) return undefined;
  }
  for (let i = 1; i < gens.length; i++) {
    const gen = gens[i]!;
    if (gen.map.size === 0) continue;
    if (hash < 0) hash = hashOf(id);
    if (!mayHold(gen.filter!, hash)) continue;
    const w = mapGet(gen.map, id, hash);
    if (w !== undefined && w.height >= oldest)
      return { withdrawal: w, home: gen.opened ?? undefined };
  }
  return undefined;
}

function pendingOf(d: Draft): Map<string, Withdrawal | typeof REMOVED> {
  d.pending ??= new Map();
  return d.pending;
}

/** Holds a new withdrawal (its id must not be held). */
export function putWithdrawal(d: Draft, w: Withdrawal): void {
  pendingOf(d).set(w.id, w);
}

/** Marks rejected a withdrawal {@link findWithdrawal} found. */
export function rejectWithdrawal(d: Draft, held: Held, rejected = true): void {
  const w = held.withdrawal;
  changeHeld(d, held, {
    id: w.id,
    account: w.account,
    amount: w.amount,
    height: w.height,
    rejected,
  });
}

/** Stops holding a withdrawal {@link findWithdrawal} found (a reorganization). */
export function removeWithdrawal(d: Draft, held: Held): void {
  changeHeld(d, held, REMOVED);
}

// Records a change to a withdrawal where it was found.
function changeHeld(d: Draft, held: Held, w: Withdrawal | typeof REMOVED): void {
  const id = held.withdrawal.id;
  const home = held.home;
  if (home !== undefined) {
    d.openedAtOf ??= new Map();
    d.openedAtOf.set(id, home);
    pendingOf(d).set(id, w);
  } else if (w === REMOVED && d.openedAtOf?.get(id) === undefined) {
    // Added during this call and never persisted: nothing to remove but the entry.
    d.pending!.delete(id);
  } else pendingOf(d).set(id, w);
}

function ownGens(d: Draft): Generation[] {
  if (!d.gensOwned) {
    d.generations = d.generations.slice();
    d.gensOwned = true;
  }
  return d.generations as Generation[];
}

/** Calls `fn` with every withdrawal the draft holds inside the history. */
export function forEachHeld(d: Draft, fn: (w: Withdrawal) => void): void {
  const oldest = oldestRetained(d);
  const p = d.pending;
  if (p !== undefined) for (const w of p.values()) if (w !== REMOVED && w.height >= oldest) fn(w);
  for (const gen of d.generations) {
    mapForEach(gen.map, (w, id) => {
      if (w.height >= oldest && (p === undefined || !p.has(id))) fn(w);
    });
  }
}

/**
 * Calls `fn` with every withdrawal `state` holds (requested inside the retained history,
 * not dropped by a reorganization), in no particular order. @internal
 */
export function forEachWithdrawal(state: LimitsState, fn: (w: Withdrawal) => void): void {
  const oldest = oldestRetained(state);
  for (const gen of state.generations) {
    mapForEach(gen.map, (w) => {
      if (w.height >= oldest) fn(w);
    });
  }
}

/**
 * A walk over what {@link forEachWithdrawal} visits that can stop and go on: each call
 * visits up to `budget` withdrawals and says whether the walk is done. @internal
 */
export function withdrawalWalk(
  state: LimitsState,
): (budget: number, fn: (w: Withdrawal) => void) => boolean {
  const oldest = oldestRetained(state);
  const gens = state.generations;
  let g = 0;
  let walk = gens.length > 0 ? mapWalk(gens[0]!.map) : undefined;
  return (budget, fn) => {
    // Each entry looked at costs one of the budget, held or not.
    let left = budget;
    while (walk !== undefined && left > 0) {
      let seen = 0;
      const done = walk(left, (w) => {
        seen++;
        if (w.height >= oldest) fn(w);
      });
      left -= seen;
      if (done) walk = ++g < gens.length ? mapWalk(gens[g]!.map) : undefined;
    }
    return walk === undefined;
  };
}

/**
 * Writes the changes of one call into the generations: new withdrawals into the youngest
 * (its height is at most the tip, and the youngest is dropped last), changed ones where
 * they live, unless a re-reported one is now above what its generation may hold.
 */
export function flushWithdrawals(d: Draft): void {
  const young = d.generations[0]!;
  const map = d.pending === undefined ? young.map : flushPending(d, d.pending);
  // A generation sealed during this call: the youngest has no filter of the older ones yet
  // (built after the sealed ones this call filled have their hashes).
  const older =
    young.older === undefined && d.generations.length > 1
      ? olderFilterOf(d.generations)
      : young.older;
  if (map !== young.map || older !== young.older)
    ownGens(d)[0] = {
      map,
      opened: young.opened,
      sealed: null,
      filter: undefined,
      hashes: undefined,
      older,
    };
}

// Writes the pending withdrawals into the sealed generations they belong to; returns the
// youngest's map with the rest in it (the caller puts it in place).
function flushPending(d: Draft, pending: NonNullable<Draft['pending']>): PMap<Withdrawal> {
  const gens = ownGens(d);
  const oldest = oldestRetained(d);
  const young = gens[0]!;
  let youngMap = young.map;
  // Only withdrawals this call changed that were persisted before it touch older maps.
  const maps = d.openedAtOf === undefined ? undefined : gens.map((g) => g.map);
  // Sealed generations this call made, oldest first: nobody else holds them, so new
  // withdrawals may go there (their filters are rebuilt below).
  const freshTargets = freshSealed(d, gens);
  for (const [id, w] of pending) {
    if (maps !== undefined) {
      const opened = d.openedAtOf!.get(id);
      const at = opened === undefined ? -1 : gens.findIndex((g) => g.opened === opened);
      if (at >= 0) {
        const home = gens[at]!;
        if (w !== REMOVED && (home.sealed === null || w.height <= home.sealed)) {
          if (at === 0) youngMap = mapSet(youngMap, id, w, d.owner);
          else maps[at] = mapSet(maps[at]!, id, w, d.owner);
          continue;
        }
        if (at === 0) youngMap = mapDelete(youngMap, id, d.owner);
        else maps[at] = mapDelete(maps[at]!, id, d.owner);
      }
    }
    if (w !== REMOVED && w.height >= oldest) {
      const hash = hashOf(id);
      const at = freshTargets === undefined ? -1 : targetOf(freshTargets, w.height);
      if (at >= 0) {
        // A generation this call sealed, that may still hold this height: a long batch
        // spreads its withdrawals over generations as single events would have.
        const t = freshTargets![at]!;
        t.map = mapSet(t.map, id, w, d.owner, hash);
        t.hashes.push(hash);
        continue;
      }
      youngMap = mapSet(youngMap, id, w, d.owner, hash);
    }
  }
  // The generations that held changed withdrawals, then the ones this call sealed and
  // filled (never the same: those held nothing before this call).
  if (maps !== undefined) {
    for (let i = 1; i < gens.length; i++) {
      const g = gens[i]!;
      if (maps[i] !== g.map)
        gens[i] = {
          map: maps[i]!,
          opened: g.opened,
          sealed: g.sealed,
          filter: g.filter,
          hashes: g.hashes,
          older: undefined,
        };
    }
  }
  if (freshTargets !== undefined) {
    for (const t of freshTargets) {
      if (t.hashes.length === 0) continue;
      const g = gens[t.index]!;
      const hashes = Uint32Array.from(t.hashes);
      gens[t.index] = {
        map: t.map,
        opened: g.opened,
        sealed: g.sealed,
        filter: filterOfHashes([hashes], hashes.length),
        hashes,
        older: undefined,
      };
    }
  }
  return youngMap;
}

interface FreshTarget {
  readonly index: number;
  readonly sealed: Height;
  map: PMap<Withdrawal>;
  readonly hashes: number[];
}

function freshSealed(d: Draft, gens: Generation[]): FreshTarget[] | undefined {
  if (d.ownGenerations === undefined) return undefined;
  const out: FreshTarget[] = [];
  for (let i = gens.length - 1; i >= 1; i--) {
    const g = gens[i]!;
    // Only an empty one: its filter then covers exactly what goes in now.
    if (d.ownGenerations.has(g) && g.sealed !== null && g.map.size === 0)
      out.push({ index: i, sealed: g.sealed, map: g.map, hashes: [] });
  }
  return out.length === 0 ? undefined : out;
}

// The oldest target that may hold `height` (sealed at or above it), or -1 for the youngest.
function targetOf(targets: ReadonlyArray<FreshTarget>, height: Height): number {
  for (let i = 0; i < targets.length; i++) if (targets[i]!.sealed >= height) return i;
  return -1;
}

/**
 * The highest tip rises from the draft's to `tip`: the withdrawals at the heights `leaving`
 * the history (`heightsLeaving`) are forgotten. Must run before the ring clears those heights
 * (it reads their ids there) and before the draft's `highestTip` changes.
 *
 * The ones this call added are let go of at once, so a long replay holds no more than the
 * history; persisted ones go with their generation, dropped whole once everything in it
 * has left. Opens the youngest generation's span, and seals it and opens a new one once it
 * spans 1/GENERATIONS of the history.
 */
export function forgetBefore(
  d: Draft,
  tip: Height,
  leaving: { readonly from: Height; readonly to: Height } | undefined,
): void {
  const p = d.pending;
  if (leaving !== undefined && p !== undefined && p.size > 0)
    visitHeights(d.treeShape, d.historySums, leaving.from, leaving.to, (id) => {
      if (d.openedAtOf?.get(id) === undefined) p.delete(id);
    });
  rollGenerations(d, d.highestTip, tip);
}

function rollGenerations(d: Draft, before: Height | null, after: Height): void {
  const young = d.generations[0]!;
  const span = Math.ceil(d.historyBlocks / GENERATIONS);
  if (young.opened === null || before === null) {
    const wasOwn = d.ownGenerations?.has(young) === true;
    ownGens(d)[0] = {
      map: young.map,
      opened: after,
      sealed: null,
      filter: undefined,
      hashes: undefined,
      older: young.older,
    };
    if (wasOwn) d.ownGenerations!.add(d.generations[0]!);
  } else if (after - young.opened >= span) {
    const g = ownGens(d);
    const wasOwn = d.ownGenerations?.has(young) === true;
    const hashes = mapKeysHashed(young.map);
    g[0] = {
      map: young.map,
      opened: young.opened,
      sealed: before,
      filter: filterOfHashes([hashes], hashes.length),
      hashes,
      older: undefined,
    };
    g.unshift({
      map: emptyMap(),
      opened: after,
      sealed: null,
      filter: undefined,
      hashes: undefined,
      older: undefined,
    });
    d.ownGenerations ??= new Set();
    d.ownGenerations.add(g[0]!);
    if (wasOwn) d.ownGenerations.add(g[1]!);
  }
  const oldest = after - d.historyBlocks + 1;
  for (
    let last = d.generations[d.generations.length - 1]!;
    last.sealed !== null && last.sealed < oldest;
  ) {
    ownGens(d).pop();
    last = d.generations[d.generations.length - 1]!;
  }
}
