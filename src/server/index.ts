/**
 * `peg-limits/server`: the Node-only adapters: the event logs (the data folder's snapshot
 * and journal, and the log on PostgreSQL), the configuration loader and the HTTP server behind `peg-limits serve`.
 * @packageDocumentation
 */

export {
  ALERT_MAX_DELAY_MS,
  ALERT_TIMEOUT_MS,
  type AlertBody,
  type AlertCursors,
  type AlertOptions,
  type AlertSource,
  type Alerts,
  createAlerts,
  isAlertUrl,
  memoryCursors,
  signature,
} from './alerts.js';
export { type CommandHooks, serveCommand, USAGE } from './command.js';
export {
  DEFAULT_SERVER_CONFIG,
  loadConfig,
  type ServerConfig,
  serverConfigFrom,
  stateFromConfig,
} from './config.js';
export {
  type DataLog,
  type DataLogOptions,
  DEFAULT_SNAPSHOT_EVERY,
  FlushError,
  JOURNAL_FILE,
  type JournalFile,
  type OpenJournalFile,
  openDataLog,
  openNodeJournalFile,
  SNAPSHOT_FILE,
  StoreError,
} from './data-log.js';
export {
  type CommandLogger,
  createLogger,
  type LogFormat,
  LoggerUnavailable,
  type RequestLine,
} from './logger.js';
export {
  createMetrics,
  type MetricsSource,
  MetricsUnavailable,
  type ServerMetrics,
} from './metrics.js';
export { type DurableBatch, observeAppends } from './observed-log.js';
export {
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  DEFAULT_SNAPSHOT_SLICE,
  migrateToPg,
  openPgLog,
  PG_SCHEMA_VERSION,
  type PgLog,
  PgLogError,
  type PgLogOptions,
} from './pg-log.js';
export {
  DEFAULT_SERVER_LIMITS,
  type RunningServer,
  type ServerLimits,
  type ServerOptions,
  startServer,
} from './serve.js';
