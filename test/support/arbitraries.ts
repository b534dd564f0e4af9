/** Arbitraries and assertion helpers shared by the property tests. */

import { fc } from '@fast-check/vitest';
import { expect } from 'vitest';
import {
  admitDeposits,
  admitWithdrawals,
  apply,
  type CapsInput,
  checkDeposit,
  checkWithdrawal,
  effectiveLimits,
  getAccountLimits,
  getLimits,
  hashThrottleSecret,
  type LimitsEvent,
  type LimitsState,
  mintWindowOf,
  pegIntegrity,
  pendingChanges,
  whenAvailable,
  whenMintable,
  windowOf,
} from '../../src/index.js';
import { CAP_FIELDS } from '../../src/internal.js';
import type { NaiveModel } from './model.js';

export const ACCOUNTS = ['alice', 'bob', 'carol', 'dave'] as const;
export const IDS = Array.from({ length: 12 }, (_, i) => `w${i}`);
/** Deposit ids: outpoints, a few so that they repeat. */
export const DEPOSIT_IDS = Array.from({ length: 8 }, (_, i) => `${'ab'.repeat(32)}:${i}`);
export const PROBE_AMOUNTS = [1n, 40n, 150n, 400n, 1000n] as const;

const amount = fc.oneof(
  { weight: 20, arbitrary: fc.bigInt({ min: 1n, max: 300n }) },
  { weight: 1, arbitrary: fc.bigInt({ min: 1n, max: 2n ** 63n - 1n }) },
);

/** Caps input for a history of `history` blocks: mostly valid, sometimes breaking a rule. */
export function capsArb(history: number): fc.Arbitrary<CapsInput> {
  const cap = fc.option(fc.bigInt({ min: 0n, max: 1200n }), { nil: null, freq: 3 });
  const window = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({
        b: fc.integer({ min: 1, max: history }),
        c: fc.bigInt({ min: 0n, max: 1500n }),
      }),
    },
    { weight: 3, arbitrary: fc.constant(null) },
    {
      weight: 1,
      arbitrary: fc.record({
        b: fc.integer({ min: 0, max: history + 2 }),
        c: fc.bigInt({ min: 0n, max: 1500n }),
      }),
    },
  );
  return fc
    .record({
      pegCap: cap,
      perDepositCap: cap,
      perDepositMinimum: fc.option(fc.bigInt({ min: 0n, max: 300n }), { nil: null, freq: 2 }),
      perWithdrawalCap: cap,
      window,
      incomplete: fc.integer({ min: 0, max: 30 }),
      // The window cap's share of the pegged total (basis points): mostly valid, sometimes
      // out of 1..10,000, now and then without a window to apply to.
      share: fc.option(
        fc.oneof(
          { weight: 12, arbitrary: fc.bigInt({ min: 1n, max: 10_000n }) },
          { weight: 1, arbitrary: fc.constantFrom(0n, 10_001n) },
        ),
        { nil: null, freq: 2 },
      ),
      // The mint window, its cap and its share, drawn as the withdrawal window's are.
      mintWindow: window,
      mintShare: fc.option(
        fc.oneof(
          { weight: 12, arbitrary: fc.bigInt({ min: 1n, max: 10_000n }) },
          { weight: 1, arbitrary: fc.constantFrom(0n, 10_001n) },
        ),
        { nil: null, freq: 2 },
      ),
    })
    .map(({ window, incomplete, share, mintWindow, mintShare, ...rest }): CapsInput => {
      const out: Record<string, bigint | null> = { ...rest };
      if (mintWindow !== null) {
        out.rollingMintBlocks = BigInt(mintWindow.b);
        out.rollingMintCap = mintWindow.c;
      }
      if (mintShare !== null && (mintWindow !== null || incomplete === 3))
        out.rollingMintCapShare = mintShare;
      if (incomplete === 4) out.rollingMintBlocks = 2n;
      if (incomplete === 5) out.rollingMintCap = null;
      if (window !== null) {
        out.rollingWithdrawalBlocks = BigInt(window.b);
        out.rollingWithdrawalCap = window.c;
      }
      if (share !== null && (window !== null || incomplete === 2))
        out.rollingWithdrawalCapShare = share;
      if (incomplete === 0) out.rollingWithdrawalBlocks = 3n;
      if (incomplete === 1) out.rollingWithdrawalCap = null;
      return out as CapsInput;
    });
}

/** A step of a random history; heights are relative to the tip so most events are valid. */
export type Step =
  | { kind: 'block'; gap: number }
  | { kind: 'reorg'; depth: number }
  | { kind: 'withdraw'; id: string; account: string; amount: bigint; back: number }
  | { kind: 'reject'; id: string }
  | { kind: 'rejectHeld'; pick: number }
  | { kind: 'account'; account: string; caps: CapsInput }
  | { kind: 'global'; caps: CapsInput; accounts: Record<string, CapsInput> }
  | { kind: 'update'; caps: CapsInput; fields: string[]; accounts: Record<string, CapsInput> }
  | { kind: 'pegged'; total: bigint; account: string | undefined }
  /** The total last observed (global, or an account's) observed again, at the tip now. */
  | { kind: 'peggedAgain'; account: string | undefined }
  | { kind: 'reserves'; total: bigint; back: number }
  | { kind: 'integrity'; maxUnbacked: bigint | null; reservesMaxAge: number | bigint }
  | { kind: 'clearBreaker' }
  | { kind: 'completeFrom'; back: number }
  /** A mint (`depositMinted`), `back` blocks below the tip. */
  | { kind: 'mint'; id: string; account: string; amount: bigint; back: number }
  /** The mint history declared complete from a height around the tip. */
  | { kind: 'mintCompleteFrom'; back: number }
  | { kind: 'hold'; ahead: number }
  | { kind: 'release' }
  | { kind: 'unreject'; pick: number }
  | { kind: 'throttle'; initiator: string }
  | { kind: 'unthrottle' }
  | { kind: 'key'; op: 'add' | 'revoke' | 'reactivate'; name: string }
  | { kind: 'propose'; events: ChangeStep[]; delay: number | null; quorum: number; by: string }
  | { kind: 'approve'; pick: number; by: string }
  | { kind: 'keyRace' }
  | { kind: 'cancel'; pick: number; by: string }
  | { kind: 'raw'; event: LimitsEvent };

/** An event a pending change may hold, as a step. */
export type ChangeStep =
  | { kind: 'account'; account: string; caps: CapsInput }
  | {
      kind: 'update';
      caps: CapsInput;
      fields: string[];
      accounts: Record<string, CapsInput>;
    }
  | { kind: 'global'; caps: CapsInput; accounts: Record<string, CapsInput> }
  | { kind: 'unthrottle' }
  | { kind: 'key'; op: 'add' | 'revoke' | 'reactivate'; name: string }
  | { kind: 'mintCompleteFrom'; back: number };

/** The secret hash the key steps register (any valid hash will do). */
export const KEY_HASH = hashThrottleSecret('a-throttle-secret-of-enough-length');
export const OPERATORS = ['gov-1', 'gov-2', 'gov-3'] as const;

export function keyStepArb(): fc.Arbitrary<Extract<Step, { kind: 'key' }>> {
  return fc.record({
    kind: fc.constant('key' as const),
    op: fc.constantFrom('add' as const, 'add' as const, 'revoke' as const, 'reactivate' as const),
    name: fc.constantFrom('ops-1', 'ops-2', 'ops-3'),
  });
}

/** An event a pending change may hold: mostly limits, sometimes keys or the end of throttle mode. */
/** A limitsUpdated: a few fields of the global caps and of an entry, the rest kept. */
export function updateStepArb(history: number): fc.Arbitrary<Extract<Step, { kind: 'update' }>> {
  return fc.record({
    kind: fc.constant('update' as const),
    caps: capsArb(history),
    fields: fc.subarray([...CAP_FIELDS]),
    accounts: fc.dictionary(fc.constantFrom(...ACCOUNTS), capsArb(history), { maxKeys: 1 }),
  });
}

export function changeStepArb(history: number): fc.Arbitrary<ChangeStep> {
  const account = fc.constantFrom(...ACCOUNTS);
  return fc.oneof(
    // One or a few fields changed, the rest kept (limitsUpdated).
    { weight: 3, arbitrary: updateStepArb(history) },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('account' as const),
        account,
        caps: capsArb(history),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('global' as const),
        caps: capsArb(history),
        accounts: fc.dictionary(account, capsArb(history), { maxKeys: 2 }),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('unthrottle' as const) }) },
    { weight: 2, arbitrary: keyStepArb() },
    { weight: 1, arbitrary: mintCompleteFromArb() },
  );
}

/** A mint around the tip: mostly at or just below it, sometimes above it or far below. */
export function mintStepArb(history: number): fc.Arbitrary<Extract<Step, { kind: 'mint' }>> {
  return fc.record({
    kind: fc.constant('mint' as const),
    id: fc.constantFrom(...DEPOSIT_IDS),
    account: fc.constantFrom(...ACCOUNTS),
    amount,
    back: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -1, max: history + 2 })),
  });
}

function mintCompleteFromArb(): fc.Arbitrary<Extract<Step, { kind: 'mintCompleteFrom' }>> {
  return fc.record({
    kind: fc.constant('mintCompleteFrom' as const),
    back: fc.integer({ min: -3, max: 12 }),
  });
}

export function stepArb(history: number): fc.Arbitrary<Step> {
  const account = fc.constantFrom(...ACCOUNTS);
  return fc.oneof(
    { weight: 2, arbitrary: updateStepArb(history) },
    {
      weight: 8,
      arbitrary: fc.record({
        kind: fc.constant('block' as const),
        gap: fc.oneof(fc.constant(1), fc.integer({ min: -1, max: history + 3 })),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('reorg' as const),
        depth: fc.integer({ min: -1, max: history + 1 }),
      }),
    },
    {
      weight: 16,
      arbitrary: fc.record({
        kind: fc.constant('withdraw' as const),
        id: fc.constantFrom(...IDS),
        account,
        amount,
        back: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: -1, max: history + 2 })),
      }),
    },
    {
      weight: 6,
      arbitrary: fc.record({ kind: fc.constant('reject' as const), id: fc.constantFrom(...IDS) }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('account' as const),
        account,
        caps: capsArb(history),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('global' as const),
        caps: capsArb(history),
        accounts: fc.dictionary(account, capsArb(history), { maxKeys: 2 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('throttle' as const),
        initiator: fc.constantFrom('ops-1', 'ops-2'),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('unthrottle' as const) }) },
    { weight: 2, arbitrary: keyStepArb() },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('propose' as const),
        events: fc.array(changeStepArb(history), { minLength: 1, maxLength: 2 }),
        delay: fc.oneof(
          { weight: 6, arbitrary: fc.integer({ min: 1, max: 4 }) },
          { weight: 2, arbitrary: fc.constant(null) },
          { weight: 1, arbitrary: fc.integer({ min: -1, max: 0 }) },
        ),
        quorum: fc.oneof(
          { weight: 3, arbitrary: fc.constant(0) },
          { weight: 3, arbitrary: fc.integer({ min: 2, max: 3 }) },
          { weight: 1, arbitrary: fc.constant(1) },
        ),
        by: fc.constantFrom(...OPERATORS),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('approve' as const),
        pick: fc.integer({ min: 0, max: 5 }),
        by: fc.constantFrom(...OPERATORS),
      }),
    },
    // A key added directly that a pending change would add too: the change is then dropped.
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('keyRace' as const) }) },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('cancel' as const),
        pick: fc.integer({ min: 0, max: 5 }),
        by: fc.constantFrom(...OPERATORS),
      }),
    },
    // A rejection undone (its block orphaned), mostly of a held withdrawal.
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('unreject' as const),
        pick: fc.integer({ min: 0, max: 20 }),
      }),
    },
    // The history declared complete from a height around the tip (a feed that starts late).
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('completeFrom' as const),
        back: fc.integer({ min: -3, max: 12 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('hold' as const),
        ahead: fc.integer({ min: 1, max: 500 }),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'release' as const }) },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('pegged' as const),
        total: fc.bigInt({ min: 0n, max: 2000n }),
        account: fc.option(account, { nil: undefined }),
      }),
    },
    // A total equal to the last one: with reorganizations and blocks between, the basis
    // must remember it at its own tip.
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('peggedAgain' as const),
        account: fc.option(account, { nil: undefined }),
      }),
    },
    // The peg's backing: reserves read around the tip, the check set and cleared.
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('reserves' as const),
        total: fc.bigInt({ min: 0n, max: 2000n }),
        back: fc.integer({ min: -2, max: 10 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('integrity' as const),
        maxUnbacked: fc.option(fc.bigInt({ min: 0n, max: 300n }), { nil: null }),
        reservesMaxAge: fc.oneof(
          { weight: 8, arbitrary: fc.integer({ min: 1, max: 8 }) },
          { weight: 1, arbitrary: fc.constant(0) },
          // A bigint where a number of blocks is meant: refused, as a bigint height is.
          { weight: 1, arbitrary: fc.constant(6n) },
        ),
      }),
    },
    { weight: 1, arbitrary: fc.constant({ kind: 'clearBreaker' as const }) },
    { weight: 8, arbitrary: mintStepArb(history) },
    { weight: 1, arbitrary: mintCompleteFromArb() },
  );
}

/** Turns a step into a concrete event, given the model's tip and held withdrawals. */
export function toEvent(step: Step, model: NaiveModel): LimitsEvent {
  const tip = model.tip;
  const at = tip ?? 0;
  switch (step.kind) {
    case 'block':
      return {
        type: 'blockConnected',
        height: Math.max(0, tip === null ? 1000 + step.gap : at + step.gap),
      };
    case 'reorg':
      return { type: 'chainReorganized', height: Math.max(0, at - step.depth) };
    case 'withdraw':
      return {
        type: 'withdrawalRequested',
        id: step.id,
        account: step.account,
        amount: step.amount,
        height: Math.max(0, at - step.back),
      };
    case 'reject':
      return { type: 'withdrawalRejected', id: step.id };
    case 'rejectHeld': {
      const held = model.withdrawals;
      return {
        type: 'withdrawalRejected',
        id: held.length === 0 ? 'none' : held[step.pick % held.length]!.id,
      };
    }
    case 'account':
      return { type: 'accountLimitsSet', account: step.account, limits: step.caps };
    case 'global':
      return { type: 'limitsSet', limits: { ...step.caps, accountCaps: step.accounts } };
    case 'update': {
      const pick = (c: CapsInput) =>
        Object.fromEntries(
          step.fields.map((f) => [f, (c as Record<string, unknown>)[f] ?? null]),
        ) as CapsInput;
      const accounts = Object.fromEntries(
        Object.entries(step.accounts).map(([a, c]) => [a, pick(c)]),
      );
      return { type: 'limitsUpdated', limits: { ...pick(step.caps), accountCaps: accounts } };
    }
    case 'reserves':
      return {
        type: 'reservesObserved',
        total: step.total,
        height: Math.max(0, (model.tip ?? 0) - step.back),
      };
    case 'integrity':
      return {
        type: 'pegIntegritySet',
        maxUnbacked: step.maxUnbacked,
        // A malformed age is sent as plain JavaScript would send it.
        reservesMaxAge: step.reservesMaxAge as number,
      };
    case 'clearBreaker':
      return { type: 'pegBreakerCleared' };
    case 'pegged':
      return step.account === undefined
        ? { type: 'peggedTotalObserved', total: step.total }
        : { type: 'peggedTotalObserved', total: step.total, account: step.account };
    case 'peggedAgain':
      return step.account === undefined
        ? { type: 'peggedTotalObserved', total: model.pegged }
        : {
            type: 'peggedTotalObserved',
            total: model.accountPegged.get(step.account) ?? 0n,
            account: step.account,
          };
    case 'unreject': {
      const held = model.withdrawals;
      return {
        type: 'withdrawalRejectionUndone',
        id: held.length === 0 || step.pick === 20 ? 'none' : held[step.pick % held.length]!.id,
      };
    }
    case 'completeFrom':
      return { type: 'historyCompleteFrom', height: Math.max(0, at - step.back) };
    case 'mint':
      return {
        type: 'depositMinted',
        id: step.id,
        account: step.account,
        amount: step.amount,
        height: Math.max(0, at - step.back),
      };
    case 'mintCompleteFrom':
      return { type: 'mintHistoryCompleteFrom', height: Math.max(0, at - step.back) };
    case 'hold':
      return { type: 'blocksHeld', height: at + step.ahead };
    case 'release':
      return { type: 'blocksReleased' };
    case 'throttle':
      return { type: 'throttleStarted', initiator: step.initiator };
    case 'unthrottle':
      return { type: 'throttleEnded' };
    case 'key':
      return keyEvent(step);
    case 'propose':
      return {
        type: 'changeProposed',
        events: step.events.map((e) => toEvent(e, model)),
        proposedBy: step.by,
        delayBlocks: step.delay,
        quorum: step.quorum,
      };
    case 'approve':
    case 'cancel': {
      // Mostly a change that is pending, sometimes one that is not.
      const held = model.changes;
      const id =
        held.length === 0 || step.pick === 5
          ? model.nextChangeId
          : held[step.pick % held.length]!.id;
      return step.kind === 'approve'
        ? { type: 'changeApproved', id, by: step.by }
        : { type: 'changeCancelled', id, by: step.by };
    }
    case 'keyRace': {
      const added = model.changes
        .flatMap((c) => c.events)
        .find((e) => e.type === 'throttleKeyAdded');
      return keyEvent({ kind: 'key', op: 'add', name: (added?.name as string) ?? 'ops-1' });
    }
    case 'raw':
      return step.event;
  }
}

function keyEvent(step: Extract<Step, { kind: 'key' }>): LimitsEvent {
  if (step.op === 'add') return { type: 'throttleKeyAdded', name: step.name, secretHash: KEY_HASH };
  return {
    type: step.op === 'revoke' ? 'throttleKeyRevoked' : 'throttleKeyReactivated',
    name: step.name,
  };
}

/** Asserts that every view and check of `state` agrees with the model. */
export function expectSameAsModel(state: LimitsState, model: NaiveModel): void {
  expect(state.tip).toBe(model.tip);
  expect(pendingChanges(state)).toEqual(model.changes);
  expect(getLimits(state)).toEqual(model.limits());
  expect(pegIntegrity(state)).toEqual(model.integrity());
  expect(windowOf(state)).toEqual(model.window());
  expect(mintWindowOf(state)).toEqual(model.mintWindow());
  for (const account of ACCOUNTS) {
    const entry = model.entries.has(account) ? model.limits().accountCaps[account] : undefined;
    expect(getAccountLimits(state, account)).toEqual(entry);
    expect(effectiveLimits(state, account)).toEqual(model.effective(account));
    expect(windowOf(state, account)).toEqual(model.window(account));
    expect(mintWindowOf(state, account)).toEqual(model.mintWindow(account));
    for (const amount of PROBE_AMOUNTS) {
      expect(
        checkWithdrawal(state, { account, amount }),
        `withdraw ${amount} by ${account}`,
      ).toEqual(model.checkWithdrawal(account, amount));
      expect(checkDeposit(state, { account, amount }), `deposit ${amount} by ${account}`).toEqual(
        model.checkDeposit(account, amount),
      );
      expect(whenAvailable(state, { account, amount }), `when ${amount} for ${account}`).toBe(
        model.whenAvailable(account, amount),
      );
      expect(whenMintable(state, { account, amount }), `mintable ${amount} for ${account}`).toBe(
        model.whenMintable(account, amount),
      );
    }
  }
  const batch = ACCOUNTS.flatMap((account, i) => [
    { account, amount: 60n + BigInt(i) * 25n },
    { account, amount: 130n },
  ]);
  const wanted = { admitted: [] as unknown[], refused: [] as unknown[] };
  const extra: Array<{
    id: string;
    account: string;
    amount: bigint;
    height: number;
    rejected: boolean;
  }> = [];
  for (const req of batch) {
    const v = model.checkWithdrawal(req.account, req.amount, model.tip, extra);
    if (v.ok) {
      wanted.admitted.push(req);
      extra.push({
        id: '',
        account: req.account,
        amount: req.amount,
        height: model.tip ?? 0,
        rejected: false,
      });
    } else
      wanted.refused.push({
        request: req,
        reason: v.reason,
        limit: v.limit,
        availableAt: v.availableAt,
      });
  }
  expect(admitWithdrawals(state, batch)).toEqual(wanted);
  const deposits = { admitted: [] as unknown[], refused: [] as unknown[] };
  const added: typeof extra = [];
  for (const req of batch) {
    const v = model.checkDeposit(req.account, req.amount, added);
    if (v.ok) {
      deposits.admitted.push(req);
      // Admitted at the tip: it counts in the mint windows from there.
      added.push({
        id: '',
        account: req.account,
        amount: req.amount,
        height: model.tip ?? 0,
        rejected: false,
      });
    } else
      deposits.refused.push({
        request: req,
        reason: v.reason,
        limit: v.limit,
        availableAt: v.availableAt,
      });
  }
  expect(admitDeposits(state, batch)).toEqual(deposits);
}

/** Applies one event to both; asserts the same outcome and returns the new state. */
export function applyBoth(state: LimitsState, model: NaiveModel, event: LimitsEvent): LimitsState {
  const backup = model.clone();
  const expected = model.apply(event as unknown as Record<string, unknown>);
  const result = apply(state, event);
  expect(
    result.ok ? undefined : result.error.code,
    JSON.stringify(event, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)),
  ).toBe(expected);
  if (!result.ok) {
    Object.assign(model, backup);
    return state;
  }
  return result.state;
}

/**
 * Steps weighted towards pending changes: proposals that add a key beside a loosening,
 * keys added directly that race them (the change is then dropped), approvals, blocks that
 * bring changes due, and throttle mode, which cancels them all.
 */
export function changeStepsArb(history: number): fc.Arbitrary<Step> {
  const loosening = fc.oneof(
    fc.constant<ChangeStep>({ kind: 'unthrottle' }),
    fc.record({
      kind: fc.constant('global' as const),
      caps: capsArb(history),
      accounts: fc.constant({}),
    }),
    fc.record({
      kind: fc.constant('key' as const),
      op: fc.constant('revoke' as const),
      name: fc.constantFrom('ops-1', 'ops-2', 'ops-3'),
    }),
  );
  const proposal = fc
    .record({
      kind: fc.constant('propose' as const),
      // A fresh key name mostly, so that the proposal is not refused for a duplicate.
      events: fc
        .tuple(fc.integer({ min: 0, max: 10_000 }), loosening)
        .map(([n, l]): ChangeStep[] => [{ kind: 'key', op: 'add', name: `k${n}` }, l]),
      delay: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.constant(null)),
      quorum: fc.constantFrom(0, 2, 3),
      by: fc.constantFrom(...OPERATORS),
    })
    .map((p) => (p.delay === null && p.quorum === 0 ? { ...p, quorum: 2 } : p));
  return fc.oneof(
    { weight: 4, arbitrary: proposal },
    { weight: 2, arbitrary: fc.record({ kind: fc.constant('keyRace' as const) }) },
    { weight: 2, arbitrary: keyStepArb() },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('block' as const),
        gap: fc.integer({ min: 1, max: 3 }),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('approve' as const),
        pick: fc.integer({ min: 0, max: 4 }),
        by: fc.constantFrom(...OPERATORS),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('throttle' as const),
        initiator: fc.constant('ops-1'),
      }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('unthrottle' as const) }) },
  );
}

/**
 * Steps of the pegged totals and the chain alone, for a window whose cap is a share: totals
 * (a few values, so that they repeat), the last total observed again, blocks, reorganizations
 * between them, and withdrawals against the cap in force.
 */
export function basisStepArb(history: number): fc.Arbitrary<Step> {
  const account = fc.constantFrom(...ACCOUNTS);
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('block' as const),
        gap: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: history })),
      }),
    },
    {
      weight: 3,
      arbitrary: fc.record({
        kind: fc.constant('reorg' as const),
        depth: fc.oneof(fc.integer({ min: 1, max: 3 }), fc.integer({ min: 1, max: history - 1 })),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('pegged' as const),
        total: fc.constantFrom(0n, 1_000n, 1_000_000n),
        account: fc.option(account, { nil: undefined, freq: 2 }),
      }),
    },
    {
      weight: 4,
      arbitrary: fc.record({
        kind: fc.constant('peggedAgain' as const),
        account: fc.option(account, { nil: undefined, freq: 2 }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('withdraw' as const),
        id: fc.constantFrom(...IDS),
        account,
        amount: fc.bigInt({ min: 1n, max: 3_000n }),
        back: fc.integer({ min: 0, max: 3 }),
      }),
    },
    // Mints against the mint window's cap in force, whose share reads the same basis.
    {
      weight: 1,
      arbitrary: fc.record({
        kind: fc.constant('mint' as const),
        id: fc.constantFrom(...DEPOSIT_IDS),
        account,
        amount: fc.bigInt({ min: 1n, max: 3_000n }),
        back: fc.integer({ min: 0, max: 3 }),
      }),
    },
  );
}
