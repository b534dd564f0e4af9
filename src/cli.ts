#!/usr/bin/env node
/**
 * The `peg-limits` command: `peg-limits serve [options]` (see `peg-limits --help`).
 */
import { serveCommand } from './command.js';

serveCommand(process.argv.slice(2)).catch((e: unknown) => {
  process.stderr.write(`peg-limits: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(2);
});
