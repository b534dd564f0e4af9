/**
 * What a Stacks node's RPC answers mean for the limits: the sBTC registry's withdrawal
 * requests (`get-withdrawal-request`), its `last-withdrawal-request-id` and the token's
 * `get-total-supply`, read as Clarity values, and the batch that starts the limits from
 * them (every request of the retained history, rejected ones as rejected, and the supply).
 * Pure and browser-safe: the node is asked elsewhere (the server's RPC client), and the
 * Clarity decoder is passed in there.
 */

import { type Amount, MAX_AMOUNT } from '../core/amount.js';
import { PegLimitsError } from '../core/errors.js';
import type { Height, LimitsEvent } from '../core/events.js';
import { isRecord } from '../core/limits.js';
import type { ClarityValue } from './block-payload.js';

/** A withdrawal request as the registry holds it. */
export interface RegistryRequest {
  readonly id: bigint;
  readonly amount: Amount;
  /** The principal that requested it (the account of its limits). */
  readonly sender: string;
  /** The Bitcoin height it was requested at (`block-height`). */
  readonly height: Height;
  /** `pending` (status none), `accepted` (some true) or `rejected` (some false). */
  readonly status: 'pending' | 'accepted' | 'rejected';
}

/** Why an answer of the node cannot be used. */
export class NodeAnswerError extends PegLimitsError {
  override readonly name = 'NodeAnswerError';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('invalid_node_answer', message, options);
  }
}

function bad(what: string): never {
  throw new NodeAnswerError(what);
}

/** A Clarity `uint` within int64, or why not. */
export function uintOfClarity(value: ClarityValue, what: string): bigint {
  if (value.type !== 'uint') bad(`${what} is not a uint (${value.type})`);
  const n =
    typeof value.value === 'bigint'
      ? value.value
      : typeof value.value === 'string' && /^\d+$/.test(value.value)
        ? BigInt(value.value)
        : bad(`${what} is not a uint`);
  if (n < 0n || n > MAX_AMOUNT) bad(`${what} ${n} is past int64`);
  return n;
}

/** `(ok uint)`, as `get-total-supply` answers. */
export function okUintOfClarity(value: ClarityValue, what: string): bigint {
  if (value.type !== 'ok' || !isRecord(value.value))
    bad(`${what} is not (ok uint) (${value.type})`);
  return uintOfClarity(value.value as unknown as ClarityValue, what);
}

/**
 * The answer of `get-withdrawal-request(id)`: `none` (no such request) or
 * `(some { amount, sender, block-height, status, … })`.
 */
export function requestOfClarity(id: bigint, value: ClarityValue): RegistryRequest | null {
  const what = `withdrawal request ${id}`;
  if (value.type === 'none') return null;
  if (value.type !== 'some' || !isRecord(value.value)) bad(`${what} is not an optional`);
  const tuple = value.value as unknown as ClarityValue;
  if (tuple.type !== 'tuple' || !isRecord(tuple.value)) bad(`${what} is not a tuple`);
  const fields = tuple.value as Readonly<Record<string, ClarityValue>>;
  const field = (name: string): ClarityValue => fields[name] ?? bad(`${what} has no ${name}`);
  const amount = uintOfClarity(field('amount'), `${what}'s amount`);
  if (amount === 0n) bad(`${what}'s amount is 0`);
  const height = uintOfClarity(field('block-height'), `${what}'s block-height`);
  if (height > BigInt(Number.MAX_SAFE_INTEGER)) bad(`${what}'s block-height is not a height`);
  const sender = field('sender');
  if ((sender.type !== 'address' && sender.type !== 'contract') || typeof sender.value !== 'string')
    bad(`${what}'s sender is not a principal`);
  const s = field('status');
  let status: RegistryRequest['status'];
  if (s.type === 'none') status = 'pending';
  else if (s.type === 'some' && isRecord(s.value)) {
    const b = (s.value as unknown as ClarityValue).type;
    if (b === 'true') status = 'accepted';
    else if (b === 'false') status = 'rejected';
    else bad(`${what}'s status is not an optional bool`);
  } else bad(`${what}'s status is not an optional bool`);
  return { id, amount, sender: sender.value, height: Number(height), status };
}

/**
 * The batch that starts the limits from the node's state as of a block: the block's burn
 * height connected (from just below it when it is not above the tip), every request of the retained history (oldest
 * first), the rejected ones rejected, the supply as the pegged total, and the history
 * declared complete from the oldest height it covers.
 */
export function startBatch(options: {
  readonly tip: Height | null;
  readonly burnHeight: Height;
  readonly historyBlocks: number;
  /** The requests read, in any order. */
  readonly requests: ReadonlyArray<RegistryRequest>;
  readonly supply: bigint;
}): LimitsEvent[] {
  const events: LimitsEvent[] = [];
  // At or below the tip (a gap inside a burn height, a reorganization the node confirmed):
  // what the state holds from that height on is replaced by the node's word.
  if (options.tip !== null && options.burnHeight <= options.tip)
    events.push({ type: 'chainReorganized', height: options.burnHeight - 1 });
  events.push({ type: 'blockConnected', height: options.burnHeight });
  const from = Math.max(0, options.burnHeight - options.historyBlocks + 1);
  const kept = options.requests
    .filter((r) => r.height >= from && r.height <= options.burnHeight)
    .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  for (const r of kept)
    events.push({
      type: 'withdrawalRequested',
      id: String(r.id),
      account: r.sender,
      amount: r.amount,
      height: r.height,
    });
  for (const r of kept)
    if (r.status === 'rejected') events.push({ type: 'withdrawalRejected', id: String(r.id) });
  events.push({ type: 'peggedTotalObserved', total: options.supply });
  events.push({ type: 'historyCompleteFrom', height: from });
  return events;
}

/**
 * A signers' aggregate public key as the registry holds it (`(buff 33)`, a compressed
 * secp256k1 key: `02` or `03` and 32 bytes), as lower-case hex; `null` for the registry's
 * placeholder before any key was set (`0x00`).
 */
export function aggregateKeyOfClarity(value: ClarityValue, what: string): string | null {
  if (value.type !== 'buffer' || typeof value.value !== 'string')
    bad(`${what} is not a buffer (${value.type})`);
  const hex = value.value.replace(/^0x/, '').toLowerCase();
  if (hex === '00' || hex === '') return null;
  if (!/^0[23][0-9a-f]{64}$/.test(hex))
    bad(`${what} is not a compressed public key (${hex.length / 2} bytes)`);
  return hex;
}
