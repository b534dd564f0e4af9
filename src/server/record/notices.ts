/**
 * What an operator is told of a batch (`--alert-url`): every change that is not chain
 * traffic, with what changed. Worked out when the batch is recorded, from the states before
 * and after it, and kept in its audit record, so that delivery can follow the trail (a
 * restart resumes it) and tell exactly what was true then. Node-only.
 */
import {
  applyAll,
  getLimits,
  type LimitsEvent,
  type LimitsState,
  type Notice,
  pegIntegrity,
  pendingChanges,
  type SettledChange,
} from 'peg-limits';
import { loosenedBy } from '../../internal.js';

/**
 * The alerts of one batch, in the order of its events: limits and entries changed, keys
 * added, revoked and reactivated, throttle mode started and ended (from the states: a start
 * while it is on starts nothing), pending changes proposed, approved, cancelled, applied and
 * dropped. Chain events tell nothing.
 */
export function noticesOf(
  base: LimitsState,
  next: LimitsState,
  events: ReadonlyArray<LimitsEvent>,
  settled: ReadonlyArray<SettledChange>,
): Notice[] {
  const out: Notice[] = [];
  const cancelledByEvent = new Set<number>();
  for (const e of events) {
    switch (e.type) {
      case 'limitsSet':
        out.push({ type: 'limitsChanged', limits: e.limits });
        break;
      case 'limitsUpdated':
        // Only the fields named changed: said as such.
        out.push({ type: 'limitsChanged', updated: e.limits });
        break;
      case 'accountLimitsSet':
        out.push({ type: 'accountLimitsChanged', account: e.account, limits: e.limits });
        break;
      case 'throttleKeyAdded':
      case 'throttleKeyRevoked':
      case 'throttleKeyReactivated':
        out.push({ type: e.type, name: e.name });
        break;
      case 'changeProposed': {
        const change = pendingChanges(next).at(-1);
        out.push({
          type: 'changeProposed',
          id: change?.id ?? null,
          events: e.events,
          effectiveAt: change?.effectiveAt ?? null,
          quorum: e.quorum,
          // What it would loosen, field by field, before and after: whoever approves reads it.
          loosens: loosenedBy(base, e.events, applyAll),
        });
        break;
      }
      case 'changeApproved':
        out.push({ type: 'changeApproved', id: e.id, by: e.by });
        break;
      case 'changeCancelled':
        cancelledByEvent.add(e.id);
        out.push({ type: 'changeCancelled', id: e.id, by: e.by });
        break;
      case 'pegIntegritySet':
        out.push({
          type: 'pegIntegrityChanged',
          maxUnbacked: e.maxUnbacked,
          reservesMaxAge: e.reservesMaxAge,
        });
        break;
      default:
        break;
    }
  }
  for (const s of settled) {
    if (s.outcome === 'applied')
      out.push({ type: 'changeApplied', id: s.change.id, events: s.change.events });
    else if (s.outcome === 'dropped')
      out.push({
        type: 'changeDropped',
        id: s.change.id,
        error: { code: s.error?.code ?? null, message: s.error?.message ?? null },
      });
    else if (!cancelledByEvent.has(s.change.id))
      out.push({
        type: 'changeCancelled',
        id: s.change.id,
        by: null,
        reason: 'throttle mode started',
      });
  }
  out.push(...integrityNotices(base, next));
  const before = getLimits(base).throttleModeInitiator;
  const after = getLimits(next).throttleModeInitiator;
  if (before !== after) {
    if (before !== null) out.push({ type: 'throttleEnded', initiator: before });
    if (after !== null) out.push({ type: 'throttleStarted', initiator: after });
  }
  return out;
}

/**
 * What the check of the peg's backing tells the operators, from the states before and after
 * a batch: the breaker tripped (with the figures) or cleared, the reserves gone unknown or
 * known again. Chain traffic that moves none of these tells nothing.
 */
export function integrityNotices(base: LimitsState, next: LimitsState): Notice[] {
  const was = pegIntegrity(base);
  const now = pegIntegrity(next);
  const out: Notice[] = [];
  if (was.tripped === null && now.tripped !== null)
    out.push({ type: 'pegBreakerTripped', ...now.tripped, maxUnbacked: now.maxUnbacked });
  if (was.tripped !== null && now.tripped === null)
    out.push({ type: 'pegBreakerCleared', tripped: was.tripped, state: now.state });
  if (was.state !== 'reserves_unknown' && now.state === 'reserves_unknown')
    out.push({
      type: 'reservesUnknown',
      reserves: now.reserves,
      reservesHeight: now.reservesHeight,
      reservesMaxAge: now.reservesMaxAge,
    });
  if (was.state === 'reserves_unknown' && now.state === 'backed')
    out.push({ type: 'reservesKnown', reserves: now.reserves, reservesHeight: now.reservesHeight });
  return out;
}
