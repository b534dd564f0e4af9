/**
 * The data folder's compaction and trail, as file work: the journal's records a compaction
 * lets go of copied to the archive (`archive.ts`) a slice at a time, and the trail read
 * back across the archive and the journal. `data-log.ts` decides when. Node-only.
 */
import { type FileHandle, open } from 'node:fs/promises';
import { PegLimitsError } from 'peg-limits';
import { recordPosition } from '../record/index.js';
import { archive, archivedLines } from './archive.js';

// How much of the journal one step of the archive reads and writes.
const ARCHIVE_SLICE = 1 << 20;

// Up to `length` bytes of a file from `from` (fewer at its end).
async function readAt(handle: FileHandle, from: number, length: number): Promise<Buffer> {
  const data = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const r = await handle.read(data, done, length - done, from + done);
    if (r.bytesRead === 0) break;
    done += r.bytesRead;
  }
  return done === length ? data : data.subarray(0, done);
}

/** Where a compaction's archive step starts from and goes to. */
interface ArchiveStep {
  /** The journal's header length: its records start after it. */
  readonly headerBytes: number;
  /** The last position the archive holds. */
  readonly archivedUpTo: number;
  /** The journal's byte the records to archive end before. */
  readonly offset: number;
  /** The position of the last of them. */
  readonly last: number;
}

/**
 * Copies the journal's records up to byte `offset` (position `last`) that the archive does
 * not hold yet into an archive file of their own; true when it wrote one. The journal's bytes
 * are durable already (a compaction waits for them), and nothing but the switch rewrites the
 * journal. Streamed a slice at a time, as the bytes stand (each line was checked when it was
 * read at start or written since): the event loop is never held for the whole of it.
 */
export async function archiveJournal(
  dir: string,
  path: string,
  step: ArchiveStep,
): Promise<boolean> {
  const handle = await open(path, 'r');
  try {
    const from = await firstUnarchived(handle, path, step);
    if (from === undefined) return false;
    await archive(dir, from.position, step.last, async (put) => {
      for (let at = from.byte; at < step.offset; ) {
        const chunk = await readAt(handle, at, Math.min(ARCHIVE_SLICE, step.offset - at));
        await put(chunk);
        at += chunk.length;
      }
    });
    return true;
  } finally {
    await handle.close();
  }
}

// Where the records the archive does not hold yet begin, before byte `offset` (after a
// crash between an archive and the journal's switch, the first are archived already).
async function firstUnarchived(
  handle: FileHandle,
  path: string,
  { headerBytes, archivedUpTo, offset }: ArchiveStep,
): Promise<{ byte: number; position: number } | undefined> {
  let from = headerBytes;
  while (from < offset) {
    const chunk = await readAt(handle, from, Math.min(ARCHIVE_SLICE, offset - from));
    let lineStart = 0;
    for (;;) {
      const nl = chunk.indexOf(10, lineStart);
      if (nl < 0) break;
      const line = chunk.toString('utf8', lineStart, nl);
      const position = recordPosition(line);
      if (line.startsWith('{') && position === 0)
        throw new PegLimitsError(
          'archive_unreadable',
          `${path}: a record cannot be read back at byte ${from + lineStart}`,
        );
      if (position > archivedUpTo) return { byte: from + lineStart, position };
      lineStart = nl + 1;
    }
    if (lineStart === 0)
      throw new PegLimitsError(
        'archive_unreadable',
        `${path}: a line longer than ${ARCHIVE_SLICE} bytes at byte ${from}`,
      );
    from += lineStart;
  }
  return undefined;
}

/** The journal as a read of the trail found it. */
interface JournalAt {
  /** Open on the journal's version of then: the reader closes it. */
  readonly handle: FileHandle;
  readonly headerBytes: number;
  /** Its durable end. */
  readonly end: number;
  /** The position its first record follows. */
  readonly journalAfter: number;
}

/**
 * Up to `limit` records of the trail after position `after`: those the archive holds up to
 * the journal's start, then the journal's own. Closes the journal's handle.
 */
export async function readTrail(
  dir: string,
  at: JournalAt,
  after: number,
  limit: number,
): Promise<ReadonlyArray<string>> {
  const out: string[] = [];
  try {
    for await (const { text } of archivedLines(dir, after)) {
      if (out.length >= limit) return out;
      const position = recordPosition(text);
      if (position > after && position <= at.journalAfter) out.push(text);
    }
    const bytes = Buffer.alloc(at.end - at.headerBytes);
    await at.handle.read(bytes, 0, bytes.length, at.headerBytes);
    for (const line of bytes.toString('utf8').split('\n')) {
      if (out.length >= limit) break;
      if (!line.startsWith('{')) continue;
      if (recordPosition(line) > after) out.push(line);
    }
  } finally {
    await at.handle.close();
  }
  return out;
}
