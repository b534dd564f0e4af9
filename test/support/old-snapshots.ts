/**
 * A snapshot as an older release wrote it, made from one this release writes: what each
 * version lacked taken out (version 6: the mint window, its mints and the mint history's
 * start; 5: the peg's backing besides, the totals observed, the reserves, the check and the
 * breaker; 4: a window cap's share besides; 3: held blocks besides; 2: a history that starts
 * late besides, and amounts as integers; 1: pending changes besides), so that the tests load
 * what those releases left on disk.
 */
import { snapshotAmounts } from '../../src/core/snapshot-json.js';
import type { Snapshot } from '../../src/index.js';

function without(caps: unknown, fields: ReadonlyArray<string>): Record<string, unknown> {
  const out = { ...(caps as Record<string, unknown>) };
  for (const f of fields) delete out[f];
  return out;
}

const MINT_FIELDS = ['rollingMintBlocks', 'rollingMintCap', 'rollingMintCapShare'];

// The caps of every entry without `fields`.
function entriesWithout(
  accountCaps: Readonly<Record<string, unknown>>,
  fields: ReadonlyArray<string>,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, caps] of Object.entries(accountCaps)) out[name] = without(caps, fields);
  return out;
}

/** `snapshot` (as `snapshotOf` made it) as a snapshot of `version` (1 to 6). */
export function asVersion(
  snapshot: Snapshot,
  version: 1 | 2 | 3 | 4 | 5 | 6,
): Record<string, unknown> {
  const { mints: _mints, mintHistoryCompleteFrom: _mintFrom, ...rest } = snapshot;
  const v6 = {
    ...rest,
    limits: without(snapshot.limits, MINT_FIELDS),
    accountCaps: entriesWithout(snapshot.accountCaps, MINT_FIELDS),
  };
  if (version === 6) return { ...v6, version };
  const {
    totalsObserved: _totals,
    accountTotalsObserved: _accountTotals,
    reserves: _reserves,
    pegIntegrity: _integrity,
    pegBreaker: _breaker,
    ...v5
  } = v6;
  if (version === 5) return { ...v5, version };
  const share = ['rollingWithdrawalCapShare'];
  const v4: Record<string, unknown> = {
    ...v5,
    version,
    limits: without(v6.limits, share),
    accountCaps: entriesWithout(v6.accountCaps, share),
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
