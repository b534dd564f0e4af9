import { fc, test as fcTest } from '@fast-check/vitest';
import { describe, expect, test } from 'vitest';
import { isAccountName } from '../../src/core/limits.js';
import { mapForEach, mapGet } from '../../src/core/pmap.js';
import {
  apply,
  applyAll,
  checkDeposit,
  createLimitsState,
  effectiveLimits,
  getLimits,
  LimitsError,
  type LimitsEvent,
  type LimitsState,
} from '../../src/index.js';
import { at, expectError, heldWithdrawals, run, WINDOW_144, withdraw } from '../support/helpers.js';

const available = (s: Parameters<typeof getLimits>[0]) => getLimits(s).availableToWithdraw;

// The control characters an account name may not hold, as the rule is written.
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

describe('createLimitsState', () => {
  test('starts with no tip, nothing withdrawn, throttle off, every cap unset', () => {
    const s = createLimitsState();
    expect(s.tip).toBeNull();
    expect(s.historyBlocks).toBe(2016);
    expect(getLimits(s)).toEqual({
      availableToWithdraw: null,
      pegCap: null,
      perDepositCap: null,
      perDepositMinimum: null,
      perWithdrawalCap: null,
      rollingWithdrawalBlocks: null,
      rollingWithdrawalCap: null,
      throttleModeInitiator: null,
      rollingMintBlocks: null,
      rollingMintCap: null,
      rollingMintCapShare: null,
      availableToMint: null,
      accountCaps: {},
    });
  });

  test('before any block is known, availableToWithdraw is the whole cap', () => {
    expect(available(createLimitsState({ limits: WINDOW_144 }))).toBe(1000n);
  });

  test('bad options throw a LimitsError with a code and a path', () => {
    const bad = (o: unknown, code: string, path: string) => {
      try {
        createLimitsState(o as never);
        expect.unreachable();
      } catch (e) {
        expect(e).toBeInstanceOf(LimitsError);
        expect((e as LimitsError).code).toBe(code);
        expect((e as LimitsError).path).toBe(path);
      }
    };
    bad({ historyBlocks: 0 }, 'invalid_option', 'historyBlocks');
    bad({ historyBlocks: 1.5 }, 'invalid_option', 'historyBlocks');
    bad({ historyBlocks: 10 }, 'window_exceeds_history', 'throttleProfile.rollingWithdrawalBlocks');
    bad({ limits: { pegCap: 5 } }, 'invalid_amount', 'limits.pegCap');
    bad({ limits: { pegcap: 5n } }, 'unknown_field', 'limits.pegcap');
    bad(
      { limits: { rollingWithdrawalBlocks: 3000n, rollingWithdrawalCap: 1n } },
      'window_exceeds_history',
      'limits.rollingWithdrawalBlocks',
    );
    bad(
      {
        throttleProfile: {
          perWithdrawalCap: 1n,
          rollingWithdrawalBlocks: 0n,
          rollingWithdrawalCap: 1n,
        },
      },
      'invalid_amount',
      'throttleProfile.rollingWithdrawalBlocks',
    );
  });
});

describe('validation', () => {
  const s = at(100);
  test('rollingWithdrawalBlocks and rollingWithdrawalCap are both set or both null', () => {
    expectError(
      s,
      { type: 'limitsSet', limits: { rollingWithdrawalBlocks: 5n } },
      'incomplete_rolling_window',
      'limits.rollingWithdrawalCap',
    );
    expectError(
      s,
      { type: 'accountLimitsSet', account: 'a', limits: { rollingWithdrawalCap: 5n } },
      'incomplete_rolling_window',
      'limits.rollingWithdrawalBlocks',
    );
    expectError(
      s,
      { type: 'limitsSet', limits: { accountCaps: { bob: { rollingWithdrawalCap: 5n } } } },
      'incomplete_rolling_window',
      'limits.accountCaps.bob.rollingWithdrawalBlocks',
    );
  });
  test('the window is at least 1 block and fits in the history', () => {
    expectError(
      s,
      { type: 'limitsSet', limits: { rollingWithdrawalBlocks: 0n, rollingWithdrawalCap: 5n } },
      'invalid_amount',
    );
    expectError(
      s,
      { type: 'limitsSet', limits: { rollingWithdrawalBlocks: 2017n, rollingWithdrawalCap: 5n } },
      'window_exceeds_history',
    );
    expect(
      apply(s, {
        type: 'limitsSet',
        limits: { rollingWithdrawalBlocks: 2016n, rollingWithdrawalCap: 5n },
      }).ok,
    ).toBe(true);
  });
  test('the per-deposit minimum is not above the per-deposit cap', () => {
    expectError(
      s,
      { type: 'limitsSet', limits: { perDepositMinimum: 11n, perDepositCap: 10n } },
      'minimum_above_cap',
      'limits.perDepositMinimum',
    );
    expect(
      apply(s, { type: 'limitsSet', limits: { perDepositMinimum: 10n, perDepositCap: 10n } }).ok,
    ).toBe(true);
  });
  test('amounts are int64 bigints, caps are not negative', () => {
    expectError(
      s,
      { type: 'limitsSet', limits: { pegCap: -1n } },
      'invalid_amount',
      'limits.pegCap',
    );
    expectError(s, { type: 'limitsSet', limits: { pegCap: 2n ** 63n } }, 'invalid_amount');
    expectError(s, { type: 'limitsSet', limits: { pegCap: 100 as never } }, 'invalid_amount');
    expect(apply(s, { type: 'limitsSet', limits: { pegCap: 2n ** 63n - 1n } }).ok).toBe(true);
  });
  test('an unknown field in limits is refused, naming it', () => {
    expectError(
      s,
      { type: 'limitsSet', limits: { perWithdrawlCap: 1n } as never },
      'unknown_field',
      'limits.perWithdrawlCap',
    );
  });
  test('account names are 1 to 256 characters without control characters', () => {
    expectError(
      s,
      { type: 'accountLimitsSet', account: '', limits: { pegCap: 1n } },
      'invalid_account',
    );
    expectError(
      s,
      { type: 'accountLimitsSet', account: 'a\nb', limits: { pegCap: 1n } },
      'invalid_account',
    );
    expectError(
      s,
      { type: 'accountLimitsSet', account: 'x'.repeat(257), limits: { pegCap: 1n } },
      'invalid_account',
    );
    expect(
      apply(s, { type: 'accountLimitsSet', account: 'x'.repeat(256), limits: { pegCap: 1n } }).ok,
    ).toBe(true);
    expect(
      apply(s, { type: 'accountLimitsSet', account: 'bc1q ünïcode ✓', limits: { pegCap: 1n } }).ok,
    ).toBe(true);
    // Each edge of the control ranges (C0, DEL, C1), alone and inside a name.
    for (const [code, control] of [
      [0x00, true],
      [0x1f, true],
      [0x20, false],
      [0x7e, false],
      [0x7f, true],
      [0x9f, true],
      [0xa0, false],
    ] as const) {
      const c = String.fromCharCode(code);
      for (const name of [c, `a${c}`, `${c}b`])
        expect(isAccountName(name), `${code}`).toBe(!control);
    }
  });
  fcTest.prop([fc.string({ unit: 'binary', maxLength: 300 })], { numRuns: 2000 })(
    'an account name is valid exactly when it is 1 to 256 UTF-16 units, none in U+0000–U+001F or U+007F–U+009F',
    (name) => {
      const rule = name.length >= 1 && name.length <= 256 && !CONTROL.test(name);
      expect(isAccountName(name)).toBe(rule);
    },
  );
});

describe('events', () => {
  test('limitsSet sets the six global caps, an absent field becomes null', () => {
    let s = run(at(1), { type: 'limitsSet', limits: { pegCap: 5n, perWithdrawalCap: 7n } });
    s = run(s, { type: 'limitsSet', limits: { pegCap: 9n } });
    expect(getLimits(s).pegCap).toBe(9n);
    expect(getLimits(s).perWithdrawalCap).toBeNull();
  });

  test('limitsSet replaces the listed account entries and leaves the others', () => {
    let s = run(at(1), {
      type: 'limitsSet',
      limits: { accountCaps: { a: { pegCap: 1n }, b: { pegCap: 2n } } },
    });
    s = run(s, {
      type: 'limitsSet',
      limits: { accountCaps: new Map([['a', { perWithdrawalCap: 3n }]]) },
    });
    const caps = getLimits(s).accountCaps;
    expect(Object.keys(caps)).toEqual(['a', 'b']);
    expect(caps.a?.pegCap).toBeNull();
    expect(caps.a?.perWithdrawalCap).toBe(3n);
    expect(caps.b?.pegCap).toBe(2n);
  });

  test('an account entry whose six fields are all null does not exist', () => {
    let s = run(at(1), { type: 'accountLimitsSet', account: 'a', limits: { pegCap: 1n } });
    expect(Object.keys(getLimits(s).accountCaps)).toEqual(['a']);
    s = run(s, { type: 'accountLimitsSet', account: 'a', limits: { pegCap: null } });
    expect(getLimits(s).accountCaps).toEqual({});
    s = run(s, { type: 'limitsSet', limits: { accountCaps: { b: {} } } });
    expect(getLimits(s).accountCaps).toEqual({});
  });

  test('accountCaps keys such as __proto__ are ordinary account names', () => {
    const s = run(at(1), {
      type: 'accountLimitsSet',
      account: '__proto__',
      limits: { pegCap: 4n },
    });
    expect(Object.keys(getLimits(s).accountCaps)).toEqual(['__proto__']);
    const name = '__proto__';
    expect(getLimits(s).accountCaps[name]?.pegCap).toBe(4n);
  });

  test('blockConnected must go above the tip, and the heights a gap skips are empty', () => {
    const s = at(100, WINDOW_144);
    expectError(s, { type: 'blockConnected', height: 100 }, 'height_not_above_tip', 'height');
    expectError(s, { type: 'blockConnected', height: 99 }, 'height_not_above_tip');
    expectError(s, { type: 'blockConnected', height: -1 }, 'invalid_height');
    expectError(s, { type: 'blockConnected', height: 1.5 }, 'invalid_height');
    const t = run(s, withdraw('a', 300n, 100), { type: 'blockConnected', height: 200 });
    expect(available(t)).toBe(700n);
    expect(available(run(t, { type: 'blockConnected', height: 244 }))).toBe(1000n);
  });

  test('the window is the heights T−B+1 … T inclusive', () => {
    const s = run(
      at(100, { rollingWithdrawalBlocks: 3n, rollingWithdrawalCap: 1000n }),
      withdraw('a', 10n, 98),
      withdraw('a', 20n, 99),
      withdraw('a', 40n, 100),
    );
    expect(available(s)).toBe(930n);
    expect(available(run(s, { type: 'blockConnected', height: 101 }))).toBe(940n);
    expect(available(run(s, { type: 'blockConnected', height: 102 }))).toBe(960n);
    expect(available(run(s, { type: 'blockConnected', height: 103 }))).toBe(1000n);
  });

  test('availableToWithdraw never goes below zero', () => {
    const s = run(
      at(10, { rollingWithdrawalBlocks: 5n, rollingWithdrawalCap: 100n }),
      withdraw('a', 150n, 10),
    );
    expect(available(s)).toBe(0n);
  });

  test('changing the window length re-evaluates it exactly over the retained history', () => {
    let s = run(
      at(100, { rollingWithdrawalBlocks: 2n, rollingWithdrawalCap: 1000n }),
      withdraw('a', 10n, 50),
      withdraw('a', 20n, 99),
      withdraw('a', 40n, 100),
    );
    expect(available(s)).toBe(940n);
    s = run(s, {
      type: 'limitsSet',
      limits: { rollingWithdrawalBlocks: 60n, rollingWithdrawalCap: 1000n },
    });
    expect(available(s)).toBe(930n);
  });

  test('chainReorganized drops withdrawals above the new tip, and they may be reported again', () => {
    let s = run(at(100, WINDOW_144), withdraw('a', 10n, 99, 'x'), withdraw('a', 20n, 100, 'y'));
    s = run(s, { type: 'chainReorganized', height: 99 });
    expect(s.tip).toBe(99);
    expect(available(s)).toBe(990n);
    expectError(s, { type: 'withdrawalRejected', id: 'y' }, 'unknown_withdrawal');
    s = run(s, { type: 'blockConnected', height: 100 }, withdraw('a', 25n, 100, 'y'));
    expect(available(s)).toBe(965n);
  });

  test('chainReorganized must go below the tip and stay within the history', () => {
    const s = run(at(5000, WINDOW_144));
    expectError(s, { type: 'chainReorganized', height: 5000 }, 'height_not_below_tip');
    expectError(
      createLimitsState(),
      { type: 'chainReorganized', height: 1 },
      'height_not_below_tip',
    );
    expectError(s, { type: 'chainReorganized', height: 5000 - 2016 }, 'reorg_too_deep', 'height');
    expect(apply(s, { type: 'chainReorganized', height: 5000 - 2015 }).ok).toBe(true);
  });

  test('history is kept up to the highest tip seen, so a reorg does not shorten it', () => {
    const opts = {
      historyBlocks: 20,
      throttleProfile: {
        perWithdrawalCap: 1n,
        rollingWithdrawalBlocks: 5n,
        rollingWithdrawalCap: 1n,
      },
    };
    let s = run(
      at(100, { rollingWithdrawalBlocks: 20n, rollingWithdrawalCap: 1000n }, opts),
      withdraw('a', 7n, 85, 'old'),
    );
    s = run(s, { type: 'chainReorganized', height: 90 }, { type: 'blockConnected', height: 100 });
    expect(available(s)).toBe(993n);
    s = run(s, { type: 'blockConnected', height: 105 });
    expect(available(s)).toBe(1000n);
    expectError(s, { type: 'withdrawalRejected', id: 'old' }, 'unknown_withdrawal');
  });

  test('withdrawalRequested above the tip is refused', () => {
    const s = at(100, WINDOW_144);
    expectError(s, withdraw('a', 1n, 101), 'height_ahead_of_tip', 'height');
    expectError(createLimitsState(), withdraw('a', 1n, 0), 'height_ahead_of_tip');
  });

  test('withdrawalRequested validates every field', () => {
    const s = at(100, WINDOW_144);
    expectError(s, withdraw('a', 0n, 100), 'invalid_amount', 'amount');
    expectError(s, withdraw('a', -5n, 100), 'invalid_amount', 'amount');
    expectError(s, withdraw('a', 5 as never, 100), 'invalid_amount', 'amount');
    expectError(s, withdraw('', 5n, 100), 'invalid_account', 'account');
    expectError(s, withdraw('a', 5n, 100, ''), 'invalid_withdrawal_id', 'id');
  });

  test('the same withdrawal again is a no-op', () => {
    const s = run(at(100, WINDOW_144), withdraw('a', 10n, 100, 'x'));
    const again = apply(s, withdraw('a', 10n, 100, 'x'));
    expect(again.ok && again.state).toBe(s);
  });

  test('the same id with another account, amount or height is refused', () => {
    const s = run(at(100, WINDOW_144), withdraw('a', 10n, 100, 'x'));
    expectError(s, withdraw('a', 11n, 100, 'x'), 'duplicate_withdrawal', 'id');
    expectError(s, withdraw('b', 10n, 100, 'x'), 'duplicate_withdrawal');
    expectError(s, withdraw('a', 10n, 99, 'x'), 'duplicate_withdrawal');
  });

  test('a withdrawal older than the history is accepted and counts nowhere', () => {
    const s = at(5000, { rollingWithdrawalBlocks: 2016n, rollingWithdrawalCap: 1000n });
    const r = apply(s, withdraw('a', 10n, 5000 - 2016, 'ancient'));
    expect(r.ok && r.state).toBe(s);
    expectError(s, { type: 'withdrawalRejected', id: 'ancient' }, 'unknown_withdrawal');
  });

  const rejected = () =>
    run(at(100, WINDOW_144), withdraw('a', 10n, 100, 'x'), withdraw('a', 20n, 100, 'y'), {
      type: 'withdrawalRejected',
      id: 'x',
    });

  test('withdrawalRejected stops counting the withdrawal, which may be requested again', () => {
    const s = rejected();
    expect(available(s)).toBe(980n);
    expect(apply(s, withdraw('a', 10n, 100, 'x')).ok).toBe(true);
  });

  test('rejecting a withdrawal twice is a no-op', () => {
    const s = rejected();
    const twice = apply(s, { type: 'withdrawalRejected', id: 'x' });
    expect(twice.ok && twice.state).toBe(s);
  });

  test('rejecting an unknown id is refused', () => {
    expectError(rejected(), { type: 'withdrawalRejected', id: 'nope' }, 'unknown_withdrawal', 'id');
  });

  test('pegged-in totals start at 0, globally and for every account', () => {
    const s = at(1, { pegCap: 100n, accountCaps: { a: { pegCap: 10n } } });
    expect(s.peggedTotal).toBe(0n);
    expect(effectiveLimits(s, 'a').accountPeggedTotal).toBe(0n);
    expect(checkDeposit(s, { account: 'a', amount: 10n })).toEqual({ ok: true });
  });

  test('peggedTotalObserved sets the global or an account total', () => {
    let s = run(at(1, { pegCap: 100n }), { type: 'peggedTotalObserved', total: 60n });
    expect(s.peggedTotal).toBe(60n);
    s = run(s, { type: 'peggedTotalObserved', total: 5n, account: 'a' });
    expect(s.peggedTotal).toBe(60n);
    expectError(s, { type: 'peggedTotalObserved', total: -1n }, 'invalid_amount', 'total');
    expectError(
      s,
      { type: 'peggedTotalObserved', total: 1n, account: '' },
      'invalid_account',
      'account',
    );
  });

  test('an event that is not an event is refused', () => {
    const s = at(1);
    expectError(s, null as never, 'invalid_event', 'type');
    expectError(s, { type: 'nope' } as never, 'invalid_event', 'type');
    expectError(s, { type: 'limitsSet', limits: 5 } as never, 'invalid_event', 'limits');
  });
});

describe('applyAll', () => {
  test('is all or nothing and names the failing event by index', () => {
    const s = at(100, WINDOW_144);
    const events: LimitsEvent[] = [withdraw('a', 10n, 100), withdraw('a', 10n, 101)];
    const r = applyAll(s, events);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe('height_ahead_of_tip');
      expect(r.error.path).toBe('[1].height');
      // And as a number: a caller that drops the event needs no parse of the path.
      expect(r.error.event).toBe(1);
      // The index is in the path, never in the message.
      expect(r.error.message).toBe('height 101 is above the tip 100');
    }
    expect(available(s)).toBe(1000n);
  });

  test('an empty batch returns the same state', () => {
    const s = at(1);
    const r = applyAll(s, []);
    expect(r.ok && r.state).toBe(s);
  });

  test('earlier states stay valid after later batches change shared structure', () => {
    const s0 = run(at(100, WINDOW_144), withdraw('a', 10n, 100));
    const s1 = run(s0, withdraw('a', 20n, 100), { type: 'blockConnected', height: 400 });
    const s2 = run(s0, withdraw('b', 30n, 100));
    expect([available(s0), available(s1), available(s2)]).toEqual([990n, 1000n, 960n]);
  });
});

describe('books only where a limit needs them, memory that follows what is held', () => {
  const ownWindow = { rollingWithdrawalBlocks: 5n, rollingWithdrawalCap: 100n };

  test('only an account whose entry sets its own window keeps per-block sums', () => {
    const s = run(
      at(10, { ...WINDOW_144, accountCaps: { bob: ownWindow, carol: { pegCap: 5n } } }),
      withdraw('alice', 10n, 10),
      withdraw('bob', 10n, 10),
      withdraw('carol', 10n, 10),
    );
    const booked: string[] = [];
    mapForEach(s.books, (_, account) => booked.push(account));
    expect(booked).toEqual(['bob']);
  });

  test("an entry gaining a window counts the account's withdrawals made before it was set", () => {
    let s = run(at(10, WINDOW_144), withdraw('bob', 30n, 8), withdraw('bob', 25n, 10));
    s = run(s, { type: 'withdrawalRejected', id: lastId(s, 'bob', 25n) });
    s = run(s, { type: 'accountLimitsSet', account: 'bob', limits: ownWindow });
    expect(effectiveLimits(s, 'bob').availableToWithdraw).toBe(70n);
    // Losing the window drops the book; gaining it again recounts.
    s = run(s, { type: 'accountLimitsSet', account: 'bob', limits: { pegCap: 1n } });
    expect(mapGet(s.books, 'bob')).toBeUndefined();
    s = run(s, { type: 'accountLimitsSet', account: 'bob', limits: ownWindow });
    expect(effectiveLimits(s, 'bob').availableToWithdraw).toBe(70n);
  });

  test('a book whose withdrawals are all rejected is the shared empty tree again', () => {
    let s = run(at(10, { accountCaps: { bob: ownWindow } }), withdraw('bob', 30n, 10, 'b1'));
    s = run(s, { type: 'withdrawalRejected', id: 'b1' });
    expect(mapGet(s.books, 'bob')!.tree).toBe(s.treeShape.empty);
  });

  test("a book's heights that left the history are cleared when it is next read", () => {
    let s = run(
      at(
        10,
        { accountCaps: { bob: { rollingWithdrawalBlocks: 20n, rollingWithdrawalCap: 100n } } },
        { historyBlocks: 20 },
      ),
      withdraw('bob', 60n, 10),
    );
    expect(effectiveLimits(s, 'bob').availableToWithdraw).toBe(40n);
    // 20 blocks on, height 10 has left the history; its slot now belongs to height 30.
    s = run(s, { type: 'blockConnected', height: 30 }, withdraw('bob', 5n, 30));
    expect(effectiveLimits(s, 'bob').availableToWithdraw).toBe(95n);
  });
});

function lastId(state: LimitsState, account: string, amount: bigint): string {
  return heldWithdrawals(state)
    .filter((w) => w.account === account && w.amount === amount)
    .pop()!.id;
}
