/**
 * The record of what the service did: the audit trail's records (made, read, linked), what
 * an operator is told of a batch, the alerts that follow the trail, and the pending changes
 * told in the server's log. Imports `ops/` only. Node-only.
 * @packageDocumentation
 */
export {
  type AlertCursors,
  type AlertOptions,
  type Alerts,
  createAlerts,
  isAlertUrl,
  MIN_ALERT_SECRET_LENGTH,
  memoryCursors,
} from './alerts.js';
export {
  type AuditRecord,
  checkLink,
  makeRecord,
  readRecord,
  recordPosition,
  verifyTrail,
  ZERO_HASH,
} from './audit.js';
export { recordChanges } from './change-record.js';
