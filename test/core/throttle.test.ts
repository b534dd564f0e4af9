import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  apply,
  checkWithdrawal,
  createLimitsState,
  effectiveLimits,
  generateThrottleSecret,
  getAccountLimits,
  getLimits,
  hashThrottleSecret,
  LimitsError,
  type LimitsState,
  startThrottle,
  type ThrottleProfile,
  whenAvailable,
} from '../../src/index.js';
import { ACCOUNTS, PROBE_AMOUNTS, stepArb, toEvent } from '../support/arbitraries.js';
import { at, canonical, expectError, run, withdraw } from '../support/helpers.js';
import { NaiveModel } from '../support/model.js';

const PROFILE = {
  perWithdrawalCap: 150_000_000n,
  rollingWithdrawalBlocks: 18n,
  rollingWithdrawalCap: 200_000_000n,
};
const SECRET = generateThrottleSecret();
const OTHER = generateThrottleSecret();

function withKeys(state: LimitsState): LimitsState {
  return run(
    state,
    { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(SECRET) },
    { type: 'throttleKeyAdded', name: 'ops-2', secretHash: hashThrottleSecret(OTHER) },
  );
}

function throttled(state: LimitsState, name = 'ops-1', secret = SECRET): LimitsState {
  const r = startThrottle(state, { name, secret });
  if (!r.ok) throw r.error;
  return r.state;
}

describe('secrets and keys', () => {
  test('generated secrets carry 256 random bits as URL-safe text', () => {
    const secrets = new Set(Array.from({ length: 200 }, generateThrottleSecret));
    expect(secrets.size).toBe(200);
    for (const s of secrets) expect(s).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  test('hashThrottleSecret refuses secrets under 22 characters', () => {
    expect(() => hashThrottleSecret('x'.repeat(21))).toThrow(LimitsError);
    expect(() => hashThrottleSecret('x'.repeat(21))).toThrow(/22/);
    expect(hashThrottleSecret('x'.repeat(22))).toMatch(/^sha256:/);
  });

  test('the hash is salted and never contains the secret', () => {
    const a = hashThrottleSecret(SECRET);
    const b = hashThrottleSecret(SECRET);
    expect(a).not.toBe(b);
    expect(a).not.toContain(SECRET);
    expect(a).toMatch(/^sha256:[A-Za-z0-9_-]{22}:[A-Za-z0-9_-]{43}$/);
  });

  test('a key event that names a key the wrong way is refused (a name that exists, an unknown key)', () => {
    const s = withKeys(at(1));
    expectError(
      s,
      { type: 'throttleKeyAdded', name: 'ops-1', secretHash: hashThrottleSecret(OTHER) },
      'duplicate_key',
      'name',
    );
    expectError(
      s,
      { type: 'throttleKeyAdded', name: 'x', secretHash: 'plain' },
      'invalid_secret_hash',
      'secretHash',
    );
    expectError(
      s,
      { type: 'throttleKeyAdded', name: '', secretHash: hashThrottleSecret(OTHER) },
      'invalid_key_name',
      'name',
    );
    expectError(s, { type: 'throttleKeyRevoked', name: 'nobody' }, 'unknown_key', 'name');
    expectError(s, { type: 'throttleKeyReactivated', name: 'nobody' }, 'unknown_key', 'name');
  });

  test('revoking twice, or reactivating an active key, changes nothing', () => {
    const s = run(withKeys(at(1)), { type: 'throttleKeyRevoked', name: 'ops-1' });
    const again = apply(s, { type: 'throttleKeyRevoked', name: 'ops-1' });
    expect(again.ok && again.state).toBe(s);
    const active = withKeys(at(1));
    const re = apply(active, { type: 'throttleKeyReactivated', name: 'ops-1' });
    expect(re.ok && re.state).toBe(active);
  });
});

describe('startThrottle', () => {
  const s = withKeys(at(100, { perWithdrawalCap: 500_000_000n }));

  test('a registered key with its secret turns throttle mode on and answers the new Limits', () => {
    const r = startThrottle(s, { name: 'ops-1', secret: SECRET });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.limits.throttleModeInitiator).toBe('ops-1');
    expect(r.limits).toEqual(getLimits(r.state));
    expect(getLimits(s).throttleModeInitiator).toBeNull();
  });

  test('an unknown name and a wrong secret give the same invalid_credentials', () => {
    const wrong = startThrottle(s, { name: 'ops-1', secret: OTHER });
    const unknown = startThrottle(s, { name: 'nobody', secret: SECRET });
    expect(wrong.ok || wrong.error.code).toBe('invalid_credentials');
    expect(unknown.ok || unknown.error.code).toBe('invalid_credentials');
    if (!wrong.ok && !unknown.ok) expect(wrong.error.message).toBe(unknown.error.message);
  });

  test('a revoked key is refused only when its secret matched', () => {
    const revoked = run(s, { type: 'throttleKeyRevoked', name: 'ops-1' });
    const right = startThrottle(revoked, { name: 'ops-1', secret: SECRET });
    const wrong = startThrottle(revoked, { name: 'ops-1', secret: OTHER });
    expect(right.ok || right.error.code).toBe('key_revoked');
    expect(wrong.ok || wrong.error.code).toBe('invalid_credentials');
    const back = run(revoked, { type: 'throttleKeyReactivated', name: 'ops-1' });
    expect(startThrottle(back, { name: 'ops-1', secret: SECRET }).ok).toBe(true);
  });

  test('a malformed request is invalid_request, naming the field', () => {
    const code = (req: unknown) => {
      const r = startThrottle(s, req);
      return r.ok ? 'ok' : [r.error.code, r.error.path];
    };
    expect(code(null)).toEqual(['invalid_request', undefined]);
    expect(code('name')).toEqual(['invalid_request', undefined]);
    expect(code({ secret: SECRET })).toEqual(['invalid_request', 'name']);
    expect(code({ name: '', secret: SECRET })).toEqual(['invalid_request', 'name']);
    expect(code({ name: 5, secret: SECRET })).toEqual(['invalid_request', 'name']);
    expect(code({ name: 'ops-1' })).toEqual(['invalid_request', 'secret']);
    expect(code({ name: 'ops-1', secret: 7 })).toEqual(['invalid_request', 'secret']);
    expect(code({ name: 'x'.repeat(257), secret: SECRET })).toEqual(['invalid_request', 'name']);
    expect(code({ name: 'ops-1', secret: 'x'.repeat(1025) })).toEqual([
      'invalid_request',
      'secret',
    ]);
  });

  test('starting it while active succeeds, changes nothing and keeps the first initiator', () => {
    const on = throttled(s, 'ops-1');
    const again = startThrottle(on, { name: 'ops-2', secret: OTHER });
    expect(again.ok).toBe(true);
    if (!again.ok) return;
    expect(again.state).toBe(on);
    expect(again.limits.throttleModeInitiator).toBe('ops-1');
  });

  test('a failed attempt leaves the state as it was', () => {
    const before = structuredClone(s);
    startThrottle(s, { name: 'ops-1', secret: OTHER });
    startThrottle(s, { name: 'nobody', secret: OTHER });
    expect(structuredClone(s)).toEqual(before);
  });

  test('a verification costs well under a millisecond, right, wrong or unknown', () => {
    const time = (req: unknown) => {
      const t0 = performance.now();
      for (let i = 0; i < 200; i++) startThrottle(s, req);
      return (performance.now() - t0) / 200;
    };
    time({ name: 'ops-1', secret: SECRET });
    // Measured: 4 µs right, 7.5 µs wrong or unknown. The contract asks for well under 1 ms; the
    // bound is that, over 100× the measured figure.
    expect(time({ name: 'ops-1', secret: SECRET })).toBeLessThan(1);
    expect(time({ name: 'ops-1', secret: OTHER })).toBeLessThan(1);
    expect(time({ name: 'nobody', secret: OTHER })).toBeLessThan(1);
  });
});

describe('the overlay', () => {
  // value > profile means looser than the profile for caps, stricter for the window length.
  const cases = [
    [100_000_000n, 100n, 100_000_000n],
    [100_000_000n, 100n, 300_000_000n],
    [100_000_000n, 10n, 100_000_000n],
    [100_000_000n, 10n, 300_000_000n],
    [200_000_000n, 100n, 100_000_000n],
    [200_000_000n, 100n, 300_000_000n],
    [200_000_000n, 10n, 100_000_000n],
    [200_000_000n, 10n, 300_000_000n],
  ] as const;
  test.each(cases)(
    'per-withdrawal cap %s, window %s blocks, window cap %s: each field takes the stricter of configured and profile',
    (perWithdrawalCap, blocks, cap) => {
      const s = withKeys(
        at(1000, {
          perWithdrawalCap,
          rollingWithdrawalBlocks: blocks,
          rollingWithdrawalCap: cap,
          pegCap: 7n,
        }),
      );
      const l = getLimits(throttled(s));
      expect(l.perWithdrawalCap).toBe(
        perWithdrawalCap < PROFILE.perWithdrawalCap ? perWithdrawalCap : PROFILE.perWithdrawalCap,
      );
      expect(l.rollingWithdrawalBlocks).toBe(
        blocks > PROFILE.rollingWithdrawalBlocks ? blocks : PROFILE.rollingWithdrawalBlocks,
      );
      expect(l.rollingWithdrawalCap).toBe(
        cap < PROFILE.rollingWithdrawalCap ? cap : PROFILE.rollingWithdrawalCap,
      );
      expect(l.pegCap).toBe(7n);
      expect(l.throttleModeInitiator).toBe('ops-1');
    },
  );

  test('an unset field takes the profile value', () => {
    const l = getLimits(throttled(withKeys(at(1000))));
    expect([l.perWithdrawalCap, l.rollingWithdrawalBlocks, l.rollingWithdrawalCap]).toEqual([
      PROFILE.perWithdrawalCap,
      PROFILE.rollingWithdrawalBlocks,
      PROFILE.rollingWithdrawalCap,
    ]);
    expect(l.availableToWithdraw).toBe(PROFILE.rollingWithdrawalCap);
  });

  test('account entries are tightened the same way for their set fields, so no override escapes', () => {
    let s = withKeys(at(1000, { perWithdrawalCap: 100n }));
    s = run(s, {
      type: 'accountLimitsSet',
      account: 'whale',
      limits: {
        perWithdrawalCap: 10n ** 12n,
        rollingWithdrawalBlocks: 5n,
        rollingWithdrawalCap: 10n ** 12n,
      },
    });
    s = run(s, { type: 'accountLimitsSet', account: 'minnow', limits: { pegCap: 5n } });
    const on = throttled(s);
    expect(getAccountLimits(on, 'whale')).toEqual({
      pegCap: null,
      perDepositCap: null,
      perDepositMinimum: null,
      perWithdrawalCap: PROFILE.perWithdrawalCap,
      rollingWithdrawalBlocks: 18n,
      rollingWithdrawalCap: PROFILE.rollingWithdrawalCap,
      throttleModeInitiator: 'ops-1',
      rollingMintBlocks: null,
      rollingMintCap: null,
      rollingMintCapShare: null,
    });
    expect(getAccountLimits(on, 'minnow')?.perWithdrawalCap).toBeNull();
    expect(getAccountLimits(on, 'minnow')?.throttleModeInitiator).toBe('ops-1');
    expect(checkWithdrawal(on, { account: 'whale', amount: 150_000_001n })).toEqual({
      ok: false,
      reason: 'above_per_withdrawal_cap',
      limit: 150_000_000n,
      availableAt: null,
    });
    expect(getLimits(on).accountCaps.whale?.perWithdrawalCap).toBe(PROFILE.perWithdrawalCap);
  });

  test('the longer window counts withdrawals the configured one had let go', () => {
    let s = withKeys(at(1000, { rollingWithdrawalBlocks: 6n, rollingWithdrawalCap: 500_000_000n }));
    s = run(s, withdraw('a', 150_000_000n, 990), { type: 'blockConnected', height: 1005 });
    expect(getLimits(s).availableToWithdraw).toBe(500_000_000n);
    const on = throttled(s);
    expect(getLimits(on).availableToWithdraw).toBe(50_000_000n);
    expect(whenAvailable(on, { account: 'b', amount: 100_000_000n })).toBe(1008);
  });

  test('throttleEnded shows the configured values again, including changes made meanwhile', () => {
    const s = withKeys(at(1000, { perWithdrawalCap: 900_000_000n }));
    let on = throttled(s);
    on = run(on, { type: 'accountLimitsSet', account: 'a', limits: { perWithdrawalCap: 5n } });
    const off = run(on, { type: 'throttleEnded' });
    expect(getLimits(off).perWithdrawalCap).toBe(900_000_000n);
    expect(getLimits(off).throttleModeInitiator).toBeNull();
    expect(getAccountLimits(off, 'a')?.perWithdrawalCap).toBe(5n);
    const twice = apply(off, { type: 'throttleEnded' });
    expect(twice.ok && twice.state).toBe(off);
  });

  test('limitsSet during throttle is an operator override: it sets the caps and ends throttle mode', () => {
    const on = throttled(withKeys(at(1000)));
    const set = run(on, { type: 'limitsSet', limits: { perWithdrawalCap: 10n ** 10n } });
    expect(getLimits(set).throttleModeInitiator).toBeNull();
    expect(getLimits(set).perWithdrawalCap).toBe(10n ** 10n);
  });

  test('the profile is an option, validated: its window must fit in the history', () => {
    const profile: ThrottleProfile = {
      perWithdrawalCap: 1n,
      rollingWithdrawalBlocks: 3n,
      rollingWithdrawalCap: 2n,
    };
    const s = run(createLimitsState({ historyBlocks: 5, throttleProfile: profile }), {
      type: 'throttleStarted',
      initiator: 'op',
    });
    expect(getLimits(s).rollingWithdrawalBlocks).toBe(3n);
    expect(() =>
      createLimitsState({
        historyBlocks: 5,
        throttleProfile: { ...profile, rollingWithdrawalBlocks: 6n },
      }),
    ).toThrow(/exceeds the 5 blocks/);
    expect(() =>
      createLimitsState({ throttleProfile: { ...profile, extra: 1n } as never }),
    ).toThrow(LimitsError);
  });
});

// --- properties over random histories ---------------------------------------------------
const HISTORY = 10;
const SMALL_PROFILE: ThrottleProfile = {
  perWithdrawalCap: 200n,
  rollingWithdrawalBlocks: 6n,
  rollingWithdrawalCap: 400n,
};
const SKIPPED = new Set([
  'throttle',
  'unthrottle',
  'key',
  'keyRace',
  'propose',
  'approve',
  'cancel',
]);
const historyArb = fc.array(stepArb(HISTORY), { minLength: 5, maxLength: 60 }).map((steps) => {
  const model = new NaiveModel(HISTORY, SMALL_PROFILE, NaiveModel.caps({}));
  let state = withKeys(
    createLimitsState({ historyBlocks: HISTORY, throttleProfile: SMALL_PROFILE }),
  );
  for (const s of [{ kind: 'block', gap: 1 } as const, ...steps]) {
    // Throttle mode and the keys are the tests' own (they start it with ops-1's secret).
    if (SKIPPED.has(s.kind)) continue;
    const e = toEvent(s, model);
    const r = apply(state, e);
    if (r.ok) {
      state = r.state;
      model.apply(e as unknown as Record<string, unknown>);
    }
  }
  return state;
});

const looser = (a: bigint | null, b: bigint | null) =>
  a === null ? b !== null : b !== null && a > b;

describe('throttle properties', () => {
  test.prop([historyArb])(
    'starting throttle never loosens any effective limit of any account',
    (state) => {
      const on = throttled(state);
      for (const account of [...ACCOUNTS, 'nobody']) {
        const before = effectiveLimits(state, account);
        const after = effectiveLimits(on, account);
        expect(looser(after.perWithdrawalCap, before.perWithdrawalCap)).toBe(false);
        // A window that becomes incomplete (a longer one reaching below where the history
        // starts) admits nothing: no room at all.
        const room = (e: typeof before) =>
          e.incompleteUntil !== null ? 0n : e.availableToWithdraw;
        expect(looser(room(after), room(before))).toBe(false);
        expect(looser(after.accountRollingWithdrawalCap, before.accountRollingWithdrawalCap)).toBe(
          false,
        );
        for (const amount of PROBE_AMOUNTS) {
          if (checkWithdrawal(on, { account, amount }).ok)
            expect(checkWithdrawal(state, { account, amount }).ok).toBe(true);
          const was = whenAvailable(state, { account, amount });
          const is = whenAvailable(on, { account, amount });
          if (is !== null) expect(was !== null && was <= is).toBe(true);
        }
      }
    },
  );

  test.prop([historyArb])('ending throttle restores exactly the configured values', (state) => {
    const off = run(throttled(state), { type: 'throttleEnded' });
    expect(getLimits(off)).toEqual(getLimits(state));
    expect(canonical(off)).toEqual(canonical(state));
    for (const account of ACCOUNTS)
      expect(effectiveLimits(off, account)).toEqual(effectiveLimits(state, account));
  });

  test.prop([
    historyArb,
    fc.constantFrom(SECRET, OTHER),
    fc.constantFrom('ops-1', 'ops-2', 'nobody'),
  ])(
    "the response's Limits equal getLimits of the returned state; a failed attempt leaves the state as it was",
    (state, secret, name) => {
      const before = canonical(state);
      const r = startThrottle(state, { name, secret });
      if (r.ok) expect(r.limits).toEqual(getLimits(r.state));
      else expect(canonical(state)).toEqual(before);
      expect(canonical(state)).toEqual(before);
    },
  );
});
