/**
 * The client's answers as values: what `decodeJson` reads (every integer a `bigint`) made the
 * library's types, heights and counts numbers again.
 */
import type { PegIntegrity } from '../core/integrity.js';
import type { PendingChange, Tripped } from '../core/state.js';
import type { Limits } from '../core/views.js';
import type { HeightSum, WindowView } from '../core/window-views.js';

/** A height or count as a number (`decodeJson` reads every integer as a bigint). */
export function num(value: unknown): number | null {
  return typeof value === 'bigint' ? Number(value) : (value as number | null);
}

function sum(value: unknown): HeightSum {
  const s = value as { height: bigint; amount: bigint };
  return { height: Number(s.height), amount: s.amount };
}

/** A window (`GET /window`, `GET /mint-window`) with its heights as numbers. */
export function toWindow(value: unknown): WindowView {
  const w = value as Record<string, unknown>;
  return {
    ...(w as unknown as WindowView),
    tip: num(w.tip),
    from: num(w.from),
    to: num(w.to),
    completeAt: num(w.completeAt),
    heldFrom: num(w.heldFrom),
    sums: (w.sums as unknown[]).map(sum),
    nextRelease: w.nextRelease === null ? null : sum(w.nextRelease),
  };
}

/** `GET /integrity` with its heights and its age as numbers. */
export function toIntegrity(value: unknown): PegIntegrity {
  const i = value as Record<string, unknown>;
  const t = i.tripped as Record<string, unknown> | null;
  return {
    ...(i as unknown as PegIntegrity),
    reservesHeight: num(i.reservesHeight),
    reservesMaxAge: Number(i.reservesMaxAge),
    tripped: t === null ? null : ({ ...t, height: num(t.height) } as unknown as Tripped),
  };
}

/** A pending change with its id, heights, delay and quorum as numbers. */
export function toChange(value: unknown): PendingChange {
  const c = value as Record<string, unknown>;
  return {
    ...(c as unknown as PendingChange),
    id: Number(c.id),
    proposedAt: num(c.proposedAt),
    delayBlocks: num(c.delayBlocks),
    effectiveAt: num(c.effectiveAt),
    quorum: Number(c.quorum),
  };
}

/** An answer that is a pending change (it has approvals) or the Limits. */
export function changeOrLimits(value: unknown): PendingChange | Limits {
  return 'approvals' in (value as object) ? toChange(value) : (value as Limits);
}
