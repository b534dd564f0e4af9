/**
 * `peg-limits/server`: the Node-only adapters: the embedded store (snapshot and journal),
 * the configuration loader and the HTTP server behind `peg-limits serve`.
 * @packageDocumentation
 */
export { type CommandHooks, serveCommand, USAGE } from './command.js';
export { DEFAULT_SERVER_CONFIG, loadConfig, stateFromConfig } from './config.js';
export {
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  migrateToPg,
  openPgStore,
  PG_SCHEMA_VERSION,
  type PgStore,
  PgStoreError,
  type PgStoreOptions,
} from './pg-store.js';
export {
  DEFAULT_SERVER_LIMITS,
  type RunningServer,
  type ServerLimits,
  type ServerOptions,
  startServer,
} from './serve.js';
export {
  DEFAULT_SNAPSHOT_EVERY,
  FlushError,
  JOURNAL_FILE,
  type JournalFile,
  type OpenJournalFile,
  openNodeJournalFile,
  openStore,
  SNAPSHOT_FILE,
  type Store,
  StoreError,
  type StoreOptions,
  type Written,
} from './store.js';
