/**
 * The metrics of the peg's backing, exported from the start whether or not the check is on
 * (alerting rules can read them): the check's state, one series a state; the breaker; the
 * pegged total, the reserves and what is unbacked; and the base chain's reader (readings
 * applied, and calls that failed). Node-only.
 */

import { type LimitsState, pegIntegrity } from 'peg-limits';
import type * as Prom from 'prom-client';

/** What the integrity metrics read. */
interface IntegritySource {
  /** The state reads see. */
  state(): LimitsState;
  /** Readings of the reserves applied so far (0 without a reader). */
  readonly reservesReadings?: (() => number) | undefined;
  /** Calls to the base chain's node that failed so far (0 without a reader). */
  readonly bitcoinRpcFailures?: (() => number) | undefined;
}

const STATES = ['off', 'backed', 'reserves_unknown', 'tripped'] as const;

const EXACT = 'A float64: exact below 2^53 (90 million BTC in satoshis).';

/** Registers the integrity metrics in `register`. */
export function integrityMetrics(
  prom: typeof Prom,
  register: Prom.Registry,
  gauge: (name: string, help: string, read: () => number | undefined) => unknown,
  source: IntegritySource,
): void {
  const now = () => pegIntegrity(source.state());
  new prom.Gauge({
    name: 'peg_limits_peg_integrity',
    help: "1 for the state the check of the peg's backing is in (off, backed, reserves_unknown, tripped), 0 for the others; while reserves_unknown or tripped, every cap reads 0.",
    labelNames: ['state'],
    registers: [register],
    collect() {
      const state = now().state;
      for (const s of STATES) this.set({ state: s }, s === state ? 1 : 0);
    },
  });
  const amount = (v: bigint | null) => (v === null ? undefined : Number(v));
  gauge(
    'peg_limits_peg_breaker_tripped',
    '1 while the breaker is tripped (until an operator clears it), else 0.',
    () => (now().tripped === null ? 0 : 1),
  );
  gauge(
    'peg_limits_pegged_supply',
    `The pegged total last observed (the supply of the pegged token). ${EXACT}`,
    () => Number(now().peggedTotal),
  );
  gauge('peg_limits_reserves', `The reserves last read; absent before any reading. ${EXACT}`, () =>
    amount(now().reserves),
  );
  gauge(
    'peg_limits_reserves_height',
    'The burn height the reserves were last read at; absent before any reading.',
    () => now().reservesHeight ?? undefined,
  );
  gauge(
    'peg_limits_unbacked',
    `The pegged total less the reserves (0 at least) while they are known; absent while unknown. ${EXACT}`,
    () => amount(now().unbacked),
  );
  gauge(
    'peg_limits_max_unbacked',
    `How much may be unbacked before the breaker trips; absent while the check is off. ${EXACT}`,
    () => amount(now().maxUnbacked),
  );
  const counter = (name: string, help: string, read: () => number) =>
    new prom.Counter({
      name,
      help,
      registers: [register],
      collect() {
        this.reset();
        this.inc(read());
      },
    });
  counter(
    'peg_limits_reserves_readings_total',
    "Readings of the reserves from the base chain's node applied (--bitcoin-rpc); 0 without a reader.",
    () => source.reservesReadings?.() ?? 0,
  );
  counter(
    'peg_limits_bitcoin_rpc_failures_total',
    "Readings of the reserves that failed: the base chain's node did not answer, refused, or answered nonsense; 0 without a reader.",
    () => source.bitcoinRpcFailures?.() ?? 0,
  );
}
