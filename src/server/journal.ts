/**
 * The journal: every accepted request's events, one JSON line per request, appended and
 * flushed to disk before the response; replayed on start. Node-only.
 */
import { type FileHandle, mkdir, open, readFile, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { encodeJson, eventsFromJson, type LimitsEvent, tryDecodeJson } from 'peg-limits';

/** The journal's file name inside the data folder. */
export const JOURNAL_FILE = 'journal.jsonl';

/** An open journal: what it held, and where the next batches go. */
export interface Journal {
  /** The batches read from disk, oldest first, each with its 1-based line number. */
  readonly batches: ReadonlyArray<{
    readonly line: number;
    readonly events: ReadonlyArray<LimitsEvent>;
  }>;
  /** Warnings met while reading (a torn last line). */
  readonly warnings: ReadonlyArray<string>;
  /** The journal's path. */
  readonly path: string;
  /** Appends one batch as one line and flushes it to disk. */
  append(events: ReadonlyArray<LimitsEvent>): Promise<void>;
  /** Flushes and closes the file. */
  close(): Promise<void>;
}

/** A journal that cannot be read: the message names the line. */
export class JournalError extends Error {
  override readonly name = 'JournalError';
}

function parseLine(text: string): ReadonlyArray<LimitsEvent> | string {
  const json = tryDecodeJson(text);
  if (!json.ok) return json.error.message;
  if (!Array.isArray(json.value)) return 'expected a JSON array of events';
  const events = eventsFromJson(json.value);
  return events.ok ? events.events : events.error.message;
}

/**
 * Opens (creating if needed) the journal in `dir` and reads it. A last line cut short by a
 * crash is dropped with a warning and cut off the file; damage on any other line throws a
 * {@link JournalError} naming it.
 */
export async function openJournal(dir: string): Promise<Journal> {
  await mkdir(dir, { recursive: true });
  const path = join(dir, JOURNAL_FILE);
  let text = '';
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const warnings: string[] = [];
  const batches: Array<{ line: number; events: ReadonlyArray<LimitsEvent> }> = [];
  const lines = text.split('\n');
  // After the last "\n" there is either nothing or a line a crash cut short.
  const complete = lines.slice(0, -1);
  const tail = lines[lines.length - 1] ?? '';
  let goodBytes = 0;
  for (const [i, line] of complete.entries()) {
    const parsed = parseLine(line);
    if (typeof parsed === 'string') {
      if (i === complete.length - 1 && tail === '') {
        warnings.push(`${path}:${i + 1}: dropped a damaged last line (${parsed})`);
        break;
      }
      throw new JournalError(
        `${path}:${i + 1}: the journal is damaged: ${parsed}; refusing to start`,
      );
    }
    batches.push({ line: i + 1, events: parsed });
    goodBytes += Buffer.byteLength(line, 'utf8') + 1;
  }
  if (tail !== '')
    warnings.push(`${path}:${complete.length + 1}: dropped a last line cut short by a crash`);
  if (goodBytes < Buffer.byteLength(text, 'utf8')) await truncate(path, goodBytes);
  const handle: FileHandle = await open(path, 'a');
  return {
    batches,
    warnings,
    path,
    async append(events) {
      await handle.write(`${encodeJson(events)}\n`);
      await handle.datasync();
    },
    async close() {
      await handle.sync();
      await handle.close();
    },
  };
}
