/**
 * The Stacks node's event observer (`peg-limits serve --stacks-observer HOST:PORT`): a
 * second listener that serves only what a node posts. `POST /new_block` goes to the block
 * feed (`feed.ts`: the mapping, the start from the node's state, held blocks), whose
 * outcome, data, is turned into the node's answer here; the node's other paths are answered
 * 200 and ignored, and the service's own routes are not here.
 *
 * Answers the node can live with: it retries any answer but 200 for ever and, with its
 * default blocking dispatcher, stops meanwhile. So 200 once the block is durable (applied,
 * or held), and 200 for a payload or an event that cannot be used (logged, counted in
 * `peg_limits_observer_skipped_total`); 503 only while the store is unavailable; 400 for a
 * body that is not JSON. The listener has client limits of its own (header and body
 * time-outs, a small connection cap), so that nothing on the network can hold it.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type BatchAuthor, type HttpResponse, PegLimitsError, type Service } from 'peg-limits';
import {
  batchAnswer,
  type DecodeClarity,
  MAX_BLOCK_BODY,
  problem,
  ROUTES,
} from '../../internal.js';
import { loadPeer } from '../ops/index.js';
import { BlockFeed } from './feed.js';
import {
  type BlockFeedOptions,
  type BlockOutcome,
  type FeedTell,
  type HeldOp,
  type HeldOutcome,
  STACKS_NODE,
  STACKS_NODE_CONFIRMED,
} from './feed-parts.js';
import { blockPayloadOf } from './posted-block.js';
import type { ClarityCodec } from './rpc-client.js';

export { dataBlockMemory, pgBlockMemory } from './block-memory.js';

/** The operator the observer acts as (the chain scope alone). */
export const STACKS_NODE_OPERATOR = STACKS_NODE.name;

/**
 * The operator the observer acts as only to pass the chain bounds on a jump the node's own
 * RPC confirmed (chain and limits; it exists inside the process alone).
 */
export const STACKS_NODE_CONFIRMED_OPERATOR = STACKS_NODE_CONFIRMED.name;

/** Mainnet's sBTC registry contract. */
export const MAINNET_REGISTRY = 'SM3VDXK3WZZSA84XXFKAFAF15NNZX32CTSG82JFQ4.sbtc-registry';

/** The observer listener's client limits. */
const OBSERVER_LIMITS = {
  /** The most time a request's head may take. */
  headersTimeoutMs: 5_000,
  /** The most time a whole request (its body included) may take. */
  requestTimeoutMs: 30_000,
  /** How often the time-outs are checked. */
  checkEveryMs: 500,
  /**
   * Connections at once (a node keeps one): past it, a new connection closes the oldest one
   * that is not in a request (one stalled in its head, one idle), so that a crowd cannot
   * keep the node out; past `hardMaxConnections`, new ones are refused.
   */
  maxConnections: 8,
  hardMaxConnections: 64,
  keepAliveTimeoutMs: 5_000,
} as const;

/** Options of {@link startStacksObserver}: where it listens, and what its feed needs. */
export interface StacksObserverOptions extends BlockFeedOptions {
  readonly host: string;
  readonly port: number;
}

/** What is missing when `@stacks/transactions` is not installed. */
export class ObserverUnavailable extends PegLimitsError {
  override readonly name = 'ObserverUnavailable';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('observer_unavailable', message, options);
  }
}

/** `@stacks/transactions`' `hexToCV`, and `serializeCV(uintCV(n))` for the RPC's arguments. */
export async function loadClarityCodec(): Promise<ClarityCodec> {
  const stacks = await loadPeer<{
    hexToCV: DecodeClarity;
    serializeCV: (value: unknown) => string;
    uintCV: (value: bigint) => unknown;
    bufferCV: (value: Uint8Array) => unknown;
  }>(
    '@stacks/transactions',
    () => import('@stacks/transactions'),
    (hint) => new ObserverUnavailable(`--stacks-observer needs ${hint}`),
  );
  return {
    decode: (hex) => stacks.hexToCV(hex),
    encodeUint: (value) => stacks.serializeCV(stacks.uintCV(value)).replace(/^0x/, ''),
    encodeBuffer: (hex) =>
      stacks
        .serializeCV(stacks.bufferCV(Uint8Array.from(Buffer.from(hex, 'hex'))))
        .replace(/^0x/, ''),
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

/** A running observer listener. */
export interface StacksObserver {
  /** `http://host:port` */
  readonly url: string;
  /** Payloads and events skipped so far (`peg_limits_observer_skipped_total`). */
  readonly skipped: number;
  /** Blocks held, as this process last saw (`peg_limits_observer_held_blocks`). */
  readonly held: number;
  /** Starts from the node's state that failed (`peg_limits_observer_start_failures_total`). */
  readonly startFailures: number;
  /** Rejections the node did not show, skipped (`peg_limits_observer_rejections_not_shown_total`). */
  readonly rejectionsNotShown: number;
  /** An operator's request on the held blocks (`/admin/held`): `author` lists, releases or drops them. */
  heldBlocks(op: HeldOp, author: BatchAuthor): Promise<HeldOutcome>;
  /**
   * A block posted to the service's own port (`POST /new_block` with an operator's token,
   * as Emily's sidecar forwards it): the same feed as the observer's port, in the same
   * queue, written as the operator who posted it.
   */
  take(payload: unknown, author: BatchAuthor, remote: string | undefined): Promise<BlockOutcome>;
  /** The signers' aggregate keys the registry has had (compressed, hex): the wallets backing sBTC. */
  aggregateKeys(): Promise<ReadonlyArray<string>>;
  close(): Promise<void>;
}

// The first segments of the service's paths (`limits`, `admin`, `` for the dashboard …),
// from its route table: never served here, so that no one mistakes this port for the service.
const SERVICE_SEGMENTS = new Set(ROUTES.map((r) => firstSegment(r.pattern)));

function firstSegment(path: string): string {
  return path.split('?')[0]!.split('/')[1] ?? '';
}

function reply(res: ServerResponse, response: HttpResponse): void {
  res.writeHead(response.status, {
    ...response.headers,
    'content-length': Buffer.byteLength(response.body),
  });
  res.end(response.body);
}

/** A 200 answer with a JSON body. */
export function okJson(body: Readonly<Record<string, unknown>>): HttpResponse {
  return {
    status: 200,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  };
}

/**
 * What a node (or an operator who posted a block to the service's port) is answered for a
 * block: 200 once it is durable (applied, held, known, skipped), a refusal as the service
 * answers it.
 */
export function blockAnswer(outcome: BlockOutcome): HttpResponse {
  switch (outcome.kind) {
    case 'known':
      return okJson(
        outcome.held ? { ok: true, known: true, held: true } : { ok: true, known: true },
      );
    case 'skipped':
      return okJson({ ok: true, skipped: outcome.reason });
    case 'applied':
      return okJson({ ok: true, events: outcome.events });
    case 'held':
      return okJson({ ok: true, held: true });
    case 'confirmed':
      return okJson({ ok: true, confirmed: true });
    case 'refused':
      return batchAnswer(outcome.outcome);
  }
}

/** A posted body that is not JSON: 400 `invalid_json`, saying why. */
export function bodyNotJson(reason: string): HttpResponse {
  return problem(400, 'invalid_json', `the body is not JSON: ${reason}`);
}

/**
 * Opens the observer listener over a service, whose port (`Service.applyBatch`) its feed
 * applies each block's batch through as the operator `stacks-node` (and, with the RPC, as
 * `stacks-node-confirmed` on a jump the node confirms).
 */
export async function startStacksObserver(
  service: Service,
  options: StacksObserverOptions,
  tell: FeedTell,
): Promise<StacksObserver> {
  const feed = new BlockFeed(service, options, tell);
  await feed.open();
  const server: Server = createServer(
    {
      headersTimeout: OBSERVER_LIMITS.headersTimeoutMs,
      requestTimeout: OBSERVER_LIMITS.requestTimeoutMs,
      keepAliveTimeout: OBSERVER_LIMITS.keepAliveTimeoutMs,
      connectionsCheckingInterval: OBSERVER_LIMITS.checkEveryMs,
    },
    (req, res) => onRequest(feed, tell, req, res),
  );
  server.maxConnections = OBSERVER_LIMITS.hardMaxConnections;
  evictIdleAtCap(server, OBSERVER_LIMITS.maxConnections);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}`,
    get skipped() {
      return feed.skipped;
    },
    get held() {
      return feed.held;
    },
    get startFailures() {
      return feed.startFailures;
    },
    get rejectionsNotShown() {
      return feed.rejectionsNotShown;
    },
    heldBlocks: (op, author) => feed.heldBlocks(op, author),
    take: (payload, author, remote) => feed.take(payload, author, remote),
    aggregateKeys: () => feed.aggregateKeys(),
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await feed.settle();
      await options.memory.close?.();
    },
  };
}

// Past `cap` connections, each new one closes the oldest connection not in a request.
function evictIdleAtCap(server: Server, cap: number): void {
  const open = new Set<Socket>();
  const inRequest = new WeakSet<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
    if (open.size <= cap) return;
    for (const s of open)
      if (s !== socket && !inRequest.has(s)) {
        s.destroy();
        break;
      }
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    inRequest.add(req.socket);
    res.once('close', () => inRequest.delete(req.socket));
  });
}

function onRequest(
  feed: BlockFeed,
  tell: FeedTell,
  req: IncomingMessage,
  res: ServerResponse,
): void {
  const path = (req.url ?? '/').split('?')[0]!;
  if (req.method !== 'POST' || SERVICE_SEGMENTS.has(firstSegment(path))) {
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
      reply(res, okJson({ ok: true }));
      return;
    }
    if (tooLarge) {
      (tell.warn ?? tell.logLine)?.(
        `warning: stacks observer skipped a /new_block body over ${MAX_BLOCK_BODY} bytes`,
      );
      reply(res, okJson({ ok: true, skipped: 'too large' }));
      return;
    }
    const read = blockPayloadOf(Buffer.concat(chunks).toString('utf8'));
    if (!read.ok) {
      reply(res, bodyNotJson(read.reason));
      return;
    }
    feed.take(read.payload, STACKS_NODE, req.socket.remoteAddress).then(
      (outcome) => reply(res, blockAnswer(outcome)),
      (e: unknown) => {
        (tell.warn ?? tell.logLine)?.(
          `warning: stacks observer: a block could not be recorded: ${(e as Error).message}`,
        );
        reply(res, problem(503, 'store_unavailable', (e as Error).message));
      },
    );
  });
}
