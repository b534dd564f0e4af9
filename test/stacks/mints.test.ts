/**
 * A `completed-deposit` print read as a mint (`depositMinted`): the outpoint as its id with
 * the txid as Bitcoin Core and Emily display it (the bytes reversed), the amount, the burn
 * height of the block, and the recipient of the same transaction's mint of the token (paired
 * by amount, in order), else `unknown`.
 */
import {
  bufferCV,
  hexToCV,
  serializeCV,
  stringAsciiCV,
  tupleCV,
  uintCV,
} from '@stacks/transactions';
import { describe, expect, test } from 'vitest';
import { type ClarityValue, eventsOf, UNKNOWN_RECIPIENT } from '../../src/stacks/block-payload.js';
import { TOKEN } from '../support/sbtc-chain.js';
import { REGISTRY } from '../support/stacks-node.js';

const decode = (hex: string) => hexToCV(hex) as unknown as ClarityValue;
const options = { registry: REGISTRY, decode, token: TOKEN };

// The txid as Bitcoin Core displays it, and the bytes the contract holds (reversed).
const DISPLAYED = `00${'11'.repeat(30)}ff`;
const INTERNAL = Buffer.from(DISPLAYED, 'hex').reverse();

function completed(tx: string, vout: number, amount: bigint, txid: Uint8Array = INTERNAL) {
  return {
    txid: tx,
    committed: true,
    type: 'contract_event',
    contract_event: {
      contract_identifier: REGISTRY,
      topic: 'print',
      raw_value: `0x${serializeCV(
        tupleCV({
          topic: stringAsciiCV('completed-deposit'),
          'bitcoin-txid': bufferCV(txid),
          'output-index': uintCV(vout),
          amount: uintCV(amount),
          'burn-hash': bufferCV(new Uint8Array(32)),
          'burn-height': uintCV(7),
          'sweep-txid': bufferCV(new Uint8Array(32)),
        }),
      )}`,
    },
  };
}

function minted(tx: string, recipient: string, amount: bigint, asset = 'sbtc-token') {
  return {
    txid: tx,
    committed: true,
    type: 'ft_mint_event',
    ft_mint_event: { asset_identifier: `${TOKEN}::${asset}`, recipient, amount: String(amount) },
  };
}

describe('completed-deposit as depositMinted', () => {
  test('the outpoint with the displayed txid, the amount, the block burn height, the recipient of its mint', () => {
    const read = eventsOf(
      [minted('0x01', 'SP1ALICE', 500n), completed('0x01', 2, 500n)],
      options,
      900,
    );
    expect(read.events).toEqual([
      {
        type: 'depositMinted',
        id: `${DISPLAYED}:2`,
        account: 'SP1ALICE',
        amount: 500n,
        height: 900,
      },
    ]);
    expect(read.supplyTouched).toBe(true);
  });

  test('several deposits of one transaction are paired with its mints by amount, in order', () => {
    const read = eventsOf(
      [
        minted('0x01', 'SP1ALICE', 500n),
        minted('0x01', 'SP1BOB', 700n),
        minted('0x01', 'SP1CAROL', 500n),
        completed('0x01', 0, 700n),
        completed('0x01', 1, 500n),
        completed('0x01', 2, 500n),
      ],
      options,
      900,
    );
    expect(read.events.map((e) => (e.type === 'depositMinted' ? e.account : ''))).toEqual([
      'SP1BOB',
      'SP1ALICE',
      'SP1CAROL',
    ]);
  });

  test('without a mint of the token in its transaction, the mint still counts, under unknown', () => {
    const read = eventsOf(
      [
        minted('0x02', 'SP1ALICE', 500n),
        minted('0x01', 'SP1X', 500n, 'sbtc-token-locked'),
        completed('0x01', 0, 500n),
      ],
      options,
      900,
    );
    expect(read.events).toMatchObject([{ type: 'depositMinted', account: UNKNOWN_RECIPIENT }]);
    // Without the token's events at all (no token configured), the same.
    const bare = eventsOf([completed('0x01', 0, 500n)], { registry: REGISTRY, decode }, 900);
    expect(bare.events).toMatchObject([{ type: 'depositMinted', account: UNKNOWN_RECIPIENT }]);
  });

  test('a print that does not fit is skipped with why, and the rest is read', () => {
    const read = eventsOf(
      [
        completed('0x01', 0, 0n),
        completed('0x01', 0, 5n, new Uint8Array(31)),
        completed('0x03', 1, 9n),
      ],
      options,
      900,
    );
    expect(read.skipped.map((s) => [s.index, s.reason])).toEqual([
      [0, 'amount is not a positive uint within int64'],
      [1, 'bitcoin-txid is not a 32-byte buffer'],
    ]);
    expect(read.events).toHaveLength(1);
  });
});
