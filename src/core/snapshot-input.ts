/**
 * Reading a snapshot as input: its objects, lists, heights and amounts each checked where
 * they stand, an error thrown as `Invalid` with the snapshot's path, which
 * `stateFromSnapshot` turns into `invalid_snapshot`.
 */
import { describe, joinPath, LimitsError, PegLimitsError } from './errors.js';
import type { Height } from './events.js';
import { heightFromJson, requireHeight } from './heights.js';
import { isRecord, rejectUnknownFields } from './limits.js';

/**
 * Thrown inside stateFromSnapshot, caught at its boundary.
 */
export class Invalid extends PegLimitsError {
  constructor(
    readonly at: string,
    readonly reason: string,
  ) {
    super('invalid_snapshot', reason);
  }
}

/** Throws the error of a snapshot field at `path`. */
export function invalid(path: string, reason: string): never {
  throw new Invalid(path, reason);
}

/** An object of the snapshot at `path`, with exactly `fields` when given (each present). */
export function record(
  value: unknown,
  path: string,
  fields?: ReadonlyArray<string>,
): Record<string, unknown> {
  if (!isRecord(value)) invalid(path, `expected an object, got ${describe(value)}`);
  if (fields !== undefined) {
    checked(() => rejectUnknownFields(value, fields, path), path);
    for (const f of fields) if (!(f in value)) invalid(joinPath(path, f), 'missing');
  }
  return value as Record<string, unknown>;
}

/** An array of the snapshot at `path`. */
export function list(value: unknown, path: string): ReadonlyArray<unknown> {
  if (!Array.isArray(value)) invalid(path, `expected an array, got ${describe(value)}`);
  return value;
}

/**
 * A field read by the core's own rule, its error put at the snapshot's path: the rule's
 * LimitsError carries the path and the reason apart, so nothing is read out of a message.
 */
export function checked<T>(read: () => T, path: string): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof LimitsError) invalid(e.path ?? path, e.message);
    throw e;
  }
}

/**
 * Heights are numbers in a state and may be bigints after decodeJson.
 */
export function height(value: unknown, path: string): Height {
  return checked(() => requireHeight(heightFromJson(value), path), path);
}

/** `null` as it is, anything else read by `read`. */
export function nullable<T>(value: unknown, read: (v: unknown) => T): T | null {
  return value === null ? null : read(value);
}
