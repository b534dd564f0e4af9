/**
 * The files of the data folder's event log (docs/operating.md, "Reliability") apart from the journal: the snapshot
 * file, written in slices beside the appends and read streaming, and the atomic write, line
 * and range reads it is made of. The log itself is `data-log.ts`. Node-only.
 */
import { createReadStream } from 'node:fs';
import { open, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import {
  encodeJson,
  type LimitsState,
  PegLimitsError,
  stateFromSnapshot,
  tryDecodeJson,
} from 'peg-limits';
import { located, snapshotParts } from '../../internal.js';

/** The snapshot's file name inside the data folder. */
export const SNAPSHOT_FILE = 'snapshot.json';
const SNAPSHOT_FORMAT = 'peg-limits/data-snapshot';

/** A data folder that cannot be read: the message says which file, where and why. */
export class StoreError extends PegLimitsError {
  override readonly name = 'StoreError';

  constructor(message?: string, options?: { readonly cause?: unknown }) {
    super('store_damaged', message, options);
  }
}

async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes a whole file atomically: a temporary file, flushed, renamed over the target, the
 * folder flushed.
 */
export async function writeAtomically(
  dir: string,
  name: string,
  write: (put: (data: Buffer | string) => Promise<void>) => Promise<void>,
): Promise<number> {
  const tmp = join(dir, `${name}.tmp`);
  const handle = await open(tmp, 'w');
  let position = 0;
  const put = async (chunk: Buffer | string) => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    let done = 0;
    while (done < data.length) {
      const r = await handle.write(data, done, data.length - done, position + done);
      if (r.bytesWritten === 0)
        throw new PegLimitsError('disk_full', `${tmp}: the disk took no more bytes`);
      done += r.bytesWritten;
    }
    position += data.length;
  };
  try {
    await write(put);
    await handle.datasync();
  } finally {
    await handle.close();
  }
  await rename(tmp, join(dir, name));
  await syncDir(dir);
  return position;
}

/** Withdrawals or entries in one line of a snapshot file. */
const SLICE = 500;

/** The longest a snapshot's writing keeps the event loop before it lets others have a turn. */
const TURN_MS = 8;

const nextTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * Writes `state` as the snapshot of batches 1…seq, in slices: a header line, the
 * head (everything but the entries and the withdrawals), then the entries and the
 * withdrawals a slice per line, yielding to the event loop between slices, and a last line
 * with their counts. No whole-state object or string is made. Returns the bytes written.
 */
export function writeSnapshot(dir: string, seq: number, state: LimitsState): Promise<number> {
  return writeAtomically(dir, SNAPSHOT_FILE, async (write) => {
    const parts = snapshotParts(state);
    // Lines are gathered and written together once the turn is over: each write awaited is
    // a turn given too.
    let pending: string[] = [];
    let since = performance.now();
    const put = async (line: string) => {
      pending.push(line);
      if (performance.now() - since < TURN_MS) return;
      const text = pending.join('');
      pending = [];
      await write(text);
      await nextTurn();
      since = performance.now();
    };
    await put(`${encodeJson({ format: SNAPSHOT_FORMAT, version: 2, seq })}\n`);
    await put(`${encodeJson({ head: parts.head })}\n`);
    let entries = 0;
    for (let caps = parts.nextEntries(SLICE); caps !== undefined; caps = parts.nextEntries(SLICE)) {
      const count = Object.keys(caps).length;
      if (count > 0) await put(`${encodeJson({ accountCaps: caps })}\n`);
      entries += count;
    }
    let withdrawals = 0;
    for (
      let ws = parts.nextWithdrawals(SLICE);
      ws !== undefined;
      ws = parts.nextWithdrawals(SLICE)
    ) {
      if (ws.length > 0) await put(`${encodeJson({ withdrawals: ws })}\n`);
      withdrawals += ws.length;
    }
    pending.push(`${encodeJson({ end: { accountCaps: entries, withdrawals } })}\n`);
    await write(pending.join(''));
  });
}

/** The folder's snapshot and the batch count it holds, or `undefined` when it has none. */
export async function readSnapshot(
  dir: string,
): Promise<{ readonly state: LimitsState; readonly seq: number } | undefined> {
  const path = join(dir, SNAPSHOT_FILE);
  const damaged = (why: string): never => {
    throw new StoreError(
      `${path}: the snapshot is damaged: ${why}; refusing to start (restore the file from a backup, or move the data folder aside to start empty)`,
    );
  };
  // Version 2, streamed a line at a time: the header, the head, slices, the counts.
  let seq: number | undefined;
  let head: Record<string, unknown> | undefined;
  const accountCaps: Record<string, unknown> = Object.create(null);
  let entries = 0;
  const withdrawals: unknown[] = [];
  let end: Record<string, unknown> | undefined;
  let lineNo = 0;
  let legacy = false;
  let read: { readonly size: number; readonly tail: number };
  try {
    read = await eachLine(path, (text) => {
      lineNo++;
      const json = tryDecodeJson(text);
      if (!json.ok) damaged(`line ${lineNo}: ${json.error.message}`);
      const line = (json.ok ? json.value : undefined) as Record<string, unknown>;
      if (typeof line !== 'object' || line === null || Array.isArray(line))
        damaged(
          lineNo === 1
            ? `expected an object with "format": "${SNAPSHOT_FORMAT}"`
            : `line ${lineNo}: expected an object`,
        );
      if (end !== undefined) damaged(`line ${lineNo}: a line after the counts`);
      if (lineNo === 1) {
        if (line.format !== SNAPSHOT_FORMAT)
          damaged(`expected an object with "format": "${SNAPSHOT_FORMAT}"`);
        if (line.state !== undefined) {
          legacy = true;
          seq = batchCount(line.seq, damaged);
          head = line.state as Record<string, unknown>;
          return;
        }
        if (line.version !== 2n)
          damaged(`this release reads versions 1 and 2, got ${String(line.version)}`);
        seq = batchCount(line.seq, damaged);
      } else if (legacy) {
        damaged(`line ${lineNo}: a version 1 snapshot is one line`);
      } else if (lineNo === 2) {
        if (typeof line.head !== 'object' || line.head === null)
          damaged('line 2: expected the head');
        head = line.head as Record<string, unknown>;
      } else if (line.accountCaps !== undefined) {
        for (const [name, caps] of Object.entries(line.accountCaps as Record<string, unknown>)) {
          accountCaps[name] = caps;
          entries++;
        }
      } else if (Array.isArray(line.withdrawals)) {
        for (const w of line.withdrawals) withdrawals.push(w);
      } else if (typeof line.end === 'object' && line.end !== null) {
        end = line.end as Record<string, unknown>;
      } else {
        damaged(`line ${lineNo}: expected entries, withdrawals or the counts`);
      }
    });
  } catch (e) {
    if (e instanceof StoreError) throw e;
    throw new StoreError(`${path}: cannot read the snapshot: ${(e as Error).message}`);
  }
  if (read.size === 0 && read.tail === 0) return undefined;
  let value: unknown;
  if (lineNo === 0) {
    // A version 1 snapshot: one JSON text without a newline.
    const json = tryDecodeJson(await readFile(path, 'utf8'));
    if (!json.ok) damaged(json.error.message);
    const whole = (json.ok ? json.value : undefined) as Record<string, unknown>;
    if (typeof whole !== 'object' || whole === null || whole.format !== SNAPSHOT_FORMAT)
      damaged(`expected an object with "format": "${SNAPSHOT_FORMAT}"`);
    seq = batchCount(whole.seq, damaged);
    value = whole.state;
  } else if (legacy) {
    value = head;
  } else {
    if (read.tail > 0) damaged('the last line is cut short');
    if (head === undefined) damaged('the head is missing');
    if (end === undefined) damaged('the counts line is missing: the file is cut short');
    if (end!.accountCaps !== BigInt(entries) || end!.withdrawals !== BigInt(withdrawals.length))
      damaged(
        `the counts say ${end!.accountCaps} entries and ${end!.withdrawals} withdrawals, the file holds ${entries} and ${withdrawals.length}`,
      );
    value = { ...head, accountCaps, withdrawals };
  }
  const restored = stateFromSnapshot(value);
  if (!restored.ok) damaged(`invalid snapshot: ${located(restored.error)}`);
  return restored.ok ? { state: restored.state, seq: seq! } : undefined;
}

function batchCount(value: unknown, damaged: (why: string) => never): number {
  if (typeof value !== 'bigint' || value < 0n || value > BigInt(Number.MAX_SAFE_INTEGER))
    damaged('"seq" is not a batch count');
  return Number(value);
}

/** Calls `fn` with each complete line of a file and its byte offset, streaming. */
export async function eachLine(
  path: string,
  fn: (line: string, start: number, end: number) => void,
): Promise<{ readonly size: number; readonly tail: number }> {
  let carry: Buffer[] = [];
  let carryStart = 0;
  let position = 0;
  try {
    for await (const chunk of createReadStream(path, {
      highWaterMark: 1 << 20,
    }) as AsyncIterable<Buffer>) {
      let from = 0;
      for (let nl = chunk.indexOf(10, from); nl >= 0; nl = chunk.indexOf(10, from)) {
        const piece = chunk.subarray(from, nl);
        const bytes = carry.length === 0 ? piece : Buffer.concat([...carry, piece]);
        const start = carry.length === 0 ? position + from : carryStart;
        fn(bytes.toString('utf8'), start, position + nl + 1);
        carry = [];
        from = nl + 1;
      }
      if (from < chunk.length) {
        if (carry.length === 0) carryStart = position + from;
        carry.push(chunk.subarray(from));
      }
      position += chunk.length;
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { size: 0, tail: 0 };
    throw e;
  }
  const tail = carry.reduce((n, b) => n + b.length, 0);
  return { size: position, tail };
}

/** The bytes `from` … `to − 1` of a file. */
export async function readRange(path: string, from: number, to: number): Promise<Buffer> {
  const data = Buffer.alloc(to - from);
  if (data.length === 0) return data;
  const handle = await open(path, 'r');
  try {
    let done = 0;
    while (done < data.length) {
      const r = await handle.read(data, done, data.length - done, from + done);
      if (r.bytesRead === 0)
        throw new PegLimitsError('file_truncated', `${path} ends before byte ${to}`);
      done += r.bytesRead;
    }
  } finally {
    await handle.close();
  }
  return data;
}
