/**
 * What running the server takes beside serving: the optional peer dependencies loaded when
 * first used, the command's log, the Prometheus metrics, secrets kept out of both, and the
 * log that tells an observer of each durable batch. Imports nothing of the other folders.
 * Node-only.
 * @packageDocumentation
 */
export { type CommandLogger, createLogger, LoggerUnavailable, type RequestLine } from './logger.js';
export { createMetrics, MetricsUnavailable, type ServerMetrics } from './metrics.js';
export { type DurableBatch, observeAppends } from './observed-log.js';
export { loadPeer } from './peers.js';
export { redactAlertUrl, redactStore, redactUrl } from './redact.js';
