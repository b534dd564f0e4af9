import { describe, expect, test } from 'vitest';
import {
  admitDeposits,
  admitWithdrawals,
  checkDeposit,
  checkWithdrawal,
  createLimitsState,
  effectiveLimits,
  getAccountLimits,
  whenAvailable,
} from '../../src/index.js';
import { at, run, WINDOW_144, withdraw } from '../support/helpers.js';

describe('account fallback', () => {
  const s = run(
    at(100, {
      perDepositCap: 500n,
      perDepositMinimum: 20n,
      perWithdrawalCap: 300n,
      pegCap: 10_000n,
      ...WINDOW_144,
    }),
    {
      type: 'accountLimitsSet',
      account: 'alice',
      limits: { pegCap: 50n },
    },
  );

  test('an entry without per-deposit or per-withdrawal caps falls back to the global ones', () => {
    const e = effectiveLimits(s, 'alice');
    expect(e.perDepositCap).toBe(500n);
    expect(e.perWithdrawalCap).toBe(300n);
  });

  test("an entry's null minimum means no minimum, not the global one", () => {
    expect(effectiveLimits(s, 'alice').perDepositMinimum).toBeNull();
    expect(checkDeposit(s, { account: 'alice', amount: 1n })).toEqual({ ok: true });
    expect(checkDeposit(s, { account: 'bob', amount: 1n })).toEqual({
      ok: false,
      reason: 'below_minimum',
      limit: 20n,
      availableAt: null,
    });
  });

  test('an account without an entry gets the global values', () => {
    const e = effectiveLimits(s, 'bob');
    expect(e.hasEntry).toBe(false);
    expect([
      e.perDepositCap,
      e.perDepositMinimum,
      e.perWithdrawalCap,
      e.pegCap,
      e.accountPegCap,
    ]).toEqual([500n, 20n, 300n, 10_000n, null]);
    expect(getAccountLimits(s, 'bob')).toBeUndefined();
  });

  test("an entry's own caps win over the global ones", () => {
    const t = run(s, {
      type: 'accountLimitsSet',
      account: 'carol',
      limits: { perDepositCap: 900n, perWithdrawalCap: 5n },
    });
    expect(checkWithdrawal(t, { account: 'carol', amount: 6n })).toEqual({
      ok: false,
      reason: 'above_per_withdrawal_cap',
      limit: 5n,
      availableAt: null,
    });
    expect(checkDeposit(t, { account: 'carol', amount: 900n })).toEqual({ ok: true });
  });

  test("the entry's peg cap applies to the account's own total, the global one to the global total", () => {
    const t = run(
      s,
      { type: 'peggedTotalObserved', total: 40n, account: 'alice' },
      { type: 'peggedTotalObserved', total: 9_990n },
    );
    expect(checkDeposit(t, { account: 'alice', amount: 11n })).toEqual({
      ok: false,
      reason: 'peg_cap_exceeded',
      limit: 10n,
      availableAt: null,
    });
    expect(checkDeposit(t, { account: 'alice', amount: 10n })).toEqual({ ok: true });
    const u = run(t, { type: 'peggedTotalObserved', total: 0n });
    expect(checkDeposit(u, { account: 'alice', amount: 11n })).toEqual({
      ok: false,
      reason: 'account_peg_cap_exceeded',
      limit: 10n,
      availableAt: null,
    });
  });

  test("the entry's window counts only its withdrawals, including those made before the entry was set", () => {
    let t = run(s, withdraw('alice', 70n, 99), withdraw('bob', 500n, 100));
    t = run(t, {
      type: 'accountLimitsSet',
      account: 'alice',
      limits: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 100n },
    });
    expect(effectiveLimits(t, 'alice').availableToWithdraw).toBe(30n);
    expect(effectiveLimits(t, 'bob').availableToWithdraw).toBe(430n);
    expect(checkWithdrawal(t, { account: 'alice', amount: 31n })).toEqual({
      ok: false,
      reason: 'account_rolling_cap_exceeded',
      limit: 30n,
      // Height 99 leaves alice's 10-block window at tip 109.
      availableAt: 109,
    });
    expect(checkWithdrawal(t, { account: 'bob', amount: 300n })).toEqual({ ok: true });
  });
});

describe('checks', () => {
  const s = at(100, {
    perWithdrawalCap: 300n,
    perDepositCap: 400n,
    perDepositMinimum: 10n,
    pegCap: 1000n,
    ...WINDOW_144,
  });

  test('a cap is inclusive: an amount equal to it is admitted', () => {
    expect(checkWithdrawal(s, { account: 'a', amount: 300n })).toEqual({ ok: true });
    expect(checkWithdrawal(s, { account: 'a', amount: 301n })).toEqual({
      ok: false,
      reason: 'above_per_withdrawal_cap',
      limit: 300n,
      availableAt: null,
    });
    expect(checkDeposit(s, { account: 'a', amount: 400n })).toEqual({ ok: true });
    expect(checkDeposit(s, { account: 'a', amount: 401n })).toEqual({
      ok: false,
      reason: 'above_per_deposit_cap',
      limit: 400n,
      availableAt: null,
    });
    expect(checkDeposit(s, { account: 'a', amount: 10n })).toEqual({ ok: true });
    expect(checkDeposit(s, { account: 'a', amount: 9n })).toEqual({
      ok: false,
      reason: 'below_minimum',
      limit: 10n,
      availableAt: null,
    });
    const full = run(
      s,
      withdraw('b', 300n, 100),
      withdraw('b', 300n, 100),
      withdraw('b', 100n, 100),
    );
    expect(checkWithdrawal(full, { account: 'a', amount: 300n })).toEqual({ ok: true });
    expect(checkWithdrawal(full, { account: 'a', amount: 301n })).toEqual({
      ok: false,
      reason: 'above_per_withdrawal_cap',
      limit: 300n,
      availableAt: null,
    });
    const fuller = run(full, withdraw('b', 1n, 100));
    expect(checkWithdrawal(fuller, { account: 'a', amount: 300n })).toEqual({
      ok: false,
      reason: 'rolling_cap_exceeded',
      limit: 299n,
      availableAt: 244,
    });
  });

  test('the peg cap counts the pegged total last observed', () => {
    const t = run(s, { type: 'peggedTotalObserved', total: 700n });
    expect(checkDeposit(t, { account: 'a', amount: 300n })).toEqual({ ok: true });
    expect(checkDeposit(t, { account: 'a', amount: 301n })).toEqual({
      ok: false,
      reason: 'peg_cap_exceeded',
      limit: 300n,
      availableAt: null,
    });
  });

  test('malformed requests are refused with a reason, never thrown', () => {
    expect(checkWithdrawal(s, { account: 'a', amount: 0n })).toEqual({
      ok: false,
      reason: 'invalid_amount',
      limit: null,
      availableAt: null,
    });
    expect(checkWithdrawal(s, { account: '', amount: 1n })).toEqual({
      ok: false,
      reason: 'invalid_account',
      limit: null,
      availableAt: null,
    });
    expect(checkDeposit(s, { account: 'a', amount: 1 as never })).toEqual({
      ok: false,
      reason: 'invalid_amount',
      limit: null,
      availableAt: null,
    });
    expect(checkDeposit(s, null as never)).toEqual({
      ok: false,
      reason: 'invalid_account',
      limit: null,
      availableAt: null,
    });
    // Invalid input is never the same answer as "never": a LimitsError, with its path.
    expect(() => whenAvailable(s, { account: 'a', amount: -1n })).toThrow(
      expect.objectContaining({ code: 'invalid_amount', path: 'amount' }),
    );
    expect(() => whenAvailable(s, { account: '', amount: 1n })).toThrow(
      expect.objectContaining({ code: 'invalid_account', path: 'account' }),
    );
  });

  test('batch admission counts each admitted request against the ones after it', () => {
    const t = run(s, withdraw('x', 300n, 100), withdraw('x', 300n, 100));
    const batch = [
      { id: 1, account: 'a', amount: 250n },
      { id: 2, account: 'b', amount: 200n },
      { id: 3, account: 'c', amount: 150n },
      { id: 4, account: 'd', amount: 301n },
    ];
    expect(admitWithdrawals(t, batch)).toEqual({
      admitted: [batch[0], batch[2]],
      refused: [
        // Once height 100 (with the 250 admitted before it) leaves the window.
        { request: batch[1], reason: 'rolling_cap_exceeded', limit: 150n, availableAt: 244 },
        { request: batch[3], reason: 'above_per_withdrawal_cap', limit: 300n, availableAt: null },
      ],
    });
    const deposits = [
      { account: 'a', amount: 400n },
      { account: 'b', amount: 400n },
      { account: 'c', amount: 300n },
    ];
    expect(admitDeposits(s, deposits)).toEqual({
      admitted: [deposits[0], deposits[1]],
      refused: [
        { request: deposits[2], reason: 'peg_cap_exceeded', limit: 200n, availableAt: null },
      ],
    });
  });
});

describe('whenAvailable', () => {
  const s = run(at(120, WINDOW_144), withdraw('a', 800n, 100), withdraw('a', 100n, 110));

  test('is the current tip when the amount fits now', () => {
    expect(whenAvailable(s, { account: 'b', amount: 100n })).toBe(120);
  });

  test('is the tip at which enough old withdrawals have left the window', () => {
    expect(whenAvailable(s, { account: 'b', amount: 101n })).toBe(244);
    expect(whenAvailable(s, { account: 'b', amount: 900n })).toBe(244);
    expect(whenAvailable(s, { account: 'b', amount: 901n })).toBe(254);
    const later = run(s, { type: 'blockConnected', height: 244 });
    expect(checkWithdrawal(later, { account: 'b', amount: 900n })).toEqual({ ok: true });
    expect(
      checkWithdrawal(run(s, { type: 'blockConnected', height: 243 }), {
        account: 'b',
        amount: 900n,
      }).ok,
    ).toBe(false);
  });

  test('is null when the amount is above a cap or no block is known', () => {
    expect(whenAvailable(s, { account: 'b', amount: 1001n })).toBeNull();
    expect(
      whenAvailable(createLimitsState({ limits: WINDOW_144 }), { account: 'b', amount: 1n }),
    ).toBeNull();
    const capped = run(s, {
      type: 'accountLimitsSet',
      account: 'b',
      limits: { perWithdrawalCap: 5n },
    });
    expect(whenAvailable(capped, { account: 'b', amount: 6n })).toBeNull();
  });

  test("takes the later of the global window and the account's own window", () => {
    const t = run(s, {
      type: 'accountLimitsSet',
      account: 'a',
      limits: { rollingWithdrawalBlocks: 1000n, rollingWithdrawalCap: 950n },
    });
    expect(whenAvailable(t, { account: 'a', amount: 60n })).toBe(1100);
    expect(whenAvailable(t, { account: 'b', amount: 60n })).toBe(120);
  });

  test('is the tip when no window is configured', () => {
    expect(whenAvailable(at(7), { account: 'a', amount: 10n ** 18n })).toBe(7);
  });
});

describe('checks never throw on data', () => {
  test('admitting something that is not iterable admits nothing', () => {
    const state = at(10, WINDOW_144);
    for (const requests of [null, undefined, 42, {}] as unknown as Array<
      Iterable<{ account: string; amount: bigint }>
    >) {
      expect(admitWithdrawals(state, requests)).toEqual({ admitted: [], refused: [] });
      expect(admitDeposits(state, requests)).toEqual({ admitted: [], refused: [] });
    }
  });

  test('whenAvailable never answers a height no block can have', () => {
    const tip = Number.MAX_SAFE_INTEGER - 2;
    const state = run(at(tip, WINDOW_144), withdraw('alice', 1000n, tip));
    // The window frees up at tip + 144, past the largest safe height: never.
    expect(whenAvailable(state, { account: 'alice', amount: 1n })).toBeNull();
    // Room left now is answered with the tip itself.
    const roomy = run(at(tip, WINDOW_144), withdraw('alice', 10n, tip));
    expect(whenAvailable(roomy, { account: 'alice', amount: 1n })).toBe(tip);
  });

  test('whenAvailable answers a height a block can have, exactly, near the largest safe height', () => {
    const tip = Number.MAX_SAFE_INTEGER - 200;
    const state = run(at(tip, WINDOW_144), withdraw('alice', 1000n, tip - 10));
    const h = whenAvailable(state, { account: 'alice', amount: 1n });
    expect(h).toBe(tip - 10 + 144);
    expect(Number.isSafeInteger(h)).toBe(true);
    const next = run(state, { type: 'blockConnected', height: h! });
    expect(checkWithdrawal(next, { account: 'alice', amount: 1n })).toEqual({ ok: true });
  });
});
