/** The rolling window's arithmetic (`src/core/window.ts`), rule by rule. */
import { describe, expect, test } from 'vitest';
import { accountTree, heightWithin, windowSpan, withdrawnIn } from '../../src/core/window.js';
import { createLimitsState, type LimitsEvent } from '../../src/index.js';
import { at, run } from '../support/helpers.js';

const w = (id: string, account: string, amount: bigint, height: number): LimitsEvent => ({
  type: 'withdrawalRequested',
  id,
  account,
  amount,
  height,
});

describe('the window a rule reads', () => {
  test('before any block there is no window, and nothing is withdrawn in it', () => {
    const s = createLimitsState();
    expect(windowSpan(s, 144n)).toBeUndefined();
    expect(withdrawnIn(s, s.historySums, 144n)).toBe(0n);
    expect(heightWithin(s, s.historySums, 144n, 0n)).toBeUndefined();
  });

  test('a window of B blocks at tip T is the heights T−B+1 … T', () => {
    expect(windowSpan(at(1_000), 10n)).toEqual({ from: 991, to: 1_000 });
  });

  test('a window longer than what is retained starts at the oldest retained height', () => {
    const s = at(1_000, {}, { historyBlocks: 50 });
    expect(windowSpan(s, 50n)).toEqual({ from: 951, to: 1_000 });
    // After a reorg the history still ends at the highest tip seen.
    const r = run(s, { type: 'chainReorganized', height: 990 });
    expect(windowSpan(r, 50n)).toEqual({ from: 951, to: 990 });
  });

  test('withdrawn counts the heights in the window, not those before it nor rejected ones', () => {
    const s = run(
      at(100),
      w('a', 'x', 5n, 90),
      w('b', 'x', 7n, 91),
      w('c', 'y', 11n, 100),
      w('d', 'y', 13n, 100),
      { type: 'withdrawalRejected', id: 'd' },
    );
    expect(withdrawnIn(s, s.historySums, 10n)).toBe(7n + 11n);
    expect(withdrawnIn(s, s.historySums, 11n)).toBe(5n + 7n + 11n);
    expect(withdrawnIn(s, s.historySums, 1n)).toBe(11n);
  });
});

describe('when the window has room', () => {
  const s = run(at(100), w('a', 'x', 5n, 91), w('b', 'x', 7n, 95), w('c', 'x', 11n, 100));

  test('now, when what is withdrawn already leaves the room', () => {
    expect(heightWithin(s, s.historySums, 10n, 23n)).toBe(100);
  });

  test('at the first tip where enough has left the window', () => {
    // 23 withdrawn; room for 20 needs 3 gone: the 5 at 91 leaves at tip 101.
    expect(heightWithin(s, s.historySums, 10n, 20n)).toBe(101);
    // Room for 11 needs 12 gone: the 5 at 91 and the 7 at 95 leave by tip 105.
    expect(heightWithin(s, s.historySums, 10n, 11n)).toBe(105);
    // Room for 10 needs 13 gone: the 11 at 100 as well, at tip 110.
    expect(heightWithin(s, s.historySums, 10n, 10n)).toBe(110);
    // Room for nothing at all: everything must leave, the last at tip 110.
    expect(heightWithin(s, s.historySums, 10n, 0n)).toBe(110);
  });
});

describe('an account’s own sums', () => {
  test('are kept only when its entry sets a window of its own, and count its earlier withdrawals', () => {
    const s = run(at(100), w('a', 'x', 5n, 99), w('b', 'y', 7n, 100));
    expect(accountTree(s, 'x')).toBeUndefined();
    const t = run(s, {
      type: 'accountLimitsSet',
      account: 'x',
      limits: { rollingWithdrawalBlocks: 6n, rollingWithdrawalCap: 100n },
    });
    expect(withdrawnIn(t, accountTree(t, 'x'), 6n)).toBe(5n);
    expect(accountTree(t, 'y')).toBeUndefined();
    expect(accountTree(t, '')).toBeUndefined();
  });
});
