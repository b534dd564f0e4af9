/**
 * What one `/new_block` payload says, read without any memory of the blocks before it: the
 * registry's `print` events decoded into limits events (a withdrawal requested, one
 * rejected), the token's mints and burns, what was skipped and why, and the cut of a payload
 * worth keeping while it is held. `blocks.ts` places the block on the chain it remembers.
 * Pure and browser-safe: the Clarity decoder (`@stacks/transactions`' `hexToCV`) is passed in.
 */
import { MAX_AMOUNT } from '../core/amount.js';
import type { LimitsEvent } from '../core/events.js';
import { isRecord } from '../core/limits.js';

/** A Clarity value as `hexToCV` gives it: only what the mapping reads. */
export interface ClarityValue {
  readonly type: string;
  readonly value?: unknown;
}

/** Decodes hex-encoded Clarity (`raw_value`); throws on anything else. */
export type DecodeClarity = (hex: string) => ClarityValue;

/** What reading a payload's events needs. */
export interface PayloadReading {
  /** The registry contract (`SM3…​.sbtc-registry`): only its print events are read. */
  readonly registry: string;
  readonly decode: DecodeClarity;
  /**
   * The token contract (`SM3…​.sbtc-token`): its assets' mint and burn events change the
   * supply. Without it, supply changes are not read from asset events.
   */
  readonly token?: string | undefined;
}

/**
 * The account a mint is counted under when neither the token's mint event nor the registry
 * names its recipient: it still counts in the global mint window.
 */
export const UNKNOWN_RECIPIENT = 'unknown';

/** An event of the payload that was not read, and why. */
export interface SkippedEvent {
  /** Its index in the payload's `events`. */
  readonly index: number;
  readonly reason: string;
}

/**
 * A `/new_block` payload cut to what `observeBlock` reads: the block's hashes and
 * heights, and its committed events of the registry and the token (not its transactions),
 * so that a held block takes little room.
 */
export function payloadToKeep(
  payload: unknown,
  registry: string,
  token: string | undefined,
): unknown {
  if (!isRecord(payload)) return payload;
  const keep: Record<string, unknown> = {};
  for (const k of [
    'index_block_hash',
    'parent_index_block_hash',
    'block_height',
    'burn_block_height',
    'burn_block_hash',
    'parent_burn_block_height',
  ])
    if (k in payload) keep[k] = payload[k];
  const events = Array.isArray(payload.events) ? payload.events : [];
  keep.events = events.filter((e: unknown) => {
    if (!isRecord(e) || e.committed !== true) return false;
    if (e.type === 'contract_event')
      return isRecord(e.contract_event) && e.contract_event.contract_identifier === registry;
    if ((e.type === 'ft_mint_event' || e.type === 'ft_burn_event') && token !== undefined) {
      const body = e[e.type];
      return isRecord(body) && String(body.asset_identifier).startsWith(`${token}::`);
    }
    return false;
  });
  return keep;
}

/** A hash of the payload, lower case without `0x`, or `undefined`. */
export function hexOf(value: unknown): string | undefined {
  return typeof value === 'string' && /^(0x)?[0-9a-fA-F]{1,128}$/.test(value)
    ? value.toLowerCase().replace(/^0x/, '')
    : undefined;
}

/** A height of the payload, or `undefined`. */
export function heightOf(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : undefined;
}

// A uint field of a print tuple, within int64 (the largest amount every store keeps exactly).
function uintOf(tuple: Readonly<Record<string, ClarityValue>>, key: string): bigint | undefined {
  const v = tuple[key];
  if (v === undefined || v.type !== 'uint') return undefined;
  const n =
    typeof v.value === 'bigint'
      ? v.value
      : typeof v.value === 'string'
        ? BigInt(v.value)
        : undefined;
  return n !== undefined && n >= 0n && n <= MAX_AMOUNT ? n : undefined;
}

/**
 * The limits event one registry print gives, `null` for a print that means nothing here (a
 * tuple of another topic), or why it cannot be read (not a tuple, fields that do not fit).
 */
function eventOfPrint(value: ClarityValue): LimitsEvent | null | { readonly skip: string } {
  if (value.type !== 'tuple' || !isRecord(value.value)) return { skip: 'the print is not a tuple' };
  const tuple = value.value as Readonly<Record<string, ClarityValue>>;
  const topic = tuple.topic;
  if (topic === undefined || topic.type !== 'ascii') return null;
  if (topic.value === 'withdrawal-create') {
    const id = uintOf(tuple, 'request-id');
    const amount = uintOf(tuple, 'amount');
    const height = uintOf(tuple, 'block-height');
    const sender = tuple.sender;
    if (id === undefined) return { skip: 'request-id is not a uint within int64' };
    if (amount === undefined || amount === 0n)
      return { skip: 'amount is not a positive uint within int64' };
    if (height === undefined || height > BigInt(Number.MAX_SAFE_INTEGER))
      return { skip: 'block-height is not a height' };
    if (sender === undefined || (sender.type !== 'address' && sender.type !== 'contract'))
      return { skip: 'sender is not a principal' };
    return {
      type: 'withdrawalRequested',
      id: String(id),
      account: String(sender.value),
      amount,
      height: Number(height),
    };
  }
  if (topic.value === 'withdrawal-reject') {
    const id = uintOf(tuple, 'request-id');
    if (id === undefined) return { skip: 'request-id is not a uint within int64' };
    return { type: 'withdrawalRejected', id: String(id) };
  }
  return null;
}

// The new aggregate key of a `key-rotation` print, as hex, or why it cannot be read.
function rotatedKey(value: ClarityValue): string | { readonly skip: string } {
  const key = (value.value as Readonly<Record<string, ClarityValue>>)['new-aggregate-pubkey'];
  const hex =
    key?.type === 'buffer' && typeof key.value === 'string'
      ? key.value.replace(/^0x/, '').toLowerCase()
      : '';
  return /^0[23][0-9a-f]{64}$/.test(hex)
    ? hex
    : { skip: 'new-aggregate-pubkey is not a compressed public key' };
}

/**
 * The bytes of hex text in reverse order: a Bitcoin txid between the order the contracts keep
 * it in and the one Bitcoin Core and Emily display (each is the other reversed).
 */
export function reversedHex(hex: string): string {
  return (hex.match(/../g) ?? []).reverse().join('');
}

// A Bitcoin txid as Bitcoin Core and Emily display it: the bytes of the (buff 32) reversed.
function displayedTxid(value: ClarityValue | undefined): string | undefined {
  if (value?.type !== 'buffer' || typeof value.value !== 'string') return undefined;
  const hex = value.value.replace(/^0x/, '').toLowerCase();
  return /^[0-9a-f]{64}$/.test(hex) ? reversedHex(hex) : undefined;
}

/**
 * A `completed-deposit` print as a mint: the deposit's outpoint `<txid>:<output-index>` as its
 * id, its amount, counted at `burnHeight` (the burn height of the block that carried it) under
 * `recipient`; or why it cannot be read.
 */
function mintOfPrint(
  value: ClarityValue,
  burnHeight: number,
  recipientOf: (amount: bigint) => string,
): LimitsEvent | { readonly skip: string } {
  const tuple = value.value as Readonly<Record<string, ClarityValue>>;
  const txid = displayedTxid(tuple['bitcoin-txid']);
  const vout = uintOf(tuple, 'output-index');
  const amount = uintOf(tuple, 'amount');
  if (txid === undefined) return { skip: 'bitcoin-txid is not a 32-byte buffer' };
  if (vout === undefined) return { skip: 'output-index is not a uint within int64' };
  if (amount === undefined || amount === 0n)
    return { skip: 'amount is not a positive uint within int64' };
  return {
    type: 'depositMinted',
    id: `${txid}:${vout}`,
    account: recipientOf(amount),
    amount,
    height: burnHeight,
  };
}

// The recipients of the token's mints (`sbtc-token`), by transaction, in order: a deposit's
// recipient is that of the first mint of the same amount in its transaction not yet paired.
function mintRecipients(
  events: ReadonlyArray<unknown>,
  token: string | undefined,
): Map<string, Array<{ readonly recipient: string; readonly amount: bigint; used: boolean }>> {
  const out = new Map<
    string,
    Array<{ readonly recipient: string; readonly amount: bigint; used: boolean }>
  >();
  if (token === undefined) return out;
  for (const e of events) {
    if (!isRecord(e) || e.committed !== true || e.type !== 'ft_mint_event') continue;
    const body = e.ft_mint_event;
    if (!isRecord(body) || body.asset_identifier !== `${token}::sbtc-token`) continue;
    const amount = assetChange(e, token);
    if (amount === undefined || typeof body.recipient !== 'string' || typeof e.txid !== 'string')
      continue;
    const list = out.get(e.txid) ?? [];
    list.push({ recipient: body.recipient, amount, used: false });
    out.set(e.txid, list);
  }
  return out;
}

// Registry prints that change the supply: a deposit mints, an accepted withdrawal burns.
const SUPPLY_TOPICS = new Set(['completed-deposit', 'withdrawal-accept']);

// The topic of a print tuple, or undefined.
function topicOf(value: ClarityValue): string | undefined {
  if (value.type !== 'tuple' || !isRecord(value.value)) return undefined;
  const topic = (value.value as Readonly<Record<string, ClarityValue>>).topic;
  return topic?.type === 'ascii' && typeof topic.value === 'string' ? topic.value : undefined;
}

// A mint (+) or burn (−) of one of the token's assets, in the smallest unit, or undefined.
function assetChange(e: Readonly<Record<string, unknown>>, token: string): bigint | undefined {
  const kind = e.type === 'ft_mint_event' ? 1n : e.type === 'ft_burn_event' ? -1n : 0n;
  if (kind === 0n) return undefined;
  const body = e[e.type as string];
  if (!isRecord(body)) return undefined;
  const asset = body.asset_identifier;
  if (asset !== `${token}::sbtc-token` && asset !== `${token}::sbtc-token-locked`) return undefined;
  const amount =
    typeof body.amount === 'string' && /^\d{1,20}$/.test(body.amount)
      ? BigInt(body.amount)
      : undefined;
  return amount === undefined || amount > MAX_AMOUNT ? undefined : kind * amount;
}

/** What a block's events say for the limits. */
export interface BlockEvents {
  events: LimitsEvent[];
  skipped: SkippedEvent[];
  /** The net mint less burn of the token's assets, when the block carries any. */
  supplyDelta: bigint | undefined;
  /** Whether anything in the block changes the supply. */
  supplyTouched: boolean;
  /** The signers' aggregate keys the registry rotated to in the block (`key-rotation`), hex. */
  keys: string[];
}

/**
 * The limits events of a block's committed registry prints (a `completed-deposit` a mint
 * counted at `burnHeight`, the burn height of the block), what changes the supply, and what
 * was skipped.
 */
export function eventsOf(
  events: unknown,
  options: PayloadReading,
  burnHeight: number,
): BlockEvents {
  const out: LimitsEvent[] = [];
  const skipped: SkippedEvent[] = [];
  const read: BlockEvents = {
    events: out,
    skipped,
    supplyDelta: undefined,
    supplyTouched: false,
    keys: [],
  };
  if (!Array.isArray(events)) return read;
  const recipients = mintRecipients(events, options.token);
  events.forEach((e: unknown, index) => {
    if (!isRecord(e) || e.committed !== true) return;
    if (options.token !== undefined && (e.type === 'ft_mint_event' || e.type === 'ft_burn_event')) {
      const change = assetChange(e, options.token);
      if (change !== undefined) {
        read.supplyDelta = (read.supplyDelta ?? 0n) + change;
        read.supplyTouched = true;
      }
      return;
    }
    if (e.type !== 'contract_event') return;
    const c = e.contract_event;
    if (!isRecord(c) || c.contract_identifier !== options.registry || c.topic !== 'print') return;
    const raw = c.raw_value;
    if (typeof raw !== 'string' || !/^(0x)?([0-9a-fA-F]{2})+$/.test(raw)) {
      skipped.push({ index, reason: 'raw_value is not hex' });
      return;
    }
    let value: ClarityValue;
    try {
      value = options.decode(raw.replace(/^0x/, ''));
    } catch (err) {
      skipped.push({ index, reason: `raw_value is not Clarity: ${String(err)}` });
      return;
    }
    const topic = topicOf(value);
    if (topic !== undefined && SUPPLY_TOPICS.has(topic)) read.supplyTouched = true;
    if (topic === 'completed-deposit') {
      const mints = typeof e.txid === 'string' ? recipients.get(e.txid) : undefined;
      const mint = mintOfPrint(value, burnHeight, (amount) => {
        const pair = mints?.find((m) => !m.used && m.amount === amount);
        if (pair === undefined) return UNKNOWN_RECIPIENT;
        pair.used = true;
        return pair.recipient;
      });
      if ('skip' in mint) skipped.push({ index, reason: mint.skip });
      else out.push(mint);
      return;
    }
    if (topic === 'key-rotation') {
      const key = rotatedKey(value);
      if (typeof key === 'string') read.keys.push(key);
      else skipped.push({ index, reason: key.skip });
      return;
    }
    const event = eventOfPrint(value);
    if (event === null) return;
    if ('skip' in event) skipped.push({ index, reason: event.skip });
    else out.push(event);
  });
  return read;
}
