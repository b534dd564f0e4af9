/**
 * `peg-limits migrate-journal --data DIR --store postgres://…`: moves a data folder's state
 * into an empty database, as a snapshot at its batch count. Node-only.
 */
import type { LimitsState } from 'peg-limits';
import { openDataLog, StoreError } from '../data-folder/index.js';
import { migrateToPg, PgLogError } from '../postgres/index.js';
import { fail, USAGE } from './options.js';
import type { Settings } from './settings.js';

/** Moves the folder `dir` (started from `initial` when empty) into the database at `url`. */
async function migrateJournal(dir: string, url: string, initial: LimitsState): Promise<void> {
  try {
    const data = await openDataLog({ dir, initial });
    const moved = await migrateToPg(url, data.state, data.position);
    await data.close();
    process.stdout.write(
      `migrated ${dir} into the database: a snapshot of ${moved.seq} batches (${moved.bytes} bytes); start the replicas with --store\n`,
    );
  } catch (e) {
    if (e instanceof StoreError || e instanceof PgLogError) fail(e.message);
    fail(`cannot migrate: ${(e as Error).message}`);
  }
}

/** Runs `peg-limits migrate-journal` with its settings. */
export async function migrateJournalCommand(settings: Settings): Promise<void> {
  const dir = settings.str('data');
  if (settings.postgres === undefined || dir === undefined)
    fail(`migrate-journal needs --data DIR and --store postgres://…\n${USAGE}`);
  await migrateJournal(dir, settings.postgres, settings.config.state);
}
