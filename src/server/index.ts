/**
 * `peg-limits/server`: the Node-only adapters: the journal, the configuration loader and
 * the HTTP server behind `peg-limits serve`.
 * @packageDocumentation
 */
export { DEFAULT_SERVER_CONFIG, loadConfig, stateFromConfig } from './config.js';
export { JOURNAL_FILE, type Journal, JournalError, openJournal } from './journal.js';
export { type RunningServer, type ServerOptions, startServer } from './serve.js';
