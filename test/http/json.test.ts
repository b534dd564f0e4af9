import { fc, test } from '@fast-check/vitest';
import { describe, expect } from 'vitest';
import {
  createLimitsState,
  decodeJson,
  encodeJson,
  getLimits,
  LimitsError,
  tryDecodeJson,
} from '../../src/index.js';

describe('lossless JSON', () => {
  test('int64 amounts pass through exactly, as JSON numbers', () => {
    const text =
      '{"a":9223372036854775807,"b":-9223372036854775808,"c":9007199254740993,"d":1.5,"e":[1,null,"x"]}';
    const value = decodeJson(text);
    expect(value).toEqual({
      a: 2n ** 63n - 1n,
      b: -(2n ** 63n),
      c: 9007199254740993n,
      d: 1.5,
      e: [1n, null, 'x'],
    });
    expect(encodeJson(value)).toBe(text);
  });

  test('the Limits of a state encode with every field present', () => {
    const s = createLimitsState({
      limits: { pegCap: 2n ** 63n - 1n, accountCaps: { alice: { perDepositCap: 5n } } },
    });
    const json = encodeJson(getLimits(s));
    expect(json).toContain('"pegCap":9223372036854775807');
    expect(json).toContain('"availableToWithdraw":null');
    expect(json).toContain('"accountCaps":{"alice":{"pegCap":null,"perDepositCap":5,');
  });

  test('text that is not JSON is an invalid_json error', () => {
    expect(() => decodeJson('{')).toThrow(LimitsError);
    const r = tryDecodeJson('{"a":}');
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.code).toBe('invalid_json');
  });

  test.prop([fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })])(
    'any int64 survives a round trip',
    (n) => {
      expect(decodeJson(encodeJson({ n }))).toEqual({ n });
    },
  );
});
