/**
 * Amounts in a snapshot (version 3 on) as JSON keeps them: decimal strings, read back into the
 * bigints the rules check, at the places a snapshot holds amounts (caps, totals, the throttle
 * profile, withdrawals, the events of pending changes).
 */
import { describe, fail as failWith, joinPath } from './errors.js';
import { CAP_FIELDS, isRecord } from './limits.js';

/** Reports a field at fault, with its path; never returns. */
type ReportInvalid = (path: string, reason: string) => never;

const fail: ReportInvalid = (path, reason) => failWith('invalid_snapshot', reason, path);

const CAP_PATHS = CAP_FIELDS as ReadonlyArray<string>;

// An amount of a snapshot of version 3 or later: decimal digits, to a bigint (range and sign are
// checked later, by the rule its event applies).
function amountOf(value: unknown, path: string, invalid: ReportInvalid): unknown {
  // Missing: said by the check of the field itself.
  if (value === undefined) return value;
  if (typeof value === 'string' && /^-?\d{1,30}$/.test(value)) return BigInt(value);
  invalid(
    path,
    typeof value === 'number' || typeof value === 'bigint'
      ? `expected the amount as a decimal string, got the number ${value}: a snapshot of version 3 or later carries amounts as strings ("150000000"), as snapshotOf writes them`
      : `expected the amount as a decimal string ("150000000"), got ${describe(value)}`,
  );
}

function capsOf(value: unknown, path: string, invalid: ReportInvalid): unknown {
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = { ...value };
  for (const f of CAP_PATHS)
    if (f in value && value[f] !== null) out[f] = amountOf(value[f], joinPath(path, f), invalid);
  return out;
}

function eventOf(value: unknown, path: string, invalid: ReportInvalid): unknown {
  const capsAt = (v: unknown, p: string) => capsOf(v, p, invalid);
  const amountAt = (v: unknown, p: string) => amountOf(v, p, invalid);
  if (!isRecord(value)) return value;
  switch (value.type) {
    case 'limitsSet':
    case 'limitsUpdated': {
      if (!('limits' in value)) return value;
      const limits = capsAt(value.limits, `${path}.limits`) as Record<string, unknown>;
      if (isRecord(limits) && isRecord(limits.accountCaps)) {
        const entries: Record<string, unknown> = {};
        for (const [name, caps] of Object.entries(limits.accountCaps))
          entries[name] = capsAt(caps, joinPath(`${path}.limits.accountCaps`, name));
        return { ...value, limits: { ...limits, accountCaps: entries } };
      }
      return { ...value, limits };
    }
    case 'accountLimitsSet':
      return 'limits' in value
        ? { ...value, limits: capsAt(value.limits, `${path}.limits`) }
        : value;
    case 'withdrawalRequested':
    case 'depositMinted':
      return 'amount' in value
        ? { ...value, amount: amountAt(value.amount, `${path}.amount`) }
        : value;
    case 'peggedTotalObserved':
      return 'total' in value ? { ...value, total: amountAt(value.total, `${path}.total`) } : value;
    case 'pegIntegritySet':
      return 'maxUnbacked' in value && value.maxUnbacked !== null
        ? { ...value, maxUnbacked: amountAt(value.maxUnbacked, `${path}.maxUnbacked`) }
        : value;
    default:
      return value;
  }
}

/**
 * @internal A snapshot of version 3 or later with its amounts as bigints, as version 2 held them and
 * the rules read them. An amount that is not decimal digits is reported to `invalid` with
 * its path (which throws); a missing one is left for the field's own check to name.
 */
export function snapshotAmounts(
  s: Record<string, unknown>,
  invalid: ReportInvalid = fail,
): Record<string, unknown> {
  const amountAt = (value: unknown, path: string) => amountOf(value, path, invalid);
  const out: Record<string, unknown> = { ...s };
  if ('throttleProfile' in s)
    out.throttleProfile = isRecord(s.throttleProfile)
      ? Object.fromEntries(
          Object.entries(s.throttleProfile).map(([k, v]) => [
            k,
            amountAt(v, joinPath('throttleProfile', k)),
          ]),
        )
      : s.throttleProfile;
  if ('limits' in s) out.limits = capsOf(s.limits, 'limits', invalid);
  if (isRecord(s.accountCaps)) {
    const entries: Record<string, unknown> = Object.create(null);
    for (const [name, caps] of Object.entries(s.accountCaps))
      entries[name] = capsOf(caps, joinPath('accountCaps', name), invalid);
    out.accountCaps = entries;
  }
  if ('peggedTotal' in s) out.peggedTotal = amountAt(s.peggedTotal, 'peggedTotal');
  if (isRecord(s.accountPeggedTotals)) {
    const totals: Record<string, unknown> = Object.create(null);
    for (const [name, t] of Object.entries(s.accountPeggedTotals))
      totals[name] = amountAt(t, joinPath('accountPeggedTotals', name));
    out.accountPeggedTotals = totals;
  }
  if (Array.isArray(s.withdrawals))
    out.withdrawals = s.withdrawals.map((w: unknown, i) =>
      isRecord(w) && 'amount' in w
        ? { ...w, amount: amountAt(w.amount, `withdrawals[${i}].amount`) }
        : w,
    );
  pegAmounts(s, out, amountAt);
  if (Array.isArray(s.mints))
    out.mints = s.mints.map((m: unknown, i) =>
      isRecord(m) && 'amount' in m ? { ...m, amount: amountAt(m.amount, `mints[${i}].amount`) } : m,
    );
  if (Array.isArray(s.changes))
    out.changes = s.changes.map((c: unknown, i) =>
      isRecord(c) && Array.isArray(c.events)
        ? {
            ...c,
            events: c.events.map((e: unknown, k) =>
              eventOf(e, `changes[${i}].events[${k}]`, invalid),
            ),
          }
        : c,
    );
  return out;
}

// The amounts of the peg's backing (version 6): the totals observed, the reserves, the
// check's `maxUnbacked` and the breaker's figures.
function pegAmounts(
  s: Record<string, unknown>,
  out: Record<string, unknown>,
  amountAt: (value: unknown, path: string) => unknown,
): void {
  const observations = (value: unknown, path: string) =>
    Array.isArray(value)
      ? value.map((o: unknown, i) =>
          isRecord(o) && 'total' in o
            ? { ...o, total: amountAt(o.total, `${path}[${i}].total`) }
            : o,
        )
      : value;
  const fields = (value: unknown, path: string, names: ReadonlyArray<string>) => {
    if (!isRecord(value)) return value;
    const copy: Record<string, unknown> = { ...value };
    for (const f of names)
      if (f in value && value[f] !== null) copy[f] = amountAt(value[f], joinPath(path, f));
    return copy;
  };
  if ('totalsObserved' in s) out.totalsObserved = observations(s.totalsObserved, 'totalsObserved');
  if (isRecord(s.accountTotalsObserved)) {
    const lists: Record<string, unknown> = Object.create(null);
    for (const [name, l] of Object.entries(s.accountTotalsObserved))
      lists[name] = observations(l, joinPath('accountTotalsObserved', name));
    out.accountTotalsObserved = lists;
  }
  if ('reserves' in s) out.reserves = fields(s.reserves, 'reserves', ['total']);
  if ('pegIntegrity' in s)
    out.pegIntegrity = fields(s.pegIntegrity, 'pegIntegrity', ['maxUnbacked']);
  if ('pegBreaker' in s)
    out.pegBreaker = fields(s.pegBreaker, 'pegBreaker', ['peggedTotal', 'reserves', 'unbacked']);
}
