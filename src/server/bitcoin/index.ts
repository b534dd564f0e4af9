/**
 * The base chain's side of the server: Bitcoin Core's JSON-RPC, and the reserves reader that
 * reads the BTC backing the peg after each burn block and applies it through the service's
 * port. Imports `ops/`. Node-only.
 * @packageDocumentation
 */
export { BitcoinRpc, BitcoinRpcError, signersDescriptor } from './bitcoin-rpc.js';
export { BITCOIN_READER, ReservesReader } from './reserves-reader.js';
