/**
 * The event log in a data folder: the snapshot and the journal, the journal's group writes,
 * the replay at start, compaction, and the audit archive under `audit/`. Imports `record/`
 * for the trail's records. Node-only.
 * @packageDocumentation
 */
export { dataAlertCursors, dataTrail } from './archive.js';
export {
  type DataLog,
  type DataLogOptions,
  DEFAULT_SNAPSHOT_EVERY,
  FlushError,
  JOURNAL_FILE,
  type JournalFile,
  type OpenJournalFile,
  openDataLog,
  openNodeJournalFile,
  StoreError,
} from './data-log.js';
export { writeAtomically } from './files.js';
