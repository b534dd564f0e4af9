// Bitcoin Core's JSON-RPC as the reserves reader calls it (src/server/bitcoin/bitcoin-rpc.ts),
// against a double that answers as Bitcoin Core documents scantxoutset (test/support/bitcoind.ts).
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  BitcoinRpc,
  BitcoinRpcError,
  signersDescriptor,
} from '../../../src/server/bitcoin/index.js';
import { type Bitcoind, startBitcoind } from '../../support/bitcoind.js';
import { tempDir } from '../../support/proc.js';

const KEY = `02${'5a'.repeat(32)}`;
const WALLET = signersDescriptor(KEY);
let node: Bitcoind;

beforeAll(async () => {
  node = await startBitcoind();
});
afterAll(() => node.close());

describe('scantxoutset', () => {
  test("the signers' wallet is the key-path taproot of the x-only aggregate key", () => {
    expect(WALLET).toBe(`tr(${'5a'.repeat(32)})`);
  });

  test('total_amount is read exactly, a satoshi past 2^53 and down to one satoshi', async () => {
    const rpc = new BitcoinRpc({ url: node.urlWithPassword });
    node.height = 870_123;
    for (const sats of [0n, 1n, 100_000_000n, 2_099_999_997_690_000n, 9_007_199_254_740_993n]) {
      node.wallets.set(WALLET, sats);
      expect(await rpc.scan([WALLET])).toEqual({
        total: sats,
        height: 870_123,
        outputs: sats === 0n ? 0 : 1,
      });
    }
    expect(node.scans.at(-1)).toEqual([WALLET]);
  });

  test("the cookie file's credentials are read at each call", async () => {
    const rpc = new BitcoinRpc({ url: node.url, cookieFile: node.cookie(tempDir()) });
    node.wallets.set(WALLET, 5n);
    expect((await rpc.scan([WALLET])).total).toBe(5n);
  });

  test.each([
    ['down', /unreachable/],
    ['error', /error -8: Scan already in progress/],
    ['unsuccessful', /did not succeed/],
    ['garbage', /not JSON/],
  ] as const)('a node %s gives no reading: a BitcoinRpcError saying why', async (fault, why) => {
    const rpc = new BitcoinRpc({ url: node.urlWithPassword, timeoutMs: 2000 });
    node.fault = fault;
    try {
      const r = rpc.scan([WALLET]);
      await expect(r).rejects.toBeInstanceOf(BitcoinRpcError);
      await expect(r).rejects.toThrow(why);
    } finally {
      node.fault = 'none';
    }
  });

  test('wrong credentials are refused, and no error says the password', async () => {
    const url = node.urlWithPassword.replace(/:pw-[0-9a-f]+@/, ':wrong-password@');
    const rpc = new BitcoinRpc({ url });
    const refusedBefore = node.refused;
    const error = await rpc.scan([WALLET]).catch((e: Error) => e);
    expect(error).toBeInstanceOf(BitcoinRpcError);
    expect((error as Error).message).toMatch(/refused the credentials \(401\)/);
    expect((error as Error).message).not.toMatch(/wrong-password|pw-/);
    expect(rpc.shown).not.toMatch(/wrong-password/);
    expect(node.refused).toBe(refusedBefore + 1);
    const missing = new BitcoinRpc({ url: node.url, cookieFile: '/nonexistent/.cookie' });
    await expect(missing.scan([WALLET])).rejects.toThrow(
      /cookie file \/nonexistent\/.cookie cannot be read/,
    );
  });
});
