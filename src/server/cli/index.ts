/**
 * The `peg-limits` command: one file a subcommand (`serve` and `migrate-journal`, `token`,
 * `audit`), one option table that builds the parser and the usage text, and the
 * configuration file. Imports every other folder. Node-only.
 * @packageDocumentation
 */
export { type CommandHooks, serveCommand } from './main.js';
