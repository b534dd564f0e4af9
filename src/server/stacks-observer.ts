/**
 * The Stacks node's event observer (`peg-limits serve --stacks-observer HOST:PORT`): a
 * second listener that serves only what a node posts. `POST /new_block` is read through
 * the pure mapping of `http/stacks-blocks.ts` and applied as the operator `stacks-node`,
 * with the `chain` scope alone, so chain bounds apply to it like to any feeder; the node's
 * other paths are answered 200 and ignored, and the service's own routes are not here.
 *
 * Answers the node can live with: it retries a block for ever until it gets a 2xx. So 200
 * once the block's events are durable, and 200 for a payload or an event that cannot be
 * used (logged, counted in `peg_limits_observer_skipped_total`); 503 while the store is
 * unavailable; 409 `chain_bound_exceeded` past the bounds (an emergency: it is alerted); 400
 * for a body that is not JSON.
 *
 * What the observer remembers of the blocks is written after the block's events are
 * durable: a crash between the two makes the node send the block again, and applying it
 * again changes nothing.
 */
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  decodeJson,
  encodeJson,
  eventsFromJson,
  generateOperatorToken,
  type HttpResponse,
  hashOperatorToken,
  type LimitsEvent,
  type Operator,
  type Service,
  windowOf,
} from 'peg-limits';
import type pg from 'pg';
import {
  type BlockMemory,
  type DecodeClarity,
  EMPTY_MEMORY,
  observeBlock,
  problem,
  type RegistryRequest,
  type RememberedBlock,
  startBatch,
  withSupply,
} from '../internal.js';
import { writeAtomically } from './data-files.js';
import { loadPeer } from './peers.js';
import { connectClient } from './pg-connect.js';
import type { ClarityCodec, StacksRpc } from './stacks-rpc.js';

/** The operator the observer acts as. */
export const STACKS_NODE_OPERATOR = 'stacks-node';

/** Mainnet's sBTC registry contract. */
export const MAINNET_REGISTRY = 'SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-registry';

/** The largest `/new_block` body read (a block's transactions come with it). */
export const MAX_BLOCK_BODY = 64 * 1024 * 1024;

/** Where the observer's memory of blocks is kept. */
export interface BlockMemoryStore {
  load(): Promise<BlockMemory>;
  save(memory: BlockMemory): Promise<void>;
  close?(): Promise<void>;
}

/** Options of {@link startStacksObserver}. */
export interface StacksObserverOptions {
  readonly host: string;
  readonly port: number;
  /** The registry contract whose prints are read. */
  readonly registry: string;
  readonly decode: DecodeClarity;
  readonly memory: BlockMemoryStore;
  /** Burn heights of blocks remembered below the newest (default: the reorg bound and a margin). */
  readonly keepBurnBlocks: number;
  /**
   * The same node's RPC (`--stacks-rpc`): the first block (and one after a gap) starts from
   * the node's own state, and the supply is read from it.
   */
  readonly rpc?: StacksRpc | undefined;
  /**
   * The node and the service started together from the registry's deployment
   * (`--stacks-history-complete`): nothing came before the first block.
   */
  readonly historyComplete?: boolean | undefined;
  /** The least time between two tries to start from the node's state while it fails (default 10 s). */
  readonly startRetryMs?: number | undefined;
}

/** What is missing when `@stacks/transactions` is not installed. */
export class ObserverUnavailable extends Error {
  override readonly name = 'ObserverUnavailable';
}

/** `@stacks/transactions`' `hexToCV`, and `serializeCV(uintCV(n))` for the RPC's arguments. */
export async function loadClarityCodec(): Promise<ClarityCodec> {
  const stacks = await loadPeer<{
    hexToCV: DecodeClarity;
    serializeCV: (value: unknown) => string;
    uintCV: (value: bigint) => unknown;
  }>(
    '@stacks/transactions',
    () => import('@stacks/transactions'),
    (hint) => new ObserverUnavailable(`--stacks-observer needs ${hint}`),
  );
  return {
    decode: (hex) => stacks.hexToCV(hex),
    encodeUint: (value) => stacks.serializeCV(stacks.uintCV(value)).replace(/^0x/, ''),
  };
}

/** A new operator `stacks-node` with the chain scope, and its token. */
export function stacksNodeOperator(): { operator: Operator; token: string } {
  const token = generateOperatorToken();
  return {
    operator: {
      name: STACKS_NODE_OPERATOR,
      tokenHash: hashOperatorToken(token),
      scopes: ['chain'],
    },
    token,
  };
}

/** True for an address the observer may listen on without `--stacks-observer-public`. */
export function isPrivateAddress(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, '').toLowerCase();
  if (h === 'localhost' || h === '::1') return true;
  const v4 = /^(\d{1,3})\.(\d{1,3})\.\d{1,3}\.\d{1,3}$/.exec(h);
  if (v4 !== null) {
    const a = Number(v4[1]);
    const b = Number(v4[2]);
    return a === 127 || a === 10 || (a === 172 && b >= 16 && b <= 31) || (a === 192 && b === 168);
  }
  return /^f[cd][0-9a-f]{2}:/.test(h);
}

// The memory as JSON text: events with exact amounts.
function memoryText(memory: BlockMemory): string {
  return encodeJson({ version: 1, head: memory.head, blocks: memory.blocks });
}

function memoryFrom(text: string): BlockMemory {
  const value = decodeJson(text) as { head?: unknown; blocks?: unknown };
  if (typeof value.head !== 'string' || !Array.isArray(value.blocks))
    throw new Error('not a memory of blocks');
  const blocks: RememberedBlock[] = value.blocks.map((b: Record<string, unknown>) => {
    const events = eventsFromJson(b.events);
    if (!events.ok) throw new Error(events.error.message);
    return {
      hash: String(b.hash),
      parent: String(b.parent),
      height: Number(b.height),
      burnHeight: Number(b.burnHeight),
      burnHash: String(b.burnHash),
      events: events.events,
      ...(typeof b.supply === 'bigint' ? { supply: b.supply } : {}),
    };
  });
  return { head: value.head, blocks };
}

/**
 * The memory kept in the data folder, `stacks-observer.json`, written atomically. Only this
 * process writes it, so it is read once and then kept as last written.
 */
export function dataBlockMemory(dir: string): BlockMemoryStore {
  const file = 'stacks-observer.json';
  let held: BlockMemory | undefined;
  return {
    async load() {
      if (held !== undefined) return held;
      try {
        held = memoryFrom(await readFile(join(dir, file), 'utf8'));
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT')
          throw new Error(`${join(dir, file)}: ${(e as Error).message}`);
        held = EMPTY_MEMORY;
      }
      return held;
    },
    async save(memory) {
      const text = memoryText(memory);
      await writeAtomically(dir, file, (put) => put(text));
      held = memory;
    },
  };
}

/**
 * The memory kept on PostgreSQL, in `peg_limits_stacks_memory` (made when first used), so
 * that any replica the node posts to knows the blocks before; it is read again for each
 * block.
 */
export function pgBlockMemory(url: string): BlockMemoryStore {
  let client: pg.Client | undefined;
  const query = async (text: string, values: unknown[]) => {
    if (client === undefined) {
      const c = await connectClient(url);
      c.on('error', () => {
        if (client === c) client = undefined;
      });
      await c.query(
        'CREATE TABLE IF NOT EXISTS peg_limits_stacks_memory (key text PRIMARY KEY, memory text NOT NULL)',
      );
      client = c;
    }
    const c = client;
    try {
      return await c.query(text, values);
    } catch (e) {
      if (client === c) client = undefined;
      await c.end().catch(() => undefined);
      throw e;
    }
  };
  return {
    async load() {
      const { rows } = await query('SELECT memory FROM peg_limits_stacks_memory WHERE key = $1', [
        'observer',
      ]);
      return rows[0] === undefined ? EMPTY_MEMORY : memoryFrom(String(rows[0].memory));
    },
    async save(memory) {
      await query(
        'INSERT INTO peg_limits_stacks_memory (key, memory) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET memory = EXCLUDED.memory',
        ['observer', memoryText(memory)],
      );
    },
    async close() {
      const c = client;
      client = undefined;
      await c?.end().catch(() => undefined);
    },
  };
}

/** The token contract next to a registry (`ADDRESS.sbtc-token`). */
export function tokenOf(registry: string): string {
  return `${registry.split('.')[0]}.sbtc-token`;
}

// The declaration of a late start, then the block's own events (without the block's
// connection, which the declaration made already).
function mergeStart(prefix: LimitsEvent[], events: ReadonlyArray<LimitsEvent>): LimitsEvent[] {
  const connected = prefix.find((e) => e.type === 'blockConnected');
  const rest = events.filter(
    (e) =>
      !(connected !== undefined && e.type === 'blockConnected' && e.height === connected.height),
  );
  return [...prefix, ...rest];
}

/** A running observer listener. */
export interface StacksObserver {
  /** `http://host:port` */
  readonly url: string;
  /** Payloads and events skipped so far (`peg_limits_observer_skipped_total`). */
  readonly skipped: number;
  close(): Promise<void>;
}

// Paths of the service that are never served here.
const SERVICE_PATHS =
  /^\/(limits|window|start_throttle|admin|events|metrics|healthz|readyz|openapi\.json)?(\/|$|\?)/;

// A plain answer to the node; refusals are the service's problem answers.
function ok(body: Readonly<Record<string, unknown>>): HttpResponse {
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}

function reply(res: ServerResponse, response: HttpResponse): void {
  res.writeHead(response.status, {
    ...response.headers,
    'content-length': Buffer.byteLength(response.body),
  });
  res.end(response.body);
}

/** Opens the observer listener over a service, acting as the operator whose token it is given. */
export async function startStacksObserver(
  service: Service,
  token: string,
  options: StacksObserverOptions,
  tell: {
    logLine?: ((line: string) => void) | undefined;
    warn?: ((line: string) => void) | undefined;
  },
): Promise<StacksObserver> {
  let skipped = 0;
  let queue: Promise<unknown> = Promise.resolve();
  const warn = (line: string) => (tell.warn ?? tell.logLine)?.(`warning: ${line}`);
  const skip = (what: string) => {
    skipped++;
    warn(`stacks observer skipped ${what}`);
  };

  // Applies a block's events as the operator stacks-node; an event the state cannot take
  // (a rejection of a withdrawal it does not hold, a request it holds with another payload)
  // is dropped and counted, and the rest applied.
  async function apply(events: LimitsEvent[], at: string, remote: string | undefined) {
    let batch = events;
    for (;;) {
      const response = await service.handle({
        method: 'POST',
        path: '/admin/events',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'peg-limits-request-id': `stacks-block:${at.slice(0, 64)}`,
        },
        body: encodeJson(batch),
        remote,
      });
      if (response.status === 200) return response;
      const problem = JSON.parse(response.body) as {
        code?: string;
        path?: string;
        detail?: string;
      };
      const index = /^\[(\d+)\]/.exec(problem.path ?? '')?.[1];
      const event = index === undefined ? undefined : batch[Number(index)];
      const droppable =
        (response.status === 400 || response.status === 409) &&
        problem.code !== 'chain_bound_exceeded' &&
        (event?.type === 'withdrawalRequested' ||
          event?.type === 'withdrawalRejected' ||
          event?.type === 'withdrawalRejectionUndone');
      if (!droppable) return response;
      skip(`event ${index} of block ${at} (${problem.code}): ${problem.detail ?? ''}`);
      batch = batch.filter((_, i) => i !== Number(index));
      if (batch.length === 0) return ok({ ok: true });
    }
  }

  const rpc = options.rpc;
  // When the last try to start from the node's state failed (0: none failed).
  let startFailedAt = 0;

  // Every request of the retained history as of block `tip` (walking the ids down from the
  // last one until the heights fall below the history), and the supply: the batch that
  // starts the limits from the node's own state. Any answer that does not fit the block
  // asked about (a request above its burn height, an id missing below the last) is refused.
  async function readNodeState(tip: string, burnHeight: number, tipBurnHeight: number) {
    if (rpc === undefined) throw new Error('no RPC');
    const historyBlocks = service.state.historyBlocks;
    const from = Math.max(0, burnHeight - historyBlocks + 1);
    const last = await rpc.lastWithdrawalRequestId(tip);
    const requests: RegistryRequest[] = [];
    const STRIDE = 16n;
    let below = false;
    for (let top = last; top >= 1n && !below; top -= STRIDE) {
      const ids: bigint[] = [];
      for (let id = top; id >= 1n && id > top - STRIDE; id--) ids.push(id);
      const got = await Promise.all(ids.map((id) => rpc.withdrawalRequest(id, tip)));
      for (const [i, r] of got.entries()) {
        if (r === null)
          throw new Error(
            `the node has no withdrawal request ${ids[i]} below the last one (${last}) as of block ${tip}: an answer for another block`,
          );
        if (r.height > tipBurnHeight)
          throw new Error(
            `withdrawal request ${r.id} is at burn height ${r.height}, above block ${tip}'s ${tipBurnHeight}: an answer for another block`,
          );
        if (r.height < from) below = true;
        else requests.push(r);
      }
    }
    const supply = await rpc.totalSupply(tip);
    return { requests, supply };
  }

  // Starts the limits from the node's state as of the block before `block` (its parent),
  // one batch on the trail; the supply as of the parent, or undefined when it failed (then
  // the history stays incomplete, and the next block tries again, at most every few seconds).
  async function startFromNode(
    block: RememberedBlock,
    parentBurnHeight: number,
    remote: string | undefined,
  ): Promise<{ supply: bigint } | { response: HttpResponse } | undefined> {
    if (rpc === undefined) return undefined;
    if (startFailedAt !== 0 && Date.now() - startFailedAt < (options.startRetryMs ?? 10_000))
      return undefined;
    let read: { requests: RegistryRequest[]; supply: bigint };
    const began = Date.now();
    const callsBefore = rpc.calls;
    try {
      read = await readNodeState(block.parent, block.burnHeight, parentBurnHeight);
    } catch (e) {
      startFailedAt = Date.now();
      warn(
        `stacks observer: could not start from the node's state as of block ${block.parent} (${(e as Error).message}); the window stays incomplete (no room reported, withdrawals refused) until a start succeeds, tried again at a later block`,
      );
      return undefined;
    }
    startFailedAt = 0;
    const readMs = Date.now() - began;
    const events = startBatch({
      tip: windowOf(service.state)?.tip ?? null,
      burnHeight: block.burnHeight,
      historyBlocks: service.state.historyBlocks,
      requests: read.requests,
      supply: read.supply,
    });
    const response = await apply(events, `start:${block.parent}`, remote);
    if (response.status !== 200) return { response };
    tell.logLine?.(
      `stacks observer: started from the node's state as of block ${block.parent} (burn height ${block.burnHeight}): ${read.requests.length} withdrawal request(s) in the history, supply ${read.supply}, ${rpc.calls - callsBefore} RPC calls in ${readMs} ms, applied in ${Date.now() - began - readMs} ms`,
    );
    return { supply: read.supply };
  }

  // Whether some heights of the retained history were never reported (a late start).
  function historyIncomplete(): boolean {
    const s = service.state;
    if (s.completeFrom === null) return false;
    const tip = windowOf(s)?.tip ?? null;
    return tip === null || s.completeFrom > Math.max(0, tip - s.historyBlocks + 1);
  }

  async function newBlock(body: unknown, remote: string | undefined): Promise<HttpResponse> {
    const memory = await options.memory.load();
    const observe = (parentSupply: bigint | undefined) =>
      observeBlock(memory, body, {
        registry: options.registry,
        decode: options.decode,
        tip: windowOf(service.state)?.tip ?? null,
        keepBurnBlocks: options.keepBurnBlocks,
        token: rpc?.token ?? tokenOf(options.registry),
        parentSupply,
        supplyFromRpc: rpc !== undefined,
      });
    let observed = observe(undefined);
    if (observed.kind === 'known') return ok({ ok: true, known: true });
    if (observed.kind === 'unusable') {
      skip(`a payload: ${observed.reason}`);
      return ok({ ok: true, skipped: observed.reason });
    }
    const at = observed.block.hash;
    let prefix: LimitsEvent[] = [];
    if (observed.startsChain || (rpc !== undefined && historyIncomplete())) {
      const given =
        typeof body === 'object' && body !== null
          ? (body as { parent_burn_block_height?: unknown }).parent_burn_block_height
          : undefined;
      const parentBurn =
        typeof given === 'number' &&
        Number.isSafeInteger(given) &&
        given <= observed.block.burnHeight
          ? given
          : observed.block.burnHeight;
      const started = await startFromNode(observed.block, parentBurn, remote);
      if (started !== undefined && 'response' in started) return started.response;
      if (started !== undefined)
        observed = observe(observed.startsChain ? started.supply : undefined);
      else if (observed.startsChain) {
        const first = memory.blocks.length === 0;
        if (!(first && options.historyComplete === true)) {
          // Blocks before this one were never seen: the history is complete from the next
          // burn height only (others at this one may have come before).
          prefix = [
            ...(windowOf(service.state)?.tip === null ||
            observed.block.burnHeight > (windowOf(service.state)?.tip ?? 0)
              ? [{ type: 'blockConnected', height: observed.block.burnHeight } as const]
              : []),
            { type: 'historyCompleteFrom', height: observed.block.burnHeight + 1 },
          ];
          if (rpc === undefined)
            warn(
              `stacks observer: block ${at} ${first ? 'is the first one seen' : 'follows a gap'}, and without --stacks-rpc what came before it is unknown: the window is incomplete (no room reported, withdrawals refused) until it holds only burn heights from ${observed.block.burnHeight + 1}`,
            );
        } else observed = observe(0n);
      }
    }
    if (observed.kind !== 'block') return ok({ ok: true });
    if (observed.needsSupply) {
      if (rpc !== undefined) {
        try {
          observed = withSupply(observed, await rpc.totalSupply(observed.block.hash));
        } catch (e) {
          skip(`the supply as of block ${at}: ${(e as Error).message}`);
        }
      } else
        skip(
          `the supply as of block ${at}: it changed, and neither the token's asset events (from a known supply) nor --stacks-rpc tell it`,
        );
    }
    for (const s of observed.skipped) skip(`event ${s.index} of block ${at}: ${s.reason}`);
    const events = prefix.length === 0 ? observed.events : mergeStart(prefix, observed.events);
    if (events.length > 0) {
      const response = await apply([...events], at, remote);
      if (response.status !== 200) return response;
    }
    await options.memory.save(observed.memory);
    if (observed.forkedAt !== undefined)
      tell.logLine?.(
        `stacks observer: block ${at} (burn height ${observed.block.burnHeight}) forks the chain from burn height ${observed.forkedAt}`,
      );
    return ok({ ok: true, events: events.length });
  }

  function onRequest(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '/').split('?')[0]!;
    if (req.method !== 'POST' || SERVICE_PATHS.test(path)) {
      req.resume();
      reply(
        res,
        problem(404, 'not_found', "this listener serves a Stacks node's event observer paths only"),
      );
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let tooLarge = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BLOCK_BODY) tooLarge = true;
      else if (path === '/new_block') chunks.push(chunk);
    });
    req.once('end', () => {
      if (path !== '/new_block') {
        reply(res, ok({ ok: true }));
        return;
      }
      if (tooLarge) {
        skip(`a /new_block body over ${MAX_BLOCK_BODY} bytes`);
        reply(res, ok({ ok: true, skipped: 'too large' }));
        return;
      }
      let body: unknown;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        // Emily's sidecar forwards the payload as a JSON string holding it.
        if (typeof body === 'string') body = JSON.parse(body);
      } catch (e) {
        reply(res, problem(400, 'invalid_json', `the body is not JSON: ${(e as Error).message}`));
        return;
      }
      const run = queue.then(() => newBlock(body, req.socket.remoteAddress));
      queue = run.catch(() => undefined);
      run.then(
        (response) => reply(res, response),
        (e: unknown) => {
          warn(`stacks observer: a block could not be recorded: ${(e as Error).message}`);
          reply(res, problem(503, 'store_unavailable', (e as Error).message));
        },
      );
    });
  }

  const server: Server = createServer(onRequest);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    get skipped() {
      return skipped;
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await queue;
      await options.memory.close?.();
    },
  };
}
