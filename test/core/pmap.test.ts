import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  emptyMap,
  hashOf,
  mapDelete,
  mapForEach,
  mapGet,
  mapSet,
  mapWalk,
  type Owner,
  ownerToken,
  type PMap,
} from '../../src/core/pmap.js';

function entries<V>(m: PMap<V>): Array<[string, V]> {
  const out: Array<[string, V]> = [];
  mapForEach(m, (v, k) => out.push([k, v]));
  return out.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function sorted<V>(m: Map<string, V>): Array<[string, V]> {
  return [...m].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

// Two distinct keys with the same 32-bit hash, found by the birthday bound.
function collidingPair(): [string, string] {
  const seen = new Map<number, string>();
  for (let i = 0; ; i++) {
    const k = `k${i}`;
    const h = hashOf(k);
    const other = seen.get(h);
    if (other !== undefined) return [other, k];
    seen.set(h, k);
  }
}
const [c1, c2] = collidingPair();
const keyArb = fc.oneof(fc.constantFrom('a', 'b', 'c', c1, c2, ''), fc.string({ maxLength: 4 }));

const opArb = fc.oneof(
  fc.record({ op: fc.constant('set' as const), key: keyArb, value: fc.integer() }),
  fc.record({ op: fc.constant('del' as const), key: keyArb }),
  fc.record({ op: fc.constant('batch' as const) }),
);

describe('persistent map', () => {
  test('colliding keys are told apart', () => {
    expect(hashOf(c1)).toBe(hashOf(c2));
    let m = mapSet(mapSet(emptyMap<number>(), c1, 1), c2, 2);
    expect([mapGet(m, c1), mapGet(m, c2), m.size]).toEqual([1, 2, 2]);
    m = mapDelete(m, c1);
    expect([mapGet(m, c1), mapGet(m, c2), m.size]).toEqual([undefined, 2, 1]);
  });

  test.prop([fc.array(opArb, { maxLength: 300 })])(
    'agrees with a Map after every operation, and every earlier version stays unchanged',
    (ops) => {
      let m = emptyMap<number>();
      const model = new Map<string, number>();
      let owner: Owner = ownerToken(false);
      const versions: Array<[PMap<number>, Array<[string, number]>]> = [];
      for (const o of ops) {
        if (o.op === 'batch') {
          // A new batch: nodes of the previous one must no longer change in place.
          versions.push([m, sorted(model)]);
          owner = ownerToken(versions.length % 2 === 1);
          continue;
        }
        if (o.op === 'set') {
          m = mapSet(m, o.key, o.value, owner);
          model.set(o.key, o.value);
        } else {
          m = mapDelete(m, o.key, owner);
          model.delete(o.key);
        }
        expect(m.size).toBe(model.size);
        expect(mapGet(m, o.key)).toBe(model.get(o.key));
      }
      expect(entries(m)).toEqual(sorted(model));
      for (const [version, contents] of versions) {
        expect(entries(version)).toEqual(contents);
        expect(version.size).toBe(contents.length);
      }
    },
  );

  test('a no-op returns the same map', () => {
    const m = mapSet(emptyMap<number>(), 'a', 1);
    expect(mapSet(m, 'a', 1)).toBe(m);
    expect(mapDelete(m, 'zz')).toBe(m);
  });

  test.prop([
    fc.array(fc.tuple(keyArb, fc.integer()), { maxLength: 200 }),
    fc.array(fc.integer({ min: 1, max: 9 }), { minLength: 1, maxLength: 20 }),
  ])(
    'a walk in steps of any budget visits what mapForEach visits, in its order',
    (pairs, budgets) => {
      let m = emptyMap<number>();
      for (const [k, v] of pairs) m = mapSet(m, k, v);
      const all: string[] = [];
      mapForEach(m, (_, k) => all.push(k));
      const walk = mapWalk(m);
      const walked: string[] = [];
      let done = false;
      for (let i = 0; !done; i++) {
        const budget = budgets[i % budgets.length]!;
        const before = walked.length;
        done = walk(budget, (_, k) => walked.push(k));
        // A step visits its whole budget unless the walk ends in it.
        if (!done) expect(walked.length - before).toBe(budget);
        expect(walked.length - before).toBeLessThanOrEqual(budget);
      }
      expect(walked).toEqual(all);
      expect(walk(5, () => walked.push('again'))).toBe(true);
    },
  );
});
