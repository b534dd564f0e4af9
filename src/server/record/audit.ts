/**
 * The audit trail (docs/semantics.md, "The record"): one record for every accepted batch,
 * made durable with it, never deleted, and chained so that a changed, missing or reordered
 * record shows. A record is one line of JSON: `position`, `at`, `actor`, `requestId`,
 * `remote`, the `events` (int64 exact), what became of pending changes inside the batch
 * (`settled`, the service's own doing), and last `hash`: the lowercase hex SHA-256 of the
 * previous record's hash, a newline, and this record's text up to the hash. The first
 * record follows 64 zeros; a record that says `repair` starts a new chain after a break
 * that `--audit-repair` was asked to get past. Node-only.
 */
import { createHash } from 'node:crypto';
import {
  type AuditActor,
  applyAll,
  type BatchMeta,
  encodeJson,
  type LimitsEvent,
  type LimitsState,
  type Notice,
  pendingChanges,
  type SettledChange,
  scopeOf,
  tryDecodeJson,
} from 'peg-limits';
import { decodeBatch } from '../../internal.js';
import { integrityNotices, noticesOf } from './notices.js';

/** What the first record follows. */
export const ZERO_HASH = '0'.repeat(64);

/** A record read back: its fields, the hash it carries, and its text (the whole line). */
export interface AuditRecord {
  readonly position: number;
  readonly at: string;
  readonly actor: AuditActor;
  readonly requestId: string;
  readonly remote: string | null;
  readonly events: ReadonlyArray<LimitsEvent>;
  readonly hash: string;
  /** Set on the first record of a new chain after a break (`--audit-repair`). */
  readonly repair: { readonly after: number; readonly reason: string } | undefined;
  /** What an operator is told of the batch (`--alert-url`), in order. */
  readonly alerts: ReadonlyArray<Notice>;
  readonly line: string;
}

const HASH_TAIL = /,"hash":"([0-9a-f]{64})"\}$/;

/** A record's position, read from the start of its line (written first); 0 for no record. */
export function recordPosition(line: string): number {
  const m = /^\{"position":(\d+),/.exec(line);
  return m === null ? 0 : Number(m[1]);
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * What became of pending changes inside a batch (computed again from the batch, only when
 * the list of pending changes moved: most batches cost one compare).
 */
export function settledIn(
  base: LimitsState,
  next: LimitsState,
  events: ReadonlyArray<LimitsEvent>,
): ReadonlyArray<SettledChange> {
  if (pendingChanges(base) === pendingChanges(next)) return [];
  const r = applyAll(base, events);
  return r.ok ? r.settled : [];
}

// The record's account of them: the service's own doing, said as such.
function settledOf(settled: ReadonlyArray<SettledChange>) {
  if (settled.length === 0) return undefined;
  return settled.map((s) => ({
    id: s.change.id,
    outcome: s.outcome,
    actor: { kind: 'system' },
    ...(s.error === undefined ? {} : { error: { code: s.error.code, message: s.error.message } }),
  }));
}

// What an operator is told of the batch: of chain traffic alone, only what it does to the
// check of the peg's backing (a reading that trips the breaker, reserves gone stale).
function alertsOf(
  base: LimitsState,
  next: LimitsState,
  events: ReadonlyArray<LimitsEvent>,
  settled: ReadonlyArray<SettledChange>,
): ReadonlyArray<Notice> | undefined {
  const chainOnly = settled.length === 0 && events.every((e) => scopeOf(e.type) === 'chain');
  const notices = chainOnly ? integrityNotices(base, next) : noticesOf(base, next, events, settled);
  return notices.length === 0 ? undefined : notices;
}

/**
 * The record of one batch, as a line (without the newline), and its hash.
 *
 * @param prev - the previous record's hash ({@link ZERO_HASH} for the first)
 */
export function makeRecord(
  prev: string,
  position: number,
  events: ReadonlyArray<LimitsEvent>,
  meta: BatchMeta | undefined,
  states: { readonly base: LimitsState; readonly next: LimitsState } | undefined,
  extra: { readonly at?: Date; readonly repair?: { after: number; reason: string } } = {},
): { readonly line: string; readonly hash: string } {
  const changes = states === undefined ? [] : settledIn(states.base, states.next, events);
  const settled = settledOf(changes);
  const alerts =
    states === undefined ? undefined : alertsOf(states.base, states.next, events, changes);
  const body = encodeJson({
    position,
    at: (extra.at ?? new Date()).toISOString(),
    actor: meta?.actor ?? { kind: 'system' },
    requestId: meta?.requestId ?? `system-${position}`,
    remote: meta?.remote ?? null,
    events,
    ...(settled === undefined ? {} : { settled }),
    ...(alerts === undefined ? {} : { alerts }),
    ...(extra.repair === undefined ? {} : { repair: extra.repair }),
  });
  const hash = sha256(`${prev}\n${body}`);
  return { line: `${body.slice(0, -1)},"hash":"${hash}"}`, hash };
}

/**
 * Reads one line of the trail: the record, or why it is no record. The hash is not checked
 * here ({@link checkLink} does, against the previous one).
 */
export function readRecord(
  line: string,
):
  | { readonly ok: true; readonly record: AuditRecord }
  | { readonly ok: false; readonly why: string } {
  const tail = HASH_TAIL.exec(line);
  if (tail === null) return { ok: false, why: 'no hash at its end' };
  const json = tryDecodeJson(line);
  if (!json.ok) return { ok: false, why: json.error.message };
  const v = json.value as Record<string, unknown>;
  if (typeof v !== 'object' || v === null || Array.isArray(v))
    return { ok: false, why: 'not a JSON object' };
  const position = v.position;
  if (typeof position !== 'bigint' || position < 1n || position > BigInt(Number.MAX_SAFE_INTEGER))
    return { ok: false, why: 'no position' };
  if (typeof v.at !== 'string') return { ok: false, why: 'no time' };
  const actor = v.actor as Record<string, unknown> | undefined;
  if (typeof actor !== 'object' || actor === null || typeof actor.kind !== 'string')
    return { ok: false, why: 'no actor' };
  if (typeof v.requestId !== 'string') return { ok: false, why: 'no request id' };
  const batch = decodeBatch(encodeJson(v.events));
  if (!batch.ok) return { ok: false, why: `its events: ${batch.error}` };
  const repair = v.repair as { after: bigint; reason: string } | undefined;
  return {
    ok: true,
    record: {
      position: Number(position),
      at: v.at,
      actor: actor as unknown as AuditActor,
      requestId: v.requestId,
      remote: typeof v.remote === 'string' ? v.remote : null,
      events: batch.events,
      hash: tail[1]!,
      repair:
        repair === undefined
          ? undefined
          : { after: Number(repair.after), reason: String(repair.reason) },
      alerts: Array.isArray(v.alerts) ? (v.alerts as Notice[]) : [],
      line,
    },
  };
}

/**
 * Whether `record` follows `prev` (the previous record's hash, or undefined for the first
 * record read): its position comes next and its hash is the hash of `prev` and its text. A
 * repair record starts a new chain: it follows 64 zeros.
 */
export function checkLink(
  record: AuditRecord,
  prev: { readonly hash: string; readonly position: number } | undefined,
): string | undefined {
  if (prev !== undefined && record.position !== prev.position + 1)
    return `position ${record.position} follows position ${prev.position}`;
  const chained = record.repair !== undefined || prev === undefined ? ZERO_HASH : prev.hash;
  const tail = HASH_TAIL.exec(record.line);
  if (tail === null) return 'no hash at its end';
  const body = `${record.line.slice(0, tail.index)}}`;
  if (sha256(`${chained}\n${body}`) !== record.hash)
    return prev === undefined || record.repair !== undefined
      ? 'its hash is not the hash of its text after 64 zeros'
      : 'its hash is not the hash of the previous hash and its text';
  return undefined;
}

/** What `verify` finds: every record links up, or where the chain first breaks. */
type Verdict =
  | {
      readonly ok: true;
      readonly count: number;
      readonly first: number | undefined;
      readonly last: number | undefined;
      /** Repairs met: where a new chain started after a break. */
      readonly repairs: ReadonlyArray<{
        readonly position: number;
        readonly after: number;
        readonly reason: string;
      }>;
    }
  | { readonly ok: false; readonly position: number; readonly why: string; readonly count: number };

/**
 * Walks a trail, line by line in order, checking each record's link to the one before.
 * `lines` yields the text of each line and where it is (for the message).
 */
export async function verifyTrail(
  lines: AsyncIterable<{
    readonly text: string;
    readonly where: string;
    readonly expected?: number;
  }>,
): Promise<Verdict> {
  let prev: { hash: string; position: number } | undefined;
  let count = 0;
  let first: number | undefined;
  const repairs: Array<{ position: number; after: number; reason: string }> = [];
  for await (const { text, where, expected } of lines) {
    const at = prev === undefined ? (expected ?? 1) : prev.position + 1;
    const read = readRecord(text);
    if (!read.ok) return { ok: false, position: at, why: `${where}: ${read.why}`, count };
    const record = read.record;
    const broken = checkLink(record, prev);
    if (broken !== undefined)
      return {
        ok: false,
        position: prev === undefined ? record.position : at,
        why: `${where}: ${broken}`,
        count,
      };
    if (record.repair !== undefined)
      repairs.push({
        position: record.position,
        after: record.repair.after,
        reason: record.repair.reason,
      });
    first ??= record.position;
    prev = { hash: record.hash, position: record.position };
    count++;
  }
  return { ok: true, count, first, last: prev?.position, repairs };
}
