/**
 * Events as JSON: `decodeJson` reads every integer as a bigint, but heights are numbers in
 * the core. These helpers turn decoded JSON into events and back, so journals and the
 * operator endpoint speak the same exact JSON.
 */
import { describe, LimitsError, type Result } from '../core/errors.js';
import { isRecord } from '../core/limits.js';
import type { LimitsEvent } from '../core/state.js';

function toHeight(value: unknown): unknown {
  if (typeof value === 'bigint' && value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER))
    return Number(value);
  return value;
}

/**
 * Turns one decoded JSON value into an event: heights become numbers, amounts stay bigint.
 * Only the shape is checked here (an object with a string `type`); `apply` validates the
 * rest, with field paths.
 *
 * @example
 * ```ts
 * eventFromJson(decodeJson('{"type":"blockConnected","height":840000}'));
 * // { ok: true, event: { type: 'blockConnected', height: 840000 } }
 * ```
 */
export function eventFromJson(value: unknown, path = ''): Result<{ readonly event: LimitsEvent }> {
  if (!isRecord(value) || typeof value.type !== 'string') {
    return {
      ok: false,
      error: new LimitsError(
        'invalid_event',
        `${path === '' ? '' : `${path}: `}expected an event object with a string "type", got ${describe(value)}`,
        path === '' ? 'type' : `${path}.type`,
      ),
    };
  }
  return { ok: true, event: numbersOf(value) as unknown as LimitsEvent };
}

// The fields that are numbers in an event (heights, a change's id and terms); the events
// a proposal holds, read the same way.
function numbersOf(value: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  switch (value.type) {
    case 'changeProposed':
      return {
        ...value,
        delayBlocks: toHeight(value.delayBlocks),
        quorum: toHeight(value.quorum),
        events: Array.isArray(value.events)
          ? value.events.map((e) => (isRecord(e) ? numbersOf(e) : e))
          : value.events,
      };
    case 'changeApproved':
    case 'changeCancelled':
      return { ...value, id: toHeight(value.id) };
    default:
      return 'height' in value ? { ...value, height: toHeight(value.height) } : value;
  }
}

/**
 * Turns decoded JSON holding one event or an array of events into events.
 *
 * @example
 * ```ts
 * eventsFromJson(decodeJson('[{"type":"throttleEnded"}]')); // { ok: true, events: [{ type: 'throttleEnded' }] }
 * ```
 */
export function eventsFromJson(
  value: unknown,
): Result<{ readonly events: ReadonlyArray<LimitsEvent> }> {
  const items = Array.isArray(value) ? value : [value];
  const events: LimitsEvent[] = [];
  for (const [i, item] of items.entries()) {
    const r = eventFromJson(item, Array.isArray(value) ? `[${i}]` : '');
    if (!r.ok) return r;
    events.push(r.event);
  }
  return { ok: true, events };
}
