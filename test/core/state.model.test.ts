import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  apply,
  applyAll,
  type CapsInput,
  createLimitsState as create,
  getLimits,
  type LimitsEvent,
  type LimitsState,
  type ThrottleProfile,
} from '../../src/index.js';
import {
  applyBoth,
  capsArb,
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

class StepCommand implements fc.Command<NaiveModel, Real> {
  constructor(readonly step: Step) {}
  check(): boolean {
    return true;
  }
  run(model: NaiveModel, real: Real): void {
    const event = toEvent(this.step, model);
    real.state = applyBoth(real.state, model, event);
    expectSameAsModel(real.state, model);
  }
  toString(): string {
    return JSON.stringify(this.step, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
  }
}

const commands = fc.commands([stepArb(HISTORY).map((s) => new StepCommand(s))], {
  maxCommands: 80,
  size: 'large',
});

const initialCaps = capsArb(HISTORY).filter(
  (c) => new NaiveModel(HISTORY, PROFILE, NaiveModel.caps({})).capsError(c) === undefined,
);

describe('the state against the naive model', () => {
  test.prop([initialCaps, commands], { numRuns: 100 })(
    'every view, check and whenAvailable agrees with a recompute from the plain list, after every command',
    (caps, cmds) => {
      const setup = () => {
        const model = new NaiveModel(HISTORY, PROFILE, NaiveModel.caps(caps));
        const start = createLimitsState({ historyBlocks: HISTORY, limits: caps });
        return {
          model,
          real: { state: applyBoth(start, model, { type: 'blockConnected', height: 1000 }) },
        };
      };
      fc.modelRun(setup, cmds);
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

const validOnly = (events: ReadonlyArray<LimitsEvent>) => {
  const out: LimitsEvent[] = [];
  let s = createLimitsState({ historyBlocks: HISTORY });
  for (const e of events) {
    const r = apply(s, e);
    if (r.ok) {
      s = r.state;
      out.push(e);
    }
  }
  return out;
};

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
      if (l.rollingWithdrawalCap === null) expect(l.availableToWithdraw).toBeNull();
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
      if (all.ok) expect(canonical(all.state)).toEqual(canonical(s));
    } else {
      expect(all.ok).toBe(false);
      if (!all.ok) expect(all.error.path?.startsWith(`[${failedAt}]`)).toBe(true);
    }
  });
});
