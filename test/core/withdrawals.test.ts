// The withdrawal index (src/core/withdrawals.ts): generations of persistent maps by id,
// dropped whole once what they hold has left the history. These pin what the index
// stores; the model-based tests (state.model.test.ts) pin every answer the state gives
// against a plain recompute.
import { describe, expect, test } from 'vitest';
import { apply, createLimitsState, type LimitsEvent, type LimitsState } from '../../src/index.js';
import { at, heldWithdrawals, run, WINDOW_144, withdraw } from '../support/helpers.js';

// How many withdrawals the index stores (held, or lingering in a generation not yet dropped).
const stored = (s: LimitsState) => s.generations.reduce((n, g) => n + g.map.size, 0);

describe('the withdrawal index', () => {
  test('stores at most an eighth of the history more than it holds: forgetting drops whole generations', () => {
    const history = 64;
    let s = createLimitsState({
      historyBlocks: history,
      limits: { accountCaps: { a1: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 100n } } },
    });
    for (let b = 1; b <= 300; b++) {
      const events: LimitsEvent[] = [{ type: 'blockConnected', height: b }];
      for (let i = 0; i < 4; i++) events.push(withdraw(`a${i}`, 1n, b, `w${b}-${i}`));
      s = run(s, ...events);
      expect(stored(s), `at ${b}`).toBeGreaterThanOrEqual(Math.min(b, history) * 4);
      expect(stored(s), `at ${b}`).toBeLessThanOrEqual((history + history / 8) * 4);
      expect(s.generations.length).toBeLessThanOrEqual(10);
    }
    expect(heldWithdrawals(s)).toHaveLength(history * 4);
    // A jump past the whole history forgets everything.
    s = run(s, { type: 'blockConnected', height: 300 + history * 3 });
    expect(stored(s)).toBe(0);
  });

  test('a reorganization removes the withdrawals of the blocks it drops, and only those', () => {
    let s = run(at(10), withdraw('a', 1n, 8, 'x'), withdraw('a', 1n, 10, 'y'));
    s = run(s, { type: 'chainReorganized', height: 9 });
    expect(heldWithdrawals(s).map((w) => w.id)).toEqual(['x']);
    expect(stored(s)).toBe(1);
    // The dropped id may come back at another height.
    s = run(s, withdraw('a', 1n, 9, 'y'));
    expect(stored(s)).toBe(2);
  });

  test('a rejection replaces the withdrawal, and a rejected one is forgotten like any other', () => {
    let s = run(at(10, {}, { historyBlocks: 20 }), withdraw('a', 5n, 10, 'r'));
    s = run(s, { type: 'withdrawalRejected', id: 'r' });
    expect(heldWithdrawals(s)).toEqual([
      { id: 'r', account: 'a', amount: 5n, height: 10, rejected: true },
    ]);
    s = run(s, { type: 'blockConnected', height: 30 });
    expect(stored(s)).toBe(0);
    expect(apply(s, { type: 'withdrawalRejected', id: 'r' }).ok).toBe(false);
  });

  test('states derived from one state keep nothing of each other', () => {
    const base = run(at(10, WINDOW_144), withdraw('alice', 1n, 10));
    // Many hypothetical next states from the same base, as a "what if" caller makes them.
    const siblings = Array.from({ length: 1000 }, (_, i) =>
      run(base, withdraw('bob', 1n, 10, `s${i}`)),
    );
    expect(stored(base)).toBe(1);
    // Each sibling finds its own withdrawal and none of the others', once its generation
    // is sealed (with the Bloom filter built from its own map) too.
    const later = siblings.map((s) => run(s, { type: 'blockConnected', height: 10 + 2016 / 2 }));
    for (const [i, s] of later.entries()) {
      expect(stored(s)).toBe(2);
      expect(s.generations.length).toBe(2);
      expect(apply(s, withdraw('bob', 1n, 10, `s${i}`)).ok).toBe(true);
      expect(apply(s, withdraw('bob', 2n, 10, `s${i}`)).ok).toBe(false);
      expect(apply(s, { type: 'withdrawalRejected', id: `s${(i + 1) % 1000}` }).ok).toBe(false);
    }
  });

  test('every withdrawal a sealed generation holds is found by id, through the filter of them all', () => {
    const history = 64;
    const events: LimitsEvent[] = [];
    for (let b = 1; b <= 200; b++) {
      events.push({ type: 'blockConnected', height: b });
      for (let i = 0; i < 6; i++) events.push(withdraw(`a${i}`, 1n, b, `w${b}-${i}`));
    }
    // Half the blocks in one batch (which fills the generations it seals itself), the rest
    // one call per block (each generation then sealed by a block alone).
    const half = events.findIndex((e) => e.type === 'blockConnected' && e.height === 101);
    let s = run(createLimitsState({ historyBlocks: history }), ...events.slice(0, half));
    for (let from = half; from < events.length; from += 7)
      s = run(s, ...events.slice(from, from + 7));
    const [young, ...sealed] = s.generations;
    expect(sealed.length).toBeGreaterThan(4);
    expect(young!.older).toBeInstanceOf(Uint32Array);
    const held = heldWithdrawals(s);
    expect(held).toHaveLength(history * 6);
    for (const w of held) {
      // The same payload again changes nothing; another one is a duplicate.
      expect(apply(s, withdraw(w.account, 1n, w.height, w.id))).toMatchObject({
        ok: true,
        state: s,
      });
      expect(apply(s, withdraw(w.account, 2n, w.height, w.id))).toMatchObject({
        ok: false,
        error: { code: 'duplicate_withdrawal' },
      });
    }
    // A block that seals a generation, alone in its call, leaves the filter of the older
    // ones built again, with the one it sealed in it.
    let next = s;
    for (let h = 201; next.generations.length === s.generations.length || h < 210; h++)
      next = run(next, { type: 'blockConnected', height: h });
    expect(next.generations[0]!.older).toBeInstanceOf(Uint32Array);
    expect(next.generations[0]!.older).not.toBe(young!.older);
    for (const w of heldWithdrawals(next))
      expect(apply(next, withdraw(w.account, 2n, w.height, w.id)).ok).toBe(false);
  });

  test('a long batch holds the same withdrawals as one batch per block, at every later block', () => {
    const history = 64;
    const events: LimitsEvent[] = [];
    for (let b = 1; b <= 300; b++) {
      events.push({ type: 'blockConnected', height: b });
      for (let i = 0; i < 4; i++)
        events.push(withdraw(`a${i}`, 1n, Math.max(0, b - (i % 3)), `w${b}-${i}`));
    }
    let batch = run(createLimitsState({ historyBlocks: history }), ...events);
    let perBlock = createLimitsState({ historyBlocks: history });
    let block: LimitsEvent[] = [];
    for (const e of events) {
      if (e.type === 'blockConnected' && block.length > 0) {
        perBlock = run(perBlock, ...block);
        block = [];
      }
      block.push(e);
    }
    perBlock = run(perBlock, ...block);
    // The batch filled the generations it sealed itself, not only the youngest.
    expect(batch.generations.filter((g) => g.map.size > 0).length).toBeGreaterThan(3);
    // Then blocks one at a time, until every generation the batch made has been dropped.
    for (let h = 301; h <= 301 + history * 2; h++) {
      batch = run(batch, { type: 'blockConnected', height: h });
      perBlock = run(perBlock, { type: 'blockConnected', height: h });
      const ids = heldWithdrawals(batch).map((w) => w.id);
      expect(ids, `at ${h}`).toEqual(heldWithdrawals(perBlock).map((w) => w.id));
      expect(stored(batch)).toBeGreaterThanOrEqual(ids.length);
      // Each one held is found by id (a different payload is refused as a duplicate).
      for (const w of heldWithdrawals(batch).slice(0, 8))
        expect(apply(batch, withdraw(w.account, 2n, w.height, w.id)).ok).toBe(false);
    }
  });
});
