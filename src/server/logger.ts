/**
 * The command's log (SPEC §10): plain lines by default, or with `--log-format json` one JSON
 * object per line made by `pino` (an optional peer dependency, loaded only then), with
 * `level`, `time`, `msg` and fields. Both go to stderr: stdout's first line stays
 * `listening on URL`. Node-only.
 */
import type * as Pino from 'pino';

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
export type LogFormat = 'text' | 'json';

/** A format the command cannot write, or pino missing: the message says which. */
export class LoggerUnavailable extends Error {
  override readonly name = 'LoggerUnavailable';
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
  let pino: PinoModule;
  try {
    const module = (await import('pino')) as unknown as PinoModule & { default?: PinoModule };
    pino = module.default?.destination !== undefined ? module.default : module;
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND')
      throw new LoggerUnavailable(
        '--log-format json needs the package "pino", which is not installed: run `npm install pino` (or `npm install -g pino` next to a global peg-limits)',
      );
    throw e;
  }
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
