/**
 * A small client of a Stacks node's RPC (`serve --stacks-rpc URL`), with the paths and
 * bodies the sBTC signer uses, each read as of a given block (`?tip=<index_block_hash>`):
 * `GET /v2/data_var/…/last-withdrawal-request-id`, `POST /v2/contracts/call-read/…`
 * (`get-withdrawal-request`, `get-total-supply`), `POST /v2/map_entry/…` and `GET /v2/info`.
 * Clarity values travel as hex; `@stacks/transactions` encodes the arguments and decodes
 * the answers (passed in). Every call is bounded in time; an answer that is not what the
 * node answers is refused, never guessed at. Node-only.
 */
import { PegLimitsError } from 'peg-limits';
import {
  aggregateKeyOfClarity,
  type ClarityValue,
  type DecodeClarity,
  NodeAnswerError,
  okUintOfClarity,
  type RegistryRequest,
  requestOfClarity,
  reversedHex,
  uintOfClarity,
} from '../../internal.js';
import { redactUrl } from '../ops/index.js';

/** What the client needs to speak Clarity. */
export interface ClarityCodec {
  readonly decode: DecodeClarity;
  /** A `uint` argument, serialized as hex (no `0x`). */
  readonly encodeUint: (value: bigint) => string;
  /** A `buff` argument given as hex (no `0x`), serialized as hex (no `0x`). */
  readonly encodeBuffer: (hex: string) => string;
}

/** Options of {@link StacksRpc}. */
interface StacksRpcOptions {
  /** The node's RPC, `http://host:20443`. */
  readonly url: string;
  /** The registry contract (`ADDRESS.sbtc-registry`); the token is `ADDRESS.sbtc-token`. */
  readonly registry: string;
  readonly codec: ClarityCodec;
  /** The most one call may take (default 5 s). */
  readonly timeoutMs?: number | undefined;
  readonly fetch?: typeof fetch | undefined;
}

/** What `GET /v2/info` says of the node's view of the chains. */
interface NodeInfo {
  readonly burnBlockHeight: number;
  readonly stacksTipHeight: number;
  /** The Stacks tip's block hash (hex, no `0x`). */
  readonly stacksTip: string;
}

/** A call to the node that failed: unreachable, timed out, refused, or an answer not understood. */
export class StacksRpcError extends PegLimitsError {
  override readonly name = 'StacksRpcError';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('stacks_rpc_failed', message, options);
  }
}

function hexOf(value: unknown): string | undefined {
  return typeof value === 'string' && /^(0x)?([0-9a-fA-F]{2})+$/.test(value)
    ? value.replace(/^0x/, '').toLowerCase()
    : undefined;
}

/** The node's RPC, as the observer reads it. */
export class StacksRpc {
  readonly #base: URL;
  readonly #shown: string;
  readonly #deployer: string;
  readonly #registryName: string;
  readonly #codec: ClarityCodec;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  readonly #headers: Readonly<Record<string, string>>;
  #calls = 0;

  constructor(options: StacksRpcOptions) {
    const base = new URL(options.url);
    // A user and password in the URL go in a Basic header, as curl sends them: fetch
    // refuses a URL that carries them.
    this.#headers =
      base.username === '' && base.password === ''
        ? {}
        : {
            authorization: `Basic ${Buffer.from(`${decodeURIComponent(base.username)}:${decodeURIComponent(base.password)}`).toString('base64')}`,
          };
    base.username = '';
    base.password = '';
    this.#base = base;
    this.#shown = redactUrl(options.url, { query: true });
    const [deployer, name] = options.registry.split('.');
    if (deployer === undefined || name === undefined)
      throw new StacksRpcError(`the registry ${options.registry} is not ADDRESS.name`);
    this.#deployer = deployer;
    this.#registryName = name;
    this.#codec = options.codec;
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#fetch = options.fetch ?? fetch;
  }

  /** Calls made so far. */
  get calls(): number {
    return this.#calls;
  }

  /** The token contract next to the registry. */
  get token(): string {
    return `${this.#deployer}.sbtc-token`;
  }

  /** `GET /v2/info`. */
  async info(): Promise<NodeInfo> {
    const body = await this.#call('GET', '/v2/info');
    const burn = body.burn_block_height;
    const height = body.stacks_tip_height;
    const tip = hexOf(body.stacks_tip);
    if (!Number.isSafeInteger(burn) || !Number.isSafeInteger(height) || tip === undefined)
      throw new StacksRpcError(
        `${this.#shown}/v2/info: no burn_block_height, stacks_tip_height or stacks_tip`,
      );
    return { burnBlockHeight: burn as number, stacksTipHeight: height as number, stacksTip: tip };
  }

  /** The registry's `last-withdrawal-request-id` as of the block `tip`. */
  async lastWithdrawalRequestId(tip: string): Promise<bigint> {
    const body = await this.#call(
      'GET',
      `/v2/data_var/${this.#deployer}/${this.#registryName}/last-withdrawal-request-id?proof=0&tip=${tip}`,
    );
    return this.#read(() => uintOfClarity(this.#clarity(body.data), 'last-withdrawal-request-id'));
  }

  /** `get-withdrawal-request(id)` as of the block `tip`: the request, or `null` for none. */
  async withdrawalRequest(id: bigint, tip: string): Promise<RegistryRequest | null> {
    const value = await this.#callRead(this.#registryName, 'get-withdrawal-request', tip, [
      this.#codec.encodeUint(id),
    ]);
    return this.#read(() => requestOfClarity(id, value));
  }

  /** `sbtc-token.get-total-supply` (the token and the locked token) as of the block `tip`. */
  async totalSupply(tip: string): Promise<bigint> {
    const value = await this.#callRead('sbtc-token', 'get-total-supply', tip, []);
    return this.#read(() => okUintOfClarity(value, 'get-total-supply'));
  }

  /**
   * The registry's current aggregate key as of the block `tip`
   * (`get-current-aggregate-pubkey`), compressed, hex; `null` before any key was set.
   */
  async currentAggregateKey(tip: string): Promise<string | null> {
    const value = await this.#callRead(this.#registryName, 'get-current-aggregate-pubkey', tip, []);
    return this.#read(() => aggregateKeyOfClarity(value, 'get-current-aggregate-pubkey'));
  }

  /**
   * The recipient of a completed deposit as of the block `tip`, from the registry's
   * `get-completed-deposit(txid, vout-index)` (the txid as Bitcoin Core displays it: its bytes
   * are reversed for the contract), as a principal's text; `null` when the registry has none.
   */
  async completedDepositRecipient(txid: string, vout: bigint, tip: string): Promise<string | null> {
    const value = await this.#callRead(this.#registryName, 'get-completed-deposit', tip, [
      this.#codec.encodeBuffer(reversedHex(txid)),
      this.#codec.encodeUint(vout),
    ]);
    return this.#read(() => {
      if (value.type === 'none') return null;
      const entry = value.type === 'some' ? (value.value as ClarityValue | undefined) : undefined;
      const recipient =
        entry?.type === 'tuple'
          ? (entry.value as Readonly<Record<string, ClarityValue>>).recipient
          : undefined;
      if (
        recipient === undefined ||
        (recipient.type !== 'address' && recipient.type !== 'contract') ||
        typeof recipient.value !== 'string'
      )
        throw new NodeAnswerError(`get-completed-deposit ${txid}:${vout} has no recipient`);
      return recipient.value;
    });
  }

  /**
   * The registry's `withdrawal-status` entry for `id` as of the block `tip`
   * (`POST /v2/map_entry`): `pending` when there is none, else accepted or rejected.
   */
  async withdrawalStatus(id: bigint, tip: string): Promise<RegistryRequest['status']> {
    const body = await this.#call(
      'POST',
      `/v2/map_entry/${this.#deployer}/${this.#registryName}/withdrawal-status?proof=0&tip=${tip}`,
      JSON.stringify(this.#codec.encodeUint(id)),
    );
    const value = this.#clarity(body.data);
    return this.#read(() => {
      if (value.type === 'none') return 'pending';
      const inner = value.type === 'some' ? (value.value as ClarityValue | undefined) : undefined;
      if (inner?.type === 'true') return 'accepted';
      if (inner?.type === 'false') return 'rejected';
      throw new NodeAnswerError(`withdrawal-status ${id} is not an optional bool`);
    });
  }

  async #callRead(
    contract: string,
    fn: string,
    tip: string,
    args: ReadonlyArray<string>,
  ): Promise<ClarityValue> {
    const body = await this.#call(
      'POST',
      `/v2/contracts/call-read/${this.#deployer}/${contract}/${fn}?tip=${tip}`,
      JSON.stringify({ sender: this.#deployer, arguments: args.map((a) => `0x${a}`) }),
    );
    if (body.okay !== true)
      throw new StacksRpcError(
        `${contract}.${fn}: the node did not run it: ${String(body.cause ?? 'no cause given').slice(0, 200)}`,
      );
    return this.#clarity(body.result);
  }

  #clarity(hex: unknown): ClarityValue {
    const h = hexOf(hex);
    if (h === undefined) throw new StacksRpcError('the node answered a value that is not hex');
    try {
      return this.#codec.decode(h);
    } catch (e) {
      throw new StacksRpcError(`the node answered a value that is not Clarity: ${String(e)}`);
    }
  }

  #read<T>(f: () => T): T {
    try {
      return f();
    } catch (e) {
      if (e instanceof NodeAnswerError) throw new StacksRpcError(e.message);
      throw e;
    }
  }

  async #call(
    method: 'GET' | 'POST',
    path: string,
    body?: string,
  ): Promise<Record<string, unknown>> {
    this.#calls++;
    const url = new URL(path, this.#base);
    const where = `${this.#shown.replace(/\/$/, '')}${path.split('?')[0]}`;
    let response: Response;
    try {
      response = await this.#fetch(url, {
        method,
        headers:
          body === undefined
            ? this.#headers
            : { ...this.#headers, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      const reason =
        (e as Error).name === 'TimeoutError'
          ? `no answer within ${this.#timeoutMs} ms`
          : `unreachable (${(e as Error & { cause?: { code?: string } }).cause?.code ?? (e as Error).name})`;
      throw new StacksRpcError(`${where}: ${reason}`);
    }
    let text: string;
    try {
      text = await response.text();
    } catch {
      throw new StacksRpcError(`${where}: the answer broke off`);
    }
    if (response.status !== 200) throw new StacksRpcError(`${where}: answered ${response.status}`);
    try {
      const parsed: unknown = JSON.parse(text);
      if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed))
        return parsed as Record<string, unknown>;
    } catch {
      // below
    }
    throw new StacksRpcError(`${where}: the answer is not a JSON object`);
  }
}
