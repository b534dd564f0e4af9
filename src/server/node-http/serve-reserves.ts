/**
 * The server's side of the reserves reader (`--bitcoin-rpc`): what it scans (the descriptors
 * given, or the signers' wallet of each aggregate key the Stacks observer knows), what the
 * metrics read of it, and its start once the server listens. Node-only.
 */
import type { Notice, Service } from 'peg-limits';
import { type BitcoinRpc, ReservesReader, signersDescriptor } from '../bitcoin/index.js';
import type { StacksObserver } from '../stacks/index.js';

/** The reserves reader's options of the server. */
export interface ReservesOptions {
  /** Bitcoin Core's JSON-RPC. */
  readonly rpc: BitcoinRpc;
  /** The descriptors to scan (`--reserves-descriptor`): they replace the registry's keys. */
  readonly descriptors?: ReadonlyArray<string> | undefined;
}

// What of the server's options the reader's wiring reads (off when undefined).
type ReaderOptions = {
  readonly reserves?: ReservesOptions | undefined;
  readonly warn?: ((line: string) => void) | undefined;
};

/** What the metrics read of the reader (0 while it is off: the metrics exist from the start). */
export function reserveSources(reader: () => ReservesReader | undefined) {
  return {
    reservesReadings: () => reader()?.readings ?? 0,
    bitcoinRpcFailures: () => reader()?.failures ?? 0,
  };
}

/**
 * Starts the reader over the service, and its first reading (warning where the server warns,
 * alerting through `onNotice`); undefined when it is off.
 */
export function startReserves(
  options: ReaderOptions,
  service: Service,
  observer: () => StacksObserver | undefined,
  onNotice: (notice: Notice) => void,
): ReservesReader | undefined {
  const reserves = options.reserves;
  if (reserves === undefined) return undefined;
  const given = reserves.descriptors;
  const reader = new ReservesReader({
    service,
    rpc: reserves.rpc,
    descriptors:
      given !== undefined && given.length > 0
        ? () => Promise.resolve(given)
        : async () => ((await observer()?.aggregateKeys()) ?? []).map(signersDescriptor),
    warn: options.warn,
    onNotice,
  });
  reader.read().catch(() => undefined);
  return reader;
}
