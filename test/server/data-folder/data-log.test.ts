import { copyFileSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, test } from 'vitest';
import {
  applyAll,
  createLimitsState,
  createService,
  encodeJson,
  getLimits,
  type LimitsEvent,
  type LimitsState,
  snapshotOf,
} from '../../../src/index.js';
import {
  type DataLog,
  FlushError,
  type JournalFile,
  type OpenJournalFile,
  openDataLog,
  openNodeJournalFile,
  StoreError,
} from '../../../src/server/data-folder/data-log.js';
import { readDataSnapshot } from '../../support/data-snapshot.js';
import { tempDir } from '../../support/proc.js';

/** Appends one batch on the log's newest state, as the service does. */
const append = (log: DataLog, events: LimitsEvent[], next: LimitsState) =>
  log.append(events, next, log.state);

const initial = () =>
  createLimitsState({ limits: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 10n ** 9n } });

/** A journal file whose operations fail on purpose, as told. */
function faulty(plan: {
  shortAfter?: number;
  failWriteAfter?: number;
  failFlushAfter?: number;
  flushDelayMs?: number;
}): {
  open: OpenJournalFile;
  flushes: () => number;
  writes: () => number;
  /** The number of writes the completed flushes cover: those done before a flush began. */
  covered: () => number;
  /** The journal's bytes the completed flushes cover: those written before a flush began. */
  coveredBytes: () => number;
  /** The journal's bytes written so far (its end). */
  writtenBytes: () => number;
} {
  let writes = 0;
  let flushes = 0;
  let covered = 0;
  let bytes = 0;
  let coveredBytes = 0;
  const open: OpenJournalFile = async (path) => {
    const real: JournalFile = await openNodeJournalFile(path);
    return {
      async write(data, position) {
        writes++;
        if (plan.failWriteAfter !== undefined && writes > plan.failWriteAfter)
          throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
        // A short write: half the bytes, then the disk refuses the rest.
        if (plan.shortAfter !== undefined && writes > plan.shortAfter) {
          plan.failWriteAfter = writes;
          return real.write(data.subarray(0, data.length >> 1), position);
        }
        const n = await real.write(data, position);
        bytes = Math.max(bytes, position + n);
        return n;
      },
      async datasync() {
        flushes++;
        const upTo = writes;
        const upToBytes = bytes;
        if (plan.flushDelayMs) await new Promise((r) => setTimeout(r, plan.flushDelayMs));
        if (plan.failFlushAfter !== undefined && flushes > plan.failFlushAfter)
          throw Object.assign(new Error('input/output error'), { code: 'EIO' });
        await real.datasync();
        covered = Math.max(covered, upTo);
        coveredBytes = Math.max(coveredBytes, upToBytes);
      },
      truncate: (length) => real.truncate(length),
      close: () => real.close(),
    };
  };
  return {
    open,
    flushes: () => flushes,
    writes: () => writes,
    covered: () => covered,
    coveredBytes: () => coveredBytes,
    writtenBytes: () => bytes,
  };
}

function block(height: number): LimitsEvent {
  return { type: 'blockConnected', height };
}

function withdrawal(id: string, amount = 5n, height = 1): LimitsEvent {
  return { type: 'withdrawalRequested', id, account: 'alice', amount, height };
}

function next(state: LimitsState, events: LimitsEvent[]): LimitsState {
  const r = applyAll(state, events);
  if (!r.ok) throw r.error;
  return r.state;
}

/** A service over the log, and a way to post operator events to it. */
function serviceOver(store: DataLog) {
  const service = createService({ log: store, adminToken: 't' });
  const post = (events: LimitsEvent[]) =>
    service.handle({
      method: 'POST',
      path: '/admin/events',
      headers: { 'content-type': 'application/json', authorization: 'Bearer t' },
      body: encodeJson(events),
    });
  return { service, post };
}

describe('journal writes', () => {
  test('a write that comes up short is refused and cut back off, so the next one starts clean', async () => {
    const dir = tempDir();
    const f = faulty({ shortAfter: 2 });
    const store = await openDataLog({ dir, initial: initial(), openJournalFile: f.open });
    let s = store.state;
    s = next(s, [block(1)]);
    await (await append(store, [block(1)], s)).durable;
    const a = next(s, [withdrawal('a')]);
    await (await append(store, [withdrawal('a')], a)).durable;
    const size = readFileSync(join(dir, 'journal.jsonl')).length;
    // The third write gets half its bytes on disk, then fails: refused, and cut back.
    const b = await append(store, [withdrawal('b')], next(a, [withdrawal('b')]));
    await expect(b.durable).rejects.toThrow(/writing .*journal\.jsonl failed: no space left/);
    expect(readFileSync(join(dir, 'journal.jsonl')).length).toBe(size);
    // The log is back at a's state and position.
    expect(store.state).toBe(a);
    expect(store.position).toBe(2);
    await store.close();
    // Restarted on a healthy disk: a is there, b never was, and the file takes new lines.
    const again = await openDataLog({ dir, initial: initial() });
    expect(again.warnings).toEqual([]);
    expect(snapshotOf(again.state).withdrawals.map((w) => w.id)).toEqual(['a']);
    await again.close();
  });

  test('through the service: the refused change answers 500 and is not applied', async () => {
    const dir = tempDir();
    const f = faulty({ failWriteAfter: 1 });
    const store = await openDataLog({ dir, initial: initial(), openJournalFile: f.open });
    const { service, post } = serviceOver(store);
    expect((await post([block(1)])).status).toBe(200);
    const refused = await post([withdrawal('a')]);
    expect(refused.status).toBe(500);
    expect(refused.body).toMatch(/could not be persisted/);
    expect(service.state.tip).toBe(1);
    expect(snapshotOf(service.state).withdrawals).toEqual([]);
    await store.close();
  });

  test('a failed flush is fatal: onFatal is called, the write is never acknowledged, and nothing more is written', async () => {
    const dir = tempDir();
    const f = faulty({ failFlushAfter: 1 });
    const fatal: FlushError[] = [];
    const store = await openDataLog({
      dir,
      initial: initial(),
      openJournalFile: f.open,
      onFatal: (e) => fatal.push(e),
    });
    const s = next(store.state, [block(1)]);
    await (await append(store, [block(1)], s)).durable;
    const w = await append(store, [withdrawal('a')], next(s, [withdrawal('a')]));
    await expect(w.durable).rejects.toBeInstanceOf(FlushError);
    expect(fatal).toHaveLength(1);
    expect(fatal[0]!.message).toMatch(/flushing .*journal\.jsonl failed: input\/output error/);
    await expect(append(store, [withdrawal('b')], s)).rejects.toBeInstanceOf(FlushError);
  });

  test('group commit: concurrent writes share flushes, and each is answered only once its bytes are flushed', async () => {
    const dir = tempDir();
    const f = faulty({ flushDelayMs: 20 });
    const store = await openDataLog({ dir, initial: initial(), openJournalFile: f.open });
    const { service, post } = serviceOver(store);
    await post([block(1)]);
    const before = f.flushes();
    const flushedAt: number[] = [];
    const ownLineCovered: boolean[] = [];
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        post([withdrawal(`w${i}`)]).then((r) => {
          flushedAt.push(f.flushes());
          // The journal's flushed prefix holds this request's own line.
          const flushed = readFileSync(join(dir, 'journal.jsonl')).subarray(0, f.coveredBytes());
          ownLineCovered.push(flushed.includes(`"id":"w${i}"`));
          return r.status;
        }),
      ),
    );
    expect(answers.every((s) => s === 200)).toBe(true);
    // 40 changes, far fewer flushes: they waited together.
    expect(f.flushes() - before).toBeLessThan(10);
    expect(flushedAt.every((n) => n > before)).toBe(true);
    // And none was answered before a completed flush covered its own bytes.
    expect(ownLineCovered).toEqual(Array(40).fill(true));
    expect(getLimits(service.state).availableToWithdraw).toBe(10n ** 9n - 200n);
    await store.close();
  });

  test('group commit: the lines of changes made while a write is under way go to the file as one write', async () => {
    const dir = tempDir();
    const f = faulty({ flushDelayMs: 20 });
    const store = await openDataLog({ dir, initial: initial(), openJournalFile: f.open });
    const { post } = serviceOver(store);
    await post([block(1)]);
    const before = f.writes();
    const answers = await Promise.all(
      Array.from({ length: 40 }, (_, i) => post([withdrawal(`w${i}`)]).then((r) => r.status)),
    );
    expect(answers).toEqual(Array(40).fill(200));
    expect(f.writes() - before).toBeLessThan(10);
    // In the journal in the order the changes came.
    const ids = [...readFileSync(join(dir, 'journal.jsonl'), 'utf8').matchAll(/"id":"(w\d+)"/g)];
    expect(ids.map((m) => m[1])).toEqual(Array.from({ length: 40 }, (_, i) => `w${i}`));
    await store.close();
    // Every line is there, in order, and the trail links up.
    const again = await openDataLog({ dir, initial: initial() });
    expect(again.warnings).toEqual([]);
    expect(snapshotOf(again.state).withdrawals.map((w) => w.id)).toEqual(
      Array.from({ length: 40 }, (_, i) => `w${i}`).sort(),
    );

    expect(again.position).toBe(41);
    await again.close();
  });

  for (const [how, plan] of [
    ['fails', (n: number) => ({ failWriteAfter: n, flushDelayMs: 20 })],
    ['comes up short', (n: number) => ({ shortAfter: n, flushDelayMs: 20 })],
  ] as const) {
    test(`group commit: a group write that ${how} refuses every change in it and after it, and the next change is computed on the state before it`, async () => {
      const dir = tempDir();
      // Write 1 is the block, write 2 the first withdrawal alone; the group after it fails.
      const f = faulty(plan(2));
      const store = await openDataLog({ dir, initial: initial(), openJournalFile: f.open });
      const { service, post } = serviceOver(store);
      expect((await post([block(1)])).status).toBe(200);
      const size = readFileSync(join(dir, 'journal.jsonl')).length;
      const statuses = await Promise.all(
        Array.from({ length: 12 }, (_, i) => post([withdrawal(`w${i}`)]).then((r) => r.status)),
      );
      // The first went alone and was written; the rest queued behind it and were refused.
      expect(statuses[0]).toBe(200);
      expect(statuses.slice(1)).toEqual(Array(11).fill(500));
      expect(snapshotOf(service.state).withdrawals.map((w) => w.id)).toEqual(['w0']);
      // The refused lines are cut back off the file: only w0's line was added.
      const journal = readFileSync(join(dir, 'journal.jsonl'), 'utf8');
      expect(journal.length).toBeGreaterThan(size);
      expect(journal.includes('"id":"w1"')).toBe(false);
      expect(journal.endsWith('\n')).toBe(true);
      expect(store.position).toBe(2);
      await store.close();
      const again = await openDataLog({ dir, initial: initial() });
      expect(again.warnings).toEqual([]);
      expect(snapshotOf(again.state).withdrawals.map((w) => w.id)).toEqual(['w0']);
      await again.close();
    });
  }

  test('group commit: after a refused group the log takes new changes on the state before it', async () => {
    const dir = tempDir();
    let failing = false;
    const f = faulty({});
    const open: OpenJournalFile = async (path) => {
      const real = await f.open(path);
      return {
        ...real,
        async write(data, position) {
          if (failing)
            throw Object.assign(new Error('no space left on device'), { code: 'ENOSPC' });
          return real.write(data, position);
        },
      };
    };
    const store = await openDataLog({ dir, initial: initial(), openJournalFile: open });
    const { service, post } = serviceOver(store);
    expect((await post([block(1)])).status).toBe(200);
    failing = true;
    const refused = await Promise.all(
      Array.from({ length: 5 }, (_, i) => post([withdrawal(`x${i}`)]).then((r) => r.status)),
    );
    expect(refused).toEqual(Array(5).fill(500));
    failing = false;
    const again = await Promise.all(
      Array.from({ length: 5 }, (_, i) => post([withdrawal(`y${i}`)]).then((r) => r.status)),
    );
    expect(again).toEqual(Array(5).fill(200));
    expect(snapshotOf(service.state).withdrawals.map((w) => w.id)).toEqual([
      'y0',
      'y1',
      'y2',
      'y3',
      'y4',
    ]);
    expect(store.position).toBe(6);
    await store.close();
    const reopened = await openDataLog({ dir, initial: initial() });
    expect(reopened.warnings).toEqual([]);
    expect(reopened.position).toBe(6);
    await reopened.close();
  });

  test('an appender that never waits for its writes is held back: the lines ahead of the file stay within two groups of 1 MiB', async () => {
    const dir = tempDir();
    const f = faulty({ flushDelayMs: 20 });
    const store = await openDataLog({ dir, initial: initial(), openJournalFile: f.open });
    let s = next(store.state, [block(1)]);
    await (await append(store, [block(1)], s)).durable;
    const writtenWhenAnswered: number[] = [];
    let last: Promise<void> = Promise.resolve();
    for (let i = 0; i < 100; i++) {
      const events = Array.from({ length: 600 }, (_, j) => withdrawal(`w${i}-${j}`, 1n));
      const n = next(s, events);
      last = (await append(store, events, n)).durable;
      writtenWhenAnswered.push(f.writtenBytes());
      s = n;
    }
    await last;
    // Where each line ends in the journal (100 lines after the header and the block's).
    const journal = readFileSync(join(dir, 'journal.jsonl'));
    const ends: number[] = [];
    for (let at = journal.indexOf(10); at >= 0; at = journal.indexOf(10, at + 1)) ends.push(at + 1);
    const lineEnds = ends.slice(-100);
    const longest = Math.max(
      ...lineEnds.map((e, i) => e - (i === 0 ? ends.at(-101)! : lineEnds[i - 1]!)),
    );
    const ahead = lineEnds.map((end, i) => end - writtenWhenAnswered[i]!);
    // One group being written and one collecting, each at most 1 MiB and a line.
    expect(journal.length).toBeGreaterThan(4 * 1024 * 1024);
    expect(Math.max(...ahead)).toBeLessThanOrEqual(2 * (1024 * 1024 + longest));
    await store.close();
  });

  test('without group commit every write has a flush of its own', async () => {
    const dir = tempDir();
    const f = faulty({});
    const store = await openDataLog({
      dir,
      initial: initial(),
      openJournalFile: f.open,
      groupCommit: false,
    });
    let s = next(store.state, [block(1)]);
    await append(store, [block(1)], s);
    for (let i = 0; i < 5; i++) {
      s = next(s, [withdrawal(`w${i}`)]);
      await append(store, [withdrawal(`w${i}`)], s);
    }
    expect(f.flushes()).toBe(6);
    await store.close();
  });
});

describe('snapshots and compaction on disk', () => {
  async function filled(dir: string, snapshotEvery = 1000): Promise<LimitsState> {
    const store = await openDataLog({ dir, initial: initial(), snapshotEvery });
    let s = next(store.state, [block(1)]);
    await (await append(store, [block(1)], s)).durable;
    for (let i = 0; i < 20; i++) {
      s = next(s, [withdrawal(`w${i}`, BigInt(i + 1))]);
      await (await append(store, [withdrawal(`w${i}`, BigInt(i + 1))], s)).durable;
    }
    await store.snapshot();
    return s;
  }

  test('after snapshotEvery events a snapshot is written and the journal starts again after it', async () => {
    const dir = tempDir();
    const store = await openDataLog({ dir, initial: initial(), snapshotEvery: 5 });
    let s = next(store.state, [block(1)]);
    await (await append(store, [block(1)], s)).durable;
    for (let i = 0; i < 12; i++) {
      s = next(s, [withdrawal(`w${i}`)]);
      await (await append(store, [withdrawal(`w${i}`)], s)).durable;
    }
    await store.snapshot(); // waits for the compactions queued behind the writes
    expect(readFileSync(join(dir, 'journal.jsonl'), 'utf8')).toBe(
      '{"format":"peg-limits/journal","after":13}\n',
    );
    const again = await openDataLog({ dir, initial: initial() });
    expect(again.replayed).toBe(0);
    expect(again.position).toBe(13);
    expect(encodeJson(snapshotOf(again.state))).toBe(encodeJson(snapshotOf(s)));
    await again.close();
    await store.close();
  });

  test('a crash between the snapshot and the fresh journal applies nothing twice', async () => {
    const dir = tempDir();
    const store = await openDataLog({ dir, initial: initial(), snapshotEvery: 10_000 });
    let s = next(store.state, [block(1)]);
    await (await append(store, [block(1)], s)).durable;
    for (let i = 0; i < 3; i++) {
      s = next(s, [withdrawal(`w${i}`, 100n)]);
      await (await append(store, [withdrawal(`w${i}`, 100n)], s)).durable;
    }
    const oldJournal = readFileSync(join(dir, 'journal.jsonl'));
    await store.snapshot();
    await store.close();
    // Put back the journal as it was before the compaction replaced it: the snapshot holds
    // its four lines already.
    writeFileSync(join(dir, 'journal.jsonl'), oldJournal);
    const again = await openDataLog({ dir, initial: initial() });
    expect(again.replayed).toBe(0);
    expect(getLimits(again.state).availableToWithdraw).toBe(10n ** 9n - 300n);
    // New lines go on after the old ones, and count from there.
    const t = next(again.state, [withdrawal('x', 1n)]);
    await (await append(again, [withdrawal('x', 1n)], t)).durable;
    await again.close();
    const third = await openDataLog({ dir, initial: initial() });
    expect(getLimits(third.state).availableToWithdraw).toBe(10n ** 9n - 301n);
    await third.close();
  });

  test('a crash before the snapshot is renamed leaves the old snapshot and the whole journal', async () => {
    const dir = tempDir();
    const s = await filled(dir);
    // A half-written temporary snapshot, as a crash during its write leaves it.
    writeFileSync(join(dir, 'snapshot.json.tmp'), '{"format":"peg-limits/data-snaps');
    writeFileSync(join(dir, 'journal.jsonl.tmp'), '{"format":"peg-');
    const again = await openDataLog({ dir, initial: initial() });
    expect(encodeJson(snapshotOf(again.state))).toBe(encodeJson(snapshotOf(s)));
    await again.close();
  });

  test('a snapshot is written in slices: a header, the head, bounded lines of entries and withdrawals, the counts', async () => {
    const dir = tempDir();
    const entries: Record<string, { perWithdrawalCap: bigint }> = {};
    for (let i = 0; i < 2_500; i++) entries[`e${i}`] = { perWithdrawalCap: BigInt(i + 1) };
    const events: LimitsEvent[] = [
      { type: 'limitsSet', limits: { accountCaps: entries } },
      block(1),
      ...Array.from({ length: 4_500 }, (_, i) => withdrawal(`s${i}`, 1n)),
    ];
    const store = await openDataLog({ dir, initial: initial() });
    const s = next(store.state, events);
    await (await append(store, events, s)).durable;
    await store.close();
    const file = readDataSnapshot(dir);
    // 2 + 5 lines of entries (500 a line) + 9 of withdrawals + the counts.
    expect(file.lines).toBe(17);
    expect(Object.keys(file.accountCaps)).toHaveLength(2_500);
    expect(file.withdrawals).toHaveLength(4_500);
    for (const line of readFileSync(join(dir, 'snapshot.json'), 'utf8').split('\n'))
      expect(line.length).toBeLessThan(500_000);
    const again = await openDataLog({ dir, initial: initial() });
    expect(encodeJson(snapshotOf(again.state))).toBe(encodeJson(snapshotOf(s)));
    await again.close();
  });

  test('a version 1 snapshot (one JSON text) is still read', async () => {
    const dir = tempDir();
    const s = next(initial(), [block(1), withdrawal('old', 5n)]);
    writeFileSync(
      join(dir, 'snapshot.json'),
      encodeJson({ format: 'peg-limits/data-snapshot', seq: 2, state: snapshotOf(s) }),
    );
    writeFileSync(join(dir, 'journal.jsonl'), '{"format":"peg-limits/journal","after":2}\n');
    const again = await openDataLog({ dir, initial: initial() });
    expect(again.position).toBe(2);
    expect(encodeJson(snapshotOf(again.state))).toBe(encodeJson(snapshotOf(s)));
    await again.close();
  });

  test('a damaged snapshot refuses to start with a clear message', async () => {
    const dir = tempDir();
    await filled(dir);
    const text = readFileSync(join(dir, 'snapshot.json'), 'utf8');
    for (const [damage, message] of [
      [
        text.slice(0, text.length >> 1),
        /snapshot\.json: the snapshot is damaged: the last line is cut short/,
      ],
      [
        text.slice(0, text.lastIndexOf('{"end"')),
        /the counts line is missing: the file is cut short/,
      ],
      [
        text.replace(/\n\{"withdrawals":[^\n]*/, ''),
        /the counts say 0 entries and 20 withdrawals, the file holds 0 and 0/,
      ],
      [text.replace('"version":2', '"version":3'), /reads versions 1 and 2, got 3/],
      [text.replace('"seq":21', '"seq":-1'), /"seq" is not a batch count/],
      [
        text.replace('"amount":"1",', '"amount":"-1",'),
        /invalid snapshot: withdrawals\[\d+\]\.amount/,
      ],
      [text.replace('{"head"', 'x{"head"'), /line 2: not valid JSON/],
      ['[]\n', /expected an object with "format"/],
    ] as const) {
      writeFileSync(join(dir, 'snapshot.json'), damage);
      await expect(openDataLog({ dir, initial: initial() })).rejects.toThrow(message);
      await expect(openDataLog({ dir, initial: initial() })).rejects.toBeInstanceOf(StoreError);
    }
  });

  test('a journal that starts after what the snapshot holds refuses to start', async () => {
    const dir = tempDir();
    await filled(dir);
    renameSync(join(dir, 'snapshot.json'), join(dir, 'moved.json'));
    await expect(openDataLog({ dir, initial: initial() })).rejects.toThrow(
      /the journal starts after batch 21, but there is no snapshot/,
    );
    copyFileSync(join(dir, 'moved.json'), join(dir, 'snapshot.json'));
    const again = await openDataLog({ dir, initial: initial() });
    expect(again.position).toBe(21);
    await again.close();
  });
});
