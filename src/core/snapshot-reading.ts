/**
 * A snapshot read back into a state (docs/design.md, "Snapshots"): a snapshot is input, so
 * every rule of the caps and the events is checked, each error at the snapshot's path, and
 * the versions an older release wrote are read as they were written. Writing one is
 * `snapshot.ts`.
 */

import { type Amount, requireCap, requirePositive } from './amount.js';
import { restoreChange } from './changes.js';
import { asState, draftOf, type Observation, stateFieldsOf } from './draft.js';
import { describe, joinPath, LimitsError, pathInEvent, type Result } from './errors.js';
import type { PendingChange } from './events.js';
import { heightFromJson, requireId } from './heights.js';
import { pegIntegrity, requireIntegrityPolicy } from './integrity.js';
import { isSecretHash } from './keys.js';
import {
  CAP_FIELDS,
  type Caps,
  isRecord,
  MINT_FIELDS,
  REPORTED_CAP_FIELDS,
  requireAccount,
} from './limits.js';
import { mapForEach, mapGet, mapSet } from './pmap.js';
import { SNAPSHOT_FORMAT, SNAPSHOT_VERSION, TOP_FIELDS } from './snapshot.js';
import { checked, height, Invalid, invalid, list, nullable, record } from './snapshot-input.js';
import { snapshotAmounts } from './snapshot-json.js';
import {
  applyAll,
  createLimitsState,
  type Height,
  type LimitsEvent,
  type LimitsState,
  type ThrottleProfile,
} from './state.js';
import { requireKeyName } from './throttle.js';

// What version 6 lacks, version 5 (and 4) besides, version 3 besides, version 2 besides, and
// version 1 besides.
const MINT_TOP_FIELDS = ['mints', 'mintHistoryCompleteFrom'];
const V6_FIELDS = TOP_FIELDS.filter((f) => !MINT_TOP_FIELDS.includes(f));
const PEG_FIELDS = [
  'totalsObserved',
  'accountTotalsObserved',
  'reserves',
  'pegIntegrity',
  'pegBreaker',
];
const V5_FIELDS = V6_FIELDS.filter((f) => !PEG_FIELDS.includes(f));
const V3_FIELDS = V5_FIELDS.filter((f) => f !== 'blocksHeldFrom');
const V2_FIELDS = V3_FIELDS.filter((f) => f !== 'historyCompleteFrom');
const V1_FIELDS = V2_FIELDS.filter((f) => f !== 'changes' && f !== 'nextChangeId');
// The top fields a snapshot of `version` holds (this version's for one it cannot read: the
// version check names what is wrong).
function fieldsOf(version: unknown): ReadonlyArray<string> {
  const byVersion = [V1_FIELDS, V2_FIELDS, V3_FIELDS, V5_FIELDS, V5_FIELDS, V6_FIELDS];
  return typeof version === 'number' ? (byVersion[version - 1] ?? TOP_FIELDS) : TOP_FIELDS;
}
const WITHDRAWAL_FIELDS = ['id', 'account', 'amount', 'height', 'rejected'];
const MINT_FIELDS_OF_SNAPSHOT = ['id', 'account', 'amount', 'height'];
const KEY_FIELDS = ['name', 'secretHash', 'revoked'];
const PROFILE_FIELDS = ['perWithdrawalCap', 'rollingWithdrawalBlocks', 'rollingWithdrawalCap'];

/**
 * Restores a state from a snapshot (as {@link snapshotOf} made it, or as `decodeJson` read
 * it back). A snapshot is input: every rule of caps and events is checked, and a malformed,
 * inconsistent or unknown-version snapshot gets `invalid_snapshot` with the `path` of the
 * field at fault. Never throws.
 *
 * The restored state answers every view, check, admission and `whenAvailable` as the
 * original did, and accepts or refuses every later event as the original would.
 *
 * @example
 * ```ts
 * const r = stateFromSnapshot(decodeJson(readFileSync('snapshot.json', 'utf8')));
 * if (!r.ok) console.error(r.error.code, r.error.path); // 'invalid_snapshot' 'withdrawals[3].amount'
 * ```
 */
export function stateFromSnapshot(value: unknown): Result<{ readonly state: LimitsState }> {
  try {
    return { ok: true, state: restore(value) };
  } catch (e) {
    const error =
      e instanceof Invalid
        ? new LimitsError('invalid_snapshot', withHint(value, e.reason), e.at)
        : new LimitsError(
            'invalid_snapshot',
            `the snapshot could not be read: ${e instanceof Error ? e.message : String(e)}`,
          );
    return { ok: false, error };
  }
}

// A number where a version 1 or 2 snapshot has an amount: it was read with JSON.parse.
function withHint(value: unknown, reason: string): string {
  const given = isRecord(value) ? value.version : undefined;
  const version = typeof given === 'bigint' ? Number(given) : given;
  if ((version === 1 || version === 2) && /got the number/.test(reason))
    return `${reason}: a version ${version} snapshot carries amounts as JSON integers, which JSON.parse cannot keep exact; read its text with decodeJson (this release writes version ${SNAPSHOT_VERSION}, amounts as decimal strings, which JSON.parse reads)`;
  return reason;
}

function restore(input: unknown): LimitsState {
  const given = isRecord(input) ? input.version : undefined;
  const version = typeof given === 'bigint' ? Number(given) : given;
  // From version 3 on, amounts are decimal strings: read back into bigints first.
  const value =
    typeof version === 'number' && version >= 3 && version <= SNAPSHOT_VERSION && isRecord(input)
      ? snapshotAmounts(input, invalid)
      : input;
  const s = record(value, '', fieldsOf(version));
  if (s.format !== SNAPSHOT_FORMAT)
    invalid('format', `expected "${SNAPSHOT_FORMAT}", got ${describe(s.format)}`);
  if (
    typeof version !== 'number' ||
    !Number.isInteger(version) ||
    version < 1 ||
    version > SNAPSHOT_VERSION
  )
    invalid(
      'version',
      `this release reads versions 1 to ${SNAPSHOT_VERSION}, got ${describe(s.version)}`,
    );
  const historyBlocks = height(s.historyBlocks, 'historyBlocks');
  // Before version 5, caps held the six fields of the interface (no share); before version 7,
  // besides, no mint window.
  const capFields =
    version >= 7
      ? CAP_FIELDS
      : version >= 5
        ? CAP_FIELDS.filter((f) => !(MINT_FIELDS as ReadonlyArray<string>).includes(f))
        : REPORTED_CAP_FIELDS;
  const limits = record(s.limits, 'limits', capFields);
  const accountCaps = record(s.accountCaps, 'accountCaps');
  for (const [name, caps] of Object.entries(accountCaps)) {
    const at = joinPath('accountCaps', name);
    const entry = record(caps, at, capFields);
    if (capFields.every((f) => entry[f] === null))
      invalid(at, 'an entry with no cap set does not exist; leave it out');
  }
  let state: LimitsState;
  try {
    state = createLimitsState({
      historyBlocks,
      throttleProfile: record(
        s.throttleProfile,
        'throttleProfile',
        PROFILE_FIELDS,
      ) as unknown as ThrottleProfile,
      limits: { ...(limits as Partial<Caps>), accountCaps: accountCaps as Record<string, Caps> },
    });
  } catch (e) {
    if (!(e instanceof LimitsError)) throw e;
    const given = e.path ?? '';
    const path = given.startsWith('limits.accountCaps.') ? given.slice('limits.'.length) : given;
    invalid(path, e.message);
  }

  const tip = nullable(s.tip, (v) => height(v, 'tip'));
  const highestTip = nullable(s.highestTip, (v) => height(v, 'highestTip'));
  if ((tip === null) !== (highestTip === null))
    invalid('tip', 'tip and highestTip are both null (no block known) or both heights');
  if (tip !== null && highestTip !== null && tip > highestTip)
    invalid('tip', `the tip ${tip} is above the highest tip ${highestTip}`);
  const oldest = highestTip === null ? 0 : Math.max(0, highestTip - historyBlocks + 1);

  // Each field is checked where it stands, by the rule its event would apply; the rest is
  // replayed as events, so the state's own rules check what spans entries (a key named
  // twice, an initiator), each event carrying the snapshot path it comes from.
  const events: LimitsEvent[] = [];
  const paths: string[] = [];
  const push = (event: LimitsEvent, path: string) => {
    events.push(event);
    paths.push(path);
  };
  if (highestTip !== null) push({ type: 'blockConnected', height: highestTip }, 'highestTip');
  const ids = new Set<string>();
  for (const [i, item] of list(s.withdrawals, 'withdrawals').entries()) {
    const at = `withdrawals[${i}]`;
    const w = record(item, at, WITHDRAWAL_FIELDS);
    const h = height(w.height, `${at}.height`);
    if (tip === null || h > tip)
      invalid(`${at}.height`, `a withdrawal held must be at or below the tip ${tip}, got ${h}`);
    if (h < oldest)
      invalid(`${at}.height`, `height ${h} is older than the retained history (${oldest}…)`);
    if (typeof w.rejected !== 'boolean')
      invalid(`${at}.rejected`, `expected true or false, got ${describe(w.rejected)}`);
    const id = checked(() => requireId(w.id, `${at}.id`), `${at}.id`);
    if (ids.has(id)) invalid(`${at}.id`, `the id ${JSON.stringify(id)} appears twice`);
    ids.add(id);
    const account = checked(() => requireAccount(w.account, `${at}.account`), `${at}.account`);
    const amount = checked(() => requirePositive(w.amount, `${at}.amount`), `${at}.amount`);
    push({ type: 'withdrawalRequested', id, account, amount, height: h }, at);
    if (w.rejected) push({ type: 'withdrawalRejected', id }, at);
  }
  if (version >= 7) pushMints(s, tip, oldest, push);
  if (tip !== null && highestTip !== null && tip < highestTip)
    push({ type: 'chainReorganized', height: tip }, 'tip');
  const completeFrom =
    version >= 3 ? nullable(s.historyCompleteFrom, (v) => height(v, 'historyCompleteFrom')) : null;
  if (completeFrom !== null)
    push({ type: 'historyCompleteFrom', height: completeFrom }, 'historyCompleteFrom');
  const heldFrom =
    version >= 4 ? nullable(s.blocksHeldFrom, (v) => height(v, 'blocksHeldFrom')) : null;
  if (heldFrom !== null) push({ type: 'blocksHeld', height: heldFrom }, 'blocksHeldFrom');
  const peggedTotal = checked(() => requireCap(s.peggedTotal, 'peggedTotal'), 'peggedTotal');
  push({ type: 'peggedTotalObserved', total: peggedTotal }, 'peggedTotal');
  for (const [name, total] of Object.entries(
    record(s.accountPeggedTotals, 'accountPeggedTotals'),
  )) {
    const at = joinPath('accountPeggedTotals', name);
    checked(() => requireAccount(name, at), at);
    if (checked(() => requireCap(total, at), at) === 0n) invalid(at, 'a total of 0 is left out');
    push({ type: 'peggedTotalObserved', account: name, total: total as Amount }, at);
  }
  for (const [i, item] of list(s.throttleKeys, 'throttleKeys').entries()) {
    const at = `throttleKeys[${i}]`;
    const k = record(item, at, KEY_FIELDS);
    const name = checked(() => requireKeyName(k.name, `${at}.name`), `${at}.name`);
    if (!isSecretHash(k.secretHash))
      invalid(
        `${at}.secretHash`,
        'expected a secret hash made by hashThrottleSecret (sha256:<salt>:<digest>)',
      );
    if (typeof k.revoked !== 'boolean')
      invalid(`${at}.revoked`, `expected true or false, got ${describe(k.revoked)}`);
    push({ type: 'throttleKeyAdded', name, secretHash: k.secretHash }, at);
    if (k.revoked) push({ type: 'throttleKeyRevoked', name }, at);
  }
  if (s.throttleInitiator !== null) {
    const initiator = checked(
      () => requireKeyName(s.throttleInitiator, 'throttleInitiator'),
      'throttleInitiator',
    );
    push({ type: 'throttleStarted', initiator }, 'throttleInitiator');
  }

  const r = applyAll(state, events);
  if (r.ok) {
    const state = withChanges(r.state, s, version === 1);
    // Before version 6: the check off, no reserves read, each total its only observation.
    return version >= 6 ? withPeg(state, s) : state;
  }
  const event = r.error.event;
  const base = event === undefined ? '' : (paths[event] ?? '');
  const field = pathInEvent(r.error);
  // Where the event stands for one snapshot field, that field is at fault; where it stands
  // for a snapshot entry (a withdrawal, a key), the entry's field of the same name.
  const path =
    field === undefined || field === '' || !base.endsWith(']') ? base : `${base}.${field}`;
  invalid(path, r.error.message);
}

// The mints of a version 7 snapshot, as the events that hold them, and the mint history's
// start: each checked where it stands, the rest by the event's own rules.
function pushMints(
  s: Record<string, unknown>,
  tip: Height | null,
  oldest: Height,
  push: (event: LimitsEvent, path: string) => void,
): void {
  const mintIds = new Set<string>();
  for (const [i, item] of list(s.mints, 'mints').entries()) {
    const at = `mints[${i}]`;
    const m = record(item, at, MINT_FIELDS_OF_SNAPSHOT);
    const h = height(m.height, `${at}.height`);
    if (tip === null || h > tip)
      invalid(`${at}.height`, `a mint held must be at or below the tip ${tip}, got ${h}`);
    if (h < oldest)
      invalid(`${at}.height`, `height ${h} is older than the retained history (${oldest}…)`);
    if (typeof m.id === 'string' && mintIds.has(m.id))
      invalid(`${at}.id`, `the id ${JSON.stringify(m.id)} appears twice`);
    if (typeof m.id === 'string') mintIds.add(m.id);
    // The event's own rules check the id, the account and the amount, at this entry's path.
    push(
      {
        type: 'depositMinted',
        id: m.id as string,
        account: m.account as string,
        amount: m.amount as Amount,
        height: h,
      },
      at,
    );
  }
  const mintFrom = nullable(s.mintHistoryCompleteFrom, (v) => height(v, 'mintHistoryCompleteFrom'));
  if (mintFrom !== null)
    push({ type: 'mintHistoryCompleteFrom', height: mintFrom }, 'mintHistoryCompleteFrom');
}

// The pending changes, put in place once the rest is restored (they are not replayed: the
// state they were proposed on is gone; each is validated again when it applies).
function withChanges(state: LimitsState, s: Record<string, unknown>, v1: boolean): LimitsState {
  if (v1) return state;
  const next = height(s.nextChangeId, 'nextChangeId');
  if (next < 1) invalid('nextChangeId', 'expected a positive integer');
  const changes: PendingChange[] = [];
  for (const [i, item] of list(s.changes, 'changes').entries()) {
    const at = `changes[${i}]`;
    let change: PendingChange;
    try {
      change = restoreChange(item, state.historyBlocks, state.tip);
    } catch (e) {
      if (!(e instanceof LimitsError)) throw e;
      const path = e.path === undefined || e.path === '' ? at : `${at}.${e.path}`;
      invalid(path, e.message);
    }
    const last = changes[changes.length - 1];
    if (last !== undefined && change.id <= last.id)
      invalid(`${at}.id`, 'changes are listed by id, each once');
    if (change.id >= next)
      invalid(`${at}.id`, `the id ${change.id} is not below nextChangeId ${next}`);
    changes.push(change);
  }
  // A copy with the changes in place, made as every state is, so it has every state's shape.
  const d = draftOf(state);
  d.changes = changes;
  d.nextChangeId = next;
  return asState(stateFieldsOf(d));
}

const OBSERVATION_FIELDS = ['tip', 'total'];

// The pegged totals observed of a version 6 snapshot: in the order applied, a tip at or below
// the highest, `null` (before any block) only first, the last one the total in force.
function observations(value: unknown, path: string, total: Amount, highestTip: Height | null) {
  const out: Observation[] = [];
  for (const [i, item] of list(value, path).entries()) {
    const at = `${path}[${i}]`;
    const o = record(item, at, OBSERVATION_FIELDS);
    const tip = nullable(o.tip, (v) => height(v, `${at}.tip`));
    if (tip !== null && (highestTip === null || tip > highestTip))
      invalid(
        `${at}.tip`,
        `an observation's tip is at or below the highest tip ${highestTip}, got ${tip}`,
      );
    if (tip === null && out.some((p) => p.tip !== null))
      invalid(`${at}.tip`, 'an observation before any block comes before every other');
    out.push({ tip, total: checked(() => requireCap(o.total, `${at}.total`), `${at}.total`) });
  }
  const last = out[out.length - 1];
  if ((last?.total ?? 0n) !== total)
    invalid(
      path,
      `the last total observed must be the total in force, ${total}, got ${last?.total ?? 'none'}`,
    );
  return out;
}

// The peg's backing of a version 6 snapshot, put in place once the rest is restored: the
// totals observed, the reserves, the check and the breaker, each checked, and the breaker as
// the rules leave it (a peg unbacked under the check has tripped).
function withPeg(state: LimitsState, s: Record<string, unknown>): LimitsState {
  const d = draftOf(state);
  d.totals = observations(s.totalsObserved, 'totalsObserved', state.peggedTotal, state.highestTip);
  const snapshotTotals = record(s.accountTotalsObserved, 'accountTotalsObserved');
  let lists = d.accountTotals;
  for (const [name, value] of Object.entries(snapshotTotals)) {
    const at = joinPath('accountTotalsObserved', name);
    checked(() => requireAccount(name, at), at);
    const total = mapGet(state.accountPegged, name) ?? 0n;
    lists = mapSet(lists, name, observations(value, at, total, state.highestTip), d.owner);
  }
  mapForEach(state.accountPegged, (_, name) => {
    if (!(name in snapshotTotals))
      invalid(
        joinPath('accountTotalsObserved', name),
        'an account with a pegged total has its observations',
      );
  });
  d.accountTotals = lists;
  const reserves = nullable(s.reserves, (v) => record(v, 'reserves', ['total', 'height']));
  d.reserves =
    reserves === null
      ? null
      : {
          total: checked(() => requireCap(reserves.total, 'reserves.total'), 'reserves.total'),
          height: height(reserves.height, 'reserves.height'),
        };
  const policy = record(s.pegIntegrity, 'pegIntegrity', ['maxUnbacked', 'reservesMaxAge']);
  // Read with decodeJson, the age is a bigint: a number of blocks, as heights are.
  const read = { ...policy, reservesMaxAge: heightFromJson(policy.reservesMaxAge) };
  d.integrity = checked(() => requireIntegrityPolicy(read, 'pegIntegrity'), 'pegIntegrity');
  const breaker = nullable(s.pegBreaker, (v) =>
    record(v, 'pegBreaker', ['height', 'peggedTotal', 'reserves', 'unbacked']),
  );
  if (breaker !== null) {
    if (d.integrity.maxUnbacked === null)
      invalid(
        'pegBreaker',
        'a breaker trips only while the check is on (turning it off clears it)',
      );
    const amount = (f: string) =>
      checked(() => requireCap(breaker[f], `pegBreaker.${f}`), `pegBreaker.${f}`);
    d.tripped = {
      height: nullable(breaker.height, (v) => height(v, 'pegBreaker.height')),
      peggedTotal: amount('peggedTotal'),
      reserves: amount('reserves'),
      unbacked: amount('unbacked'),
    };
  }
  const restored = asState(stateFieldsOf(d));
  const seen = pegIntegrity(restored);
  if (
    seen.tripped === null &&
    seen.maxUnbacked !== null &&
    (seen.unbacked ?? 0n) > seen.maxUnbacked
  )
    invalid(
      'pegBreaker',
      `the peg is unbacked by ${seen.unbacked} here, past ${seen.maxUnbacked}: the breaker would have tripped`,
    );
  return restored;
}
