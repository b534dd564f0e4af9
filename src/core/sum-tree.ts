/**
 * The per-block ring: the design's ring buffer of withdrawals per block, kept persistently.
 * It holds the sum (and the ids) of the withdrawals of each of the last `historyBlocks`
 * heights, the whole retained history (the rolling window is a range of it: `window.ts`),
 * in a persistent 16-ary sum tree.
 *
 * Height `h` lives in slot `h mod historyBlocks`. Each node holds the sum and count of its
 * slots, so a range sum, a range clear and a "first height where the running sum reaches
 * x" search touch at most a few nodes a level: O(log₁₆ H) whatever the number of
 * withdrawals (three levels for the default H = 2016). Empty subtrees are shared
 * constants, so an account with three withdrawals costs three paths, not a ring.
 *
 * Updates copy the path they touch, or change it in place when the nodes carry the
 * caller's {@link Owner} token (see `pmap.ts`): old trees stay valid and unchanged.
 */
import { LimitsError } from './errors.js';
import type { Owner } from './pmap.js';

const BITS = 4;
const WIDTH = 1 << BITS;

/**
 * A node of the sum tree. Leaves (level 0) have no kids and may carry ids. An inner node's
 * `sum` is filled in lazily (`undefined` = not yet computed): a batch of additions then
 * allocates one bigint per addition, at the leaf, instead of one per level. Filling it in
 * later is a cache write, invisible to every reader; nodes that a batch may still change
 * in place are reset to `undefined` whenever it does.
 */
export interface SumNode {
  sum: bigint | undefined;
  count: number;
  kids: SumNode[] | undefined;
  /**
   * A leaf's newest withdrawal ids, oldest first. The array belongs to the node: it grows in
   * place only while the node carries the caller's owner token, like the node itself.
   */
  ids: string[] | undefined;
  /** A leaf's older ids, in arrays no node changes any more (shared between versions). */
  older: IdChunk | undefined;
  owner: Owner | undefined;
}

/** Ids a leaf held before its last copy: never changed once made. */
interface IdChunk {
  readonly ids: ReadonlyArray<string>;
  readonly next: IdChunk | undefined;
}

// A leaf copied for another caller copies at most this many ids; past it, its array is
// handed on whole as a chunk of older ids. A copy's cost stays bounded however many
// withdrawals a block has.
const COPY_IDS = 8;

/** The shape of a ring: its length in heights and the depth of its tree. */
export interface TreeShape {
  readonly size: number;
  readonly depth: number;
  /** The empty tree of this depth (a shared constant). */
  readonly empty: SumNode;
}

/** The deepest tree a ring may have: 16^8 heights, far past the 1,000,000 a state allows. */
const MAX_DEPTH = 8;

// The shared empty subtree of each level, and the heights each level spans: fixed tables,
// made once, never changed (the empty nodes carry no owner, so no update touches them).
function emptyLevels(): ReadonlyArray<SumNode> {
  const levels: SumNode[] = [
    { sum: 0n, count: 0, kids: undefined, ids: undefined, older: undefined, owner: undefined },
  ];
  for (let level = 1; level <= MAX_DEPTH; level++)
    levels.push({
      sum: 0n,
      count: 0,
      kids: new Array<SumNode>(WIDTH).fill(levels[level - 1]!),
      ids: undefined,
      older: undefined,
      owner: undefined,
    });
  return levels;
}

const EMPTY_BY_LEVEL = /* @__PURE__ */ emptyLevels();
const SPAN_BY_LEVEL: ReadonlyArray<number> = /* @__PURE__ */ Array.from(
  { length: MAX_DEPTH + 1 },
  (_, level) => WIDTH ** level,
);

function emptyAt(level: number): SumNode {
  return EMPTY_BY_LEVEL[level]!;
}

/** The ring of `size` heights. */
export function treeShapeOf(size: number): TreeShape {
  if (!(size >= 1 && size <= WIDTH ** MAX_DEPTH))
    throw new LimitsError('invalid_option', `a ring of ${size} heights`);
  let depth = 1;
  while (WIDTH ** depth < size) depth++;
  return { size, depth, empty: emptyAt(depth) };
}

function own(node: SumNode, owner: Owner): SumNode {
  if (node.owner === owner) return node;
  return owner.single === true ? copyNodeSingle(node, owner) : copyNode(node, owner);
}

// Two copies of the same literal on purpose: separate allocation sites, so that a big
// batch's long-lived copies do not teach V8 to allocate a single apply's short-lived ones
// in the old generation (see `copyBranch` in pmap.ts).
function copyNode(node: SumNode, owner: Owner): SumNode {
  return {
    sum: node.sum,
    count: node.count,
    kids: node.kids === undefined ? undefined : node.kids.slice(),
    ids: copiedIds(node.ids),
    older: olderIds(node),
    owner,
  };
}

function copyNodeSingle(node: SumNode, owner: Owner): SumNode {
  return {
    sum: node.sum,
    count: node.count,
    kids: node.kids === undefined ? undefined : node.kids.slice(),
    ids: copiedIds(node.ids),
    older: olderIds(node),
    owner,
  };
}

function addIn(
  root: SumNode,
  depth: number,
  slot: number,
  delta: bigint,
  count: number,
  id: string | undefined,
  owner: Owner,
): SumNode {
  // A subtree whose count drops to zero holds nothing: it becomes the shared empty constant,
  // so a tree's memory follows what it holds, not what it once held.
  if (root.count + count === 0) return emptyAt(depth);
  const top = own(root, owner);
  let node = top;
  for (let level = depth; level > 0; level--) {
    node.count += count;
    node.sum = undefined;
    const kids = node.kids!;
    const i = (slot >>> (BITS * (level - 1))) & (WIDTH - 1);
    const before = kids[i]!;
    if (before.count + count === 0) {
      kids[i] = emptyAt(level - 1);
      return top;
    }
    const kid = own(before, owner);
    kids[i] = kid;
    node = kid;
  }
  node.sum = (node.sum as bigint) + delta;
  node.count += count;
  if (id !== undefined) appendId(node, id);
  return top;
}

// A copy's own ids: a copy of a short array, none (an empty new one) past COPY_IDS.
function copiedIds(ids: string[] | undefined): string[] | undefined {
  return ids === undefined || ids.length >= COPY_IDS ? undefined : ids.slice();
}

// A copy's older ids: the original's, with the original's own array in front when it is
// too long to copy. That array is never changed again: its node is not the caller's.
function olderIds(node: SumNode): IdChunk | undefined {
  const ids = node.ids;
  return ids === undefined || ids.length < COPY_IDS ? node.older : { ids, next: node.older };
}

// Appends to a leaf this caller owns. An array a leaf, grown in place, instead of a list
// cell a withdrawal: a replay then allocates a few arrays a block, not one cell a
// withdrawal (measured: the replay 6–16% faster, a chain of single applies 9–10% slower).
function appendId(leaf: SumNode, id: string): void {
  if (leaf.ids === undefined) leaf.ids = [id];
  else leaf.ids.push(id);
}

/** The sum of a node, computing and caching the sums of inner nodes on first use. */
function sumOf(node: SumNode): bigint {
  if (node.sum !== undefined) return node.sum;
  let total = 0n;
  for (const kid of node.kids!) if (kid.count !== 0) total += sumOf(kid);
  node.sum = total;
  return total;
}

function sumIn(node: SumNode, level: number, base: number, lo: number, hi: number): bigint {
  const span = SPAN_BY_LEVEL[level]!;
  if (node.count === 0) return 0n;
  if (lo <= base && base + span - 1 <= hi) return sumOf(node);
  const kidSpan = SPAN_BY_LEVEL[level - 1]!;
  const kids = node.kids!;
  let total = 0n;
  let kidBase = base;
  for (let i = 0; i < WIDTH; i++, kidBase += kidSpan) {
    if (kidBase > hi) break;
    if (kidBase + kidSpan - 1 < lo) continue;
    total += sumIn(kids[i]!, level - 1, kidBase, lo, hi);
  }
  return total;
}

function clearIn(
  node: SumNode,
  level: number,
  base: number,
  lo: number,
  hi: number,
  owner: Owner,
): SumNode {
  const span = SPAN_BY_LEVEL[level]!;
  if (node.count === 0) return node;
  if (lo <= base && base + span - 1 <= hi) return emptyAt(level);
  const kidSpan = SPAN_BY_LEVEL[level - 1]!;
  const out = own(node, owner);
  out.sum = undefined;
  const kids = out.kids!;
  let kidBase = base;
  for (let i = 0; i < WIDTH; i++, kidBase += kidSpan) {
    if (kidBase > hi) break;
    if (kidBase + kidSpan - 1 < lo) continue;
    const before = kids[i]!;
    const after = clearIn(before, level - 1, kidBase, lo, hi, owner);
    out.count -= before.count - after.count;
    kids[i] = after;
  }
  return out;
}

// Calls `fn` with every non-empty leaf of slots lo..hi under `node`, in slot order.
function eachLeafIn(
  node: SumNode,
  level: number,
  base: number,
  lo: number,
  hi: number,
  fn: (leaf: SumNode, slot: number) => void,
): void {
  if (node.count === 0) return;
  if (level === 0) {
    fn(node, base);
    return;
  }
  const kidSpan = SPAN_BY_LEVEL[level - 1]!;
  const kids = node.kids!;
  let kidBase = base;
  for (let i = 0; i < WIDTH; i++, kidBase += kidSpan) {
    if (kidBase > hi) break;
    if (kidBase + kidSpan - 1 < lo) continue;
    eachLeafIn(kids[i]!, level - 1, kidBase, lo, hi, fn);
  }
}

// Finds the first slot p in [lo, hi] with sum(lo..p) ≥ need, given that `acc.sum` has been
// accumulated before this node; returns -1 (and the accumulated sum) when none.
function reachIn(
  node: SumNode,
  level: number,
  base: number,
  lo: number,
  hi: number,
  need: bigint,
  acc: { sum: bigint },
): number {
  const span = SPAN_BY_LEVEL[level]!;
  if (node.count === 0) return -1;
  if (lo <= base && base + span - 1 <= hi) {
    const sum = sumOf(node);
    if (acc.sum + sum < need) {
      acc.sum += sum;
      return -1;
    }
  }
  if (level === 0) {
    acc.sum += node.sum as bigint;
    return acc.sum >= need ? base : -1;
  }
  const kidSpan = SPAN_BY_LEVEL[level - 1]!;
  const kids = node.kids!;
  let kidBase = base;
  for (let i = 0; i < WIDTH; i++, kidBase += kidSpan) {
    if (kidBase > hi) break;
    if (kidBase + kidSpan - 1 < lo) continue;
    const found = reachIn(kids[i]!, level - 1, kidBase, lo, hi, need, acc);
    if (found >= 0) return found;
  }
  return -1;
}

// Splits the heights from..to (clamped to ring.size of them, in height order) into one or
// two slot ranges.
function slotRanges(
  ring: TreeShape,
  from: number,
  to: number,
  fn: (lo: number, hi: number) => void,
): void {
  if (from > to) return;
  const count = Math.min(to - from + 1, ring.size);
  const lo = from % ring.size;
  const hi = lo + count - 1;
  if (hi < ring.size) fn(lo, hi);
  else {
    fn(lo, ring.size - 1);
    fn(0, hi - ring.size);
  }
}

/** Adds `delta` (and `count` withdrawals, with `id` listed) at `height`. */
export function addAt(
  ring: TreeShape,
  root: SumNode,
  height: number,
  delta: bigint,
  count: number,
  id: string | undefined,
  owner: Owner,
): SumNode {
  return addIn(root, ring.depth, height % ring.size, delta, count, id, owner);
}

/** The sum over heights from..to inclusive (empty when from > to). */
export function sumHeights(ring: TreeShape, root: SumNode, from: number, to: number): bigint {
  let total = 0n;
  slotRanges(ring, from, to, (lo, hi) => {
    total += sumIn(root, ring.depth, 0, lo, hi);
  });
  return total;
}

/** Empties the heights from..to inclusive. */
export function clearHeights(
  ring: TreeShape,
  root: SumNode,
  from: number,
  to: number,
  owner: Owner,
): SumNode {
  let out = root;
  slotRanges(ring, from, to, (lo, hi) => {
    out = clearIn(out, ring.depth, 0, lo, hi, owner);
  });
  return out;
}

/** Calls `fn` with every id listed at the heights from..to inclusive. */
export function visitHeights(
  ring: TreeShape,
  root: SumNode,
  from: number,
  to: number,
  fn: (id: string) => void,
): void {
  slotRanges(ring, from, to, (lo, hi) =>
    eachLeafIn(root, ring.depth, 0, lo, hi, (leaf) => {
      for (let c = leaf.older; c !== undefined; c = c.next) {
        const ids = c.ids;
        for (let k = 0; k < ids.length; k++) fn(ids[k]!);
      }
      const ids = leaf.ids;
      if (ids !== undefined) for (let k = 0; k < ids.length; k++) fn(ids[k]!);
    }),
  );
}

/**
 * The first height `p` in from..to with sum(from..p) ≥ `need`, or `undefined` when even
 * the whole range sums to less. `need` must be > 0.
 */
export function firstHeightReaching(
  ring: TreeShape,
  root: SumNode,
  from: number,
  to: number,
  need: bigint,
): number | undefined {
  if (from > to) return undefined;
  const acc = { sum: 0n };
  const startSlot = from % ring.size;
  let found: number | undefined;
  slotRanges(ring, from, to, (lo, hi) => {
    if (found !== undefined) return;
    const slot = reachIn(root, ring.depth, 0, lo, hi, need, acc);
    if (slot >= 0) found = slot;
  });
  if (found === undefined) return undefined;
  // Map the slot back to its height: the first `size` heights from `from` are distinct slots.
  const offset = found >= startSlot ? found - startSlot : found + ring.size - startSlot;
  return from + offset;
}

/**
 * Calls `fn` with every height from..to whose sum is not zero, in height order. Visits
 * only non-empty subtrees: O(non-zero heights × log₁₆ H).
 */
export function forEachSum(
  ring: TreeShape,
  root: SumNode,
  from: number,
  to: number,
  fn: (height: number, sum: bigint) => void,
): void {
  if (from > to) return;
  const startSlot = from % ring.size;
  slotRanges(ring, from, to, (lo, hi) =>
    eachLeafIn(root, ring.depth, 0, lo, hi, (leaf, slot) => {
      if (leaf.sum !== 0n)
        fn(
          from + (slot >= startSlot ? slot - startSlot : slot + ring.size - startSlot),
          leaf.sum as bigint,
        );
    }),
  );
}
