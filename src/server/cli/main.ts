/**
 * The `peg-limits` command as a function, so that it can be run with an injected journal
 * file: the subcommand of `argv` and its file (`serve` and `migrate-journal` read the same
 * flags). Node-only.
 */
import { auditCommand } from './audit-command.js';
import { migrateJournalCommand } from './migrate-command.js';
import { fail, USAGE } from './options.js';
import { type CommandHooks, serve } from './serve-command.js';
import { readSettings } from './settings.js';
import { tokenCommand } from './token-command.js';

export type { CommandHooks } from './serve-command.js';

/** Runs `peg-limits <argv>`. */
export async function serveCommand(
  argv: ReadonlyArray<string>,
  hooks: CommandHooks = {},
): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === undefined) {
    process.stdout.write(`${USAGE}\n`);
    if (command === undefined) process.exitCode = 2;
    return;
  }
  if (command === 'token') return tokenCommand(rest);
  if (command === 'audit') return auditCommand(rest);
  if (command !== 'serve' && command !== 'migrate-journal')
    fail(`unknown command "${command}"\n${USAGE}`);
  const settings = await readSettings(rest);
  if (settings === undefined) return;
  if (command === 'migrate-journal') return migrateJournalCommand(settings);
  return serve(settings, hooks);
}
