/**
 * Reading a data folder at start (docs/operating.md, "Reliability"): the snapshot, then the
 * journal lines after it, streamed and replayed, each record linked to the one before it
 * (and the first to the audit archive's last). A torn or damaged last line is dropped with a
 * warning; damage anywhere else, a journal that does not fit its snapshot, or a trail that
 * does not link up refuses to start. Node-only.
 */
import { mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import {
  applyAll,
  encodeJson,
  type LimitsEvent,
  type LimitsState,
  tryDecodeJson,
} from 'peg-limits';
import { decodeBatch, located } from '../../internal.js';
import { type AuditRecord, checkLink, readRecord } from '../record/index.js';
import { archiveFiles, lastLineOf } from './archive.js';
import { eachLine, readSnapshot, SNAPSHOT_FILE, StoreError } from './files.js';

/** The journal's file name inside the data folder. */
export const JOURNAL_FILE = 'journal.jsonl';

const JOURNAL_FORMAT = 'peg-limits/journal';

/** The journal's first line: it holds the batches after `after`. */
export function journalHeader(after: number): string {
  return `${encodeJson({ format: JOURNAL_FORMAT, after })}\n`;
}

function parseHeader(text: string): number | undefined {
  const json = tryDecodeJson(text);
  if (!json.ok || typeof json.value !== 'object' || json.value === null) return undefined;
  const h = json.value as Record<string, unknown>;
  if (h.format !== JOURNAL_FORMAT || typeof h.after !== 'bigint' || h.after < 0n) return undefined;
  return Number(h.after);
}

/** A record's place in the trail: its position and hash. */
interface TrailLink {
  readonly position: number;
  readonly hash: string;
}

/** Where the trail first fails to link up. */
export interface TrailBreak {
  readonly position: number;
  readonly why: string;
}

/** What a data folder holds, read at start. */
interface FolderContents {
  /** The state after the snapshot and every journal line. */
  readonly state: LimitsState;
  /** The batches the snapshot holds (0 without one). */
  readonly snapshotSeq: number;
  /** The batch the journal starts after. */
  readonly start: number;
  /**
   * The journal's batches, how many of them were replayed (the rest the snapshot holds), and
   * the events those held: they count toward the next snapshot.
   */
  readonly batches: number;
  readonly replayed: number;
  readonly replayedEvents: number;
  /** The journal's size, the bytes of it that are whole lines, the header's bytes. */
  readonly size: number;
  readonly goodBytes: number;
  readonly headerBytes: number;
  /** The newest record, and the newest the archive holds. */
  readonly last: TrailLink | undefined;
  readonly archivedUpTo: number;
  /** Where the trail breaks (only with `auditRepair`: else reading refuses). */
  readonly broken: TrailBreak | undefined;
  readonly warnings: ReadonlyArray<string>;
}

// The archive's newest record: the journal's records link up to it.
async function newestArchived(dir: string): Promise<TrailLink | undefined> {
  const archived = await archiveFiles(dir);
  const newest = archived[archived.length - 1];
  if (newest === undefined) return undefined;
  const text = await lastLineOf(newest.path);
  const read = text === undefined ? undefined : readRecord(text);
  if (read === undefined || !read.ok || read.record.position !== newest.last)
    throw new StoreError(
      `${newest.path}: the audit archive's last record is not record ${newest.last} (${read?.ok === false ? read.why : 'no record'}); refusing to start (peg-limits audit verify --data ${dir} says more)`,
    );
  return { hash: read.record.hash, position: read.record.position };
}

// The journal, line by line: the first may be a header; a journal without one (written by
// 0.1) starts after batch 0. A line is an audit record (its events, and who, when, its hash)
// or, as written before the trail, the bare array of the events.
class JournalReplay {
  lineNo = 0;
  after: number | undefined;
  batches = 0;
  replayed = 0;
  replayedEvents = 0;
  goodBytes = 0;
  headerBytes = 0;
  damage: { line: number; why: string; end: number } | undefined;
  broken: TrailBreak | undefined;
  readonly #path: string;
  readonly #snapshotSeq: number;
  state: LimitsState;
  last: TrailLink | undefined;

  constructor(path: string, state: LimitsState, snapshotSeq: number, last: TrailLink | undefined) {
    this.#path = path;
    this.state = state;
    this.#snapshotSeq = snapshotSeq;
    this.last = last;
  }

  line(text: string, end: number): void {
    this.lineNo++;
    if (this.damage !== undefined) {
      // A damaged line followed by more lines is damage in the middle: refused after.
      this.damage = { ...this.damage, end: -1 };
      return;
    }
    if (this.lineNo === 1) {
      this.after = parseHeader(text);
      if (this.after !== undefined) {
        this.goodBytes = end;
        this.headerBytes = end;
        return;
      }
      this.after = 0;
    }
    const position = this.after! + this.batches + 1;
    const events = this.#events(text, position, end);
    if (events === undefined) return;
    this.batches++;
    if (position > this.#snapshotSeq) {
      const r = applyAll(this.state, events);
      if (!r.ok)
        throw new StoreError(
          `${this.#path}:${this.lineNo}: cannot replay: ${located(r.error)}; refusing to start`,
        );
      this.state = r.state;
      this.replayed++;
      this.replayedEvents += events.length;
    }
    this.goodBytes = end;
  }

  // The line's events, or undefined (and the damage noted) when it is not a batch at `position`.
  #events(text: string, position: number, end: number): ReadonlyArray<LimitsEvent> | undefined {
    if (text.startsWith('[')) {
      const parsed = decodeBatch(text);
      if (parsed.ok) return parsed.events;
      this.damage = { line: this.lineNo, why: parsed.error, end };
      return undefined;
    }
    const read = readRecord(text);
    if (!read.ok) {
      this.damage = { line: this.lineNo, why: read.why, end };
      return undefined;
    }
    if (read.record.position !== position) {
      const why = `it says position ${read.record.position}, its place is ${position}`;
      this.damage = { line: this.lineNo, why, end };
      return undefined;
    }
    this.#link(read.record);
    return read.record.events;
  }

  // Links a record to the one before it, noting the first break.
  #link(record: AuditRecord): void {
    const prev = this.last;
    const at = `${this.#path}:${this.lineNo}`;
    if (prev !== undefined && record.position <= prev.position) {
      // Archived already (a crash between the archive and the journal's switch): the same line.
      if (record.position === prev.position && record.hash !== prev.hash)
        this.broken ??= {
          position: record.position,
          why: `${at}: it differs from the archived record ${record.position}`,
        };
      return;
    }
    const why =
      prev !== undefined && record.position > prev.position + 1
        ? `records ${prev.position + 1}…${record.position - 1} are in neither the archive nor the journal`
        : checkLink(record, prev);
    if (why !== undefined) this.broken ??= { position: record.position, why: `${at}: ${why}` };
    // A repair record (--audit-repair) starts a new chain: the break before it is on the
    // record already.
    if (why === undefined && record.repair !== undefined && this.broken !== undefined)
      this.broken = undefined;
    this.last = { hash: record.hash, position: record.position };
  }
}

/**
 * Reads the data folder `dir` (made when missing), starting from `initial` when it holds
 * nothing.
 *
 * @throws StoreError when the snapshot or the journal is damaged, a line no longer applies,
 *   the journal does not fit the snapshot, or the trail breaks (unless `auditRepair`)
 */
export async function readDataFolder(
  dir: string,
  initial: LimitsState,
  auditRepair: boolean,
): Promise<FolderContents> {
  await mkdir(dir, { recursive: true });
  // Leftovers of a compaction that a crash interrupted before its rename.
  await rm(join(dir, `${SNAPSHOT_FILE}.tmp`), { force: true });
  await rm(join(dir, `${JOURNAL_FILE}.tmp`), { force: true });
  const snapshot = await readSnapshot(dir);
  const snapshotSeq = snapshot?.seq ?? 0;
  const path = join(dir, JOURNAL_FILE);
  const archived = await newestArchived(dir);
  const replay = new JournalReplay(path, snapshot?.state ?? initial, snapshotSeq, archived);
  const { size, tail } = await eachLine(path, (text, _start, end) => replay.line(text, end));
  const warnings: string[] = [];
  const { damage, after, batches, broken } = replay;
  if (damage !== undefined) {
    if (damage.end < 0 || tail > 0)
      throw new StoreError(
        `${path}:${damage.line}: the journal is damaged: ${damage.why}; refusing to start`,
      );
    warnings.push(`${path}:${damage.line}: dropped a damaged last line (${damage.why})`);
  }
  if (tail > 0)
    warnings.push(`${path}:${replay.lineNo + 1}: dropped a last line cut short by a crash`);
  if (after !== undefined && after > snapshotSeq)
    throw new StoreError(
      `${path}: the journal starts after batch ${after}, but ${snapshot === undefined ? 'there is no snapshot' : `the snapshot holds batches up to ${snapshotSeq}`}; refusing to start (was ${SNAPSHOT_FILE} removed or replaced?)`,
    );
  if (after !== undefined && after + batches < snapshotSeq)
    throw new StoreError(
      `${path}: the journal ends at batch ${after + batches}, before the snapshot's ${snapshotSeq}; refusing to start`,
    );
  if (broken !== undefined && !auditRepair)
    throw new StoreError(
      `the audit trail breaks at position ${broken.position}: ${broken.why}; refusing to start (peg-limits audit verify --data ${dir} checks the whole trail; --audit-repair starts a new chain that records the break)`,
    );
  return {
    state: replay.state,
    snapshotSeq,
    start: after ?? snapshotSeq,
    batches,
    replayed: replay.replayed,
    replayedEvents: replay.replayedEvents,
    size,
    goodBytes: replay.goodBytes,
    headerBytes: replay.headerBytes,
    last: replay.last,
    archivedUpTo: archived?.position ?? 0,
    broken,
    warnings,
  };
}
