/**
 * The server started in the test's own process: `startServer` over a data folder (a new
 * temporary one unless given), on a free loopback port, with startServer's own defaults
 * otherwise (no operator unless `adminToken` or `operators` is given; metrics on). A file
 * that uses it closes what it started: `afterEach(closeServers)`, or `afterAll`.
 */
import { createLimitsState, type LimitsState } from '../../src/index.js';
import { openDataLog } from '../../src/server/data-folder/data-log.js';
import {
  type RunningServer,
  type ServerOptions,
  startServer,
} from '../../src/server/node-http/serve.js';
import { tempDir } from './proc.js';

/** What {@link serveInProcess} takes: the server's options (its log aside) and the folder's. */
export interface InProcessOptions extends Partial<Omit<ServerOptions, 'log'>> {
  /** The data folder (default: a new temporary one). */
  readonly dir?: string;
  /** The state a new folder starts from (default: `createLimitsState()`). */
  readonly initial?: LimitsState;
}

const running: RunningServer[] = [];

/**
 * Opens the folder and serves it on port 0 unless given. What opening the folder met goes
 * first to `logRequestText`, as the command says it.
 */
export async function serveInProcess(options: InProcessOptions = {}): Promise<RunningServer> {
  const { dir = tempDir(), initial = createLimitsState(), ...given } = options;
  const log = await openDataLog({ dir, initial });
  for (const warning of log.warnings) given.logRequestText?.(`warning: ${warning}`);
  const s = await startServer({ port: 0, ...given, log });
  running.push(s);
  return s;
}

/** Closes every server {@link serveInProcess} started since the last call (closing twice is harmless). */
export async function closeServers(): Promise<void> {
  for (const s of running.splice(0)) await s.close();
}
