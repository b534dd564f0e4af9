/**
 * The event log on PostgreSQL that replicas share: the connection, the tables, the batch
 * rows, one replica's follower and write transaction, and the audit trail's rows. Imports
 * `ops/` and `record/`. Node-only.
 * @packageDocumentation
 */
export { connectClient } from './connect.js';
export {
  DEFAULT_KEEP_BATCHES,
  DEFAULT_PG_SNAPSHOT_EVERY,
  migrateToPg,
  openPgLog,
  type PgLog,
  PgLogError,
  type PgLogOptions,
} from './pg-log.js';
export { pgAlertCursors, storeTrail } from './trail.js';
