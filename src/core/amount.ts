import { describe, fail, LimitsError, type Result } from './errors.js';

/** An amount of the token in its smallest unit: a `bigint` in the int64 range. */
export type Amount = bigint;

/** The largest int64, 2^63 − 1. */
export const MAX_AMOUNT: Amount = 9223372036854775807n;
/** The smallest int64, −2^63. */
export const MIN_AMOUNT: Amount = -9223372036854775808n;

/** True when `value` is a bigint within int64. */
export function isInt64(value: unknown): value is bigint {
  return typeof value === 'bigint' && value >= MIN_AMOUNT && value <= MAX_AMOUNT;
}

/** What is left of `cap` once `used` is taken: never negative. */
export function roomLeft(cap: Amount, used: Amount): Amount {
  return cap > used ? cap - used : 0n;
}

/** Validates a cap or minimum: an int64 bigint ≥ 0. Throws a LimitsError (caught at the boundary). */
export function requireCap(value: unknown, path: string): Amount {
  if (!isInt64(value) || value < 0n) {
    fail(
      'invalid_amount',
      `expected an integer amount (bigint) from 0 to 2^63−1, got ${describe(value)}`,
      path,
    );
  }
  return value;
}

/** Validates a deposit or withdrawal amount: an int64 bigint > 0. */
export function requirePositive(value: unknown, path: string): Amount {
  if (!isInt64(value) || value <= 0n) {
    fail(
      'invalid_amount',
      `expected an integer amount (bigint) from 1 to 2^63−1, got ${describe(value)}`,
      path,
    );
  }
  return value;
}

const DECIMAL_TEXT = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

function checkDecimals(decimals: number): void {
  if (!Number.isInteger(decimals) || decimals < 0 || decimals > 30) {
    throw new LimitsError(
      'invalid_option',
      `decimals must be an integer from 0 to 30, got ${decimals}`,
    );
  }
}

/**
 * Parses decimal text into an amount in the smallest unit, exactly.
 *
 * @param text - decimal text such as `"1.5"`, `"-0.00000001"` or `"21000000"`
 * @param decimals - how many decimal places the smallest unit has (8 for BTC)
 * @returns the amount, or an error: `invalid_amount_text` (not a plain decimal number),
 *   `too_many_decimals` (finer than the smallest unit), `amount_out_of_range` (outside int64)
 * @example
 * ```ts
 * parseAmount('1.5');      // { ok: true, amount: 150000000n }
 * parseAmount('0.000000001'); // { ok: false, error: { code: 'too_many_decimals', … } }
 * ```
 */
export function parseAmount(text: string, decimals = 8): Result<{ readonly amount: Amount }> {
  checkDecimals(decimals);
  if (typeof text !== 'string' || !DECIMAL_TEXT.test(text.trim())) {
    return {
      ok: false,
      error: new LimitsError(
        'invalid_amount_text',
        `expected decimal text such as "1.5", got ${describe(text)}`,
      ),
    };
  }
  const trimmed = text.trim();
  const dot = trimmed.indexOf('.');
  const fraction = dot < 0 ? '' : trimmed.slice(dot + 1).replace(/0+$/, '');
  if (fraction.length > decimals) {
    return {
      ok: false,
      error: new LimitsError(
        'too_many_decimals',
        `"${trimmed}" has ${fraction.length} decimal places; the smallest unit allows ${decimals}`,
      ),
    };
  }
  // Exact in bigint: the integer digits, then the fraction padded to `decimals` places.
  const negative = trimmed.startsWith('-');
  const unsigned = trimmed.replace(/^[+-]/, '');
  const whole = dot < 0 ? unsigned : unsigned.slice(0, unsigned.indexOf('.'));
  const magnitude = BigInt(`${whole || '0'}${fraction.padEnd(decimals, '0')}`);
  const units = negative ? -magnitude : magnitude;
  if (!isInt64(units)) {
    return {
      ok: false,
      error: new LimitsError(
        'amount_out_of_range',
        `"${trimmed}" is outside the int64 range of amounts`,
      ),
    };
  }
  return { ok: true, amount: units };
}

/**
 * Formats an amount in the smallest unit as decimal text, exactly, without trailing zeros.
 *
 * @throws LimitsError `invalid_amount` when `amount` is not an int64 bigint, `invalid_option`
 *   when `decimals` is out of 0…30
 * @example
 * ```ts
 * formatAmount(150000000n); // '1.5'
 * formatAmount(1n);         // '0.00000001'
 * ```
 */
export function formatAmount(amount: Amount, decimals = 8): string {
  checkDecimals(decimals);
  if (!isInt64(amount))
    throw new LimitsError(
      'invalid_amount',
      `expected an int64 bigint amount, got ${describe(amount)}`,
    );
  const digits = (amount < 0n ? -amount : amount).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${amount < 0n ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}
