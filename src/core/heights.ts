/**
 * Block heights: how one is validated, how one is read from JSON, which heights leave the
 * retained history when the highest tip rises, and a transfer the chain made at a height.
 */
import { requirePositive } from './amount.js';
import { describe, fail } from './errors.js';
import type { Height } from './events.js';
import { MAX_NAME_LENGTH, requireAccount } from './limits.js';

/** Validates a block height: a non-negative safe integer. Throws a LimitsError (caught at the boundary). */
export function requireHeight(value: unknown, path: string): Height {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    fail(
      'invalid_height',
      `expected a block height (a non-negative safe integer), got ${describe(value)}`,
      path,
    );
  }
  return value;
}

/**
 * A height as JSON gives it back: `decodeJson` reads every integer as a bigint, and heights
 * are numbers in a state. A bigint from 0 to 2^53 − 1 becomes its number; anything else is
 * left as it is, for {@link requireHeight} to refuse.
 */
export function heightFromJson(value: unknown): unknown {
  return typeof value === 'bigint' && value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value;
}

/**
 * The heights that leave the history of `historyBlocks` when the highest tip rises from
 * `before` to `after`: from the oldest one held at `before` to the one just below the oldest
 * held at `after`. `undefined` when none leave (or none were held: `before` is null).
 */
export function heightsLeaving(
  historyBlocks: number,
  before: Height | null,
  after: Height,
): { readonly from: Height; readonly to: Height } | undefined {
  if (before === null) return undefined;
  const from = Math.max(0, before - historyBlocks + 1);
  const to = after - historyBlocks;
  return from <= to ? { from, to } : undefined;
}

/**
 * The account, amount and height of a transfer the chain made (a withdrawal requested, a
 * mint), the height at or below the tip: validated in this order, each at its own path.
 */
export function requireTransfer(
  d: { readonly tip: Height | null },
  e: Record<string, unknown>,
): { account: string; amount: bigint; height: Height } {
  const account = requireAccount(e.account, 'account');
  const amount = requirePositive(e.amount, 'amount');
  const height = requireHeight(e.height, 'height');
  if (d.tip === null || height > d.tip) {
    fail(
      'height_ahead_of_tip',
      d.tip === null ? 'no block is known yet' : `height ${height} is above the tip ${d.tip}`,
      'height',
    );
  }
  return { account, amount, height };
}

/**
 * An id of a transfer the chain made: a non-empty string of at most the longest name; throws
 * `invalid_withdrawal_id` otherwise (a deposit's: `invalid_deposit_id`).
 */
export function requireId(
  value: unknown,
  path: string,
  kind: 'withdrawal' | 'deposit' = 'withdrawal',
): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    fail(
      kind === 'withdrawal' ? 'invalid_withdrawal_id' : 'invalid_deposit_id',
      `expected a ${kind} id of 1 to ${MAX_NAME_LENGTH} characters, got ${describe(value)}`,
      path,
    );
  }
  return value;
}
