// Pending changes (src/core/changes.ts): a loosening waits for its height or its quorum.

import { describe, expect, test } from 'vitest';
import {
  apply,
  applyAll,
  checkLooseningPolicy,
  createLimitsState,
  decodeJson,
  encodeJson,
  getLimits,
  hashThrottleSecret,
  type LimitsEvent,
  type LimitsState,
  looseningPolicyFromJson,
  pendingChanges,
  snapshotOf,
  stateFromSnapshot,
} from '../../src/index.js';
import { at, expectError, run } from '../support/helpers.js';
import { asVersion } from '../support/old-snapshots.js';

const HASH = hashThrottleSecret('a-throttle-secret-of-enough-length');
const raise: LimitsEvent = { type: 'limitsSet', limits: { perWithdrawalCap: 2000n } };

const start = () =>
  run(at(100, { perWithdrawalCap: 1000n }), {
    type: 'throttleKeyAdded',
    name: 'ops-1',
    secretHash: HASH,
  });

function propose(
  state: LimitsState,
  events: LimitsEvent[] = [raise],
  terms: { delayBlocks?: number | null; quorum?: number; by?: string } = {},
): LimitsState {
  return run(state, {
    type: 'changeProposed',
    events,
    proposedBy: terms.by ?? 'gov-1',
    delayBlocks: terms.delayBlocks === undefined ? 6 : terms.delayBlocks,
    quorum: terms.quorum ?? 2,
  });
}

describe('a proposal', () => {
  test('holds the batch back, with its id, heights and approvals', () => {
    const s = propose(start());
    expect(getLimits(s).perWithdrawalCap).toBe(1000n);
    expect(pendingChanges(s)).toEqual([
      {
        id: 1,
        events: [raise],
        proposedBy: 'gov-1',
        proposedAt: 100,
        delayBlocks: 6,
        effectiveAt: 106,
        quorum: 2,
        approvals: ['gov-1'],
      },
    ]);
    // Ids are never used twice.
    expect(pendingChanges(propose(s)).map((c) => c.id)).toEqual([1, 2]);
  });

  test('a batch that loosens nothing is change_loosens_nothing, and the state is untouched', () => {
    expectError(
      start(),
      {
        type: 'changeProposed',
        events: [{ type: 'limitsSet', limits: { perWithdrawalCap: 10n } }],
        proposedBy: 'gov-1',
        delayBlocks: 6,
        quorum: 2,
      },
      'change_loosens_nothing',
      'events',
    );
  });

  test('a batch that does not apply is refused with its error, at its path under events', () => {
    expectError(
      start(),
      {
        type: 'changeProposed',
        events: [raise, { type: 'throttleKeyAdded', name: 'ops-1', secretHash: HASH }],
        proposedBy: 'gov-1',
        delayBlocks: 6,
        quorum: 2,
      },
      'duplicate_key',
      'events[1].name',
    );
  });

  test('chain events, throttle starts and other changes cannot wait in a change', () => {
    for (const event of [
      { type: 'blockConnected', height: 101 },
      { type: 'throttleStarted', initiator: 'ops-1' },
      { type: 'changeCancelled', id: 1, by: 'x' },
    ] as LimitsEvent[])
      expectError(
        start(),
        {
          type: 'changeProposed',
          events: [raise, event],
          proposedBy: 'g',
          delayBlocks: 6,
          quorum: 0,
        },
        'invalid_change',
        'events[1].type',
      );
  });

  test('terms that could never apply, or a quorum of one, are invalid_change', () => {
    const base = { type: 'changeProposed', events: [raise], proposedBy: 'g' } as const;
    expectError(
      start(),
      { ...base, delayBlocks: null, quorum: 0 },
      'invalid_change',
      'delayBlocks',
    );
    expectError(start(), { ...base, delayBlocks: 6, quorum: 1 }, 'invalid_change', 'quorum');
    expectError(start(), { ...base, delayBlocks: 0, quorum: 2 }, 'invalid_change', 'delayBlocks');
    expectError(
      start(),
      { ...base, delayBlocks: 6, quorum: 2, proposedBy: '' },
      'invalid_change',
      'proposedBy',
    );
    expectError(
      start(),
      { ...base, events: [], delayBlocks: 6, quorum: 2 },
      'invalid_change',
      'events',
    );
  });
});

describe('a change applies', () => {
  test('inside the block that reaches its height, not one block before', () => {
    const s = propose(start(), [raise], { quorum: 0 });
    const before = run(s, { type: 'blockConnected', height: 105 });
    expect(pendingChanges(before)).toHaveLength(1);
    expect(getLimits(before).perWithdrawalCap).toBe(1000n);
    const r = applyAll(before, [{ type: 'blockConnected', height: 106 }]);
    if (!r.ok) throw r.error;
    expect(pendingChanges(r.state)).toEqual([]);
    expect(getLimits(r.state).perWithdrawalCap).toBe(2000n);
    expect(r.settled.map((x) => [x.change.id, x.outcome])).toEqual([[1, 'applied']]);
  });

  test('a block that jumps past its height applies it too, before the events after the block', () => {
    const s = propose(start(), [raise], { quorum: 0 });
    const r = applyAll(s, [
      { type: 'blockConnected', height: 120 },
      { type: 'limitsSet', limits: { perWithdrawalCap: 3000n } },
    ]);
    if (!r.ok) throw r.error;
    expect(getLimits(r.state).perWithdrawalCap).toBe(3000n);
  });

  test('at once when the quorum approves, a second approval changing nothing', () => {
    const s = propose(start(), [raise], { quorum: 3 });
    expect(apply(s, { type: 'changeApproved', id: 1, by: 'gov-1' })).toMatchObject({ state: s });
    const two = run(s, { type: 'changeApproved', id: 1, by: 'gov-2' });
    expect(pendingChanges(two)[0]?.approvals).toEqual(['gov-1', 'gov-2']);
    expect(getLimits(two).perWithdrawalCap).toBe(1000n);
    const r = applyAll(two, [{ type: 'changeApproved', id: 1, by: 'gov-3' }]);
    if (!r.ok) throw r.error;
    expect(getLimits(r.state).perWithdrawalCap).toBe(2000n);
    expect(pendingChanges(r.state)).toEqual([]);
    expect(r.settled[0]?.outcome).toBe('applied');
    // Applied: it is gone, and approving it again is change_not_found.
    expectError(r.state, { type: 'changeApproved', id: 1, by: 'gov-4' }, 'change_not_found', 'id');
  });

  test('with delayBlocks null, only the quorum applies it', () => {
    const s = propose(start(), [raise], { delayBlocks: null, quorum: 2 });
    expect(pendingChanges(s)[0]?.effectiveAt).toBeNull();
    const later = run(s, { type: 'blockConnected', height: 100_000 });
    expect(pendingChanges(later)).toHaveLength(1);
    expect(
      getLimits(run(later, { type: 'changeApproved', id: 1, by: 'gov-2' })).perWithdrawalCap,
    ).toBe(2000n);
  });

  test('proposed before any block, its delay counts from the first block', () => {
    const fresh = applyAll(createLimitsState({ limits: { perWithdrawalCap: 1000n } }), [
      { type: 'changeProposed', events: [raise], proposedBy: 'g', delayBlocks: 3, quorum: 0 },
      { type: 'blockConnected', height: 500 },
    ]);
    if (!fresh.ok) throw fresh.error;
    expect(pendingChanges(fresh.state)[0]).toMatchObject({ proposedAt: null, effectiveAt: 503 });
    expect(
      getLimits(run(fresh.state, { type: 'blockConnected', height: 502 })).perWithdrawalCap,
    ).toBe(1000n);
    expect(
      getLimits(run(fresh.state, { type: 'blockConnected', height: 503 })).perWithdrawalCap,
    ).toBe(2000n);
  });
});

describe('a change that no longer applies is dropped', () => {
  test('validated again when its time comes: dropped with the reason, the rest of the block goes on', () => {
    const s = propose(
      start(),
      [raise, { type: 'throttleKeyAdded', name: 'ops-2', secretHash: HASH }],
      {
        quorum: 0,
      },
    );
    // Someone adds the same key directly meanwhile: the change's batch would now fail.
    const raced = run(s, { type: 'throttleKeyAdded', name: 'ops-2', secretHash: HASH });
    const r = applyAll(raced, [
      { type: 'blockConnected', height: 106 },
      { type: 'withdrawalRequested', id: 'w', account: 'a', amount: 5n, height: 106 },
    ]);
    if (!r.ok) throw r.error;
    expect(r.settled).toHaveLength(1);
    expect(r.settled[0]?.outcome).toBe('dropped');
    expect(r.settled[0]?.error?.code).toBe('duplicate_key');
    expect(r.settled[0]?.error?.path).toBe('[1].name');
    // Nothing of it applied: all or nothing.
    expect(getLimits(r.state).perWithdrawalCap).toBe(1000n);
    expect(pendingChanges(r.state)).toEqual([]);
    expect(r.state.tip).toBe(106);
  });
});

describe('cancelling', () => {
  test('an operator cancels a change, which then never applies', () => {
    const s = propose(start(), [raise], { quorum: 0 });
    const r = applyAll(s, [{ type: 'changeCancelled', id: 1, by: 'gov-2' }]);
    if (!r.ok) throw r.error;
    expect(r.settled.map((x) => x.outcome)).toEqual(['cancelled']);
    expect(getLimits(run(r.state, { type: 'blockConnected', height: 110 })).perWithdrawalCap).toBe(
      1000n,
    );
    expectError(r.state, { type: 'changeCancelled', id: 1, by: 'gov-2' }, 'change_not_found', 'id');
    expectError(
      r.state,
      { type: 'changeCancelled', id: 0, by: 'gov-2' },
      'invalid_change_id',
      'id',
    );
  });

  test('starting throttle mode cancels every pending change, also while it is on already', () => {
    const s = propose(
      propose(start(), [raise], { quorum: 0 }),
      [{ type: 'throttleKeyRevoked', name: 'ops-1' }],
      {
        quorum: 0,
      },
    );
    const r = applyAll(s, [{ type: 'throttleStarted', initiator: 'ops-1' }]);
    if (!r.ok) throw r.error;
    expect(r.settled.map((x) => [x.change.id, x.outcome])).toEqual([
      [1, 'cancelled'],
      [2, 'cancelled'],
    ]);
    expect(pendingChanges(r.state)).toEqual([]);
    // On already: the first initiator stays, the new change goes.
    const again = propose(r.state, [{ type: 'throttleEnded' }], { quorum: 0 });
    const second = run(again, { type: 'throttleStarted', initiator: 'ops-2' });
    expect(getLimits(second).throttleModeInitiator).toBe('ops-1');
    expect(pendingChanges(second)).toEqual([]);
    // With no change pending, a second start changes nothing, as before.
    expect(apply(second, { type: 'throttleStarted', initiator: 'ops-3' })).toMatchObject({
      state: second,
    });
  });
});

describe('pending changes are part of the state', () => {
  test('a snapshot holds them, and the restored state applies them at the same height', () => {
    const s = run(propose(start()), { type: 'changeApproved', id: 1, by: 'gov-1' });
    const text = encodeJson(snapshotOf(s));
    expect(snapshotOf(s).nextChangeId).toBe(2);
    const r = stateFromSnapshot(decodeJson(text));
    if (!r.ok) throw r.error;
    expect(pendingChanges(r.state)).toEqual(pendingChanges(s));
    expect(encodeJson(snapshotOf(r.state))).toBe(text);
    const a = run(s, { type: 'blockConnected', height: 106 });
    const b = run(r.state, { type: 'blockConnected', height: 106 });
    expect(getLimits(b)).toEqual(getLimits(a));
    expect(encodeJson(snapshotOf(b))).toBe(encodeJson(snapshotOf(a)));
  });

  test('a version 1 snapshot (before pending changes) still loads, with none', () => {
    const s = start();
    const r = stateFromSnapshot(decodeJson(encodeJson(asVersion(snapshotOf(s), 1))));
    if (!r.ok) throw r.error;
    expect(pendingChanges(r.state)).toEqual([]);
    expect(pendingChanges(propose(r.state))[0]?.id).toBe(1);
  });

  const broken: Array<[string, (c: Record<string, unknown>) => void, string]> = [
    [
      'a change that would have applied by its height',
      (c) => (c.effectiveAt = 100n),
      'changes[0].effectiveAt',
    ],
    [
      'a change whose approvals reach its quorum',
      (c) => (c.approvals = ['gov-1', 'gov-2']),
      'changes[0].approvals',
    ],
    [
      'approvals that do not start with the proposer',
      (c) => (c.approvals = ['gov-2']),
      'changes[0].approvals[0]',
    ],
    [
      'a chain event in a change',
      (c) => (c.events = [{ type: 'blockConnected', height: 5n }]),
      'changes[0].events[0].type',
    ],
    [
      'a cap that is no cap',
      (c) => (c.events = [{ type: 'limitsSet', limits: { perWithdrawalCap: -1n } }]),
      'changes[0].events[0].limits.perWithdrawalCap',
    ],
    ['a quorum of one', (c) => (c.quorum = 1n), 'changes[0].quorum'],
    ['an id at or past nextChangeId', (c) => (c.id = 2n), 'changes[0].id'],
    ['a field it does not have', (c) => (c.extra = 1n), 'changes[0].extra'],
  ];
  test.each(broken)('a snapshot with %s is invalid_snapshot at its path', (_, breakIt, path) => {
    const snap = decodeJson(encodeJson(snapshotOf(propose(start())))) as {
      changes: Array<Record<string, unknown>>;
    };
    breakIt(snap.changes[0]!);
    const r = stateFromSnapshot(snap);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe('invalid_snapshot');
      expect(r.error.path).toBe(path);
    }
  });
});

describe('a loosening policy', () => {
  const policy = (value: unknown) => {
    const r = looseningPolicyFromJson(value);
    return r.ok ? r.policy : r.error.path;
  };

  test('a configuration may give any delay, with or without a quorum, a missing field being 0', () => {
    expect(policy({})).toEqual({ delayBlocks: 0, quorum: 0 });
    expect(policy({ delayBlocks: 6, quorum: 2 })).toEqual({ delayBlocks: 6, quorum: 2 });
    expect(policy({ delayBlocks: null, quorum: 3n })).toEqual({ delayBlocks: null, quorum: 3 });
    expect(policy({ delayBlocks: 144n })).toEqual({ delayBlocks: 144, quorum: 0 });
  });

  test('a policy that cannot apply a change or does not mean what it says is refused at its field', () => {
    expect(policy({ delayBlocks: -1 })).toBe('loosening.delayBlocks');
    expect(policy({ delayBlocks: 6, quorum: 1 })).toBe('loosening.quorum');
    expect(policy({ delayBlocks: null })).toBe('loosening.quorum');
    expect(policy({ delayBlocks: 0, quorum: 2 })).toBe('loosening.delayBlocks');
    expect(policy({ delay: 6 })).toBe('loosening.delay');
  });

  test('the deprecated checkLooseningPolicy answers the same, and throws what the result holds', () => {
    expect(checkLooseningPolicy({ delayBlocks: 6, quorum: 2 })).toEqual(
      policy({ delayBlocks: 6, quorum: 2 }),
    );
    const r = looseningPolicyFromJson({ delayBlocks: 0, quorum: 2 });
    expect(() => checkLooseningPolicy({ delayBlocks: 0, quorum: 2 })).toThrow(
      expect.objectContaining({
        code: 'invalid_option',
        path: 'loosening.delayBlocks',
        message: r.ok ? '' : r.error.message,
      }),
    );
  });
});
