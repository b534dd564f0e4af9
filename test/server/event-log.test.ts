/**
 * The event-log contract (src/http/event-log.ts), as one suite that both logs pass: the data
 * folder (one writer) and the log on PostgreSQL (many writers; the rules about other
 * writers run on it alone).
 */
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  applyAll,
  createLimitsState,
  type EventLog,
  encodeJson,
  type LimitsEvent,
  type LimitsState,
  LogConflict,
  snapshotOf,
} from '../../src/index.js';
import { openDataLog } from '../../src/server/data-folder/data-log.js';
import { openPgLog } from '../../src/server/postgres/pg-log.js';
import {
  POSTGRES_AVAILABLE,
  POSTGRES_MISSING,
  startPostgres,
  type TestPostgres,
} from '../support/postgres.js';
import { tempDir, waitFor } from '../support/proc.js';

const initial = (): LimitsState =>
  createLimitsState({ limits: { rollingWithdrawalBlocks: 10n, rollingWithdrawalCap: 10n ** 9n } });

const text = (state: LimitsState) => encodeJson(snapshotOf(state));

function next(state: LimitsState, events: LimitsEvent[]): LimitsState {
  const r = applyAll(state, events);
  if (!r.ok) throw r.error;
  return r.state;
}

const block = (height: number): LimitsEvent => ({ type: 'blockConnected', height });
const withdrawal = (id: string, amount = 100n): LimitsEvent => ({
  type: 'withdrawalRequested',
  id,
  account: 'alice',
  amount,
  height: 1,
});

/** Appends one batch on the log's newest state and waits for it to be durable. */
async function append(log: EventLog, events: LimitsEvent[]): Promise<LimitsState> {
  const to = next(log.state, events);
  const position = log.position;
  const appended = await log.append(events, to, log.state);
  expect(appended.position).toBe(position + 1);
  await appended.durable;
  return to;
}

/** Where a log lives: each `open` opens the same one (a second writer, for shared logs). */
interface LogPlace {
  open(): Promise<EventLog>;
  /** Whether other writers may append to it (PostgreSQL) or it has one (the data folder). */
  readonly shared: boolean;
}

function eventLogContract(
  name: string,
  place: () => Promise<LogPlace>,
  { shared, skip = false }: { readonly shared: boolean; readonly skip?: boolean },
): void {
  describe.skipIf(skip)(`the event-log contract: ${name}`, () => {
    test('a new log holds its initial state at position 0 and takes writes', async () => {
      const log = await (await place()).open();
      expect(log.position).toBe(0);
      expect(text(log.state)).toBe(text(initial()));
      expect(log.positionOf(log.state)).toBe(0);
      expect(log.writable).toBe(true);
      expect(log.unavailable).toBeUndefined();
      expect(await log.catchUp(log.state)).toBeUndefined();
      await log.close();
    });

    test('each append is the next position, and every state it made knows its position', async () => {
      const log = await (await place()).open();
      const s0 = log.state;
      const s1 = await append(log, [block(1)]);
      const s2 = await append(log, [withdrawal('a'), withdrawal('b')]);
      expect(log.position).toBe(2);
      expect(log.state).toBe(s2);
      expect([log.positionOf(s0), log.positionOf(s1), log.positionOf(s2)]).toEqual([0, 1, 2]);
      await log.close();
    });

    test('an append computed on a state that is not the newest is refused with the newest, and writes nothing', async () => {
      const where = await place();
      const log = await where.open();
      const s0 = log.state;
      const s1 = await append(log, [block(1)]);
      const stale = next(s0, [block(5)]);
      const refused = await log.append([block(5)], stale, s0).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(refused).toBeInstanceOf(LogConflict);
      expect(text((refused as LogConflict).state)).toBe(text(s1));
      expect(log.position).toBe(1);
      await log.close();
      const again = await where.open();
      expect(again.position).toBe(1);
      expect(text(again.state)).toBe(text(s1));
      await again.close();
    });

    test('reopened, it holds every durable batch, whether it starts from a snapshot or from the batches', async () => {
      const where = await place();
      const log = await where.open();
      await append(log, [block(1)]);
      await append(log, [withdrawal('a', 300n)]);
      await log.snapshot();
      await append(log, [withdrawal('b', 200n)]);
      const last = await append(log, [block(2)]);
      await log.close();
      const again = await where.open();
      expect(again.position).toBe(4);
      expect(text(again.state)).toBe(text(last));
      expect(again.positionOf(again.state)).toBe(4);
      // And it goes on from there.
      await append(again, [withdrawal('c', 1n)]);
      expect(again.position).toBe(5);
      await again.close();
    });

    // Only for a log other writers share: the data folder has one writer.
    if (shared)
      test('with other writers: an append on a stale state gets theirs, catchUp and follow bring their batches', async () => {
        const where = await place();
        const a = await where.open();
        const b = await where.open();
        const followed: number[] = [];
        const stop = b.follow((_, position) => followed.push(position));
        const base = b.state;
        const fromA = await append(a, [block(1)]);
        // B computed on its state at 0; A's row 1 is there: refused, with A's state.
        const refused = await b.append([block(9)], next(base, [block(9)]), base).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(refused).toBeInstanceOf(LogConflict);
        expect(text((refused as LogConflict).state)).toBe(text(fromA));
        expect(b.position).toBe(1);
        // A writes again: B's follower and catchUp see it.
        const again = await append(a, [withdrawal('a')]);
        const caught = await b.catchUp(b.state);
        const seen = caught ?? b.state;
        expect(text(seen)).toBe(text(again));
        expect(b.positionOf(seen)).toBe(2);
        await waitFor(() => followed.includes(2), 5_000);
        stop();
        // And B's append on the newest state is the next position.
        await append(b, [block(2)]);
        expect(b.position).toBe(3);
        await a.close();
        await b.close();
      });
  });
}

eventLogContract(
  'the data folder',
  async () => {
    const dir = tempDir();
    return { shared: false, open: () => openDataLog({ dir, initial: initial() }) };
  },
  { shared: false },
);

if (!POSTGRES_AVAILABLE)
  console.warn(`SKIPPING the PostgreSQL event-log contract: ${POSTGRES_MISSING}`);

let db: TestPostgres | undefined;
beforeAll(() => {
  if (POSTGRES_AVAILABLE) db = startPostgres();
});
afterAll(() => db?.destroy());

eventLogContract(
  'PostgreSQL',
  async () => {
    const url = await db!.database();
    return { shared: true, open: () => openPgLog({ url, initial: initial(), pollMs: 50 }) };
  },
  { shared: true, skip: !POSTGRES_AVAILABLE },
);
