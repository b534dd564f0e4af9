/**
 * The snapshot rows a replica writes: any replica writes one every `snapshotEvery` batches,
 * then prunes what lies far enough behind it. Each is written on a connection of its own,
 * in slices, beside the appends (the state cannot change under it); one at a time.
 * Node-only.
 */
import type { LimitsState } from 'peg-limits';
import { connectClient } from './connect.js';
import { writeSnapshotRows } from './tables.js';

/** Where and how a replica's snapshots are written. */
interface SnapshotSettings {
  readonly url: string;
  /** Bytes of a snapshot part. */
  readonly slice: number;
  /** Batches kept behind the newest snapshot. */
  readonly keepBatches: number;
  readonly log: ((line: string) => void) | undefined;
}

/** Writes a replica's snapshots, one at a time. */
export class SnapshotWriter {
  readonly #settings: SnapshotSettings;
  #queue: Promise<void> = Promise.resolve();

  constructor(settings: SnapshotSettings) {
    this.#settings = settings;
  }

  /** Writes the snapshot of `at` (position `seq`) once those before it are written. */
  write(at: LimitsState, seq: number): Promise<void> {
    const { url, slice, keepBatches, log } = this.#settings;
    const run = this.#queue.then(async () => {
      const c = await connectClient(url);
      try {
        const bytes = await writeSnapshotRows(c, seq, at, slice);
        await c.query('DELETE FROM peg_limits_batches WHERE seq <= $1', [seq - keepBatches]);
        await c.query('DELETE FROM peg_limits_snapshot_parts WHERE seq <= $1', [seq - keepBatches]);
        await c.query('DELETE FROM peg_limits_snapshots WHERE seq <= $1', [seq - keepBatches]);
        if (bytes > 0) log?.(`snapshot ${seq} written (${bytes} bytes)`);
      } finally {
        await c.end().catch(() => undefined);
      }
    });
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Writes the snapshot of each row committed at a multiple of `every` (a failure is told). */
  writeDue(
    rows: ReadonlyArray<{ readonly seq: number; readonly state: LimitsState }>,
    every: number,
  ): void {
    for (const r of rows)
      if (r.seq % every === 0)
        this.write(r.state, r.seq).catch((e: unknown) =>
          this.#settings.log?.(`warning: snapshot ${r.seq} failed: ${(e as Error).message}`),
        );
  }

  /** Resolves once the snapshots asked for are written or failed. */
  settled(): Promise<void> {
    return this.#queue;
  }
}
