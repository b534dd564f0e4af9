/**
 * A snapshot as an older release wrote it, made from one this release writes: what each
 * version lacked taken out (version 5: the peg's backing, the totals observed, the reserves,
 * the check and the breaker; 4: a window cap's share besides; 3: held blocks besides; 2: a
 * history that starts late besides, and amounts as integers; 1: pending changes besides),
 * so that the tests load what those releases left on disk.
 */
import { snapshotAmounts } from '../../src/core/snapshot-json.js';
import type { Snapshot } from '../../src/index.js';

function withoutShares(caps: unknown): unknown {
  const { rollingWithdrawalCapShare: _share, ...rest } = caps as Record<string, unknown>;
  return rest;
}

/** `snapshot` (as `snapshotOf` made it) as a snapshot of `version` (1 to 5). */
export function asVersion(snapshot: Snapshot, version: 1 | 2 | 3 | 4 | 5): Record<string, unknown> {
  const {
    totalsObserved: _totals,
    accountTotalsObserved: _accountTotals,
    reserves: _reserves,
    pegIntegrity: _integrity,
    pegBreaker: _breaker,
    ...v5
  } = snapshot;
  if (version === 5) return { ...v5, version };
  const accountCaps: Record<string, unknown> = {};
  for (const [name, caps] of Object.entries(snapshot.accountCaps))
    accountCaps[name] = withoutShares(caps);
  const v4: Record<string, unknown> = {
    ...v5,
    version,
    limits: withoutShares(snapshot.limits),
    accountCaps,
  };
  if (version === 4) return v4;
  const { blocksHeldFrom: _held, ...v3 } = v4;
  if (version === 3) return v3;
  const { historyCompleteFrom: _complete, ...v2text } = v3;
  // Versions 1 and 2 wrote amounts as integers.
  const v2 = snapshotAmounts(v2text);
  if (version === 2) return v2;
  const { changes: _changes, nextChangeId: _next, ...v1 } = v2;
  return v1;
}
