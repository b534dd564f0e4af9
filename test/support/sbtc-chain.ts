/**
 * A small sBTC chain and a double of its node: the registry's and the token's state block by
 * block (withdrawal requests with their status, the last request id, the token and the
 * locked token's supply), the `/new_block` bodies a node posts for it (the registry's prints
 * and the token's mint and burn events, as the contracts emit them), and an RPC server that
 * answers the paths the sBTC signer reads (`/v2/info`, `/v2/data_var`,
 * `/v2/contracts/call-read`, `/v2/map_entry`) as of any block (`?tip=`), with Clarity values
 * serialized by `@stacks/transactions`. A recount from the contract state is the oracle the
 * service is compared with.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  boolCV,
  bufferCV,
  type ClarityValue,
  hexToCV,
  listCV,
  noneCV,
  principalCV,
  responseOkCV,
  serializeCV,
  someCV,
  stringAsciiCV,
  tupleCV,
  uintCV,
} from '@stacks/transactions';
import { hash, REGISTRY } from './stacks-node.js';

export const DEPLOYER = REGISTRY.split('.')[0]!;
export const TOKEN = `${DEPLOYER}.sbtc-token`;

export interface ChainRequest {
  readonly amount: bigint;
  readonly sender: string;
  readonly height: number;
  /** undefined: pending; true: accepted; false: rejected. */
  readonly status: boolean | undefined;
}

/** The contracts' state after a block. */
export interface ContractState {
  readonly lastId: bigint;
  readonly requests: ReadonlyMap<bigint, ChainRequest>;
  readonly token: bigint;
  readonly locked: bigint;
  /** The registry's current aggregate key (compressed, hex), or `00` before any. */
  readonly aggregateKey: string;
  /** The registry's completed deposits, by `<txid as displayed>:<vout>`: their recipient. */
  readonly deposits: ReadonlyMap<string, string>;
}

export interface ChainBlock {
  /** `index_block_hash`, 0x hex. */
  readonly hash: string;
  readonly parent: string;
  readonly height: number;
  readonly burnHeight: number;
  readonly burnHash: string;
  readonly state: ContractState;
  /** The `/new_block` body. */
  readonly payload: Record<string, unknown>;
}

export type ChainOp =
  | { readonly kind: 'request'; readonly sender: string; readonly amount: bigint }
  | { readonly kind: 'accept'; readonly id: bigint }
  | { readonly kind: 'reject'; readonly id: bigint }
  /**
   * A deposit completed: the token minted to `recipient` and the registry's
   * `completed-deposit` print, in one transaction; `txid` (as Bitcoin Core displays it) and
   * `vout` name the deposit's outpoint (made up from the block when not given).
   */
  | {
      readonly kind: 'deposit';
      readonly recipient: string;
      readonly amount: bigint;
      readonly txid?: string;
      readonly vout?: number;
      /** Leave the token's mint event out (a node that sends no asset events). */
      readonly noAssetEvent?: boolean;
    }
  /** The signers rotate to a new aggregate key (compressed, hex): a `key-rotation` print. */
  | { readonly kind: 'rotate'; readonly key: string };

const GENESIS: ContractState = {
  lastId: 0n,
  requests: new Map(),
  token: 0n,
  locked: 0n,
  aggregateKey: '00',
  deposits: new Map(),
};

function strip(h: string): string {
  return h.replace(/^0x/, '').toLowerCase();
}

function print(fields: Record<string, ClarityValue>, index: number) {
  return {
    txid: `0x${'ab'.repeat(32)}`,
    event_index: index,
    committed: true,
    type: 'contract_event',
    contract_event: {
      contract_identifier: REGISTRY,
      topic: 'print',
      raw_value: `0x${serializeCV(tupleCV(fields))}`,
    },
  };
}

function asset(kind: 'mint' | 'burn', name: string, who: string, amount: bigint, index: number) {
  const type = kind === 'mint' ? 'ft_mint_event' : 'ft_burn_event';
  return {
    txid: `0x${'cd'.repeat(32)}`,
    event_index: index,
    committed: true,
    type,
    [type]: {
      asset_identifier: `${TOKEN}::${name}`,
      [kind === 'mint' ? 'recipient' : 'sender']: who,
      amount: String(amount),
    },
  };
}

/** A chain of sBTC blocks, with forks. */
export class SbtcChain {
  readonly blocks = new Map<string, ChainBlock>();
  head: ChainBlock | undefined;
  #n = 0;

  /**
   * Mines a block on `parent` (default the head) at `burnHeight` (default the parent's, or
   * 100), applying `ops` to the contracts, and makes it the head.
   */
  mine(
    ops: ReadonlyArray<ChainOp>,
    options: { burnHeight?: number; parent?: string; burnHash?: string; label?: string } = {},
  ): ChainBlock {
    const parent = options.parent === undefined ? this.head : this.blocks.get(options.parent);
    const burnHeight = options.burnHeight ?? parent?.burnHeight ?? 100;
    const label = options.label ?? `blk${this.#n++}`;
    const requests = new Map(parent?.state.requests ?? GENESIS.requests);
    let { lastId, token, locked, aggregateKey } = parent?.state ?? GENESIS;
    const deposits = new Map(parent?.state.deposits ?? GENESIS.deposits);
    const events: unknown[] = [];
    for (const op of ops) {
      const i = events.length;
      if (op.kind === 'request') {
        lastId++;
        requests.set(lastId, {
          amount: op.amount,
          sender: op.sender,
          height: burnHeight,
          status: undefined,
        });
        token -= op.amount;
        locked += op.amount;
        events.push(asset('burn', 'sbtc-token', op.sender, op.amount, i));
        events.push(asset('mint', 'sbtc-token-locked', op.sender, op.amount, i + 1));
        events.push(
          print(
            {
              topic: stringAsciiCV('withdrawal-create'),
              'request-id': uintCV(lastId),
              amount: uintCV(op.amount),
              sender: principalCV(op.sender),
              recipient: tupleCV({
                version: bufferCV(new Uint8Array([0])),
                hashbytes: bufferCV(new Uint8Array(32)),
              }),
              'block-height': uintCV(burnHeight),
              'max-fee': uintCV(1000),
            },
            i + 2,
          ),
        );
      } else if (op.kind === 'accept' || op.kind === 'reject') {
        const r = requests.get(op.id);
        if (r === undefined || r.status !== undefined)
          throw new Error(`no pending request ${op.id}`);
        requests.set(op.id, { ...r, status: op.kind === 'accept' });
        locked -= r.amount;
        events.push(asset('burn', 'sbtc-token-locked', r.sender, r.amount, i));
        if (op.kind === 'reject') {
          token += r.amount;
          events.push(asset('mint', 'sbtc-token', r.sender, r.amount, i + 1));
        }
        events.push(
          print(
            {
              topic: stringAsciiCV(`withdrawal-${op.kind}`),
              'request-id': uintCV(op.id),
              'signer-bitmap': uintCV(0),
            },
            i + 2,
          ),
        );
      } else if (op.kind === 'rotate') {
        aggregateKey = op.key;
        events.push(
          print(
            {
              topic: stringAsciiCV('key-rotation'),
              'new-keys': listCV([bufferCV(Buffer.from(op.key, 'hex'))]),
              'new-address': principalCV(DEPLOYER),
              'new-aggregate-pubkey': bufferCV(Buffer.from(op.key, 'hex')),
              'new-signature-threshold': uintCV(1),
            },
            i,
          ),
        );
      } else {
        token += op.amount;
        // The mint and the print of one transaction; the print as sbtc-registry's
        // complete-deposit writes it, the Bitcoin txid's bytes in their internal order.
        const stacksTx = `0x${strip(hash(`${label}:${i}`))}`;
        const btcTxid = op.txid ?? strip(hash(`deposit:${label}:${i}`));
        const internal = Buffer.from(btcTxid, 'hex').reverse();
        deposits.set(`${btcTxid}:${op.vout ?? 0}`, op.recipient);
        if (op.noAssetEvent !== true)
          events.push({
            ...asset('mint', 'sbtc-token', op.recipient, op.amount, i),
            txid: stacksTx,
          });
        events.push({
          ...print(
            {
              topic: stringAsciiCV('completed-deposit'),
              'bitcoin-txid': bufferCV(internal),
              'output-index': uintCV(op.vout ?? 0),
              amount: uintCV(op.amount),
              'burn-hash': bufferCV(new Uint8Array(32)),
              'burn-height': uintCV(burnHeight),
              'sweep-txid': bufferCV(new Uint8Array(32).fill(1)),
            },
            i + 1,
          ),
          txid: stacksTx,
        });
      }
    }
    const h = hash(label);
    const burnHash = options.burnHash ?? hash(`b${burnHeight}`);
    const block: ChainBlock = {
      hash: h,
      parent: parent?.hash ?? hash('genesis'),
      height: (parent?.height ?? 0) + 1,
      burnHeight,
      burnHash,
      state: { lastId, requests, token, locked, aggregateKey, deposits },
      payload: {
        block_hash: h,
        block_height: (parent?.height ?? 0) + 1,
        burn_block_time: 1_700_000_000,
        index_block_hash: h,
        parent_block_hash: parent?.hash ?? hash('genesis'),
        parent_index_block_hash: parent?.hash ?? hash('genesis'),
        parent_microblock: `0x${'00'.repeat(32)}`,
        parent_microblock_sequence: 0,
        parent_burn_block_hash: parent?.burnHash ?? burnHash,
        parent_burn_block_height: parent?.burnHeight ?? burnHeight,
        parent_burn_block_timestamp: 1_700_000_000,
        burn_block_hash: burnHash,
        burn_block_height: burnHeight,
        miner_txid: `0x${'cd'.repeat(32)}`,
        events,
        transactions: [],
        matured_miner_rewards: [],
      },
    };
    this.blocks.set(strip(h), block);
    this.blocks.set(h, block);
    this.head = block;
    return block;
  }

  /** The block with this index hash (with or without 0x). */
  block(h: string): ChainBlock | undefined {
    return this.blocks.get(h) ?? this.blocks.get(strip(h));
  }

  /** The sBTC supply (token and locked token) as of a block. */
  supply(b: ChainBlock): bigint {
    return b.state.token + b.state.locked;
  }

  /**
   * The recount: what the window of `blocks` at the block's burn height holds (requests not
   * rejected, per height), from the contract's own state.
   */
  window(b: ChainBlock, blocks: number): { withdrawn: bigint; sums: Map<number, bigint> } {
    const from = b.burnHeight - blocks + 1;
    const sums = new Map<number, bigint>();
    let withdrawn = 0n;
    for (const r of b.state.requests.values()) {
      if (r.status === false || r.height < from || r.height > b.burnHeight) continue;
      sums.set(r.height, (sums.get(r.height) ?? 0n) + r.amount);
      withdrawn += r.amount;
    }
    return { withdrawn, sums };
  }
}

/** How the double misbehaves. */
export type NodeFault = 'none' | 'down' | 'slow' | 'garbage' | 'latest';

/** The node's RPC over a chain, on 127.0.0.1. */
export interface NodeRpc {
  readonly url: string;
  /** Requests answered so far, by path (without the query). */
  readonly calls: string[];
  fault: NodeFault;
  close(): Promise<void>;
}

function hexCV(v: ClarityValue): string {
  return `0x${serializeCV(v)}`;
}

function requestCV(r: ChainRequest | undefined): ClarityValue {
  if (r === undefined) return noneCV();
  return someCV(
    tupleCV({
      amount: uintCV(r.amount),
      'max-fee': uintCV(1000),
      sender: principalCV(r.sender),
      recipient: tupleCV({
        version: bufferCV(new Uint8Array([0])),
        hashbytes: bufferCV(new Uint8Array(32)),
      }),
      'block-height': uintCV(r.height),
      status: r.status === undefined ? noneCV() : someCV(boolCV(r.status)),
    }),
  );
}

/** Starts the double of the node's RPC over `chain`. */
export async function startNodeRpc(chain: SbtcChain): Promise<NodeRpc> {
  const calls: string[] = [];
  const rpc = { fault: 'none' as NodeFault };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://node');
      calls.push(url.pathname);
      const send = (status: number, value: unknown) => {
        const text = typeof value === 'string' ? value : JSON.stringify(value);
        res.writeHead(status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        });
        res.end(text);
      };
      if (rpc.fault === 'down') {
        req.socket.destroy();
        return;
      }
      if (rpc.fault === 'slow') {
        setTimeout(() => send(200, {}), 30_000).unref();
        return;
      }
      if (rpc.fault === 'garbage') {
        send(200, '<html>not a node</html>');
        return;
      }
      const head = chain.head;
      if (url.pathname === '/v2/info') {
        send(200, {
          peer_version: 385875968,
          burn_block_height: head?.burnHeight ?? 0,
          stacks_tip_height: head?.height ?? 0,
          stacks_tip: strip(head?.hash ?? hash('genesis')),
          server_version: 'stacks-node double',
        });
        return;
      }
      const tipParam = url.searchParams.get('tip');
      const asOf = rpc.fault === 'latest' ? head : tipParam === null ? head : chain.block(tipParam);
      if (asOf === undefined) {
        send(404, { error: 'no such block' });
        return;
      }
      const s = asOf.state;
      const p = url.pathname;
      if (
        req.method === 'GET' &&
        p === `/v2/data_var/${DEPLOYER}/sbtc-registry/last-withdrawal-request-id`
      ) {
        send(200, { data: hexCV(uintCV(s.lastId)) });
        return;
      }
      if (
        req.method === 'POST' &&
        p === `/v2/contracts/call-read/${DEPLOYER}/sbtc-registry/get-withdrawal-request`
      ) {
        const args = (JSON.parse(body) as { arguments: string[] }).arguments;
        const id = hexToCV(args[0]!) as { value: bigint };
        send(200, { okay: true, result: hexCV(requestCV(s.requests.get(BigInt(id.value)))) });
        return;
      }
      if (
        req.method === 'POST' &&
        p === `/v2/contracts/call-read/${DEPLOYER}/sbtc-registry/get-completed-deposit`
      ) {
        const args = (JSON.parse(body) as { arguments: string[] }).arguments;
        const txid = hexToCV(args[0]!) as unknown as { value: string };
        const vout = hexToCV(args[1]!) as { value: bigint };
        const displayed = Buffer.from(strip(txid.value), 'hex').reverse().toString('hex');
        const recipient = s.deposits.get(`${displayed}:${vout.value}`);
        send(200, {
          okay: true,
          result: hexCV(
            recipient === undefined
              ? noneCV()
              : someCV(tupleCV({ amount: uintCV(0), recipient: principalCV(recipient) })),
          ),
        });
        return;
      }
      if (
        req.method === 'POST' &&
        p === `/v2/contracts/call-read/${DEPLOYER}/sbtc-registry/get-current-aggregate-pubkey`
      ) {
        send(200, { okay: true, result: hexCV(bufferCV(Buffer.from(s.aggregateKey, 'hex'))) });
        return;
      }
      if (
        req.method === 'POST' &&
        p === `/v2/contracts/call-read/${DEPLOYER}/sbtc-token/get-total-supply`
      ) {
        send(200, { okay: true, result: hexCV(responseOkCV(uintCV(s.token + s.locked))) });
        return;
      }
      if (
        req.method === 'POST' &&
        p === `/v2/map_entry/${DEPLOYER}/sbtc-registry/withdrawal-status`
      ) {
        const key = hexToCV(JSON.parse(body) as string) as { value: bigint };
        const r = s.requests.get(BigInt(key.value));
        send(200, {
          data: hexCV(r?.status === undefined ? noneCV() : someCV(boolCV(r.status))),
        });
        return;
      }
      send(404, { error: `no route ${p}` });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(rpc, {
    url: `http://127.0.0.1:${port}`,
    calls,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  });
}
