/**
 * The data folder's audit archive: the records a compaction takes out of the journal, kept
 * in files of their own under `audit/`, never rewritten or deleted. Each compaction writes
 * one file atomically (a temporary file, flushed, renamed, the folder flushed), named for
 * the positions it holds (`000000000001-000000100000.jsonl`), before the journal lets go of
 * them; so a crash leaves each record in the archive, in the journal, or in both (the
 * same line). Node-only.
 */
import { mkdir, open, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { recordPosition } from '../record/index.js';
import { eachLine, writeAtomically } from './files.js';

/** The archive's folder inside the data folder. */
const AUDIT_DIR = 'audit';

const NAME = /^(\d{12})-(\d{12})\.jsonl$/;

/** One archive file: the first and last positions it holds. */
interface ArchiveFile {
  readonly path: string;
  readonly first: number;
  readonly last: number;
}

const pad = (n: number) => String(n).padStart(12, '0');

/** The archive's files, in order of position. */
export async function archiveFiles(dir: string): Promise<ReadonlyArray<ArchiveFile>> {
  let names: string[];
  try {
    names = await readdir(join(dir, AUDIT_DIR));
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw e;
  }
  const files: ArchiveFile[] = [];
  for (const name of names) {
    const m = NAME.exec(name);
    if (m === null) continue;
    files.push({ path: join(dir, AUDIT_DIR, name), first: Number(m[1]), last: Number(m[2]) });
  }
  return files.sort((a, b) => a.first - b.first);
}

/** Writes the records `first` … `last` (their lines, each ending in a newline) as one file. */
export async function archive(
  dir: string,
  first: number,
  last: number,
  write: (put: (data: Buffer | string) => Promise<void>) => Promise<void>,
): Promise<void> {
  const folder = join(dir, AUDIT_DIR);
  await mkdir(folder, { recursive: true });
  await writeAtomically(folder, `${pad(first)}-${pad(last)}.jsonl`, write);
}

/** The last line of a file (read from its end, a block at a time), or undefined when empty. */
export async function lastLineOf(path: string): Promise<string | undefined> {
  const handle = await open(path, 'r');
  try {
    const size = (await handle.stat()).size;
    let end = size;
    // The file ends with a newline: the last line is before it.
    if (end > 0) end--;
    const chunks: Buffer[] = [];
    let at = end;
    while (at > 0) {
      const from = Math.max(0, at - 65_536);
      const block = Buffer.alloc(at - from);
      await handle.read(block, 0, block.length, from);
      const nl = block.lastIndexOf(10);
      if (nl >= 0) {
        chunks.unshift(block.subarray(nl + 1));
        return Buffer.concat(chunks).toString('utf8');
      }
      chunks.unshift(block);
      at = from;
    }
    return chunks.length === 0 ? undefined : Buffer.concat(chunks).toString('utf8');
  } finally {
    await handle.close();
  }
}

/** The lines of the archive, in order, from the file holding position `after + 1` on. */
export async function* archivedLines(
  dir: string,
  after = 0,
): AsyncGenerator<{ readonly text: string; readonly where: string; readonly expected: number }> {
  for (const file of await archiveFiles(dir)) {
    if (file.last <= after) continue;
    const lines: Array<{ text: string; where: string; expected: number }> = [];
    let n = 0;
    await eachLine(file.path, (text) => {
      n++;
      lines.push({ text, where: `${file.path}:${n}`, expected: file.first + n - 1 });
    });
    for (const line of lines) yield line;
  }
}

/**
 * The whole trail of a data folder, in order: the archive's lines, then the journal's
 * records after them (a line written before the trail, a bare array of events, is no
 * record and is passed over).
 */
export async function* dataTrail(
  dir: string,
  journal: string,
): AsyncGenerator<{ readonly text: string; readonly where: string; readonly expected?: number }> {
  let last = 0;
  for await (const line of archivedLines(dir)) {
    last = line.expected;
    yield line;
  }
  const lines: Array<{ text: string; where: string }> = [];
  let n = 0;
  await eachLine(journal, (text) => {
    n++;
    const position = recordPosition(text);
    if (position > last) lines.push({ text, where: `${journal}:${n}` });
  });
  for (const line of lines) yield line;
}

/** The file the alert cursors of a data folder are kept in. */
const ALERT_CURSORS_FILE = 'alert-cursors.json';

/**
 * Alert cursors in a data folder: one small file, written atomically at each advance (a
 * cursor moves once per record that carries alerts: rarely).
 */
export function dataAlertCursors(dir: string): {
  load(key: string): Promise<number | undefined>;
  save(key: string, position: number): Promise<void>;
} {
  let cursors: Record<string, number> | undefined;
  let writing: Promise<unknown> = Promise.resolve();
  const read = async () => {
    if (cursors !== undefined) return cursors;
    try {
      const parsed = JSON.parse(await readFile(join(dir, ALERT_CURSORS_FILE), 'utf8')) as unknown;
      cursors =
        typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, number>) : {};
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      cursors = {};
    }
    return cursors;
  };
  return {
    async load(key) {
      const c = await read();
      return typeof c[key] === 'number' ? c[key] : undefined;
    },
    async save(key, position) {
      const c = await read();
      if ((c[key] ?? -1) >= position) return;
      c[key] = position;
      const text = JSON.stringify(c);
      const run = writing.then(() => writeAtomically(dir, ALERT_CURSORS_FILE, (put) => put(text)));
      writing = run.catch(() => undefined);
      await run;
    },
  };
}
