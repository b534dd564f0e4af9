/**
 * The node's RPC client against a double that answers as a node does (the paths and bodies
 * the sBTC signer uses, Clarity values serialized by `@stacks/transactions`), as of a block.
 */
import { bufferCV, hexToCV, serializeCV, uintCV } from '@stacks/transactions';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { StacksRpc, StacksRpcError } from '../../../src/server/stacks/rpc-client.js';
import { type NodeRpc, SbtcChain, startNodeRpc } from '../../support/sbtc-chain.js';
import { REGISTRY, SENDER } from '../../support/stacks-node.js';

const codec = {
  decode: (hex: string) => hexToCV(hex),
  encodeUint: (n: bigint) => serializeCV(uintCV(n)),
  encodeBuffer: (hex: string) => serializeCV(bufferCV(Buffer.from(hex, 'hex'))),
};

const chain = new SbtcChain();
// A deposit whose outpoint is `${DEPOSIT_TXID}:3`, the txid as Bitcoin Core displays it.
const DEPOSIT_TXID = `00${'12'.repeat(30)}ff`;
const first = chain.mine(
  [{ kind: 'deposit', recipient: SENDER, amount: 5_000_000n, txid: DEPOSIT_TXID, vout: 3 }],
  { burnHeight: 200 },
);
const second = chain.mine(
  [
    { kind: 'request', sender: SENDER, amount: 40_000n },
    { kind: 'request', sender: SENDER, amount: 2_000n },
  ],
  { burnHeight: 201 },
);
const third = chain.mine(
  [
    { kind: 'reject', id: 1n },
    { kind: 'accept', id: 2n },
  ],
  { burnHeight: 202 },
);
let node: NodeRpc;
let rpc: StacksRpc;
beforeAll(async () => {
  node = await startNodeRpc(chain);
  rpc = new StacksRpc({ url: node.url, registry: REGISTRY, codec, timeoutMs: 500 });
});
afterAll(() => node.close());

const tipOf = (h: string) => h.replace(/^0x/, '');

describe('the RPC client', () => {
  test('reads the last request id, each request, the supply and a status as of a block', async () => {
    expect(await rpc.lastWithdrawalRequestId(tipOf(first.hash))).toBe(0n);
    expect(await rpc.lastWithdrawalRequestId(tipOf(third.hash))).toBe(2n);
    expect(await rpc.withdrawalRequest(1n, tipOf(second.hash))).toEqual({
      id: 1n,
      amount: 40_000n,
      sender: SENDER,
      height: 201,
      status: 'pending',
    });
    expect((await rpc.withdrawalRequest(1n, tipOf(third.hash)))?.status).toBe('rejected');
    expect((await rpc.withdrawalRequest(2n, tipOf(third.hash)))?.status).toBe('accepted');
    expect(await rpc.withdrawalRequest(3n, tipOf(third.hash))).toBeNull();
    expect(await rpc.totalSupply(tipOf(first.hash))).toBe(5_000_000n);
    // A request locks its amount (the supply stays); an accepted one burns it.
    expect(await rpc.totalSupply(tipOf(second.hash))).toBe(5_000_000n);
    expect(await rpc.totalSupply(tipOf(third.hash))).toBe(5_000_000n - 2_000n);
    expect(await rpc.withdrawalStatus(1n, tipOf(second.hash))).toBe('pending');
    expect(await rpc.withdrawalStatus(1n, tipOf(third.hash))).toBe('rejected');
    const info = await rpc.info();
    expect(info).toEqual({
      burnBlockHeight: 202,
      stacksTipHeight: 3,
      stacksTip: tipOf(third.hash),
    });
  });

  test('asks with the paths and bodies the sBTC signer uses, naming the block', async () => {
    const seen: Array<{ method: string; url: string; body: string | undefined }> = [];
    const recording = new StacksRpc({
      url: node.url,
      registry: REGISTRY,
      codec,
      fetch: (async (input: URL | RequestInfo, init?: RequestInit) => {
        seen.push({
          method: init?.method ?? 'GET',
          url: String(input).replace(node.url, ''),
          body: init?.body as string | undefined,
        });
        return fetch(input, init);
      }) as typeof fetch,
    });
    const tip = tipOf(third.hash);
    await recording.lastWithdrawalRequestId(tip);
    await recording.withdrawalRequest(1n, tip);
    await recording.totalSupply(tip);
    await recording.withdrawalStatus(2n, tip);
    const [deployer] = REGISTRY.split('.');
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      `GET /v2/data_var/${deployer}/sbtc-registry/last-withdrawal-request-id?proof=0&tip=${tip}`,
      `POST /v2/contracts/call-read/${deployer}/sbtc-registry/get-withdrawal-request?tip=${tip}`,
      `POST /v2/contracts/call-read/${deployer}/sbtc-token/get-total-supply?tip=${tip}`,
      `POST /v2/map_entry/${deployer}/sbtc-registry/withdrawal-status?proof=0&tip=${tip}`,
    ]);
    expect(JSON.parse(seen[1]!.body!)).toEqual({
      sender: deployer,
      arguments: [`0x${serializeCV(uintCV(1n))}`],
    });
    expect(JSON.parse(seen[2]!.body!)).toEqual({ sender: deployer, arguments: [] });
    // The map key is the hex of the id, as a JSON string.
    expect(JSON.parse(seen[3]!.body!)).toBe(serializeCV(uintCV(2n)));
  });

  test('a block the node does not know, a node that is down, slow or answers garbage: a clear error', async () => {
    await expect(rpc.totalSupply('ab'.repeat(32))).rejects.toThrow(/answered 404/);
    node.fault = 'garbage';
    await expect(rpc.totalSupply(tipOf(first.hash))).rejects.toThrow(/not a JSON object/);
    node.fault = 'slow';
    await expect(rpc.totalSupply(tipOf(first.hash))).rejects.toThrow(/no answer within 500 ms/);
    node.fault = 'down';
    await expect(rpc.totalSupply(tipOf(first.hash))).rejects.toThrow(StacksRpcError);
    node.fault = 'none';
  });

  test('an answer that is not the Clarity asked for is refused, never guessed at', async () => {
    const lying = new StacksRpc({
      url: node.url,
      registry: REGISTRY,
      codec,
      fetch: (async () =>
        new Response(JSON.stringify({ okay: true, result: `0x${serializeCV(uintCV(5n))}` }), {
          status: 200,
        })) as typeof fetch,
    });
    await expect(lying.totalSupply('ab')).rejects.toThrow(/not \(ok uint\)/);
    await expect(lying.withdrawalRequest(1n, 'ab')).rejects.toThrow(/not an optional/);
    const refusing = new StacksRpc({
      url: node.url,
      registry: REGISTRY,
      codec,
      fetch: (async () =>
        new Response(JSON.stringify({ okay: false, cause: 'Unchecked(NoSuchContract)' }), {
          status: 200,
        })) as typeof fetch,
    });
    await expect(refusing.totalSupply('ab')).rejects.toThrow(/did not run it: Unchecked/);
  });

  test("reads a completed deposit's recipient by its outpoint, the txid's bytes reversed for the contract", async () => {
    const seen: string[] = [];
    const recording = new StacksRpc({
      url: node.url,
      registry: REGISTRY,
      codec,
      fetch: (async (input: URL | RequestInfo, init?: RequestInit) => {
        seen.push(init?.body as string);
        return fetch(input, init);
      }) as typeof fetch,
    });
    const tip = tipOf(first.hash);
    expect(await recording.completedDepositRecipient(DEPOSIT_TXID, 3n, tip)).toBe(SENDER);
    expect(await recording.completedDepositRecipient(DEPOSIT_TXID, 4n, tip)).toBeNull();
    const internal = Buffer.from(DEPOSIT_TXID, 'hex').reverse();
    expect(JSON.parse(seen[0]!).arguments).toEqual([
      `0x${serializeCV(bufferCV(internal))}`,
      `0x${serializeCV(uintCV(3n))}`,
    ]);
    // An answer that is not an optional tuple with a principal is refused.
    const lying = new StacksRpc({
      url: node.url,
      registry: REGISTRY,
      codec,
      fetch: (async () =>
        new Response(JSON.stringify({ okay: true, result: `0x${serializeCV(uintCV(5n))}` }), {
          status: 200,
        })) as typeof fetch,
    });
    await expect(lying.completedDepositRecipient(DEPOSIT_TXID, 3n, tip)).rejects.toThrow(
      /has no recipient/,
    );
  });

  test('a user and password in the RPC URL are sent as Basic credentials', async () => {
    let authorization: string | null = null;
    const withCredentials = new StacksRpc({
      url: `http://reader:s3cret@127.0.0.1:9/`,
      registry: REGISTRY,
      codec,
      fetch: (async (input: URL | RequestInfo, init?: RequestInit) => {
        authorization = new Headers(init?.headers).get('authorization');
        expect(String(input)).not.toContain('s3cret');
        return new Response(JSON.stringify({ okay: true, result: `0x${serializeCV(uintCV(1n))}` }));
      }) as typeof fetch,
    });
    await withCredentials.totalSupply('ab').catch(() => undefined);
    expect(authorization).toBe(`Basic ${Buffer.from('reader:s3cret').toString('base64')}`);
  });

  test('credentials in the RPC URL never appear in an error', async () => {
    const secret = 'node-password-0123456789';
    const withCredentials = new StacksRpc({
      url: `http://user:${secret}@127.0.0.1:1/?token=${secret}`,
      registry: REGISTRY,
      codec,
      timeoutMs: 500,
    });
    const error = await withCredentials.totalSupply('ab').catch((e: Error) => e);
    expect(error).toBeInstanceOf(StacksRpcError);
    expect((error as Error).message).not.toContain(secret);
  });
});
