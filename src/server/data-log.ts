import { type FileHandle, mkdir, open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Appended,
  applyAll,
  type EventLog,
  encodeJson,
  type LimitsEvent,
  type LimitsState,
  LogConflict,
  tryDecodeJson,
} from 'peg-limits';
import { decodeBatch, located, serialQueue } from '../internal.js';

import { checkLink, makeRecord, readRecord, recordPosition, ZERO_HASH } from './audit.js';
import { archive, archivedLines, archiveFiles, lastLineOf } from './data-audit.js';
import {
  eachLine,
  readRange,
  readSnapshot,
  SNAPSHOT_FILE,
  StoreError,
  writeAtomically,
  writeSnapshot,
} from './data-files.js';

import {
  type FlushError,
  type JournalFile,
  JournalWriter,
  type OpenJournalFile,
  openNodeJournalFile,
} from './journal.js';

export { SNAPSHOT_FILE, StoreError } from './data-files.js';
export {
  FlushError,
  type JournalFile,
  type OpenJournalFile,
  openNodeJournalFile,
} from './journal.js';

/** The journal's file name inside the data folder. */
export const JOURNAL_FILE = 'journal.jsonl';
// How much of the journal one step of the archive reads and writes.
const ARCHIVE_SLICE = 1 << 20;

function openRead(path: string): Promise<FileHandle> {
  return open(path, 'r');
}

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

/** Journaled events between two compactions, unless configured. */
export const DEFAULT_SNAPSHOT_EVERY = 100_000;

const JOURNAL_FORMAT = 'peg-limits/journal';

/** Options of {@link openDataLog}. */
export interface DataLogOptions {
  /** The data folder (created when missing). */
  readonly dir: string;
  /** The state of an empty data folder (from the configuration). */
  readonly initial: LimitsState;
  /** Journaled events between compactions (default 100,000). */
  readonly snapshotEvery?: number | undefined;
  /** Concurrent changes share one flush (default true); off, each flushes on its own. */
  readonly groupCommit?: boolean | undefined;
  /** Called once when a flush fails; the server stops (exit code 3). */
  readonly onFatal?: ((error: FlushError) => void) | undefined;
  /** Where compaction notes and warnings go. */
  readonly logLine?: ((line: string) => void) | undefined;
  /** How the journal file is opened (tests inject failures here). */
  readonly openJournalFile?: OpenJournalFile | undefined;
  /**
   * When the audit trail does not link up (a record changed, missing or out of order): start
   * a new chain that records the break, instead of refusing to start.
   */
  readonly auditRepair?: boolean | undefined;
}

/**
 * An open data folder. `append` makes one batch one journal line. With group commit (the
 * default) it resolves at once, the line queued: the lines appended while a group is
 * written and flushed go to the file as one write, then one flush, when it is done, and
 * `durable` resolves once that flush covers them. A group that cannot be written is cut back off the file and
 * `durable` rejects for it and for every line queued after it; the log is back at the state
 * before the group (an append computed on a refused state gets `LogConflict`). Without group
 * commit, `append` resolves once the line is written and flushed, and rejects, the line cut
 * back, when it could not be written.
 * `snapshot` writes a snapshot of the last state appended and starts a fresh journal;
 * `close` does so too when the journal holds anything. The position is the number of
 * batches the folder holds, snapshot and journal together.
 */
export interface DataLog extends EventLog {
  /** Warnings met while reading (a torn last line dropped). */
  readonly warnings: ReadonlyArray<string>;
  /** How many journal lines start-up replayed (the rest was in the snapshot). */
  readonly replayed: number;
  /**
   * Resolves once no compaction is under way (one runs beside the appends after every
   * `snapshotEvery` events): before a backup of the folder, say.
   */
  compactions(): Promise<void>;
}

// The most bytes of lines queued for one group write before an append waits for it.
const MAX_GROUP_BYTES = 1024 * 1024;

function journalHeader(after: number): string {
  return `${encodeJson({ format: JOURNAL_FORMAT, after })}\n`;
}

function parseHeader(text: string): number | undefined {
  const json = tryDecodeJson(text);
  if (!json.ok || typeof json.value !== 'object' || json.value === null) return undefined;
  const h = json.value as Record<string, unknown>;
  if (h.format !== JOURNAL_FORMAT || typeof h.after !== 'bigint' || h.after < 0n) return undefined;
  return Number(h.after);
}

/**
 * Opens a data folder: reads the snapshot and replays the journal lines after it, streaming,
 * then takes new batches.
 *
 * @throws StoreError when the snapshot or the journal is damaged, or a line no longer applies
 */
export async function openDataLog(options: DataLogOptions): Promise<DataLog> {
  const { dir, logLine: log } = options;
  const snapshotEvery = options.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY;
  const groupCommit = options.groupCommit ?? true;
  const openFile = options.openJournalFile ?? openNodeJournalFile;
  await mkdir(dir, { recursive: true });
  // Leftovers of a compaction that a crash interrupted before its rename.
  await rm(join(dir, `${SNAPSHOT_FILE}.tmp`), { force: true });
  await rm(join(dir, `${JOURNAL_FILE}.tmp`), { force: true });

  const snapshot = await readSnapshot(dir);
  const snapshotSeq = snapshot?.seq ?? 0;
  let state = snapshot?.state ?? options.initial;
  const path = join(dir, JOURNAL_FILE);
  const warnings: string[] = [];

  // The archive's newest record: the journal's records link up to it.
  const archived = await archiveFiles(dir);
  const newestArchive = archived[archived.length - 1];
  let archivedUpTo = newestArchive?.last ?? 0;
  let prev: { hash: string; position: number } | undefined;
  if (newestArchive !== undefined) {
    const text = await lastLineOf(newestArchive.path);
    const read = text === undefined ? undefined : readRecord(text);
    if (read === undefined || !read.ok || read.record.position !== newestArchive.last)
      throw new StoreError(
        `${newestArchive.path}: the audit archive's last record is not record ${newestArchive.last} (${read?.ok === false ? read.why : 'no record'}); refusing to start (peg-limits audit verify --data ${dir} says more)`,
      );
    prev = { hash: read.record.hash, position: read.record.position };
  }
  // Where the trail first fails to link up, if it does.
  let broken: { position: number; why: string } | undefined;

  // Replay: the first line may be a header; a journal without one (written by 0.1) starts
  // after batch 0. A line is an audit record (its events, and who, when, its hash) or, as
  // written before the trail, the bare array of the events.
  let lineNo = 0;
  let after: number | undefined;
  let batches = 0;
  let replayed = 0;
  let goodBytes = 0;
  let headerBytes = 0;
  let damage: { line: number; why: string; end: number } | undefined;
  const { size, tail } = await eachLine(path, (text, _start, end) => {
    lineNo++;
    if (damage !== undefined) {
      // A damaged line followed by more lines is damage in the middle: refuse below.
      damage = { ...damage, end: -1 };
      return;
    }
    if (lineNo === 1) {
      after = parseHeader(text);
      if (after !== undefined) {
        goodBytes = end;
        headerBytes = end;
        return;
      }
      after = 0;
    }
    let events: ReadonlyArray<LimitsEvent>;
    const position = after! + batches + 1;
    if (text.startsWith('[')) {
      const parsed = decodeBatch(text);
      if (!parsed.ok) {
        damage = { line: lineNo, why: parsed.error, end };
        return;
      }
      events = parsed.events;
    } else {
      const read = readRecord(text);
      if (!read.ok) {
        damage = { line: lineNo, why: read.why, end };
        return;
      }
      const record = read.record;
      if (record.position !== position) {
        damage = {
          line: lineNo,
          why: `it says position ${record.position}, its place is ${position}`,
          end,
        };
        return;
      }
      if (prev !== undefined && record.position <= prev.position) {
        // Archived already (a crash between the archive and the journal's switch): the same line.
        if (record.position === prev.position && record.hash !== prev.hash)
          broken ??= {
            position: record.position,
            why: `${path}:${lineNo}: it differs from the archived record ${record.position}`,
          };
      } else {
        const why =
          prev !== undefined && record.position > prev.position + 1
            ? `records ${prev.position + 1}…${record.position - 1} are in neither the archive nor the journal`
            : checkLink(record, prev);
        if (why !== undefined)
          broken ??= { position: record.position, why: `${path}:${lineNo}: ${why}` };
        // A repair record (--audit-repair) starts a new chain: the break before it is on
        // the record already.
        if (why === undefined && record.repair !== undefined && broken !== undefined)
          broken = undefined;
        prev = { hash: record.hash, position: record.position };
      }
      events = record.events;
    }
    batches++;
    if (position > snapshotSeq) {
      const r = applyAll(state, events);
      if (!r.ok) {
        throw new StoreError(
          `${path}:${lineNo}: cannot replay: ${located(r.error)}; refusing to start`,
        );
      }
      state = r.state;
      replayed++;
    }
    goodBytes = end;
  });
  if (damage !== undefined) {
    if (damage.end < 0 || tail > 0) {
      throw new StoreError(
        `${path}:${damage.line}: the journal is damaged: ${damage.why}; refusing to start`,
      );
    }
    warnings.push(`${path}:${damage.line}: dropped a damaged last line (${damage.why})`);
  }
  if (tail > 0) warnings.push(`${path}:${lineNo + 1}: dropped a last line cut short by a crash`);
  const start = after ?? snapshotSeq;
  if (after !== undefined && after > snapshotSeq) {
    throw new StoreError(
      `${path}: the journal starts after batch ${after}, but ${snapshot === undefined ? 'there is no snapshot' : `the snapshot holds batches up to ${snapshotSeq}`}; refusing to start (was ${SNAPSHOT_FILE} removed or replaced?)`,
    );
  }
  if (after !== undefined && after + batches < snapshotSeq) {
    throw new StoreError(
      `${path}: the journal ends at batch ${after + batches}, before the snapshot's ${snapshotSeq}; refusing to start`,
    );
  }
  if (broken !== undefined && options.auditRepair !== true)
    throw new StoreError(
      `the audit trail breaks at position ${broken.position}: ${broken.why}; refusing to start (peg-limits audit verify --data ${dir} checks the whole trail; --audit-repair starts a new chain that records the break)`,
    );
  // A fresh folder (or one whose journal was lost entirely) gets a journal with a header.
  let file: JournalFile;
  let fileEnd: number;
  if (size === 0) {
    await writeAtomically(dir, JOURNAL_FILE, (put) => put(journalHeader(snapshotSeq)));
    file = await openFile(path);
    fileEnd = Buffer.byteLength(journalHeader(snapshotSeq));
  } else {
    file = await openFile(path);
    fileEnd = goodBytes;
    if (fileEnd < size) await file.truncate(fileEnd);
  }
  if (size === 0) headerBytes = fileEnd;
  // The newest record's hash: the next record follows it.
  let lastHash = prev?.hash ?? ZERO_HASH;

  let seq = start + batches;
  let written = state;
  let sinceSnapshot = 0;
  // The batch count the snapshot on disk holds, and the batch the journal file starts after
  // (it holds batches journalAfter + 1 … seq).
  let snapshotAt = snapshotSeq;
  let journalAfter = start;
  // The position of each state this store read or wrote.
  const positions = new WeakMap<LimitsState, number>([[state, seq]]);
  // Orders appends and compactions.
  const lane = serialQueue();
  let lastDurable: Promise<void> = Promise.resolve();
  // The journal's writer; a group it cannot write takes the log back to where it stood.
  const journal = new JournalWriter<{ seq: number; hash: string; state: LimitsState }>(
    file,
    path,
    fileEnd,
    {
      onFatal: options.onFatal,
      onRefused(before, states) {
        seq = before.seq;
        lastHash = before.hash;
        written = before.state;
        for (const s of states) positions.delete(s);
      },
    },
  );
  const where = () => ({ seq, hash: lastHash, state: written });

  // Past a break (--audit-repair): a new chain starts with a record that says where and why,
  // as a batch of no events (so that every record is a batch), written before anything else.
  if (broken !== undefined) {
    const note = makeRecord(ZERO_HASH, seq + 1, [], undefined, undefined, {
      repair: { after: broken.position - 1, reason: broken.why },
    });
    await journal.append(Buffer.from(`${note.line}\n`, 'utf8'));
    await journal.flush();
    lastHash = note.hash;
    seq++;
    positions.set(state, seq);
    warnings.push(
      `the audit trail broke at position ${broken.position} (${broken.why}); --audit-repair started a new chain at position ${seq}`,
    );
  }

  // Copies the journal's records up to byte `offset` (position `last`) that the archive does
  // not hold yet into an archive file of their own. The journal's bytes are durable already
  // (a compaction waits for them), and nothing but the switch below rewrites the journal.
  // Streamed a slice at a time, as the bytes stand (each line was checked when it was read
  // at start or written since): the event loop is never held for the whole of it.
  async function archiveRecords(offset: number, last: number): Promise<void> {
    const handle = await openRead(path);
    try {
      // Where the records the archive does not hold yet begin (after a crash between an
      // archive and the journal's switch, the journal's first records are archived already).
      let from = headerBytes;
      let first: number | undefined;
      while (from < offset && first === undefined) {
        const chunk = await readAt(handle, from, Math.min(ARCHIVE_SLICE, offset - from));
        let lineStart = 0;
        for (;;) {
          const nl = chunk.indexOf(10, lineStart);
          if (nl < 0) break;
          const line = chunk.toString('utf8', lineStart, nl);
          const position = recordPosition(line);
          if (line.startsWith('{') && position === 0)
            throw new Error(`${path}: a record cannot be read back at byte ${from + lineStart}`);
          if (position > archivedUpTo) {
            first = position;
            break;
          }
          lineStart = nl + 1;
        }
        if (lineStart === 0 && first === undefined)
          throw new Error(`${path}: a line longer than ${ARCHIVE_SLICE} bytes at byte ${from}`);
        from += lineStart;
      }
      if (first === undefined) return;
      const start = from;
      await archive(dir, first, last, async (put) => {
        for (let at = start; at < offset; ) {
          const chunk = await readAt(handle, at, Math.min(ARCHIVE_SLICE, offset - at));
          await put(chunk);
          at += chunk.length;
        }
      });
      archivedUpTo = last;
    } finally {
      await handle.close();
    }
  }

  // A compaction (docs/operating.md, "Reliability"). The state is immutable, so the snapshot is written from the
  // state of one position while appends go on, in slices; only the journal switch takes a
  // turn among the appends: the lines appended meanwhile move to a fresh journal that starts
  // after the snapshot's position, and the file is swapped atomically.
  let compacting: Promise<void> | undefined;

  function compact(): Promise<void> {
    compacting ??= compactNow().finally(() => {
      compacting = undefined;
    });
    return compacting;
  }

  async function compactNow(): Promise<void> {
    const at = await lane.run(async () => {
      await journal.settled();
      // Nothing to do when the snapshot holds every batch and the journal none.
      if (seq === snapshotAt && seq === journalAfter) return undefined;
      sinceSnapshot = 0;
      // Where the lines after this position start in the journal, and its flush.
      return { seq, state: written, offset: journal.end, durable: lastDurable };
    });
    if (at === undefined) return;
    await at.durable;
    if (journal.fatal !== undefined) throw journal.fatal;
    log?.(`compacting: writing a snapshot of ${at.seq} batches`);
    const bytes = await writeSnapshot(dir, at.seq, at.state);
    // From here the snapshot holds batches 1…at.seq; a crash now leaves the old journal,
    // whose lines up to at.seq start-up skips.
    snapshotAt = at.seq;
    // The records the journal is about to let go of go to the archive first, durably: a
    // crash now leaves them in both, never in neither.
    await archiveRecords(at.offset, at.seq);
    await lane.run(async () => {
      await journal.settled();
      await lastDurable;
      if (journal.fatal !== undefined) throw journal.fatal;
      const moved = await readRange(path, at.offset, journal.end);
      const header = journalHeader(at.seq);
      await writeAtomically(dir, JOURNAL_FILE, async (put) => {
        await put(header);
        await put(moved);
      });
      await journal.close();
      journal.replace(await openFile(path), Buffer.byteLength(header) + moved.length);
      headerBytes = Buffer.byteLength(header);
      journalAfter = at.seq;
    });
    log?.(`compacted: ${SNAPSHOT_FILE} holds ${at.seq} batches (${bytes} bytes)`);
  }

  return {
    get state() {
      return written;
    },
    warnings,
    replayed,
    get position() {
      return seq;
    },
    get writable() {
      return journal.fatal === undefined;
    },
    get unavailable() {
      return journal.fatal?.message;
    },
    // One writer: nothing to catch up with.
    catchingUp: false,
    positionOf: (s) => positions.get(s),
    append(events, next, base, meta) {
      return lane.run(async (): Promise<Appended> => {
        // A caller that does not wait for its writes is held back once a group holds
        // MAX_GROUP_BYTES: the lines queued never outgrow what one write takes.
        if (journal.queuedBytes >= MAX_GROUP_BYTES) await journal.settled();
        if (journal.fatal !== undefined) throw journal.fatal;
        if (positions.get(base) !== seq)
          throw new LogConflict(
            written,
            'the batch was computed on a state that is not the newest',
          );
        const record = makeRecord(lastHash, seq + 1, events, meta, { base, next });
        const line = Buffer.from(`${record.line}\n`, 'utf8');
        let durable: Promise<void>;
        if (groupCommit) {
          // Queued for the next group write: the next change is computed at once, on this
          // one's state; a group that cannot be written takes every line after it back.
          durable = journal.queue(line, next, where);
        } else {
          await journal.append(line);
          durable = journal.flush();
          await durable;
        }
        lastHash = record.hash;
        seq++;
        positions.set(next, seq);
        written = next;
        sinceSnapshot += events.length;
        lastDurable = durable.catch(() => undefined);
        if (sinceSnapshot >= snapshotEvery && compacting === undefined) {
          // Written beside the appends; they wait only for the journal switch.
          compact().catch((e: unknown) =>
            log?.(`warning: compaction failed, the journal goes on: ${(e as Error).message}`),
          );
        }
        return { position: seq, durable };
      });
    },
    async audit(after, limit) {
      // The journal as it is now (a handle keeps this version even if a compaction swaps
      // the file), and what of it is durable; records it let go of are in the archive by then.
      const at = await lane.run(async () => {
        await journal.settled();
        await lastDurable;
        return { handle: await open(path, 'r'), headerBytes, end: journal.end, journalAfter };
      });
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
    },
    async compactions() {
      while (compacting !== undefined) await compacting.catch(() => undefined);
    },
    catchUp: async () => undefined,
    follow: () => () => undefined,
    async snapshot() {
      // One under way may hold an older position: then a fresh one.
      await compacting?.catch(() => undefined);
      await compact();
    },
    async close() {
      await compacting?.catch(() => undefined);
      if (journal.fatal === undefined)
        await compact().catch((e: unknown) =>
          log?.(`warning: the snapshot at shutdown failed: ${(e as Error).message}`),
        );
      await lane.idle();
      await journal.settled();
      await lastDurable;
      await journal.close();
    },
  };
}
