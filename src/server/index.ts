/**
 * `peg-limits/server`: the Node-only adapters: the HTTP server behind `peg-limits serve`
 * (`startServer`) and the two event logs it keeps its changes in, the data folder's snapshot
 * and journal (`openDataLog`) and the log on PostgreSQL that replicas share (`openPgLog`).
 * Nothing here exits the process; the command itself is the `peg-limits` binary.
 * @packageDocumentation
 */

// The errors of the EventLog contract, for a log written elsewhere (also in `peg-limits`).
export { LogBusy, LogConflict, LogUnavailable, PegLimitsError } from 'peg-limits';
export {
  type DataLog,
  type DataLogOptions,
  FlushError,
  type JournalFile,
  type OpenJournalFile,
  openDataLog,
  StoreError,
} from './data-folder/index.js';
export {
  DEFAULT_SERVER_LIMITS,
  type RunningServer,
  type ServerLimits,
  type ServerOptions,
  startServer,
} from './node-http/index.js';
export type { RequestLine } from './ops/index.js';
export { openPgLog, type PgLog, PgLogError, type PgLogOptions } from './postgres/index.js';
export type { AlertCursors, AlertOptions } from './record/index.js';
