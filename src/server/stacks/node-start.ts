/**
 * Starting the limits from a Stacks node's own state: every withdrawal request of the
 * retained history as of a block, read from the node's RPC, and what the observer's block
 * handling needs around it. Node-only.
 */
import type { HttpResponse, LimitsEvent } from 'peg-limits';
import type { RegistryRequest, RememberedBlock } from '../../internal.js';
import { NodeAnswerError } from '../../internal.js';
import type { StacksRpc } from './rpc-client.js';

/** The token contract next to a registry (`ADDRESS.sbtc-token`). */
export function tokenOf(registry: string): string {
  return `${registry.split('.')[0]}.sbtc-token`;
}

/** A plain answer to the node; refusals are the service's problem answers. */
export function ok(body: Readonly<Record<string, unknown>>): HttpResponse {
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}

// How many requests the start reads at once.
const STRIDE = 16n;

/**
 * Every request whose height is `from` or above as of block `tip` (walking the ids down
 * from the last one until the heights fall below `from`: ids only grow with the height), and
 * the supply. An answer that does not fit the block asked about (a request above its burn
 * height `tipBurnHeight`, an id missing below the last) is refused: it is an answer for
 * another block.
 */
export async function readNodeState(
  rpc: StacksRpc,
  at: { readonly tip: string; readonly from: number; readonly tipBurnHeight: number },
): Promise<{ requests: RegistryRequest[]; supply: bigint }> {
  const { tip, from, tipBurnHeight } = at;
  const last = await rpc.lastWithdrawalRequestId(tip);
  const requests: RegistryRequest[] = [];
  let below = false;
  for (let top = last; top >= 1n && !below; top -= STRIDE) {
    const ids: bigint[] = [];
    for (let id = top; id >= 1n && id > top - STRIDE; id--) ids.push(id);
    const got = await Promise.all(ids.map((id) => rpc.withdrawalRequest(id, tip)));
    for (const [i, r] of got.entries()) {
      if (r === null)
        throw new NodeAnswerError(
          `the node has no withdrawal request ${ids[i]} below the last one (${last}) as of block ${tip}: an answer for another block`,
        );
      if (r.height > tipBurnHeight)
        throw new NodeAnswerError(
          `withdrawal request ${r.id} is at burn height ${r.height}, above block ${tip}'s ${tipBurnHeight}: an answer for another block`,
        );
      if (r.height < from) below = true;
      else requests.push(r);
    }
  }
  return { requests, supply: await rpc.totalSupply(tip) };
}

/** Whether a service's answer is the chain bounds' refusal. */
export function isBoundRefusal(response: HttpResponse): boolean {
  if (response.status !== 409) return false;
  try {
    return (JSON.parse(response.body) as { code?: string }).code === 'chain_bound_exceeded';
  } catch {
    return false;
  }
}

/** The parent's burn height as the payload gives it (the block's own when it does not). */
export function parentBurnOf(body: unknown, block: RememberedBlock): number {
  const given =
    typeof body === 'object' && body !== null
      ? (body as { parent_burn_block_height?: unknown }).parent_burn_block_height
      : undefined;
  return typeof given === 'number' && Number.isSafeInteger(given) && given <= block.burnHeight
    ? given
    : block.burnHeight;
}

/**
 * The declaration of a late start, then the block's own events (without the block's
 * connection, which the declaration made already).
 */
export function mergeStart(
  prefix: LimitsEvent[],
  events: ReadonlyArray<LimitsEvent>,
): LimitsEvent[] {
  const connected = prefix.find((e) => e.type === 'blockConnected');
  const rest = events.filter(
    (e) =>
      !(connected !== undefined && e.type === 'blockConnected' && e.height === connected.height),
  );
  return [...prefix, ...rest];
}
