// The reserves reader (src/server/bitcoin/reserves-reader.ts) over a service in memory and a
// double of Bitcoin Core: a reading after each burn block, never two at once, through the
// service's port; a failing node leaves the reserves stale, is counted and alerted once per
// outage, and never throws.
import { afterAll, beforeAll, expect, test } from 'vitest';
import {
  chainView,
  createLimitsState,
  createService,
  pegIntegrity,
  type Service,
} from '../../../src/index.js';
import {
  BitcoinRpc,
  ReservesReader,
  signersDescriptor,
} from '../../../src/server/bitcoin/index.js';
import { type Bitcoind, startBitcoind } from '../../support/bitcoind.js';
import { waitFor } from '../../support/proc.js';

const WALLET = signersDescriptor(`02${'33'.repeat(32)}`);
let node: Bitcoind;
beforeAll(async () => {
  node = await startBitcoind();
});
afterAll(() => node.close());

const feeder = { name: 'feeder', scopes: ['chain'] as const };
const block = (service: Service, height: number) =>
  service.applyBatch({ events: [{ type: 'blockConnected', height }], operator: feeder });

test('a reading after each burn block, through the port, and blocks that come during one make one reading more', async () => {
  const service = createService({ state: createLimitsState() });
  node.fault = 'none';
  node.wallets.set(WALLET, 7n);
  node.height = 100;
  const scans = node.scans.length;
  const reader = new ReservesReader({
    service,
    rpc: new BitcoinRpc({ url: node.urlWithPassword }),
    descriptors: async () => [WALLET],
  });
  try {
    await block(service, 100);
    await waitFor(() => reader.readings === 1, 5000);
    expect(pegIntegrity(service.state)).toMatchObject({ reserves: 7n, reservesHeight: 100 });
    // Three blocks at once: one reading under way, one more after it, never three.
    node.wallets.set(WALLET, 9n);
    node.height = 103;
    await Promise.all([block(service, 101), block(service, 102), block(service, 103)]);
    await waitFor(() => pegIntegrity(service.state).reservesHeight === 103, 5000);
    await reader.read();
    expect(node.scans.length - scans).toBeLessThanOrEqual(4);
    expect(pegIntegrity(service.state).reserves).toBe(9n);
  } finally {
    await reader.close();
  }
});

test('a node that fails leaves the reserves as they were: counted, warned, alerted once per outage, and recovered', async () => {
  const service = createService({ state: createLimitsState() });
  const alerts: Array<Record<string, unknown>> = [];
  const warnings: string[] = [];
  node.wallets.set(WALLET, 5n);
  node.height = 10;
  node.fault = 'none';
  const reader = new ReservesReader({
    service,
    rpc: new BitcoinRpc({ url: node.urlWithPassword, timeoutMs: 2000 }),
    descriptors: async () => [WALLET],
    warn: (line) => warnings.push(line),
    onNotice: (a) => alerts.push(a),
  });
  try {
    await reader.read();
    expect(pegIntegrity(service.state).reserves).toBe(5n);
    for (const fault of ['down', 'error', 'unsuccessful', 'garbage'] as const) {
      node.fault = fault;
      node.wallets.set(WALLET, 1_000n);
      await reader.read();
    }
    expect(reader.failures).toBe(4);
    expect(pegIntegrity(service.state).reserves).toBe(5n);
    expect(alerts.map((a) => a.type)).toEqual(['bitcoinRpcFailed']);
    expect(warnings).toHaveLength(4);
    expect(warnings.join('\n')).not.toMatch(/pw-/);
    node.fault = 'none';
    await reader.read();
    expect(pegIntegrity(service.state).reserves).toBe(1_000n);
    expect(alerts.map((a) => a.type)).toEqual(['bitcoinRpcFailed', 'bitcoinRpcRecovered']);
    // No wallet known yet is a failed reading too, never a reading of zero.
    const none = new ReservesReader({
      service,
      rpc: new BitcoinRpc({ url: node.urlWithPassword }),
      descriptors: async () => [],
      warn: (line) => warnings.push(line),
    });
    await none.read();
    await none.close();
    expect(none.failures).toBe(1);
    expect(warnings.at(-1)).toMatch(/no wallet to scan yet/);
    expect(pegIntegrity(service.state).reserves).toBe(1_000n);
  } finally {
    node.fault = 'none';
    await reader.close();
  }
});

test('a node that never answers holds no block: the service takes blocks while the reading waits, and the reading gives up at its timeout', async () => {
  const service = createService({ state: createLimitsState() });
  node.wallets.set(WALLET, 5n);
  node.height = 1;
  node.fault = 'hang';
  const reader = new ReservesReader({
    service,
    rpc: new BitcoinRpc({ url: node.urlWithPassword, timeoutMs: 1000 }),
    descriptors: async () => [WALLET],
    warn: () => {},
  });
  try {
    const started = performance.now();
    await block(service, 1);
    // The reading is under way and stuck; blocks still apply at once.
    for (let h = 2; h <= 20; h++) expect((await block(service, h)).outcome).toBe('applied');
    expect(performance.now() - started).toBeLessThan(1000);
    expect(chainView(service.state).tip).toBe(20);
    expect(pegIntegrity(service.state).reserves).toBeNull();
    await waitFor(() => reader.failures >= 1, 10_000);
    // The node answers again: the next reading (the one the blocks asked for may still have
    // met the silent node) is kept.
    node.fault = 'none';
    await waitFor(async () => {
      await reader.read();
      return pegIntegrity(service.state).reservesHeight === 1;
    }, 10_000);
  } finally {
    node.fault = 'none';
    await reader.close();
  }
});
