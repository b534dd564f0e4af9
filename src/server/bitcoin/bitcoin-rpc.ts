/**
 * A client of Bitcoin Core's JSON-RPC, as the reserves reader uses it: `scantxoutset start`
 * over output descriptors (no wallet needed), its `total_amount` read exactly (a JSON number
 * in BTC, read as its decimal text, never as a float). It follows the RPC of Bitcoin Core 22
 * on (the `tr()` descriptors came with 22.0; the call and its answer are the same through
 * 28): `{ success, txouts, height, bestblock, unspents, total_amount }`. Credentials come in
 * the URL (`http://user:password@host:8332`) or in Bitcoin Core's cookie file (`.cookie`,
 * read at each call: the node writes a new one when it restarts); neither is ever printed.
 * Node-only.
 */
import { readFile } from 'node:fs/promises';
import { parse as parseLossless } from 'lossless-json';
import { PegLimitsError, parseAmount } from 'peg-limits';
import { redactUrl } from '../ops/index.js';

/** A call to Bitcoin Core that gave no reading: why, never with a credential in it. */
export class BitcoinRpcError extends PegLimitsError {
  override readonly name = 'BitcoinRpcError';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('bitcoin_rpc_failed', message, options);
  }
}

/** Options of {@link BitcoinRpc}. */
interface BitcoinRpcOptions {
  /** `http://host:8332`, with `user:password@` when it takes them. */
  readonly url: string;
  /** Bitcoin Core's cookie file (`<datadir>/.cookie`): read at each call, instead of the URL's credentials. */
  readonly cookieFile?: string | undefined;
  /** How long one call may take (default 120 s: a scan of the UTXO set takes tens of seconds on mainnet). */
  readonly timeoutMs?: number | undefined;
  /** The fetch to use (tests). */
  readonly fetch?: typeof fetch | undefined;
}

/** The reserves a scan found: the total in the smallest unit, and the height it was made at. */
interface ScanResult {
  readonly total: bigint;
  readonly height: number;
  /** How many unspent outputs it found. */
  readonly outputs: number;
}

/** Bitcoin Core's JSON-RPC. */
export class BitcoinRpc {
  readonly #url: URL;
  readonly #shown: string;
  readonly #basic: string | undefined;
  readonly #cookieFile: string | undefined;
  readonly #timeoutMs: number;
  readonly #fetch: typeof fetch;
  #id = 0;

  constructor(options: BitcoinRpcOptions) {
    const url = new URL(options.url);
    this.#basic =
      url.username === '' && url.password === ''
        ? undefined
        : `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}`;
    url.username = '';
    url.password = '';
    this.#url = url;
    this.#shown = redactUrl(options.url, { query: true });
    this.#cookieFile = options.cookieFile;
    this.#timeoutMs = options.timeoutMs ?? 120_000;
    this.#fetch = options.fetch ?? fetch;
  }

  /** Where it calls, as a log line may show it. */
  get shown(): string {
    return this.#shown;
  }

  /**
   * `scantxoutset start [descriptors]`: the outputs the descriptors hold in the UTXO set as
   * of the node's tip, their total read exactly. Rejects with {@link BitcoinRpcError} when
   * the node does not answer, refuses, or answers anything but a successful scan.
   */
  async scan(descriptors: ReadonlyArray<string>): Promise<ScanResult> {
    const result = await this.#call('scantxoutset', ['start', descriptors]);
    if (typeof result !== 'object' || result === null || Array.isArray(result))
      throw new BitcoinRpcError(`${this.#shown}: scantxoutset answered no object`);
    const r = result as Record<string, unknown>;
    if (r.success !== true)
      throw new BitcoinRpcError(
        `${this.#shown}: scantxoutset did not succeed (success: ${String(r.success)})`,
      );
    const total = typeof r.total_amount === 'string' ? r.total_amount : undefined;
    const amount = total === undefined ? undefined : parseAmount(total, 8);
    if (amount === undefined || !amount.ok || amount.amount < 0n)
      throw new BitcoinRpcError(
        `${this.#shown}: scantxoutset's total_amount is not an amount of BTC (${String(total).slice(0, 40)})`,
      );
    const height =
      typeof r.height === 'string' && /^\d{1,15}$/.test(r.height) ? Number(r.height) : undefined;
    if (height === undefined)
      throw new BitcoinRpcError(`${this.#shown}: scantxoutset's height is not a height`);
    const outputs = Array.isArray(r.unspents) ? r.unspents.length : 0;
    return { total: amount.amount, height, outputs };
  }

  // One call: its result, numbers kept as their decimal text.
  async #call(method: string, params: ReadonlyArray<unknown>): Promise<unknown> {
    const id = ++this.#id;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    const credentials = await this.#credentials();
    if (credentials !== undefined)
      headers.authorization = `Basic ${Buffer.from(credentials).toString('base64')}`;
    let response: Response;
    try {
      response = await this.#fetch(this.#url, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '1.0', id, method, params }),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      const reason =
        (e as Error).name === 'TimeoutError'
          ? `no answer within ${this.#timeoutMs} ms`
          : `unreachable (${(e as Error & { cause?: { code?: string } }).cause?.code ?? (e as Error).name})`;
      throw new BitcoinRpcError(`${this.#shown}: ${method}: ${reason}`);
    }
    let text: string;
    try {
      text = await response.text();
    } catch {
      throw new BitcoinRpcError(`${this.#shown}: ${method}: the answer broke off`);
    }
    if (response.status === 401 || response.status === 403)
      throw new BitcoinRpcError(
        `${this.#shown}: ${method}: the node refused the credentials (${response.status})`,
      );
    let body: unknown;
    try {
      // Every number as its text: an amount never passes through a float.
      body = parseLossless(text, null, (value: string) => value);
    } catch {
      throw new BitcoinRpcError(`${this.#shown}: ${method}: answered ${response.status}, not JSON`);
    }
    const reply = (typeof body === 'object' && body !== null ? body : {}) as Record<
      string,
      unknown
    >;
    const error = reply.error;
    if (error !== null && error !== undefined) {
      const e = error as { code?: unknown; message?: unknown };
      throw new BitcoinRpcError(
        `${this.#shown}: ${method}: error ${String(e.code)}: ${String(e.message).slice(0, 200)}`,
      );
    }
    if (response.status !== 200 || !('result' in reply))
      throw new BitcoinRpcError(
        `${this.#shown}: ${method}: answered ${response.status} without a result`,
      );
    return reply.result;
  }

  // The cookie file's `user:password` (read afresh: the node writes a new one at each
  // start), else the URL's.
  async #credentials(): Promise<string | undefined> {
    if (this.#cookieFile === undefined) return this.#basic;
    try {
      return (await readFile(this.#cookieFile, 'utf8')).trim();
    } catch (e) {
      throw new BitcoinRpcError(
        `the cookie file ${this.#cookieFile} cannot be read (${(e as NodeJS.ErrnoException).code ?? 'error'})`,
      );
    }
  }
}

/**
 * The output descriptor of the signers' wallet for an aggregate key (compressed, hex): the
 * key-path taproot of its x-only key, as the sBTC signer's `signers_script_pubkey` makes it
 * (`tr(<x-only key>)`: no script tree).
 */
export function signersDescriptor(key: string): string {
  return `tr(${key.slice(2)})`;
}
