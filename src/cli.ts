#!/usr/bin/env node
/**
 * The `peg-limits` command: `peg-limits serve [--host 127.0.0.1] [--port 8080]
 * [--config file.json] [--data dir] [--quiet]`.
 */
import { parseArgs } from 'node:util';
import { LimitsError } from 'peg-limits';
import { DEFAULT_SERVER_CONFIG, loadConfig, stateFromConfig } from './server/config.js';
import { JournalError } from './server/journal.js';
import { startServer } from './server/serve.js';

const USAGE = `usage: peg-limits serve [--host 127.0.0.1] [--port 8080] [--config file.json] [--data ./peg-limits-data] [--quiet]

Serves GET /limits, GET /limits/{account}, POST /start_throttle and GET /openapi.json.
POST /admin/events is on when PEG_LIMITS_ADMIN_TOKEN is set.`;

function fail(message: string): never {
  process.stderr.write(`peg-limits: ${message}\n`);
  process.exit(2);
}

export async function main(argv: ReadonlyArray<string>): Promise<void> {
  const [command, ...rest] = argv;
  if (command === '--help' || command === '-h' || command === undefined) {
    process.stdout.write(`${USAGE}\n`);
    if (command === undefined) process.exitCode = 2;
    return;
  }
  if (command !== 'serve') fail(`unknown command "${command}"\n${USAGE}`);
  let values: {
    host?: string;
    port?: string;
    config?: string;
    data?: string;
    quiet?: boolean;
    help?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args: [...rest],
      options: {
        host: { type: 'string' },
        port: { type: 'string' },
        config: { type: 'string' },
        data: { type: 'string' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (e) {
    fail(`${(e as Error).message}\n${USAGE}`);
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const port = values.port === undefined ? 8080 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    fail(`--port must be 0 to 65535, got ${values.port}`);
  let state: Awaited<ReturnType<typeof loadConfig>>;
  try {
    state =
      values.config === undefined
        ? stateFromConfig(DEFAULT_SERVER_CONFIG, 'embedded configuration')
        : await loadConfig(values.config);
  } catch (e) {
    if (e instanceof LimitsError) fail(`invalid configuration: ${e.message}`);
    throw e;
  }
  const quiet = values.quiet === true;
  const log = (line: string) => {
    if (!quiet || line.startsWith('warning')) process.stderr.write(`${line}\n`);
  };
  let server: Awaited<ReturnType<typeof startServer>>;
  try {
    server = await startServer({
      state,
      dataDir: values.data ?? './peg-limits-data',
      host: values.host ?? '127.0.0.1',
      port,
      adminToken: process.env.PEG_LIMITS_ADMIN_TOKEN,
      log,
    });
  } catch (e) {
    if (e instanceof JournalError) fail(e.message);
    fail(`cannot start: ${(e as Error).message}`);
  }
  process.stdout.write(`listening on ${server.url}\n`);
  const stop = (signal: string) => {
    log(`${signal}: finishing requests in flight, then closing the journal`);
    server.close().then(
      () => process.exit(0),
      (e: unknown) => fail(`error while closing: ${(e as Error).message}`),
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main(process.argv.slice(2)).catch((e: unknown) => fail((e as Error).stack ?? String(e)));
