/**
 * The command's log (docs/operating.md, "Operating it"): plain lines by default, or with `--log-format json` one JSON
 * object per line made by `pino` (an optional peer dependency, loaded only then), with
 * `level`, `time`, `msg` and fields. Both go to stderr: stdout's first line stays
 * `listening on URL`. A message is written at once; request lines are gathered and written
 * together within 100 ms (one write for many requests: a write a request cost a read of
 * `GET /limits` a tenth of its rate), and before any message and at exit. Node-only.
 */
import { writeSync } from 'node:fs';
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

// How long a request line may wait for others to be written with (a read's answer takes
// tens of microseconds: a write a request cost a read about a tenth of its rate).
const LINES_WAIT_MS = 100;

/** Writes to stderr: request lines gathered for up to `LINES_WAIT_MS`, messages at once. */
class StderrLines {
  #pending = '';
  #scheduled = false;
  readonly #flush = () => this.flush();

  constructor() {
    process.on('exit', this.#flush);
  }

  /** A request line: written within `LINES_WAIT_MS` with the others gathered by then (or at 64 KiB). */
  later(text: string): void {
    this.#pending += text;
    if (this.#pending.length >= 65_536) this.flush();
    else if (!this.#scheduled) {
      this.#scheduled = true;
      setTimeout(this.#flush, LINES_WAIT_MS).unref();
    }
  }

  /** A message: the request lines before it first, then it, at once. */
  now(text: string): void {
    this.#pending += text;
    this.flush();
  }

  /** Writes what waits (synchronously: a line is out before the process may exit). */
  flush(): void {
    this.#scheduled = false;
    if (this.#pending.length === 0) return;
    const bytes = Buffer.from(this.#pending);
    this.#pending = '';
    let written = 0;
    while (written < bytes.length) {
      try {
        written += writeSync(2, bytes, written);
      } catch (e) {
        // A stderr that would block (a full non-blocking pipe): wait on it as process.stderr
        // does, never drop a line; any other failure drops what is left, as a closed stderr.
        if ((e as NodeJS.ErrnoException).code !== 'EAGAIN') return;
      }
    }
  }
}

// The one writer of the process's stderr lines, made with the first logger.
let stderr: StderrLines | undefined;

/**
 * The command's logger in `format`, silent for requests and notes when `quiet` (warnings
 * always show).
 *
 * @throws LoggerUnavailable for `json` when pino is not installed
 */
export async function createLogger(format: LogFormat, quiet: boolean): Promise<CommandLogger> {
  const warning = (text: string) => text.startsWith('warning');
  stderr ??= new StderrLines();
  const lines = stderr;
  if (format === 'text') {
    return {
      request(r) {
        if (!quiet) lines.later(`${r.method} ${r.url} ${r.status} ${r.ms.toFixed(1)}ms\n`);
      },
      message(text) {
        if (!quiet || warning(text)) lines.now(`${text}\n`);
      },
    };
  }
  // What is used of pino's module, typed here (its own types merge a function and a namespace).
  type PinoModule = {
    pino(options: object, destination: { write(line: string): void }): Pino.Logger;
  };
  const pino = await loadPeer<PinoModule>(
    'pino',
    () => import('pino'),
    (hint) => new LoggerUnavailable(`--log-format json needs ${hint}`),
  );
  // Messages are written at once (a line is out before the process may exit), request lines
  // with the others of their turn of the event loop.
  const options = { base: { name: 'peg-limits' } };
  const logger = pino.pino(options, { write: (line) => lines.now(line) });
  const requests = pino.pino(options, { write: (line) => lines.later(line) });
  return {
    request(r) {
      if (!quiet)
        requests.info(
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
