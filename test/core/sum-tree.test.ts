import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import { type Owner, ownerToken } from '../../src/core/pmap.js';
import {
  addAt,
  clearHeights,
  firstHeightReaching,
  sumHeights,
  treeShapeOf,
  visitHeights,
} from '../../src/core/sum-tree.js';

// A plain array model of the ring: heights map to slots h mod size.
const opArb = (size: number) =>
  fc.oneof(
    fc.record({
      op: fc.constant('add' as const),
      h: fc.integer({ min: 0, max: 5 * size }),
      d: fc.bigInt({ min: 1n, max: 50n }),
    }),
    fc.record({
      op: fc.constant('clear' as const),
      from: fc.integer({ min: 0, max: 5 * size }),
      n: fc.integer({ min: 0, max: size + 2 }),
    }),
    fc.record({ op: fc.constant('batch' as const) }),
    // Go back to an earlier version and go on from it: a branch, as when an apply fails or
    // two callers extend the same state.
    fc.record({ op: fc.constant('branch' as const), back: fc.nat() }),
  );

describe('the ring of per-block sums', () => {
  const caseArb = fc
    .constantFrom(1, 5, 16, 17, 40, 300)
    .chain((size) => fc.tuple(fc.constant(size), fc.array(opArb(size), { maxLength: 120 })));
  test.prop([caseArb])(
    'range sums, clears, id lists and the prefix search agree with a plain array; old roots stay valid',
    ([size, ops]) => {
      const ring = treeShapeOf(size);
      const slots = new Array<bigint>(size).fill(0n);
      let ids: string[][] = Array.from({ length: size }, () => []);
      let root = ring.empty;
      let owner: Owner = ownerToken(false);
      const versions: Array<[typeof root, bigint[], string[][]]> = [];
      let n = 0;
      for (const o of ops) {
        if (o.op === 'batch') {
          versions.push([root, slots.slice(), ids.map((l) => l.slice())]);
          owner = ownerToken(versions.length % 2 === 1);
        } else if (o.op === 'branch') {
          if (versions.length === 0) continue;
          const [old, oldSlots, oldIds] = versions[o.back % versions.length]!;
          root = old;
          slots.splice(0, size, ...oldSlots);
          ids = oldIds.map((l) => l.slice());
          owner = ownerToken(o.back % 2 === 1);
        } else if (o.op === 'add') {
          const id = `i${n++}`;
          root = addAt(ring, root, o.h, o.d, 1, id, owner);
          slots[o.h % size]! += o.d;
          ids[o.h % size]!.push(id);
        } else {
          root = clearHeights(ring, root, o.from, o.from + o.n - 1, owner);
          for (let h = o.from; h < o.from + Math.min(o.n, size); h++) {
            slots[h % size] = 0n;
            ids[h % size] = [];
          }
        }
      }
      for (let from = 0; from < size * 2; from += 3) {
        for (let len = 0; len <= size; len += Math.max(1, Math.floor(size / 7))) {
          const to = from + len - 1;
          let want = 0n;
          const wantIds: string[] = [];
          for (let h = from; h <= to; h++) {
            want += slots[h % size]!;
            wantIds.push(...ids[h % size]!);
          }
          expect(sumHeights(ring, root, from, to)).toBe(want);
          const got: string[] = [];
          visitHeights(ring, root, from, to, (id) => got.push(id));
          expect(got.sort()).toEqual(wantIds.sort());
          for (const need of [1n, want / 2n + 1n, want, want + 1n]) {
            if (need <= 0n) continue;
            let acc = 0n;
            let p: number | undefined;
            for (let h = from; h <= to; h++) {
              acc += slots[h % size]!;
              if (acc >= need) {
                p = h;
                break;
              }
            }
            expect(firstHeightReaching(ring, root, from, to, need)).toBe(p);
          }
        }
      }
      // Every earlier version is unchanged: its sums and its ids, in the order added.
      for (const [old, contents, oldIds] of versions) {
        expect(sumHeights(ring, old, 0, size - 1)).toBe(contents.reduce((a, b) => a + b, 0n));
        for (let h = 0; h < size; h++) {
          expect(sumHeights(ring, old, h, h)).toBe(contents[h]);
          const got: string[] = [];
          visitHeights(ring, old, h, h, (id) => got.push(id));
          expect(got.sort()).toEqual(oldIds[h]!.slice().sort());
        }
      }
    },
  );

  test.each([1, 15, 16, 40])(
    'two versions extended from one state with %i ids at a height each see their own ids, and the state its own, unchanged',
    (held) => {
      const ring = treeShapeOf(16);
      const idsAt = (root: ReturnType<typeof treeShapeOf>['empty']) => {
        const got: string[] = [];
        visitHeights(ring, root, 5, 5, (id) => got.push(id));
        return got.sort();
      };
      const first = Array.from({ length: held }, (_, i) => `a${String(i).padStart(2, '0')}`);
      const batch = ownerToken(false);
      let a = ring.empty;
      for (const id of first) a = addAt(ring, a, 5, 1n, 1, id, batch);
      const before = JSON.stringify(a, (_, v) => (typeof v === 'bigint' ? String(v) : v));
      const b = addAt(ring, a, 5, 1n, 1, 'b', ownerToken(false));
      const c = addAt(ring, a, 5, 1n, 1, 'c', ownerToken(true));
      const c2 = addAt(ring, c, 5, 1n, 1, 'c2', ownerToken(false));
      const b2 = addAt(ring, b, 5, 1n, 1, 'b2', ownerToken(true));
      expect(idsAt(a)).toEqual(first);
      expect(idsAt(b)).toEqual([...first, 'b'].sort());
      expect(idsAt(c)).toEqual([...first, 'c'].sort());
      expect(idsAt(c2)).toEqual([...first, 'c', 'c2'].sort());
      expect(idsAt(b2)).toEqual([...first, 'b', 'b2'].sort());
      // Nothing the first state holds was changed by the others.
      expect(JSON.stringify(a, (_, v) => (typeof v === 'bigint' ? String(v) : v))).toBe(before);
    },
  );

  test('a ring is three levels deep for the default 2016 heights', () => {
    expect(treeShapeOf(2016).depth).toBe(3);
    expect(treeShapeOf(16).depth).toBe(1);
    expect(treeShapeOf(17).depth).toBe(2);
  });
});
