/**
 * JSON with exact int64: integers are read as `bigint` and bigints are written as plain
 * JSON numbers, so amounts above 2^53 survive the round trip.
 */
import { isInteger, parse, stringify } from 'lossless-json';
import { LimitsError, type Result } from '../core/errors.js';

function parseNumber(text: string): bigint | number {
  return isInteger(text) ? BigInt(text) : Number.parseFloat(text);
}

/**
 * Serialises a value to JSON text; `bigint` becomes a JSON number, digit for digit.
 *
 * @example
 * ```ts
 * encodeJson({ pegCap: 9223372036854775807n }); // '{"pegCap":9223372036854775807}'
 * ```
 */
export function encodeJson(value: unknown, space?: number): string {
  const text = stringify(value, undefined, space);
  if (text === undefined)
    throw new LimitsError('invalid_json', 'encodeJson: the value has no JSON form');
  return text;
}

/**
 * Parses JSON text; every integer becomes a `bigint`, other numbers a `number`.
 *
 * @throws LimitsError with code `invalid_json` when the text is not JSON
 * @example
 * ```ts
 * decodeJson('{"amount":9007199254740993}'); // { amount: 9007199254740993n }
 * ```
 */
export function decodeJson(text: string): unknown {
  const r = tryDecodeJson(text);
  if (!r.ok) throw r.error;
  return r.value;
}

/** Like {@link decodeJson}, but returns the error as data. */
export function tryDecodeJson(text: string): Result<{ readonly value: unknown }> {
  try {
    return { ok: true, value: parse(text, null, parseNumber) };
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return { ok: false, error: new LimitsError('invalid_json', `not valid JSON: ${message}`) };
  }
}
