// The chain bounds (src/core/bounds.ts): one wrong height must not switch the window off.
import { describe, expect, test } from 'vitest';
import {
  applyAll,
  checkChainBounds,
  createLimitsState,
  DEFAULT_CHAIN_BOUNDS,
  getLimits,
  type LimitsEvent,
} from '../../src/index.js';
import { at, run } from '../support/helpers.js';

const window144 = () =>
  run(at(870_000, { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 1000n }), {
    type: 'withdrawalRequested',
    id: 'w1',
    account: 'alice',
    amount: 900n,
    height: 870_000,
  });

describe('what one wrong height does without the bounds, and with them', () => {
  test('without them, a block at 9,000,000,000 forgets the window for good', () => {
    // The measurement that led to the bounds: the state accepts such a block, and the
    // window never comes back.
    const s = window144();
    const forged = run(s, { type: 'blockConnected', height: 9_000_000_000 });
    expect(getLimits(forged).availableToWithdraw).toBe(1000n);
    const real = applyAll(forged, [{ type: 'blockConnected', height: 870_001 }]);
    expect(real.ok ? 'ok' : real.error.code).toBe('height_not_above_tip');
    const back = applyAll(forged, [{ type: 'chainReorganized', height: 870_000 }]);
    expect(back.ok ? 'ok' : back.error.code).toBe('reorg_too_deep');
    const counted = run(forged, {
      type: 'withdrawalRequested',
      id: 'w2',
      account: 'bob',
      amount: 1000n,
      height: 870_001,
    });
    expect(getLimits(counted).availableToWithdraw).toBe(1000n);
  });

  test('with them, the same block is chain_bound_exceeded, naming the bound and the heights', () => {
    const r = checkChainBounds(window144(), [{ type: 'blockConnected', height: 9_000_000_000 }]);
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.code).toBe('chain_bound_exceeded');
    expect(r.error.path).toBe('[0].height');
    expect(r.error.event).toBe(0);
    expect(r.error.message).toContain('9000000000');
    expect(r.error.message).toContain('870000');
    expect(r.error.message).toContain('maxTipAdvance');
    expect(r.error.message).toContain('144');
  });
});

describe('checkChainBounds', () => {
  const s = at(1000);
  const check = (events: LimitsEvent[], bounds = DEFAULT_CHAIN_BOUNDS) => {
    const r = checkChainBounds(s, events, bounds);
    return r.ok ? 'ok' : `${r.error.code} ${r.error.path}`;
  };

  test('the defaults are a day of blocks ahead and six back', () => {
    expect(DEFAULT_CHAIN_BOUNDS).toEqual({ maxTipAdvance: 144, maxReorgDepth: 6 });
  });

  test('maxTipAdvance is the most a block may rise above the tip', () => {
    expect(check([{ type: 'blockConnected', height: 1144 }])).toBe('ok');
    expect(check([{ type: 'blockConnected', height: 1145 }])).toBe(
      'chain_bound_exceeded [0].height',
    );
  });

  test('maxReorgDepth is the deepest a reorganization may go below the tip', () => {
    expect(check([{ type: 'chainReorganized', height: 994 }])).toBe('ok');
    expect(check([{ type: 'chainReorganized', height: 993 }])).toBe(
      'chain_bound_exceeded [0].height',
    );
  });

  test('the tip is followed through the batch: each step is bounded, not the sum', () => {
    const climb: LimitsEvent[] = [
      { type: 'blockConnected', height: 1100 },
      { type: 'blockConnected', height: 1200 },
      { type: 'blockConnected', height: 1300 },
    ];
    expect(check(climb)).toBe('ok');
    expect(
      check([
        { type: 'chainReorganized', height: 996 },
        { type: 'chainReorganized', height: 990 },
        { type: 'blockConnected', height: 1134 },
      ]),
    ).toBe('ok');
    // …and the reorganization is measured from the tip the batch has reached.
    expect(
      check([
        { type: 'blockConnected', height: 1100 },
        { type: 'chainReorganized', height: 1000 },
      ]),
    ).toBe('chain_bound_exceeded [1].height');
  });

  test('the first block has no bound', () => {
    const fresh = createLimitsState();
    expect(checkChainBounds(fresh, [{ type: 'blockConnected', height: 870_000 }]).ok).toBe(true);
    // …but the blocks after it in the same batch have.
    const r = checkChainBounds(fresh, [
      { type: 'blockConnected', height: 870_000 },
      { type: 'blockConnected', height: 9_000_000_000 },
    ]);
    expect(r.ok ? 'ok' : r.error.path).toBe('[1].height');
  });

  test('bounds of the caller: larger ones let more through, zero depth lets no reorganization through', () => {
    expect(
      check([{ type: 'blockConnected', height: 9_000_000_000 }], {
        maxTipAdvance: Number.MAX_SAFE_INTEGER,
        maxReorgDepth: 6,
      }),
    ).toBe('ok');
    expect(
      check([{ type: 'chainReorganized', height: 999 }], { maxTipAdvance: 144, maxReorgDepth: 0 }),
    ).toBe('chain_bound_exceeded [0].height');
  });

  test('events that are not chain events, and heights that are not heights, are left to applyAll', () => {
    expect(
      check([
        { type: 'limitsSet', limits: {} },
        { type: 'blockConnected', height: -5 },
        { type: 'blockConnected', height: 'x' as unknown as number },
      ]),
    ).toBe('ok');
  });
});
