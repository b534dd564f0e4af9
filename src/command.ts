/**
 * The `peg-limits` command as a function, behind the binary (`cli.ts`). Built as an entry
 * the package's `exports` do not list: `serveCommand` may exit the process, so it is no
 * part of the public API. Its hooks let a test run the real command on a journal file
 * whose flushes fail.
 * @internal
 * @packageDocumentation
 */
export { type CommandHooks, serveCommand } from './server/cli/index.js';
export { openNodeJournalFile } from './server/data-folder/index.js';
