/**
 * The command's log (docs/operating.md, "Operating it"): plain lines by default, or with `--log-format json` one JSON
 * object per line made by `pino` (an optional peer dependency, loaded only then), with
 * `level`, `time`, `msg` and fields. Both go to stderr: stdout's first line stays
 * `listening on URL`. Node-only.
 */
import { PegLimitsError } from 'peg-limits';

import type * as Pino from 'pino';
import { loadPeer } from './peers.js';

/** One answered request, as the log says it. */
export interface RequestLine {
  readonly method: string;
  /** The route pattern it matched (`none` when none did). */
  readonly route: string;
  /** The raw path, query included, in the plain format only (JSON keeps to the pattern). */
  readonly url: string;
  readonly status: number;
  readonly ms: number;
  /** The log position its answer reflects. */
  readonly position: number;
}

/** Where the command's messages go. */
export interface CommandLogger {
  /** One line per answered request (silenced by `--quiet`). */
  request(line: RequestLine): void;
  /** A start-up, compaction or store message; `warning: …` lines are warnings. */
  message(text: string): void;
}

/** Log formats `--log-format` takes. */
type LogFormat = 'text' | 'json';

/** A format the command cannot write, or pino missing: the message says which. */
export class LoggerUnavailable extends PegLimitsError {
  override readonly name = 'LoggerUnavailable';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('logger_unavailable', message, options);
  }
}

/**
 * The command's logger in `format`, silent for requests and notes when `quiet` (warnings
 * always show).
 *
 * @throws LoggerUnavailable for `json` when pino is not installed
 */
export async function createLogger(format: LogFormat, quiet: boolean): Promise<CommandLogger> {
  const warning = (text: string) => text.startsWith('warning');
  if (format === 'text') {
    return {
      request(r) {
        if (!quiet) process.stderr.write(`${r.method} ${r.url} ${r.status} ${r.ms.toFixed(1)}ms\n`);
      },
      message(text) {
        if (!quiet || warning(text)) process.stderr.write(`${text}\n`);
      },
    };
  }
  // What is used of pino's module, typed here (its own types merge a function and a namespace).
  type PinoModule = {
    pino(options: object, destination: unknown): Pino.Logger;
    destination(options: { dest: number; sync: boolean }): unknown;
  };
  const pino = await loadPeer<PinoModule>(
    'pino',
    () => import('pino'),
    (hint) => new LoggerUnavailable(`--log-format json needs ${hint}`),
  );
  // Synchronous writes to stderr: a line is out before the process may exit.
  const logger = pino.pino(
    { base: { name: 'peg-limits' } },
    pino.destination({ dest: 2, sync: true }),
  );
  return {
    request(r) {
      if (!quiet)
        logger.info(
          { method: r.method, route: r.route, status: r.status, ms: r.ms, position: r.position },
          'request',
        );
    },
    message(text) {
      if (warning(text)) logger.warn(text.replace(/^warning: /, ''));
      else if (!quiet) logger.info(text);
    },
  };
}
