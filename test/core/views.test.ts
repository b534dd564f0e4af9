import { describe, expect, test } from 'vitest';
import { effectiveLimits, getLimits } from '../../src/index.js';
import { at, run, withdraw } from '../support/helpers.js';

describe('views never throw on data', () => {
  test('effectiveLimits of null, undefined or a number gives the global values', () => {
    const state = run(
      at(10, {
        perWithdrawalCap: 500n,
        rollingWithdrawalBlocks: 5n,
        rollingWithdrawalCap: 1000n,
        accountCaps: { bob: { rollingWithdrawalBlocks: 3n, rollingWithdrawalCap: 100n } },
      }),
      withdraw('bob', 40n, 10),
      { type: 'peggedTotalObserved', total: 7n, account: 'bob' },
    );
    for (const account of [null, undefined, 42, {}] as unknown as string[]) {
      const e = effectiveLimits(state, account);
      expect(e.hasEntry).toBe(false);
      expect(e.perWithdrawalCap).toBe(500n);
      expect(e.accountRollingWithdrawalCap).toBeNull();
      expect(e.availableToWithdraw).toBe(getLimits(state).availableToWithdraw);
      expect(e.accountPeggedTotal).toBe(0n);
    }
  });
});
