/**
 * Events as JSON: `decodeJson` reads every integer as a bigint, but heights are numbers in
 * the core. These helpers turn decoded JSON into events and back, so journals and the
 * operator endpoint speak the same exact JSON.
 */
import { describe, LimitsError, located, type Result } from '../core/errors.js';
import { heightFromJson } from '../core/heights.js';
import { isRecord } from '../core/limits.js';
import type { LimitsEvent } from '../core/state.js';
import { encodeJson, tryDecodeJson } from './json.js';

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
        `expected an event object with a string "type", got ${describe(value)}`,
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
        delayBlocks: heightFromJson(value.delayBlocks),
        quorum: heightFromJson(value.quorum),
        events: Array.isArray(value.events)
          ? value.events.map((e) => (isRecord(e) ? numbersOf(e) : e))
          : value.events,
      };
    case 'changeApproved':
    case 'changeCancelled':
      return { ...value, id: heightFromJson(value.id) };
    case 'pegIntegritySet':
      return 'reservesMaxAge' in value
        ? { ...value, reservesMaxAge: heightFromJson(value.reservesMaxAge) }
        : value;
    default:
      return 'height' in value ? { ...value, height: heightFromJson(value.height) } : value;
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

/** One batch's text in a log: the exact `encodeJson` text of its events, as an array. */
export function encodeBatch(events: ReadonlyArray<LimitsEvent>): string {
  return encodeJson(events);
}

/** Reads a batch's text back into events, or says why it cannot (parsed once). */
export function decodeBatch(
  text: string,
):
  | { readonly ok: true; readonly events: ReadonlyArray<LimitsEvent> }
  | { readonly ok: false; readonly error: string } {
  const json = tryDecodeJson(text);
  if (!json.ok) return { ok: false, error: json.error.message };
  if (!Array.isArray(json.value)) return { ok: false, error: 'expected a JSON array of events' };
  const events = eventsFromJson(json.value);
  return events.ok ? events : { ok: false, error: located(events.error) };
}
