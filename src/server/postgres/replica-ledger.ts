/**
 * What one replica has applied of the log on PostgreSQL: its state and position (ahead of
 * what is committed while its write transaction holds rows), what is committed, the position
 * of each state it has shown, and who follows them. The replica (`replica.ts`) moves it: rows
 * read from the database, rows it writes, a commit, a rollback. Node-only.
 */
import { applyAll, type LimitsState } from 'peg-limits';
import type pg from 'pg';
import { located } from '../../internal.js';
import { PgLogError } from './connect.js';
import { type BatchRow, READ_ROWS, readAfter } from './rows.js';
import { newerSnapshot, parseBatch } from './tables.js';

/** A replica's state and position, and what of them is committed. */
export class ReplicaLedger {
  readonly #positions = new WeakMap<LimitsState, number>();
  readonly #listeners: Array<(state: LimitsState, position: number) => void> = [];
  #state: LimitsState;
  #position: number;
  // What is committed: `state` and `position` run ahead of it while a write transaction
  // holds rows not yet committed, and fall back to it when that transaction fails.
  #committedState: LimitsState;
  #committedPosition: number;

  constructor(state: LimitsState, position: number) {
    this.#state = state;
    this.#position = position;
    this.#committedState = state;
    this.#committedPosition = position;
    this.#positions.set(state, position);
  }

  /** The newest state (ahead of what is committed while rows are written). */
  get state(): LimitsState {
    return this.#state;
  }

  get position(): number {
    return this.#position;
  }

  get committedState(): LimitsState {
    return this.#committedState;
  }

  get committedPosition(): number {
    return this.#committedPosition;
  }

  /** The log position of a state this replica has shown (undefined for any other). */
  positionOf(state: LimitsState): number | undefined {
    return this.#positions.get(state);
  }

  /** Calls `fn` with each state read from the database; returns a stop function. */
  follow(fn: (state: LimitsState, position: number) => void): () => void {
    this.#listeners.push(fn);
    return () => {
      const i = this.#listeners.indexOf(fn);
      if (i >= 0) this.#listeners.splice(i, 1);
    };
  }

  /** A row this replica writes, at `seq`, ahead of what is committed. */
  wrote(next: LimitsState, seq: number): void {
    this.#state = next;
    this.#position = seq;
    this.#positions.set(next, seq);
  }

  /** Applies rows read from the database, in order; a row that does not apply throws `PgLogError`. */
  applyRows(rows: ReadonlyArray<BatchRow>): void {
    for (const row of rows) {
      const seq = Number(row.seq);
      const r = applyAll(this.#state, parseBatch(row.events as string, seq));
      if (!r.ok) throw new PgLogError(`batch ${seq} does not apply: ${located(r.error)}`);
      this.#state = r.state;
      this.#position = seq;
    }
  }

  /** A newer snapshot's state, in place of the rows pruned before it. */
  restore(state: LimitsState, position: number): void {
    this.#state = state;
    this.#position = position;
  }

  /**
   * What was read from the database is committed; the followers are told when the position
   * moved since `before`.
   */
  settleRead(before: number): void {
    this.#committedState = this.#state;
    this.#committedPosition = this.#position;
    if (this.#position === before) return;
    this.#positions.set(this.#state, this.#position);
    for (const fn of this.#listeners) fn(this.#state, this.#position);
  }

  /** The write transaction committed what was written. */
  committed(): void {
    this.#committedState = this.#state;
    this.#committedPosition = this.#position;
  }

  /** The write transaction failed: back to what is committed, its states forgotten. */
  rolledBack(states: Iterable<LimitsState>): void {
    for (const s of states) this.#positions.delete(s);
    this.#state = this.#committedState;
    this.#position = this.#committedPosition;
  }
}

/**
 * Applies the rows after the ledger's position, in order, read on `c` (`first`: the answer
 * of that query already); loads a newer snapshot first when the rows it would need were
 * pruned. The rows applied before a failure (a row that does not apply, `PgLogError`; a lost
 * connection) are kept. Resolves with whether the position moved.
 */
export async function applyRowsAfter(
  c: pg.Client,
  ledger: ReplicaLedger,
  first?: ReadonlyArray<BatchRow>,
): Promise<boolean> {
  const before = ledger.position;
  try {
    for (let read = first; ; read = undefined) {
      const rows = read ?? ((await c.query(readAfter(ledger.position))).rows as BatchRow[]);
      if (rows.length === 0) break;
      if (Number(rows[0]!.seq) !== ledger.position + 1) {
        // The rows after the position were pruned: the newest snapshot past it holds them.
        const newer = await newerSnapshot(c, ledger.position);
        if (newer === undefined)
          throw new PgLogError(
            `rows after ${ledger.position} are missing and no newer snapshot holds them`,
          );
        ledger.restore(newer.state, newer.position);
        continue;
      }
      ledger.applyRows(rows);
      if (rows.length < READ_ROWS) break;
    }
  } finally {
    ledger.settleRead(before);
  }
  return ledger.position !== before;
}
