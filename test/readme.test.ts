import { expect, test } from 'vitest';
import {
  applyAll,
  checkWithdrawal,
  createLimitsState,
  getLimits,
  whenAvailable,
} from '../src/index.js';

test('the README example gives the results it shows', () => {
  let state = createLimitsState({
    limits: {
      perWithdrawalCap: 150_000_000n,
      rollingWithdrawalBlocks: 144n,
      rollingWithdrawalCap: 500_000_000n,
    },
  });
  const r = applyAll(state, [
    { type: 'blockConnected', height: 870_000 },
    {
      type: 'withdrawalRequested',
      id: 'tx1',
      account: 'alice',
      amount: 120_000_000n,
      height: 870_000,
    },
  ]);
  if (!r.ok) throw r.error;
  state = r.state;
  expect(getLimits(state).availableToWithdraw).toBe(380_000_000n);
  expect(checkWithdrawal(state, { account: 'bob', amount: 200_000_000n })).toEqual({
    ok: false,
    reason: 'above_per_withdrawal_cap',
    limit: 150_000_000n,
  });
  expect(whenAvailable(state, { account: 'bob', amount: 150_000_000n })).toBe(870_000);
});

test('the README throttle example gives the results it shows', async () => {
  const { apply, generateThrottleSecret, hashThrottleSecret, startThrottle } = await import(
    '../src/index.js'
  );
  const secret = generateThrottleSecret();
  let state = createLimitsState();
  const r = apply(state, {
    type: 'throttleKeyAdded',
    name: 'ops-1',
    secretHash: hashThrottleSecret(secret),
  });
  if (r.ok) state = r.state;
  const t = startThrottle(state, { name: 'ops-1', secret });
  expect(t.ok).toBe(true);
  if (t.ok) {
    expect(t.limits.perWithdrawalCap).toBe(150_000_000n);
    expect(t.limits.throttleModeInitiator).toBe('ops-1');
  }
});
