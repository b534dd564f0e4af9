/**
 * The data folder's event log (docs/operating.md, "Reliability"): a snapshot and a journal
 * of the batches after it, read at start (`replay.ts`), appended to by the journal's
 * writer (`journal.ts`), and compacted beside the appends: a new snapshot, the records the
 * journal lets go of archived under `audit/`, then a fresh journal. Node-only.
 */
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type Appended,
  type BatchMeta,
  type EventLog,
  type LimitsEvent,
  type LimitsState,
  LogConflict,
} from 'peg-limits';
import { serialQueue } from '../../internal.js';

import { makeRecord, ZERO_HASH } from '../record/index.js';
import { archiveJournal, readTrail } from './compaction.js';
import { readRange, SNAPSHOT_FILE, writeAtomically, writeSnapshot } from './files.js';
import {
  type FlushError,
  type JournalFile,
  JournalWriter,
  type OpenJournalFile,
  openNodeJournalFile,
} from './journal.js';
import { JOURNAL_FILE, journalHeader, readDataFolder, type TrailBreak } from './replay.js';

export { StoreError } from './files.js';
export {
  FlushError,
  type JournalFile,
  type OpenJournalFile,
  openNodeJournalFile,
} from './journal.js';
export { JOURNAL_FILE } from './replay.js';

/** Journaled events between two compactions, unless configured. */
export const DEFAULT_SNAPSHOT_EVERY = 100_000;

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

// Where the log stands: what a refused group takes it back to.
interface Standing {
  readonly seq: number;
  readonly hash: string;
  readonly state: LimitsState;
}

/**
 * Opens a data folder: reads the snapshot and replays the journal lines after it, streaming,
 * then takes new batches.
 *
 * @throws StoreError when the snapshot or the journal is damaged, or a line no longer applies
 */
export async function openDataLog(options: DataLogOptions): Promise<DataLog> {
  const read = await readDataFolder(options.dir, options.initial, options.auditRepair === true);
  const path = join(options.dir, JOURNAL_FILE);
  const openFile = options.openJournalFile ?? openNodeJournalFile;
  // A fresh folder (or one whose journal was lost entirely) gets a journal with a header.
  let file: JournalFile;
  let end: number;
  let headerBytes = read.headerBytes;
  if (read.size === 0) {
    const header = journalHeader(read.snapshotSeq);
    await writeAtomically(options.dir, JOURNAL_FILE, (put) => put(header));
    file = await openFile(path);
    end = Buffer.byteLength(header);
    headerBytes = end;
  } else {
    file = await openFile(path);
    end = read.goodBytes;
    if (end < read.size) await file.truncate(end);
  }
  const log = new DataFolderLog(options, file, {
    state: read.state,
    seq: read.start + read.batches,
    hash: read.last?.hash ?? ZERO_HASH,
    end,
    headerBytes,
    snapshotAt: read.snapshotSeq,
    journalAfter: read.start,
    archivedUpTo: read.archivedUpTo,
    replayed: read.replayed,
    replayedEvents: read.replayedEvents,
    warnings: [...read.warnings],
  });
  if (read.broken !== undefined) await log.startNewChain(read.broken);
  return log;
}

/** Where a data folder's log starts from, as read. */
interface Opened {
  readonly state: LimitsState;
  readonly seq: number;
  readonly hash: string;
  readonly end: number;
  readonly headerBytes: number;
  readonly snapshotAt: number;
  readonly journalAfter: number;
  readonly archivedUpTo: number;
  readonly replayed: number;
  /** The events of the batches replayed: the journal holds them, so they count toward the next snapshot. */
  readonly replayedEvents: number;
  readonly warnings: string[];
}

class DataFolderLog implements DataLog {
  readonly warnings: string[];
  readonly replayed: number;
  // One writer: nothing to catch up with.
  readonly catchingUp = false;
  readonly #dir: string;
  readonly #path: string;
  readonly #log: ((line: string) => void) | undefined;
  readonly #snapshotEvery: number;
  readonly #groupCommit: boolean;
  readonly #openFile: OpenJournalFile;
  readonly #journal: JournalWriter<Standing>;
  // Orders appends and compactions.
  readonly #lane = serialQueue();
  // The position of each state this store read or wrote.
  readonly #positions: WeakMap<LimitsState, number>;
  #seq: number;
  #written: LimitsState;
  // The newest record's hash: the next record follows it.
  #lastHash: string;
  #sinceSnapshot = 0;
  // The batch count the snapshot on disk holds, and the batch the journal file starts after
  // (it holds batches journalAfter + 1 … seq).
  #snapshotAt: number;
  #journalAfter: number;
  #headerBytes: number;
  #archivedUpTo: number;
  #lastDurable: Promise<void> = Promise.resolve();
  #compacting: Promise<void> | undefined;

  constructor(options: DataLogOptions, file: JournalFile, opened: Opened) {
    this.#dir = options.dir;
    this.#path = join(options.dir, JOURNAL_FILE);
    this.#log = options.logLine;
    this.#snapshotEvery = options.snapshotEvery ?? DEFAULT_SNAPSHOT_EVERY;
    this.#groupCommit = options.groupCommit ?? true;
    this.#openFile = options.openJournalFile ?? openNodeJournalFile;
    this.warnings = opened.warnings;
    this.replayed = opened.replayed;
    // What the journal holds counts toward the next snapshot: a server that crashed before
    // compacting does not start its count again, so the journal, and every later start's
    // replay, stays near the interval however often it crashes.
    this.#sinceSnapshot = opened.replayedEvents;
    this.#seq = opened.seq;
    this.#written = opened.state;
    this.#lastHash = opened.hash;
    this.#snapshotAt = opened.snapshotAt;
    this.#journalAfter = opened.journalAfter;
    this.#headerBytes = opened.headerBytes;
    this.#archivedUpTo = opened.archivedUpTo;
    this.#positions = new WeakMap([[opened.state, opened.seq]]);
    // A group the writer cannot write takes the log back to where it stood.
    this.#journal = new JournalWriter<Standing>(file, this.#path, opened.end, {
      onFatal: options.onFatal,
      onRefused: (before, states) => {
        this.#seq = before.seq;
        this.#lastHash = before.hash;
        this.#written = before.state;
        for (const s of states) this.#positions.delete(s);
      },
    });
  }

  get state(): LimitsState {
    return this.#written;
  }

  get position(): number {
    return this.#seq;
  }

  get writable(): boolean {
    return this.#journal.fatal === undefined;
  }

  get unavailable(): string | undefined {
    return this.#journal.fatal?.message;
  }

  positionOf(state: LimitsState): number | undefined {
    return this.#positions.get(state);
  }

  /**
   * Past a break (--audit-repair): a new chain starts with a record that says where and why,
   * as a batch of no events (so that every record is a batch), written before anything else.
   */
  async startNewChain(broken: TrailBreak): Promise<void> {
    const note = makeRecord(ZERO_HASH, this.#seq + 1, [], undefined, undefined, {
      repair: { after: broken.position - 1, reason: broken.why },
    });
    await this.#journal.append(Buffer.from(`${note.line}\n`, 'utf8'));
    await this.#journal.flush();
    this.#lastHash = note.hash;
    this.#seq++;
    this.#positions.set(this.#written, this.#seq);
    this.warnings.push(
      `the audit trail broke at position ${broken.position} (${broken.why}); --audit-repair started a new chain at position ${this.#seq}`,
    );
  }

  append(
    events: ReadonlyArray<LimitsEvent>,
    next: LimitsState,
    base: LimitsState,
    meta?: BatchMeta,
  ): Promise<Appended> {
    return this.#lane.run(async (): Promise<Appended> => {
      const journal = this.#journal;
      // A caller that does not wait for its writes is held back once a group holds
      // MAX_GROUP_BYTES: the lines queued never outgrow what one write takes.
      if (journal.queuedBytes >= MAX_GROUP_BYTES) await journal.settled();
      if (journal.fatal !== undefined) throw journal.fatal;
      if (this.#positions.get(base) !== this.#seq)
        throw new LogConflict(
          this.#written,
          'the batch was computed on a state that is not the newest',
        );
      const record = makeRecord(this.#lastHash, this.#seq + 1, events, meta, { base, next });
      const line = Buffer.from(`${record.line}\n`, 'utf8');
      let durable: Promise<void>;
      if (this.#groupCommit) {
        // Queued for the next group write: the next change is computed at once, on this
        // one's state; a group that cannot be written takes every line after it back.
        durable = journal.queue(line, next, () => ({
          seq: this.#seq,
          hash: this.#lastHash,
          state: this.#written,
        }));
      } else {
        await journal.append(line);
        durable = journal.flush();
        await durable;
      }
      this.#lastHash = record.hash;
      this.#seq++;
      this.#positions.set(next, this.#seq);
      this.#written = next;
      this.#sinceSnapshot += events.length;
      this.#lastDurable = durable.catch(() => undefined);
      if (this.#sinceSnapshot >= this.#snapshotEvery && this.#compacting === undefined) {
        // Written beside the appends; they wait only for the journal switch.
        this.#compact().catch((e: unknown) =>
          this.#log?.(`warning: compaction failed, the journal goes on: ${(e as Error).message}`),
        );
      }
      return { position: this.#seq, durable };
    });
  }

  // A property, not a method: callers take it off the log (`log.audit`) and call it alone.
  readonly audit = (after: number, limit: number): Promise<ReadonlyArray<string>> =>
    this.#readTrail(after, limit);

  async #readTrail(after: number, limit: number): Promise<ReadonlyArray<string>> {
    // The journal as it is now (a handle keeps this version even if a compaction swaps the
    // file), and what of it is durable; records it let go of are in the archive by then.
    const at = await this.#lane.run(async () => {
      await this.#journal.settled();
      await this.#lastDurable;
      return {
        handle: await open(this.#path, 'r'),
        headerBytes: this.#headerBytes,
        end: this.#journal.end,
        journalAfter: this.#journalAfter,
      };
    });
    return readTrail(this.#dir, at, after, limit);
  }

  async compactions(): Promise<void> {
    while (this.#compacting !== undefined) await this.#compacting.catch(() => undefined);
  }

  async catchUp(): Promise<LimitsState | undefined> {
    return undefined;
  }

  follow(): () => void {
    return () => undefined;
  }

  async snapshot(): Promise<void> {
    // One under way may hold an older position: then a fresh one.
    await this.#compacting?.catch(() => undefined);
    await this.#compact();
  }

  async close(): Promise<void> {
    await this.#compacting?.catch(() => undefined);
    if (this.#journal.fatal === undefined)
      await this.#compact().catch((e: unknown) =>
        this.#log?.(`warning: the snapshot at shutdown failed: ${(e as Error).message}`),
      );
    await this.#lane.idle();
    await this.#journal.settled();
    await this.#lastDurable;
    await this.#journal.close();
  }

  // A compaction (docs/operating.md, "Reliability"). The state is immutable, so the snapshot
  // is written from the state of one position while appends go on, in slices; only the
  // journal switch takes a turn among the appends: the lines appended meanwhile move to a
  // fresh journal that starts after the snapshot's position, and the file is swapped
  // atomically.
  #compact(): Promise<void> {
    this.#compacting ??= this.#compactNow().finally(() => {
      this.#compacting = undefined;
    });
    return this.#compacting;
  }

  async #compactNow(): Promise<void> {
    const at = await this.#lane.run(async () => {
      await this.#journal.settled();
      // Nothing to do when the snapshot holds every batch and the journal none.
      if (this.#seq === this.#snapshotAt && this.#seq === this.#journalAfter) return undefined;
      this.#sinceSnapshot = 0;
      // Where the lines after this position start in the journal, and its flush.
      return {
        seq: this.#seq,
        state: this.#written,
        offset: this.#journal.end,
        durable: this.#lastDurable,
      };
    });
    if (at === undefined) return;
    await at.durable;
    if (this.#journal.fatal !== undefined) throw this.#journal.fatal;
    this.#log?.(`compacting: writing a snapshot of ${at.seq} batches`);
    const bytes = await writeSnapshot(this.#dir, at.seq, at.state);
    // From here the snapshot holds batches 1…at.seq; a crash now leaves the old journal,
    // whose lines up to at.seq start-up skips.
    this.#snapshotAt = at.seq;
    // The records the journal is about to let go of go to the archive first, durably: a
    // crash now leaves them in both, never in neither.
    await this.#archiveRecords(at.offset, at.seq);
    await this.#lane.run(() => this.#switchJournal(at.offset, at.seq));
    this.#log?.(`compacted: ${SNAPSHOT_FILE} holds ${at.seq} batches (${bytes} bytes)`);
  }

  // The lines after byte `offset` (batch `seq`) move to a fresh journal that starts after it.
  async #switchJournal(offset: number, seq: number): Promise<void> {
    const journal = this.#journal;
    await journal.settled();
    await this.#lastDurable;
    if (journal.fatal !== undefined) throw journal.fatal;
    const moved = await readRange(this.#path, offset, journal.end);
    const header = journalHeader(seq);
    await writeAtomically(this.#dir, JOURNAL_FILE, async (put) => {
      await put(header);
      await put(moved);
    });
    await journal.close();
    journal.replace(await this.#openFile(this.#path), Buffer.byteLength(header) + moved.length);
    this.#headerBytes = Buffer.byteLength(header);
    this.#journalAfter = seq;
  }

  // Copies the journal's records up to byte `offset` (position `last`) that the archive does
  // not hold yet into an archive file of their own (compaction.ts).
  async #archiveRecords(offset: number, last: number): Promise<void> {
    const archived = await archiveJournal(this.#dir, this.#path, {
      headerBytes: this.#headerBytes,
      archivedUpTo: this.#archivedUpTo,
      offset,
      last,
    });
    if (archived) this.#archivedUpTo = last;
  }
}
