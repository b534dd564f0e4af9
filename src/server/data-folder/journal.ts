/**
 * The data folder's journal file as the log writes it (docs/operating.md, "Reliability"):
 * lines appended at its end, flushed, and cut back off when a write fails. Lines queued
 * while a group is written and flushed go as the next group: one write, then one flush.
 * A group that cannot be written is cut back off the file, and it and every line queued
 * after it (computed on its states) are refused; the log is told, to go back to the state
 * before the group. A failed flush is fatal: what reached the disk is unknown. Node-only.
 */
import { type FileHandle, open } from 'node:fs/promises';
import type { LimitsState } from 'peg-limits';
import { PegLimitsError } from 'peg-limits';

/** A flush that failed: what reached the disk is unknown, so the server must stop. */
export class FlushError extends PegLimitsError {
  override readonly name = 'FlushError';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('flush_failed', message, options);
  }
}

/**
 * The operations the store does on its journal file: positional writes that may come up
 * short, a data flush, a truncation. The default is a Node `FileHandle`; tests pass files
 * that fail on purpose.
 */
export interface JournalFile {
  /** Writes bytes at `position`; returns how many were written (possibly fewer). */
  write(data: Uint8Array, position: number): Promise<number>;
  /** Flushes the file's data to disk (fdatasync). */
  datasync(): Promise<void>;
  /** Cuts the file to `length` bytes. */
  truncate(length: number): Promise<void>;
  /** Closes the file. */
  close(): Promise<void>;
}

/** Opens the journal file for writing (creating it when missing). */
export type OpenJournalFile = (path: string) => Promise<JournalFile>;

/** The default journal file: a Node file handle opened for reading and writing. */
export const openNodeJournalFile: OpenJournalFile = async (path) => {
  let handle: FileHandle;
  try {
    handle = await open(path, 'r+');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    handle = await open(path, 'w+');
  }
  return {
    async write(data, position) {
      const r = await handle.write(data, 0, data.length, position);
      return r.bytesWritten;
    },
    datasync: () => handle.datasync(),
    truncate: (length) => handle.truncate(length),
    close: () => handle.close(),
  };
};

// The lines of one group write, the states they make, where the log stood before them.
interface Group<Before> {
  readonly lines: Buffer[];
  bytes: number;
  readonly states: LimitsState[];
  readonly before: Before;
  readonly durable: Promise<void>;
  settle(error?: unknown): void;
}

function newGroup<Before>(before: Before): Group<Before> {
  let settle!: (error?: unknown) => void;
  const durable = new Promise<void>((resolve, reject) => {
    settle = (error) => (error === undefined ? resolve() : reject(error));
  });
  return { lines: [], bytes: 0, states: [], before, durable, settle };
}

/** What a journal writer tells its log. */
interface JournalEvents<Before> {
  /** Once, when a flush fails (the writer refuses everything after). */
  readonly onFatal?: ((error: FlushError) => void) | undefined;
  /** A group was refused: go back to `before`; `states` are those of the refused lines. */
  readonly onRefused: (before: Before, states: ReadonlyArray<LimitsState>) => void;
}

/**
 * Writes the journal file at `path`, from byte `end` on. `Before` is what the log records of
 * itself when a group starts, handed back if the group is refused.
 */
export class JournalWriter<Before> {
  readonly #path: string;
  readonly #events: JournalEvents<Before>;
  #file: JournalFile;
  #end: number;
  #fatal: FlushError | undefined;
  #flushing: Promise<void> | undefined;
  #queued: Promise<void> | undefined;
  #collecting: Group<Before> | undefined;
  #writing: Promise<void> | undefined;

  constructor(file: JournalFile, path: string, end: number, events: JournalEvents<Before>) {
    this.#file = file;
    this.#path = path;
    this.#end = end;
    this.#events = events;
  }

  /** The file's end: every byte written before it. */
  get end(): number {
    return this.#end;
  }

  /** The failed flush that stopped the writer, if one did. */
  get fatal(): FlushError | undefined {
    return this.#fatal;
  }

  /** The bytes queued for the next group write. */
  get queuedBytes(): number {
    return this.#collecting?.bytes ?? 0;
  }

  /** Puts the writer on another file (the journal switched), whose end is `end`. */
  replace(file: JournalFile, end: number): void {
    this.#file = file;
    this.#end = end;
  }

  /** Closes the file. */
  close(): Promise<void> {
    return this.#file.close();
  }

  /**
   * Queues `line` (the batch that makes `next`) for the next group write; resolves once a
   * flush covers it, rejects when it is refused. `before` is asked when a group starts.
   */
  queue(line: Buffer, next: LimitsState, before: () => Before): Promise<void> {
    this.#collecting ??= newGroup(before());
    this.#collecting.lines.push(line);
    this.#collecting.bytes += line.length;
    this.#collecting.states.push(next);
    this.#writing ??= this.#writeGroups().finally(() => {
      this.#writing = undefined;
    });
    return this.#collecting.durable;
  }

  /** Resolves once every line queued so far is in the file and flushed, or refused. */
  async settled(): Promise<void> {
    while (this.#writing !== undefined) await this.#writing;
  }

  /**
   * Writes `data` at the file's end, whole: a write that comes up short is completed, and
   * one that fails is cut back off the file and rejects (the file's end unchanged).
   */
  async append(data: Buffer): Promise<void> {
    let done = 0;
    try {
      while (done < data.length) {
        const n = await this.#file.write(data.subarray(done), this.#end + done);
        if (n <= 0) throw new PegLimitsError('disk_full', 'the disk took no more bytes');
        done += n;
      }
    } catch (e) {
      // Cut the partial line back off, so that nothing refused reappears and the next line
      // starts clean. If even that fails, the file's end is unknown: stop.
      try {
        await this.#file.truncate(this.#end);
      } catch (t) {
        this.#die(t);
      }
      throw new PegLimitsError(
        'write_failed',
        `writing ${this.#path} failed: ${(e as Error).message}`,
        {
          cause: e,
        },
      );
    }
    this.#end += data.length;
  }

  /** Flushes the file now (fatal when it fails). */
  async flush(): Promise<void> {
    if (this.#fatal !== undefined) throw this.#fatal;
    try {
      await this.#file.datasync();
    } catch (e) {
      this.#die(e);
    }
  }

  /**
   * One flush at a time; a request that arrives during a flush waits for the next one,
   * which covers every byte written before it starts.
   */
  sync(): Promise<void> {
    if (this.#flushing === undefined) {
      this.#flushing = this.flush().finally(() => {
        this.#flushing = undefined;
      });
      return this.#flushing;
    }
    this.#queued ??= this.#flushing.then(
      () => {
        this.#queued = undefined;
        return this.sync();
      },
      (e: unknown) => {
        this.#queued = undefined;
        throw e;
      },
    );
    return this.#queued;
  }

  #die(e: unknown): never {
    this.#fatal ??= new FlushError(`flushing ${this.#path} failed: ${(e as Error).message}`);
    this.#events.onFatal?.(this.#fatal);
    throw this.#fatal;
  }

  async #writeGroups(): Promise<void> {
    // Let the appends of this turn of the event loop join the first group.
    await Promise.resolve();
    while (this.#collecting !== undefined) {
      const group = this.#collecting;
      this.#collecting = undefined;
      if (this.#fatal !== undefined) {
        group.settle(this.#fatal);
        continue;
      }
      try {
        await this.append(group.lines.length === 1 ? group.lines[0]! : Buffer.concat(group.lines));
      } catch (e) {
        this.#refuse(group, e);
        continue;
      }
      // The lines that come during the flush wait for it, and go as the next group: one
      // write a flush.
      try {
        await this.sync();
        group.settle();
      } catch (e) {
        group.settle(e);
      }
    }
  }

  // The group could not be written: it and the lines queued after it are refused.
  #refuse(group: Group<Before>, error: unknown): void {
    const refused = this.#collecting === undefined ? [group] : [group, this.#collecting];
    this.#collecting = undefined;
    this.#events.onRefused(
      group.before,
      refused.flatMap((g) => g.states),
    );
    for (const g of refused) g.settle(error);
  }
}
