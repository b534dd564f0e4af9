/**
 * The mint window: mints (`depositMinted`) counted by height against `rollingMintCap`, the
 * cap in force (the lower of the fixed cap and the share of the lagged basis), the room
 * (`availableToMint`) and the peg cap in force the signers read (`pegCap − supply` is the
 * room), the deposit checks, `whenMintable` and `mintWindowOf`, the mint history's start,
 * loosening and snapshots.
 */
import { describe, expect, test } from 'vitest';
import {
  admitDeposits,
  applyAll,
  checkDeposit,
  createLimitsState,
  decideBatch,
  decodeJson,
  effectiveLimits,
  encodeJson,
  getAccountLimits,
  getLimits,
  type LimitsEvent,
  type LimitsState,
  loosenings,
  mintWindowOf,
  snapshotOf,
  stateFromSnapshot,
  whenMintable,
} from '../../src/index.js';
import { at, expectError, run } from '../support/helpers.js';
import { asVersion } from '../support/old-snapshots.js';

const TXID = 'ab'.repeat(32);
let n = 0;
function mint(account: string, amount: bigint, height: number, id = `${TXID}:${n++}`): LimitsEvent {
  return { type: 'depositMinted', id, account, amount, height };
}

// A 10-block mint window with a cap of 300, a peg cap of 1,000 and 200 pegged, at tip 100.
function base(): LimitsState {
  return run(at(100, { pegCap: 1_000n, rollingMintBlocks: 10n, rollingMintCap: 300n }), {
    type: 'peggedTotalObserved',
    total: 200n,
  });
}

// What the signers compute from Emily's fields: max mintable = pegCap − supply.
function signersRoom(state: LimitsState): bigint {
  const l = getLimits(state);
  return l.pegCap === null ? -1n : l.pegCap - 200n;
}

describe('the room and the peg cap the signers read', () => {
  test('pegCap in force is the total plus the room, under the configured peg cap', () => {
    const s = run(base(), mint('alice', 100n, 100));
    expect(getLimits(s)).toMatchObject({
      availableToMint: 200n,
      pegCap: 400n,
      rollingMintBlocks: 10n,
      rollingMintCap: 300n,
      rollingMintCapShare: null,
    });
    expect(signersRoom(s)).toBe(200n);
    // Without a mint window the configured peg cap shows, as it always did.
    expect(getLimits(at(100, { pegCap: 1_000n })).pegCap).toBe(1_000n);
    expect(getLimits(at(100, { pegCap: 1_000n })).availableToMint).toBeNull();
  });

  test('the room comes back exactly when the mints leave the window', () => {
    let s = run(base(), mint('alice', 100n, 95), mint('bob', 200n, 100));
    expect(getLimits(s).availableToMint).toBe(0n);
    expect(signersRoom(s)).toBe(0n);
    s = run(s, { type: 'blockConnected', height: 104 });
    expect(getLimits(s).availableToMint).toBe(0n);
    // Height 95 leaves the window (105 − 10 + 1 = 96).
    s = run(s, { type: 'blockConnected', height: 105 });
    expect(getLimits(s).availableToMint).toBe(100n);
    s = run(s, { type: 'blockConnected', height: 110 });
    expect(getLimits(s).availableToMint).toBe(300n);
    expect(signersRoom(s)).toBe(300n);
  });

  test('the configured peg cap still bounds it, and without one it is the total plus the room', () => {
    const s = run(at(100, { pegCap: 250n, rollingMintBlocks: 10n, rollingMintCap: 300n }), {
      type: 'peggedTotalObserved',
      total: 200n,
    });
    expect(getLimits(s).pegCap).toBe(250n);
    const open = run(at(100, { rollingMintBlocks: 10n, rollingMintCap: 300n }), {
      type: 'peggedTotalObserved',
      total: 200n,
    });
    expect(getLimits(open).pegCap).toBe(500n);
  });

  test('never above the int64 maximum', () => {
    const max = 2n ** 63n - 1n;
    const s = run(at(100, { rollingMintBlocks: 10n, rollingMintCap: max }), {
      type: 'peggedTotalObserved',
      total: max,
    });
    expect(getLimits(s).pegCap).toBe(max);
  });

  test('a share of the lagged basis: a mint cannot raise its own window', () => {
    // 10% of the total, over the same lagged basis as the withdrawal window's share.
    let s = run(
      at(100, { rollingMintBlocks: 10n, rollingMintCap: 10n ** 12n, rollingMintCapShare: 1_000n }),
      { type: 'peggedTotalObserved', total: 1_000n },
    );
    expect(getLimits(s).rollingMintCap).toBe(100n);
    // A big mint and the total it makes: the cap stays on the lower total for a window.
    s = run(s, { type: 'blockConnected', height: 101 }, mint('mallory', 100n, 101), {
      type: 'peggedTotalObserved',
      total: 1_000_000n,
    });
    expect(getLimits(s).rollingMintCap).toBe(100n);
    expect(getLimits(s).availableToMint).toBe(0n);
    expect(effectiveLimits(s, 'x').mintShareBasis).toBe(1_000n);
    // The lower total is in force until a whole window has passed over the new one (tip 111).
    s = run(s, { type: 'blockConnected', height: 110 });
    expect(getLimits(s).rollingMintCap).toBe(100n);
    s = run(s, { type: 'blockConnected', height: 111 });
    expect(getLimits(s).rollingMintCap).toBe(100_000n);
  });

  test('throttle mode leaves the mint window alone', () => {
    const s = run(base(), { type: 'throttleStarted', initiator: 'ops-1' });
    expect(getLimits(s).rollingMintCap).toBe(300n);
    expect(getLimits(s).availableToMint).toBe(300n);
  });

  test('failing closed: the cap reads 0, the room 0, and the signers may mint nothing', () => {
    const s = run(base(), { type: 'pegIntegritySet', maxUnbacked: 0n, reservesMaxAge: 6 });
    expect(getLimits(s)).toMatchObject({ rollingMintCap: 0n, availableToMint: 0n, pegCap: 200n });
    expect(signersRoom(s)).toBe(0n);
    // With no mint window, the room stays null and the peg cap as configured.
    const plain = run(at(100, { pegCap: 1_000n }), {
      type: 'pegIntegritySet',
      maxUnbacked: 0n,
      reservesMaxAge: 6,
    });
    expect(getLimits(plain)).toMatchObject({ availableToMint: null, pegCap: 1_000n });
    // An entry's own mint window reads 0 too; an entry without one keeps its mint fields unset.
    const entries = run(
      base(),
      {
        type: 'accountLimitsSet',
        account: 'alice',
        limits: { pegCap: 500n, rollingMintBlocks: 5n, rollingMintCap: 50n },
      },
      { type: 'accountLimitsSet', account: 'bob', limits: { pegCap: 500n } },
      { type: 'pegIntegritySet', maxUnbacked: 0n, reservesMaxAge: 6 },
    );
    expect(getAccountLimits(entries, 'alice')).toMatchObject({ rollingMintCap: 0n, pegCap: 0n });
    expect(getAccountLimits(entries, 'bob')).toMatchObject({ rollingMintCap: null, pegCap: 500n });
  });
});

describe('an account entry with its own mint window', () => {
  test('counts that account alone, and reports its own peg cap in force', () => {
    let s = run(
      base(),
      {
        type: 'accountLimitsSet',
        account: 'alice',
        limits: { pegCap: 500n, rollingMintBlocks: 5n, rollingMintCap: 50n },
      },
      { type: 'peggedTotalObserved', account: 'alice', total: 40n },
      mint('alice', 30n, 100),
      mint('bob', 100n, 100),
    );
    expect(getAccountLimits(s, 'alice')).toMatchObject({
      pegCap: 60n,
      rollingMintBlocks: 5n,
      rollingMintCap: 50n,
    });
    expect(getLimits(s).accountCaps.alice?.pegCap).toBe(60n);
    expect(effectiveLimits(s, 'alice')).toMatchObject({
      availableToMint: 20n,
      accountRollingMintBlocks: 5n,
      accountRollingMintCap: 50n,
      pegCap: 1_000n,
      accountPegCap: 500n,
    });
    expect(checkDeposit(s, { account: 'alice', amount: 21n })).toEqual({
      ok: false,
      reason: 'account_rolling_mint_cap_exceeded',
      limit: 20n,
      availableAt: 105,
    });
    expect(mintWindowOf(s, 'alice')).toMatchObject({ withdrawn: 30n, availableToMint: 20n });
    expect(mintWindowOf(s, 'bob')).toBeUndefined();
    // An entry opened later sums the account's mints already held.
    s = run(s, {
      type: 'accountLimitsSet',
      account: 'bob',
      limits: { rollingMintBlocks: 5n, rollingMintCap: 150n },
    });
    expect(mintWindowOf(s, 'bob')).toMatchObject({ withdrawn: 100n, availableToMint: 50n });
  });
});

describe('the deposit checks', () => {
  test("refuse after today's reasons, with the room and the tip at which it would pass", () => {
    const s = run(base(), mint('alice', 250n, 96));
    expect(checkDeposit(s, { account: 'bob', amount: 51n })).toEqual({
      ok: false,
      reason: 'rolling_mint_cap_exceeded',
      limit: 50n,
      availableAt: 106,
    });
    expect(whenMintable(s, { account: 'bob', amount: 51n })).toBe(106);
    expect(whenMintable(s, { account: 'bob', amount: 50n })).toBe(100);
    // The peg cap's reason first: it never passes by waiting.
    expect(checkDeposit(s, { account: 'bob', amount: 900n })).toMatchObject({
      reason: 'peg_cap_exceeded',
      availableAt: null,
    });
    expect(whenMintable(s, { account: 'bob', amount: 900n })).toBeNull();
    // Above the cap: never.
    expect(whenMintable(s, { account: 'bob', amount: 301n })).toBeNull();
  });

  test('a batch counts what it admitted, at the tip', () => {
    const s = base();
    const r = admitDeposits(s, [
      { account: 'a', amount: 200n },
      { account: 'b', amount: 200n },
    ]);
    expect(r.admitted).toHaveLength(1);
    expect(r.refused[0]).toMatchObject({
      reason: 'rolling_mint_cap_exceeded',
      limit: 100n,
      availableAt: 110,
    });
  });

  test('an incomplete mint history: no room known, nothing for the signers, until a whole window', () => {
    const s = run(base(), { type: 'mintHistoryCompleteFrom', height: 101 });
    expect(getLimits(s)).toMatchObject({ availableToMint: null, pegCap: 200n });
    expect(checkDeposit(s, { account: 'bob', amount: 1n })).toEqual({
      ok: false,
      reason: 'mint_window_incomplete',
      limit: null,
      availableAt: 110,
    });
    expect(effectiveLimits(s, 'bob').mintIncompleteUntil).toBe(110);
    expect(mintWindowOf(s)).toMatchObject({ complete: false, completeAt: 110 });
    const later = run(s, { type: 'blockConnected', height: 110 });
    expect(getLimits(later).availableToMint).toBe(300n);
  });

  test('held blocks: no room known, and no tip at which it is', () => {
    const s = run(base(), { type: 'blocksHeld', height: 120 });
    expect(getLimits(s)).toMatchObject({ availableToMint: null, pegCap: 200n });
    expect(checkDeposit(s, { account: 'bob', amount: 1n })).toMatchObject({
      reason: 'mint_window_incomplete',
      availableAt: null,
    });
    expect(whenMintable(s, { account: 'bob', amount: 1n })).toBeNull();
  });

  test('whenMintable is null before any block, as whenAvailable is', () => {
    const none = createLimitsState({ limits: { rollingMintBlocks: 10n, rollingMintCap: 300n } });
    expect(whenMintable(none, { account: 'bob', amount: 1n })).toBeNull();
  });

  test('whenMintable throws for a malformed request, as whenAvailable does', () => {
    expect(() => whenMintable(base(), { account: '', amount: 1n })).toThrow(
      expect.objectContaining({ code: 'invalid_account' }),
    );
    expect(() => whenMintable(base(), { account: 'a', amount: 0n })).toThrow(
      expect.objectContaining({ code: 'invalid_amount' }),
    );
  });
});

describe('mints as events', () => {
  test('the same mint again is a no-op, and another payload under its id is refused', () => {
    const m = mint('alice', 100n, 100, `${TXID}:7`);
    const s = run(base(), m);
    const again = applyAll(s, [m]);
    expect(again.ok && again.state).toBe(s);
    expectError(s, { ...m, amount: 101n } as LimitsEvent, 'duplicate_deposit', 'id');
  });

  test('bad mints are refused with a stable code and leave the state as it was', () => {
    const s = base();
    expectError(s, mint('alice', 1n, 101), 'height_ahead_of_tip', 'height');
    expectError(s, mint('alice', 0n, 100), 'invalid_amount', 'amount');
    expectError(s, mint('', 1n, 100), 'invalid_account', 'account');
    expectError(s, mint('alice', 1n, 100, ''), 'invalid_deposit_id', 'id');
    expectError(s, mint('alice', 1n, 100, 'x'.repeat(257)), 'invalid_deposit_id', 'id');
    expectError(s, mint('alice', 1n, -1), 'invalid_height', 'height');
    expectError(s, { type: 'mintHistoryCompleteFrom', height: 1.5 }, 'invalid_height', 'height');
    expectError(createLimitsState(), mint('alice', 1n, 0), 'height_ahead_of_tip', 'height');
  });

  test('older than the retained history: accepted, counted nowhere', () => {
    const s = run(
      at(5000, { rollingMintBlocks: 10n, rollingMintCap: 300n }, { historyBlocks: 20 }),
      mint('alice', 100n, 4000),
    );
    expect(getLimits(s).availableToMint).toBe(300n);
  });

  test('a reorganization forgets the mints above the new tip', () => {
    const s = run(base(), { type: 'blockConnected', height: 101 }, mint('alice', 300n, 101));
    expect(getLimits(s).availableToMint).toBe(0n);
    const back = run(s, { type: 'chainReorganized', height: 100 });
    expect(getLimits(back).availableToMint).toBe(300n);
    // The id is free again: the mint may come back at another height.
    expect(applyAll(back, [mint('alice', 300n, 100, `${TXID}:${n - 1}`)]).ok).toBe(true);
  });

  test('a mint does not move the pegged total', () => {
    const s = run(base(), mint('alice', 100n, 100));
    expect(effectiveLimits(s, 'alice').peggedTotal).toBe(200n);
  });
});

describe('rules of the fields', () => {
  test("validated as the withdrawal window's", () => {
    const s = at(100);
    const set = (limits: Record<string, bigint | null>): LimitsEvent => ({
      type: 'limitsSet',
      limits,
    });
    expectError(
      s,
      set({ rollingMintBlocks: 10n }),
      'incomplete_rolling_window',
      'limits.rollingMintCap',
    );
    expectError(
      s,
      set({ rollingMintCap: 10n }),
      'incomplete_rolling_window',
      'limits.rollingMintBlocks',
    );
    expectError(s, set({ rollingMintBlocks: 3000n, rollingMintCap: 1n }), 'window_exceeds_history');
    expectError(s, set({ rollingMintBlocks: 0n, rollingMintCap: 1n }), 'invalid_amount');
    expectError(
      s,
      set({ rollingMintBlocks: 10n, rollingMintCap: 1n, rollingMintCapShare: 10_001n }),
      'invalid_share',
      'limits.rollingMintCapShare',
    );
    expectError(s, set({ rollingMintCapShare: 10n }), 'incomplete_rolling_window');
  });
});

describe('loosening and scopes', () => {
  test('raising the mint cap or removing the window loosens, and lowering the cap does not', () => {
    const s = base();
    const up = run(s, { type: 'limitsUpdated', limits: { rollingMintCap: 400n } });
    expect(loosenings(s, up)).toEqual([
      expect.objectContaining({ field: 'rollingMintCap', before: 300n, after: 400n }),
    ]);
    const off = run(s, {
      type: 'limitsUpdated',
      limits: { rollingMintBlocks: null, rollingMintCap: null },
    });
    expect(loosenings(s, off).map((l) => (l.kind === 'cap' ? l.field : l.kind))).toEqual([
      'rollingMintCap',
      'rollingMintBlocks',
    ]);
    const down = run(s, { type: 'limitsUpdated', limits: { rollingMintCap: 100n } });
    expect(loosenings(s, down)).toEqual([]);
  });

  test("lowering the mint history's start loosens and needs the limits scope, where raising it is chain traffic", () => {
    const s = run(base(), { type: 'mintHistoryCompleteFrom', height: 101 });
    const feeder = { name: 'feeder', scopes: ['chain'] as const };
    const lower: LimitsEvent = { type: 'mintHistoryCompleteFrom', height: 90 };
    expect(
      decideBatch(s, { events: [lower], operator: { ...feeder, scopes: ['chain'] } }),
    ).toMatchObject({
      outcome: 'refused',
      by: 'operator',
      error: { code: 'scope_denied' },
    });
    const raise: LimitsEvent = { type: 'mintHistoryCompleteFrom', height: 105 };
    expect(
      decideBatch(s, { events: [raise], operator: { ...feeder, scopes: ['chain'] } }).outcome,
    ).toBe('applied');
    const ops = { name: 'ops', scopes: ['limits'] as Array<'limits'> };
    const waits = decideBatch(
      s,
      { events: [lower], operator: ops },
      { loosening: { delayBlocks: 6, quorum: 0 } },
    );
    expect(waits).toMatchObject({
      outcome: 'waiting',
      loosens: [{ kind: 'mintHistory', before: 101, after: 90 }],
    });
  });
});

describe('snapshots', () => {
  test("a snapshot keeps the mints, the window and the history's start, and answers alike", () => {
    const s = run(
      base(),
      mint('alice', 100n, 99),
      mint('bob', 50n, 100),
      { type: 'mintHistoryCompleteFrom', height: 95 },
      {
        type: 'accountLimitsSet',
        account: 'alice',
        limits: { rollingMintBlocks: 4n, rollingMintCap: 120n },
      },
    );
    const snap = snapshotOf(s);
    expect(snap.version).toBe(7);
    expect(snap.mints.map((m) => [m.account, m.amount, m.height])).toEqual([
      ['alice', '100', 99],
      ['bob', '50', 100],
    ]);
    expect(snap.mintHistoryCompleteFrom).toBe(95);
    const r = stateFromSnapshot(decodeJson(encodeJson(snap)));
    if (!r.ok) throw r.error;
    expect(getLimits(r.state)).toEqual(getLimits(s));
    expect(mintWindowOf(r.state, 'alice')).toEqual(mintWindowOf(s, 'alice'));
    expect(encodeJson(snapshotOf(r.state))).toBe(encodeJson(snap));
  });

  test('a version 6 snapshot loads with no mint window and no mints', () => {
    const s = run(at(100, { pegCap: 1_000n }), { type: 'peggedTotalObserved', total: 200n });
    const r = stateFromSnapshot(JSON.parse(JSON.stringify(asVersion(snapshotOf(s), 6))));
    if (!r.ok) throw r.error;
    expect(getLimits(r.state)).toMatchObject({ pegCap: 1_000n, availableToMint: null });
    expect(snapshotOf(r.state).mints).toEqual([]);
  });

  test('a broken mint is refused with its path', () => {
    const s = run(base(), mint('alice', 100n, 99));
    const snap = JSON.parse(JSON.stringify(snapshotOf(s)));
    snap.mints[0].height = 101;
    expect(stateFromSnapshot(snap)).toMatchObject({
      ok: false,
      error: { code: 'invalid_snapshot', path: 'mints[0].height' },
    });
    snap.mints[0].height = 99;
    snap.mints[0].account = '';
    expect(stateFromSnapshot(snap)).toMatchObject({
      ok: false,
      error: { code: 'invalid_snapshot', path: 'mints[0].account' },
    });
    snap.mints[0].account = 'alice';
    snap.mints.push({ ...snap.mints[0] });
    expect(stateFromSnapshot(snap)).toMatchObject({
      ok: false,
      error: { code: 'invalid_snapshot', path: 'mints[1].id' },
    });
    snap.mints.pop();
    snap.mintHistoryCompleteFrom = -1;
    expect(stateFromSnapshot(snap)).toMatchObject({
      ok: false,
      error: { code: 'invalid_snapshot', path: 'mintHistoryCompleteFrom' },
    });
  });
});
