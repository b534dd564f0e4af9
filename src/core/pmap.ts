/**
 * A persistent hash map from strings to values (a hash array mapped trie).
 *
 * Every update returns a new map and leaves the old one valid; unchanged branches are
 * shared. An update given an `owner` token may change in place the nodes that carry the
 * same token: a batch creates a fresh token, so it mutates only nodes it made itself,
 * which nobody else can see (the "transient" technique of Clojure and Immutable.js).
 */

/**
 * A token that marks the nodes one batch of updates may change in place. `single` says the
 * batch is one event on a state that will soon be replaced: its copies then come from
 * allocation sites of their own (see `copyBranch`). `sizeChange` is the batch's scratch
 * field: whether its last map update added (1) or removed (-1) a key. It belongs to the
 * batch, so no two batches (and no two states) ever share it.
 */
export interface Owner {
  readonly single: boolean;
  sizeChange: number;
}

/** A fresh owner token; every token has the same shape, so reading it stays monomorphic. */
export function ownerToken(single: boolean): Owner {
  return { single, sizeChange: 0 };
}

interface Leaf<V> {
  readonly kind: 0;
  readonly hash: number;
  readonly key: string;
  readonly value: V;
}

interface Collision<V> {
  readonly kind: 1;
  readonly hash: number;
  readonly leaves: ReadonlyArray<Leaf<V>>;
}

interface Branch<V> {
  readonly kind: 2;
  bitmap: number;
  kids: Array<Node<V>>;
  owner: Owner | undefined;
}

type Node<V> = Leaf<V> | Collision<V> | Branch<V>;

/** An immutable map from string keys to values of type `V`. */
export interface PMap<V> {
  /** @internal The root of the trie. */
  readonly root: Node<V> | undefined;
  /** How many keys the map holds. */
  readonly size: number;
  /** @internal The batch that may still change this wrapper in place. */
  readonly owner: Owner | undefined;
}

const EMPTY: PMap<never> = { root: undefined, size: 0, owner: undefined };

function wrap<V>(map: PMap<V>, root: Node<V> | undefined, owner: Owner): PMap<V> {
  const size = map.size + owner.sizeChange;
  if (root === undefined) return EMPTY;
  if (map.owner === owner) {
    const out = map as { root: Node<V> | undefined; size: number };
    out.root = root;
    out.size = size;
    return map;
  }
  return { root, size, owner };
}

/** The empty map. */
export function emptyMap<V>(): PMap<V> {
  return EMPTY;
}

/** The 32-bit FNV-1a hash of a key. @internal (exported for tests) */
export function hashOf(key: string): number {
  // FNV-1a, 32 bits.
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

function popcount(x: number): number {
  x -= (x >>> 1) & 0x55555555;
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333);
  x = (x + (x >>> 4)) & 0x0f0f0f0f;
  return Math.imul(x, 0x01010101) >>> 24;
}

/** Looks a key up; `undefined` when absent. `hash` may be passed when already known. */
export function mapGet<V>(map: PMap<V>, key: string, hash = hashOf(key)): V | undefined {
  let node = map.root;
  if (node === undefined) return undefined;
  let shift = 0;
  for (;;) {
    if (node.kind === 0) return node.key === key ? node.value : undefined;
    if (node.kind === 1) {
      if (node.hash !== hash) return undefined;
      for (const leaf of node.leaves) if (leaf.key === key) return leaf.value;
      return undefined;
    }
    const bit = 1 << ((hash >>> shift) & 31);
    if ((node.bitmap & bit) === 0) return undefined;
    node = node.kids[popcount(node.bitmap & (bit - 1))]!;
    shift += 5;
  }
}

function editable<V>(node: Branch<V>, owner: Owner): Branch<V> {
  if (node.owner === owner) return node;
  return owner.single === true ? copyBranchSingle(node, owner) : copyBranch(node, owner);
}

// Two copies of the same literal on purpose. V8 decides per allocation site whether new
// objects go straight to the old generation, from how many survived: a big batch's copies
// all survive (they are the new state), a single apply's die with the next apply. Sharing
// one site, the batch's verdict made every later single apply allocate its short-lived
// copies in the old generation, and pay for full collections (about 1.5× the time).
function copyBranch<V>(node: Branch<V>, owner: Owner): Branch<V> {
  return { kind: 2, bitmap: node.bitmap, kids: node.kids.slice(), owner };
}

function copyBranchSingle<V>(node: Branch<V>, owner: Owner): Branch<V> {
  return { kind: 2, bitmap: node.bitmap, kids: node.kids.slice(), owner };
}

// In-place insert and remove; `splice` would allocate an array of the removed items.
function insertAt<T>(items: T[], at: number, item: T): void {
  items.push(item);
  for (let i = items.length - 1; i > at; i--) items[i] = items[i - 1]!;
  items[at] = item;
}

function removeAt<T>(items: T[], at: number): void {
  for (let i = at; i < items.length - 1; i++) items[i] = items[i + 1]!;
  items.pop();
}

function merge<V>(shift: number, a: Leaf<V> | Collision<V>, b: Leaf<V>, owner: Owner): Node<V> {
  if (a.hash === b.hash) {
    const leaves = a.kind === 0 ? [a, b] : [...a.leaves, b];
    return { kind: 1, hash: b.hash, leaves };
  }
  const ia = (a.hash >>> shift) & 31;
  const ib = (b.hash >>> shift) & 31;
  if (ia === ib) return { kind: 2, bitmap: 1 << ia, kids: [merge(shift + 5, a, b, owner)], owner };
  return { kind: 2, bitmap: (1 << ia) | (1 << ib), kids: ia < ib ? [a, b] : [b, a], owner };
}

// `owner.sizeChange` says whether a key was added (1) or replaced (0), so the size stays exact.
function setIn<V>(node: Node<V> | undefined, shift: number, leaf: Leaf<V>, owner: Owner): Node<V> {
  if (node === undefined) {
    owner.sizeChange = 1;
    return leaf;
  }
  if (node.kind === 0) {
    if (node.key === leaf.key) return node.value === leaf.value ? node : leaf;
    owner.sizeChange = 1;
    return merge(shift, node, leaf, owner);
  }
  if (node.kind === 1) {
    if (node.hash !== leaf.hash) {
      owner.sizeChange = 1;
      return merge(shift, node, leaf, owner);
    }
    const at = node.leaves.findIndex((l) => l.key === leaf.key);
    if (at >= 0 && node.leaves[at]!.value === leaf.value) return node;
    const leaves = node.leaves.slice();
    if (at >= 0) leaves[at] = leaf;
    else {
      owner.sizeChange = 1;
      leaves.push(leaf);
    }
    return { kind: 1, hash: node.hash, leaves };
  }
  const bit = 1 << ((leaf.hash >>> shift) & 31);
  const idx = popcount(node.bitmap & (bit - 1));
  if ((node.bitmap & bit) === 0) {
    owner.sizeChange = 1;
    const out = editable(node, owner);
    insertAt(out.kids, idx, leaf);
    out.bitmap |= bit;
    return out;
  }
  const kid = node.kids[idx]!;
  const next = setIn(kid, shift + 5, leaf, owner);
  if (next === kid) return node;
  const out = editable(node, owner);
  out.kids[idx] = next;
  return out;
}

/** Returns a map with `key` set to `value`; the same map when nothing changes. */
export function mapSet<V>(
  map: PMap<V>,
  key: string,
  value: V,
  owner: Owner = ownerToken(false),
  hash = hashOf(key),
): PMap<V> {
  owner.sizeChange = 0;
  const root = setIn(map.root, 0, { kind: 0, hash, key, value }, owner);
  // An owned root may have changed in place: the size must still follow.
  if (root === map.root && owner.sizeChange === 0) return map;
  return wrap(map, root, owner);
}

function deleteIn<V>(
  node: Node<V>,
  shift: number,
  hash: number,
  key: string,
  owner: Owner,
): Node<V> | undefined {
  if (node.kind === 0) {
    if (node.key !== key) return node;
    owner.sizeChange = -1;
    return undefined;
  }
  if (node.kind === 1) {
    if (node.hash !== hash) return node;
    const at = node.leaves.findIndex((l) => l.key === key);
    if (at < 0) return node;
    owner.sizeChange = -1;
    if (node.leaves.length === 2) return node.leaves[1 - at];
    return { kind: 1, hash, leaves: node.leaves.filter((_, i) => i !== at) };
  }
  const bit = 1 << ((hash >>> shift) & 31);
  if ((node.bitmap & bit) === 0) return node;
  const idx = popcount(node.bitmap & (bit - 1));
  const kid = node.kids[idx]!;
  const next = deleteIn(kid, shift + 5, hash, key, owner);
  if (next === kid) return node;
  if (next === undefined) {
    if (node.kids.length === 1) return undefined;
    // A branch left with a single leaf collapses into it; leaves hold their whole hash.
    if (node.kids.length === 2) {
      const other = node.kids[1 - idx]!;
      if (other.kind !== 2) return other;
    }
    const out = editable(node, owner);
    removeAt(out.kids, idx);
    out.bitmap &= ~bit;
    return out;
  }
  if (node.kids.length === 1 && next.kind !== 2) return next;
  const out = editable(node, owner);
  out.kids[idx] = next;
  return out;
}

/** Returns a map without `key`; the same map when the key is absent. */
export function mapDelete<V>(map: PMap<V>, key: string, owner: Owner = ownerToken(false)): PMap<V> {
  if (map.root === undefined) return map;
  owner.sizeChange = 0;
  const root = deleteIn(map.root, 0, hashOf(key), key, owner);
  if (owner.sizeChange === 0) return map;
  return wrap(map, root, owner);
}

/**
 * A walk over a map that can stop and go on: each call visits up to `budget` entries (in
 * {@link mapForEach}'s order) and says whether the walk is done. The map is persistent, so
 * it cannot change under a walk that spans many turns of the event loop.
 */
export function mapWalk<V>(
  map: PMap<V>,
): (budget: number, fn: (value: V, key: string) => void) => boolean {
  const stack: Array<Node<V>> = map.root === undefined ? [] : [map.root];
  // A collision node's leaves, part-visited.
  let leaves: ReadonlyArray<{ readonly key: string; readonly value: V }> = [];
  let leaf = 0;
  return (budget, fn) => {
    let left = budget;
    while (left > 0) {
      if (leaf < leaves.length) {
        const l = leaves[leaf++]!;
        fn(l.value, l.key);
        left--;
        continue;
      }
      const node = stack.pop();
      if (node === undefined) return true;
      if (node.kind === 0) {
        fn(node.value, node.key);
        left--;
      } else if (node.kind === 1) {
        leaves = node.leaves;
        leaf = 0;
      } else for (let i = node.kids.length - 1; i >= 0; i--) stack.push(node.kids[i]!);
    }
    return stack.length === 0 && leaf >= leaves.length;
  };
}

/** Calls `fn` for every entry, in hash order (stable for the same contents). */
export function mapForEach<V>(map: PMap<V>, fn: (value: V, key: string) => void): void {
  if (map.root === undefined) return;
  // An explicit stack, kids pushed in reverse: the same order as a recursive walk.
  const stack: Array<Node<V>> = [map.root];
  while (stack.length > 0) {
    const node = stack.pop()!;
    if (node.kind === 0) fn(node.value, node.key);
    else if (node.kind === 1) for (const leaf of node.leaves) fn(leaf.value, leaf.key);
    else for (let i = node.kids.length - 1; i >= 0; i--) stack.push(node.kids[i]!);
  }
}

// Every key under a node (a subtree that differs from its counterpart).
function keysUnder<V>(node: Node<V> | undefined, fn: (key: string) => void): void {
  if (node === undefined) return;
  if (node.kind === 0) fn(node.key);
  else if (node.kind === 1) for (const leaf of node.leaves) fn(leaf.key);
  else for (const kid of node.kids) keysUnder(kid, fn);
}

function diffNodes<V>(
  a: Node<V> | undefined,
  b: Node<V> | undefined,
  fn: (key: string) => void,
): void {
  if (a === b) return;
  if (a === undefined || b === undefined || a.kind !== 2 || b.kind !== 2) {
    keysUnder(a, fn);
    keysUnder(b, fn);
    return;
  }
  const bits = a.bitmap | b.bitmap;
  for (let rest = bits; rest !== 0; rest &= rest - 1) {
    const bit = rest & -rest;
    const ka = (a.bitmap & bit) === 0 ? undefined : a.kids[popcount(a.bitmap & (bit - 1))];
    const kb = (b.bitmap & bit) === 0 ? undefined : b.kids[popcount(b.bitmap & (bit - 1))];
    diffNodes(ka, kb, fn);
  }
}

/**
 * Calls `fn` with every key whose value may differ between two maps: each key added,
 * removed or set to another value, and possibly keys of the same value that sit in a
 * branch that changed (the caller compares the values). Subtrees the two maps share are
 * skipped, so two versions of one map cost O(changed keys × log₃₂ n), however large it is.
 * A key may be given twice.
 */
export function mapDiffKeys<V>(a: PMap<V>, b: PMap<V>, fn: (key: string) => void): void {
  diffNodes(a.root, b.root, fn);
}
