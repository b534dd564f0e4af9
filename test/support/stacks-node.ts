/**
 * Bodies as a Stacks node posts them to an event observer's `/new_block` (the fields the
 * node documents for its `[[events_observer]]` payloads), with the sBTC registry's print
 * tuples serialised by `@stacks/transactions`, as the node sends them in `raw_value`.
 */
import {
  bufferCV,
  principalCV,
  serializeCV,
  stringAsciiCV,
  tupleCV,
  uintCV,
} from '@stacks/transactions';

export const REGISTRY = 'SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-registry';
export const SENDER = 'SP3FBR2AGK5H9QBDH3EEN6DF8EK8JY7RX8QJ5SVTE';

export type Print =
  | {
      readonly topic: 'withdrawal-create';
      readonly id: bigint;
      readonly sender: string;
      readonly amount: bigint;
      readonly height: number;
    }
  | { readonly topic: 'withdrawal-reject'; readonly id: bigint }
  | { readonly topic: 'withdrawal-accept'; readonly id: bigint };

/** The registry's print of `p`, as hex Clarity. */
export function printHex(p: Print): string {
  if (p.topic === 'withdrawal-create')
    return serializeCV(
      tupleCV({
        topic: stringAsciiCV(p.topic),
        'request-id': uintCV(p.id),
        amount: uintCV(p.amount),
        sender: principalCV(p.sender),
        recipient: tupleCV({
          version: bufferCV(new Uint8Array([0])),
          hashbytes: bufferCV(new Uint8Array(32)),
        }),
        'block-height': uintCV(p.height),
        'max-fee': uintCV(1000),
      }),
    );
  return serializeCV(
    tupleCV({
      topic: stringAsciiCV(p.topic),
      'request-id': uintCV(p.id),
      'signer-bitmap': uintCV(0),
    }),
  );
}

/** A contract event as the node lists it in a block's `events`. */
export function contractEvent(
  hex: string,
  options: { contract?: string; committed?: boolean; topic?: string; index?: number } = {},
) {
  return {
    txid: `0x${'ab'.repeat(32)}`,
    event_index: options.index ?? 0,
    committed: options.committed ?? true,
    type: 'contract_event',
    contract_event: {
      contract_identifier: options.contract ?? REGISTRY,
      topic: options.topic ?? 'print',
      raw_value: `0x${hex}`,
    },
  };
}

/** A hash of 32 bytes, as hex with 0x, made from a label. */
export function hash(label: string): string {
  let h = 0x811c9dc5;
  const out: string[] = [];
  for (let round = 0; round < 8; round++) {
    for (const c of `${label}/${round}`) h = Math.imul(h ^ c.charCodeAt(0), 0x01000193) >>> 0;
    out.push(h.toString(16).padStart(8, '0'));
  }
  return `0x${out.join('')}`;
}

/** One `/new_block` body. */
export function newBlock(b: {
  hash: string;
  parent: string;
  height: number;
  burnHeight: number;
  burnHash: string;
  prints?: ReadonlyArray<Print>;
  extra?: ReadonlyArray<unknown>;
}) {
  return {
    block_hash: b.hash,
    block_height: b.height,
    burn_block_time: 1_700_000_000 + b.height,
    index_block_hash: b.hash,
    parent_block_hash: b.parent,
    parent_index_block_hash: b.parent,
    parent_microblock: `0x${'00'.repeat(32)}`,
    parent_microblock_sequence: 0,
    parent_burn_block_hash: b.burnHash,
    parent_burn_block_height: b.burnHeight,
    parent_burn_block_timestamp: 1_700_000_000,
    burn_block_hash: b.burnHash,
    burn_block_height: b.burnHeight,
    miner_txid: `0x${'cd'.repeat(32)}`,
    events: [
      ...(b.prints ?? []).map((p, index) => contractEvent(printHex(p), { index })),
      ...(b.extra ?? []),
    ],
    transactions: [],
    matured_miner_rewards: [],
  };
}

/** The registry's print of a withdrawal request by {@link SENDER}. */
export function create(id: number, amount: bigint, height: number): Print {
  return { topic: 'withdrawal-create', id: BigInt(id), sender: SENDER, amount, height };
}

/**
 * A `/new_block` body, its hashes made from labels: the block `label` on `parent`, at the
 * Stacks `height` and `burnHeight`, whose burn hash is made from `burn` (by default one per
 * burn height: a Bitcoin reorganization gives a height another label).
 */
export function block(
  label: string,
  parent: string,
  height: number,
  burnHeight: number,
  prints: ReadonlyArray<Print> = [],
  burn = `b${burnHeight}`,
) {
  return newBlock({
    hash: hash(label),
    parent: hash(parent),
    height,
    burnHeight,
    burnHash: hash(burn),
    prints,
  });
}
