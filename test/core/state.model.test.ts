import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  apply,
  applyAll,
  type CapsInput,
  createLimitsState as create,
  decodeJson,
  encodeJson,
  eventsFromJson,
  getLimits,
  type LimitsEvent,
  type LimitsState,
  pegIntegrity,
  snapshotOf,
  stateFromSnapshot,
  type ThrottleProfile,
} from '../../src/index.js';
import {
  applyBoth,
  basisStepArb,
  capsArb,
  changeStepsArb,
  expectSameAsModel,
  type Step,
  stepArb,
  toEvent,
} from '../support/arbitraries.js';
import { canonical } from '../support/helpers.js';
import { NaiveModel } from '../support/model.js';

const HISTORY = 10;
const PROFILE: ThrottleProfile = {
  perWithdrawalCap: 200n,
  rollingWithdrawalBlocks: 6n,
  rollingWithdrawalCap: 400n,
};
const createLimitsState = (o: { historyBlocks: number; limits?: CapsInput }) =>
  create({ ...o, throttleProfile: PROFILE });

interface Real {
  state: LimitsState;
}

function textOf(state: LimitsState): string {
  return encodeJson(snapshotOf(state));
}

/** The state restored from its snapshot, through the JSON text as a store would keep it. */
function restore(state: LimitsState): LimitsState {
  const r = stateFromSnapshot(decodeJson(textOf(state)));
  if (!r.ok) throw r.error;
  return r.state;
}

class StepCommand implements fc.Command<NaiveModel, Real> {
  constructor(readonly step: Step) {}
  check(): boolean {
    return true;
  }
  run(model: NaiveModel, real: Real): void {
    const event = toEvent(this.step, model);
    // The state restored from the snapshot before the event takes it exactly as the
    // original does: the same outcome, and the same snapshot after.
    const restored = restore(real.state);
    const before = real.state;
    real.state = applyBoth(real.state, model, event);
    const direct = apply(before, event);
    const other = apply(restored, event);
    expect(other.ok ? 'ok' : other.error.code).toBe(direct.ok ? 'ok' : direct.error.code);
    if (other.ok) expect(textOf(other.state)).toBe(textOf(real.state));
    expectSameAsModel(real.state, model);
    expectSameAsModel(restore(real.state), model);
  }
  toString(): string {
    return JSON.stringify(this.step, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
  }
}

const commands = fc.commands([stepArb(HISTORY).map((s) => new StepCommand(s))], {
  maxCommands: 80,
  size: 'large',
});

// Weighted towards pending changes, so that changes apply, are dropped and are cancelled
// in every run (with the steps above alone, a drop is rare).
const changeCommands = fc.commands([changeStepsArb(HISTORY).map((s) => new StepCommand(s))], {
  maxCommands: 60,
});

// The totals, repeated or not, and the chain moving under them, beneath a window whose cap
// is a share (globally and for two accounts): the lagged basis after any reorganization.
const basisCommands = fc.commands([basisStepArb(HISTORY).map((s) => new StepCommand(s))], {
  maxCommands: 40,
});
const SHARED: CapsInput = {
  rollingWithdrawalBlocks: 4n,
  rollingWithdrawalCap: 1_000_000n,
  rollingWithdrawalCapShare: 1_000n,
  rollingMintBlocks: 5n,
  rollingMintCap: 800_000n,
  rollingMintCapShare: 2_000n,
};
const SHARED_ENTRIES: Record<string, CapsInput> = {
  alice: {
    rollingWithdrawalBlocks: 3n,
    rollingWithdrawalCap: 500_000n,
    rollingWithdrawalCapShare: 5_000n,
    rollingMintBlocks: 2n,
    rollingMintCap: 400_000n,
    rollingMintCapShare: 3_000n,
  },
  bob: {
    rollingWithdrawalBlocks: 6n,
    rollingWithdrawalCap: 900_000n,
    rollingWithdrawalCapShare: 10_000n,
  },
};

const initialCaps = capsArb(HISTORY).filter(
  (c) => new NaiveModel(HISTORY, PROFILE, NaiveModel.caps({})).capsError(c) === undefined,
);

/** The model and the state, on the same caps, after the same first block. */
function startFrom(caps: CapsInput): { model: NaiveModel; real: Real } {
  const model = new NaiveModel(HISTORY, PROFILE, NaiveModel.caps(caps));
  const start = createLimitsState({ historyBlocks: HISTORY, limits: caps });
  return {
    model,
    real: { state: applyBoth(start, model, { type: 'blockConnected', height: 1000 }) },
  };
}

describe('the state against the naive model', () => {
  test.prop([initialCaps, commands], { numRuns: 100 })(
    'every view, check and whenAvailable agrees with a recompute from the plain list, after every command',
    (caps, cmds) => {
      fc.modelRun(() => startFrom(caps), cmds);
    },
  );

  test.prop([basisCommands], { numRuns: 600 })(
    "a window's share applies to the lowest total in force, repeated totals and reorganizations between them included, after every command",
    (cmds) => {
      fc.modelRun(() => {
        const { model, real } = startFrom(SHARED);
        for (const [account, limits] of Object.entries(SHARED_ENTRIES))
          real.state = applyBoth(real.state, model, { type: 'accountLimitsSet', account, limits });
        return { model, real };
      }, cmds);
    },
  );

  test.prop([initialCaps, changeCommands], { numRuns: 60 })(
    'pending changes wait, apply, are dropped and are cancelled as the model says, after every command',
    (caps, cmds) => {
      fc.modelRun(() => startFrom(caps), cmds);
    },
  );
});

/** A random history as concrete events, built against the model so heights are mostly valid. */
const historyArb = fc.array(stepArb(HISTORY), { minLength: 5, maxLength: 80 }).map((steps) => {
  const model = new NaiveModel(HISTORY, PROFILE, NaiveModel.caps({}));
  const start: LimitsEvent = { type: 'blockConnected', height: 500 };
  model.apply(start as unknown as Record<string, unknown>);
  return [
    start,
    ...steps.map((s) => {
      const e = toEvent(s, model);
      model.apply(e as unknown as Record<string, unknown>);
      return e;
    }),
  ];
});

function fold(state: LimitsState, events: ReadonlyArray<LimitsEvent>): LimitsState {
  let s = state;
  for (const e of events) {
    const r = apply(s, e);
    if (r.ok) s = r.state;
  }
  return s;
}

/** The events that apply, one at a time, from `start`. */
function validOnlyFrom(start: LimitsState, events: ReadonlyArray<LimitsEvent>): LimitsEvent[] {
  const out: LimitsEvent[] = [];
  let s = start;
  for (const e of events) {
    const r = apply(s, e);
    if (r.ok) {
      s = r.state;
      out.push(e);
    }
  }
  return out;
}

const validOnly = (events: ReadonlyArray<LimitsEvent>) =>
  validOnlyFrom(createLimitsState({ historyBlocks: HISTORY }), events);

describe('invariants', () => {
  test.prop([historyArb])('available never exceeds the cap and is never negative', (events) => {
    let s = createLimitsState({
      historyBlocks: HISTORY,
      limits: { rollingWithdrawalBlocks: 4n, rollingWithdrawalCap: 500n },
    });
    for (const e of events) {
      const r = apply(s, e);
      if (!r.ok) continue;
      s = r.state;
      const l = getLimits(s);
      // Failing closed on the peg's backing, nothing may be withdrawn, with no window too.
      const closed = ['tripped', 'reserves_unknown'].includes(pegIntegrity(s).state);
      if (l.rollingWithdrawalCap === null) expect(l.availableToWithdraw).toBe(closed ? 0n : null);
      else {
        expect(l.availableToWithdraw! >= 0n).toBe(true);
        expect(l.availableToWithdraw! <= l.rollingWithdrawalCap).toBe(true);
      }
    }
  });

  test.prop([historyArb, fc.nat()])('apply never changes its input', (events, pick) => {
    const valid = validOnly(events);
    const cut = valid.length === 0 ? 0 : pick % valid.length;
    const before = fold(createLimitsState({ historyBlocks: HISTORY }), valid.slice(0, cut));
    const limitsBefore = getLimits(before);
    const snapshot = structuredClone(before);
    for (const e of events) apply(before, e);
    applyAll(before, events);
    expect(structuredClone(before)).toEqual(snapshot);
    expect(getLimits(before)).toEqual(limitsBefore);
  });

  test.prop([historyArb])('replaying the same events gives the same state', (events) => {
    const valid = validOnly(events);
    const a = applyAll(createLimitsState({ historyBlocks: HISTORY }), valid);
    const b = applyAll(createLimitsState({ historyBlocks: HISTORY }), valid);
    expect(a.ok && b.ok).toBe(true);
    if (a.ok && b.ok) {
      expect(getLimits(a.state)).toEqual(getLimits(b.state));
      expect(canonical(a.state)).toEqual(canonical(b.state));
    }
  });

  test.prop([historyArb])(
    'replaying the events as a log keeps them, through their JSON text, gives the same state',
    (events) => {
      const valid = validOnly(events);
      const decoded = eventsFromJson(decodeJson(encodeJson(valid)));
      if (!decoded.ok) throw decoded.error;
      const a = applyAll(createLimitsState({ historyBlocks: HISTORY }), valid);
      const b = applyAll(createLimitsState({ historyBlocks: HISTORY }), decoded.events);
      if (!a.ok) throw a.error;
      if (!b.ok) throw b.error;
      expect(textOf(b.state)).toBe(textOf(a.state));
    },
  );

  test.prop([historyArb])('applyAll equals folding apply, and is all or nothing', (events) => {
    const start = createLimitsState({ historyBlocks: HISTORY });
    const all = applyAll(start, events);
    let s = start;
    let failedAt = -1;
    for (const [i, e] of events.entries()) {
      const r = apply(s, e);
      if (!r.ok) {
        failedAt = i;
        if (!all.ok) expect(all.error.code).toBe(r.error.code);
        break;
      }
      s = r.state;
    }
    if (failedAt < 0) {
      expect(all.ok).toBe(true);
      if (all.ok) {
        expect(canonical(all.state)).toEqual(canonical(s));
        // One batch and one event at a time lay their structures out differently; the
        // snapshot text of the same history is the same all the same.
        expect(textOf(all.state)).toBe(textOf(s));
      }
    } else {
      expect(all.ok).toBe(false);
      if (!all.ok) expect(all.error.path?.startsWith(`[${failedAt}]`)).toBe(true);
    }
  });

  test.prop([historyArb, fc.array(fc.tuple(fc.nat(), historyArb), { maxLength: 4 })])(
    'each earlier state still answers as before after later events, on any branch',
    (events, branches) => {
      const states: LimitsState[] = [];
      const texts: string[] = [];
      const limits: unknown[] = [];
      let s = createLimitsState({ historyBlocks: HISTORY });
      for (const e of events) {
        const r = apply(s, e);
        if (!r.ok) continue;
        s = r.state;
        states.push(s);
        texts.push(textOf(s));
        limits.push(getLimits(s));
      }
      // Later events on the main line and on branches from earlier states, one at a time
      // and in batches, must leave every earlier state as it was.
      for (const [pick, more] of branches) {
        if (states.length === 0) break;
        const from = states[pick % states.length]!;
        applyAll(from, more);
        let t = from;
        for (const e of more) {
          const r = apply(t, e);
          if (r.ok) t = r.state;
        }
      }
      for (const [i, state] of states.entries()) {
        expect(textOf(state)).toBe(texts[i]);
        expect(getLimits(state)).toEqual(limits[i]);
      }
    },
  );

  test.prop([historyArb, historyArb, fc.nat({ max: 30 })])(
    'a batch on a state that already holds withdrawals equals its events one at a time, now and blocks later',
    (first, second, later) => {
      const base = fold(createLimitsState({ historyBlocks: HISTORY }), first);
      const events = validOnlyFrom(base, second);
      const all = applyAll(base, events);
      expect(all.ok).toBe(true);
      if (!all.ok) return;
      let batch = all.state;
      let single = fold(base, events);
      expect(textOf(batch)).toBe(textOf(single));
      // Generations are dropped as blocks go by: both must drop the same withdrawals.
      for (let i = 1; i <= later; i++) {
        const h = (batch.highestTip ?? 0) + 1;
        batch = fold(batch, [{ type: 'blockConnected', height: h }]);
        single = fold(single, [{ type: 'blockConnected', height: h }]);
        expect(textOf(batch)).toBe(textOf(single));
      }
    },
  );
});
