/**
 * The reserves reader (`--bitcoin-rpc`): after each burn block the service applies (its tip
 * moves up), and once at start, it reads the BTC the signers hold with `scantxoutset` over
 * their descriptors and applies `reservesObserved { total, height }` through the service's
 * port, as the operator `bitcoin-reader` (the chain scope alone). Never two readings at once:
 * blocks that come while one runs make one more reading after it. A reading that fails (the
 * node down, a refusal, an answer that is no scan) leaves the reserves as they were (they go
 * stale, and the limits fail closed while the check is on), is counted, and is alerted once
 * per outage; nothing of it reaches the Stacks feed, which never waits for a reading.
 * Node-only.
 */
import { type BatchAuthor, chainView, type Notice, PegLimitsError, type Service } from 'peg-limits';
import type { BitcoinRpc } from './bitcoin-rpc.js';

// A reading that could not be made or kept, for the reader's own warning.
class NoReading extends PegLimitsError {
  constructor(message: string) {
    super('reserves_not_read', message);
  }
}

/** The operator the reader writes as. */
export const BITCOIN_READER: BatchAuthor = { name: 'bitcoin-reader', scopes: ['chain'] };

/** What the reader needs. */
interface ReservesReaderOptions {
  readonly service: Service;
  readonly rpc: BitcoinRpc;
  /**
   * The descriptors to scan now: `--reserves-descriptor`, or one for each aggregate key the
   * registry has had. An empty list is a failed reading (no wallet is known yet).
   */
  readonly descriptors: () => Promise<ReadonlyArray<string>>;
  /** Where it says what went wrong, and to whom an outage is alerted. */
  readonly warn?: ((line: string) => void) | undefined;
  readonly onNotice?: ((notice: Notice) => void) | undefined;
}

/** A running reader. */
export class ReservesReader {
  readonly #options: ReservesReaderOptions;
  readonly #stop: () => void;
  #tip: number | null;
  #running: Promise<void> | undefined;
  #again = false;
  #closed = false;
  #readings = 0;
  #failures = 0;
  #outage = false;

  constructor(options: ReservesReaderOptions) {
    this.#options = options;
    this.#tip = chainView(options.service.state).tip;
    this.#stop = options.service.watch((state) => {
      const tip = chainView(state).tip;
      if (tip !== null && (this.#tip === null || tip > this.#tip)) {
        this.#tip = tip;
        this.read();
      }
    });
  }

  /** Readings applied so far (`peg_limits_reserves_readings_total`). */
  get readings(): number {
    return this.#readings;
  }

  /** Readings that failed so far (`peg_limits_bitcoin_rpc_failures_total`). */
  get failures(): number {
    return this.#failures;
  }

  /** Reads now, or once more after the reading under way; resolves once that one is done. */
  read(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    if (this.#running !== undefined) {
      this.#again = true;
      return this.#running;
    }
    this.#running = this.#loop().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Stops reading; resolves once the reading under way is done. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#stop();
    await this.#running;
  }

  async #loop(): Promise<void> {
    do {
      this.#again = false;
      await this.#once();
    } while (this.#again && !this.#closed);
  }

  async #once(): Promise<void> {
    const { rpc, service } = this.#options;
    try {
      const descriptors = await this.#options.descriptors();
      if (descriptors.length === 0)
        throw new NoReading(
          "no wallet to scan yet: the registry's aggregate key is not known (--stacks-rpc reads it; --reserves-descriptor names one)",
        );
      const scan = await rpc.scan(descriptors);
      if (this.#closed) return;
      const outcome = await service.applyBatch({
        events: [{ type: 'reservesObserved', total: scan.total, height: scan.height }],
        operator: BITCOIN_READER,
        requestId: `reserves:${scan.height}`,
      });
      if (outcome.outcome === 'refused')
        throw new NoReading(`the reading was refused: ${outcome.error.message}`);
      this.#readings++;
      if (this.#outage) {
        this.#outage = false;
        this.#options.warn?.(
          `bitcoin reader: ${rpc.shown} answers again: reserves ${scan.total} at height ${scan.height}`,
        );
        this.#options.onNotice?.({
          type: 'bitcoinRpcRecovered',
          total: scan.total,
          height: scan.height,
        });
      }
    } catch (e) {
      this.#failures++;
      const reason = (e as Error).message;
      this.#options.warn?.(
        `warning: bitcoin reader: no reading of the reserves (${reason}); they go stale, and with the check on the limits fail closed`,
      );
      if (!this.#outage) {
        this.#outage = true;
        this.#options.onNotice?.({ type: 'bitcoinRpcFailed', reason });
      }
    }
  }
}
