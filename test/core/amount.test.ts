import { fc, test } from '@fast-check/vitest';
import Big from 'big.js';
import { describe, expect } from 'vitest';
import { formatAmount, MAX_AMOUNT, MIN_AMOUNT, parseAmount } from '../../src/index.js';

describe('amounts', () => {
  test('"1.5" is 150000000 at 8 decimals, and back', () => {
    expect(parseAmount('1.5')).toEqual({ ok: true, amount: 150_000_000n });
    expect(formatAmount(150_000_000n)).toBe('1.5');
    expect(formatAmount(1n)).toBe('0.00000001');
    expect(formatAmount(0n)).toBe('0');
    expect(formatAmount(-250n, 2)).toBe('-2.5');
    expect(parseAmount('21000000', 8)).toEqual({ ok: true, amount: 2_100_000_000_000_000n });
    expect(parseAmount('.5', 1)).toEqual({ ok: true, amount: 5n });
    expect(parseAmount('7', 0)).toEqual({ ok: true, amount: 7n });
    expect(parseAmount('1.50000000000')).toEqual({ ok: true, amount: 150_000_000n });
  });

  test('the int64 extremes are exact both ways', () => {
    expect(formatAmount(MAX_AMOUNT)).toBe('92233720368.54775807');
    expect(parseAmount('92233720368.54775807')).toEqual({ ok: true, amount: MAX_AMOUNT });
    expect(parseAmount('-92233720368.54775808')).toEqual({ ok: true, amount: MIN_AMOUNT });
  });

  test('too many decimals, out of range, or not a number is an error with a code', () => {
    const code = (t: string, d?: number) => {
      const r = parseAmount(t, d);
      return r.ok ? 'ok' : r.error.code;
    };
    expect(code('0.000000001')).toBe('too_many_decimals');
    expect(code('1.5', 0)).toBe('too_many_decimals');
    expect(code('92233720368.54775808')).toBe('amount_out_of_range');
    expect(code('1e5')).toBe('invalid_amount_text');
    expect(code('abc')).toBe('invalid_amount_text');
    expect(code('')).toBe('invalid_amount_text');
    expect(code('1.2.3')).toBe('invalid_amount_text');
    expect(code('NaN')).toBe('invalid_amount_text');
    expect(() => formatAmount(2n ** 63n)).toThrow(
      expect.objectContaining({ code: 'invalid_amount' }),
    );
    expect(() => parseAmount('1', -1)).toThrow(expect.objectContaining({ code: 'invalid_option' }));
  });

  test.prop([fc.bigInt({ min: MIN_AMOUNT, max: MAX_AMOUNT }), fc.integer({ min: 0, max: 18 })])(
    'formatAmount then parseAmount is the identity',
    (amount, decimals) => {
      expect(parseAmount(formatAmount(amount, decimals), decimals)).toEqual({ ok: true, amount });
    },
  );
});

test('parseAmount takes a leading plus sign like a minus sign', () => {
  expect(parseAmount('+1.5')).toEqual({ ok: true, amount: 150_000_000n });
  expect(parseAmount('+.5')).toEqual({ ok: true, amount: 50_000_000n });
  expect(parseAmount('+5.')).toEqual({ ok: true, amount: 500_000_000n });
  expect(parseAmount('-.5')).toEqual({ ok: true, amount: -50_000_000n });
  expect(parseAmount(' +0 ')).toEqual({ ok: true, amount: 0n });
  const r = parseAmount('++1');
  expect(r.ok).toBe(false);
  if (!r.ok) expect(r.error.code).toBe('invalid_amount_text');
});

// An independent decimal library as the oracle for the library's own bigint arithmetic.
const Dec = Big();
Dec.DP = 40;
Dec.NE = -1e6;
Dec.PE = 1e6;
const decimalText = fc
  .tuple(
    fc.constantFrom('', '+', '-'),
    fc.stringMatching(/^\d{0,22}$/),
    fc.option(fc.stringMatching(/^\d{0,12}$/), { nil: undefined }),
  )
  .filter(([, whole, fraction]) => whole.length > 0 || (fraction ?? '').length > 0)
  .map(
    ([sign, whole, fraction]) => `${sign}${whole}${fraction === undefined ? '' : `.${fraction}`}`,
  );

test.prop([decimalText, fc.integer({ min: 0, max: 12 })])(
  'parseAmount agrees with an independent decimal library on every plain decimal text',
  (text, decimals) => {
    const r = parseAmount(text, decimals);
    const scaled = new Dec(text.replace(/^\+/, '')).times(new Dec(10).pow(decimals));
    if (!scaled.eq(scaled.round(0, Big.roundDown))) {
      expect(r.ok ? 'ok' : r.error.code).toBe('too_many_decimals');
      return;
    }
    const units = BigInt(scaled.toFixed(0));
    if (units > MAX_AMOUNT || units < MIN_AMOUNT) {
      expect(r.ok ? 'ok' : r.error.code).toBe('amount_out_of_range');
      return;
    }
    expect(r).toEqual({ ok: true, amount: units });
  },
);

test.prop([fc.bigInt({ min: MIN_AMOUNT, max: MAX_AMOUNT }), fc.integer({ min: 0, max: 30 })])(
  'formatAmount agrees with an independent decimal library',
  (amount, decimals) => {
    expect(formatAmount(amount, decimals)).toBe(
      new Dec(amount.toString()).div(new Dec(10).pow(decimals)).toFixed(),
    );
  },
);
