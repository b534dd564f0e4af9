/**
 * A double of Bitcoin Core's JSON-RPC, answering `scantxoutset` as Bitcoin Core documents it
 * (22.0 on: `start` with output descriptors, `{ success, txouts, height, bestblock, unspents,
 * total_amount }`, amounts JSON numbers in BTC written with eight decimals, as its
 * `ValueFromAmount` writes them), behind Basic authentication (a user and password, or the
 * cookie file's `__cookie__:<hex>`), with the faults a node shows: down, silent, an RPC error, a scan
 * that does not succeed, an answer that is not JSON-RPC. Bitcoin Core is in neither of this
 * machine's package sources, so the reader is tested against this double.
 */
import { randomBytes } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** What the double answers with now. */
export type BitcoindFault = 'none' | 'down' | 'hang' | 'error' | 'unsuccessful' | 'garbage';

/** A running double. */
export interface Bitcoind {
  /** `http://127.0.0.1:PORT` (no credentials). */
  readonly url: string;
  /** The same with the user and password in it. */
  readonly urlWithPassword: string;
  /** A cookie file in `dir`, as the node writes it at start. */
  cookie(dir: string): string;
  /** The satoshis each descriptor's outputs hold. */
  readonly wallets: Map<string, bigint>;
  /** The height a scan reports. */
  height: number;
  fault: BitcoindFault;
  /** The descriptors of every scan asked, in order. */
  readonly scans: string[][];
  /** Requests refused for their credentials. */
  readonly refused: number;
  close(): Promise<void>;
}

// An amount in BTC as Bitcoin Core's ValueFromAmount writes it: sign, units, eight decimals.
function btc(sats: bigint): string {
  const sign = sats < 0n ? '-' : '';
  const abs = sats < 0n ? -sats : sats;
  return `${sign}${abs / 100_000_000n}.${(abs % 100_000_000n).toString().padStart(8, '0')}`;
}

/** Starts the double on loopback. */
export async function startBitcoind(): Promise<Bitcoind> {
  const user = 'rpcuser';
  const password = `pw-${randomBytes(8).toString('hex')}`;
  const cookieSecret = randomBytes(32).toString('hex');
  const accepted = new Set([
    Buffer.from(`${user}:${password}`).toString('base64'),
    Buffer.from(`__cookie__:${cookieSecret}`).toString('base64'),
  ]);
  const state = {
    wallets: new Map<string, bigint>(),
    height: 0,
    fault: 'none' as BitcoindFault,
    scans: [] as string[][],
    refused: 0,
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const reply = (status: number, text: string) => {
        res.writeHead(status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
        });
        res.end(text);
      };
      if (state.fault === 'down') {
        req.socket.destroy();
        return;
      }
      // A node stuck in a long scan: the request is read, no answer ever comes.
      if (state.fault === 'hang') return;
      const auth = /^Basic (.+)$/.exec(req.headers.authorization ?? '')?.[1];
      if (auth === undefined || !accepted.has(auth)) {
        state.refused++;
        res.writeHead(401, { 'www-authenticate': 'Basic realm="jsonrpc"' });
        res.end();
        return;
      }
      if (state.fault === 'garbage') {
        reply(200, '<html>a proxy</html>');
        return;
      }
      const call = JSON.parse(body) as { id: unknown; method: string; params: unknown[] };
      if (call.method !== 'scantxoutset' || call.params[0] !== 'start') {
        reply(
          200,
          JSON.stringify({
            result: null,
            error: { code: -32601, message: 'Method not found' },
            id: call.id,
          }),
        );
        return;
      }
      if (state.fault === 'error') {
        reply(
          500,
          JSON.stringify({
            result: null,
            error: {
              code: -8,
              message: 'Scan already in progress, use action "abort" or "status"',
            },
            id: call.id,
          }),
        );
        return;
      }
      const descriptors = call.params[1] as string[];
      state.scans.push(descriptors);
      const unspents = descriptors
        .filter((d) => (state.wallets.get(d) ?? 0n) > 0n)
        .map((d, i) => ({
          txid: `${i}`.padStart(64, 'a'),
          vout: 0,
          scriptPubKey: `5120${'00'.repeat(32)}`,
          desc: `raw${d}#checksum`,
          amount: '@@' + btc(state.wallets.get(d)!) + '@@',
          coinbase: false,
          height: state.height,
          blockhash: `${state.height}`.padStart(64, '0'),
        }));
      const total = descriptors.reduce((sum, d) => sum + (state.wallets.get(d) ?? 0n), 0n);
      const result = {
        success: state.fault !== 'unsuccessful',
        txouts: 123_456_789,
        height: state.height,
        bestblock: `${state.height}`.padStart(64, '0'),
        unspents,
        total_amount: `@@${btc(total)}@@`,
      };
      // The amounts are JSON numbers with their eight decimals, as the node writes them.
      const text = JSON.stringify({ result, error: null, id: call.id }).replace(
        /"@@([-0-9.]+)@@"/g,
        '$1',
      );
      reply(200, text);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(state, {
    url: `http://127.0.0.1:${port}`,
    urlWithPassword: `http://${user}:${password}@127.0.0.1:${port}`,
    cookie(dir: string) {
      const file = join(dir, '.cookie');
      writeFileSync(file, `__cookie__:${cookieSecret}`);
      return file;
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
    },
  });
}
