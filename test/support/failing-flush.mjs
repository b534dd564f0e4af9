// Runs `peg-limits serve` with a journal file whose flushes fail after FAIL_FLUSH_AFTER of
// them, as a disk that starts returning EIO would: the command must stop with exit code 3.
import { openNodeJournalFile, serveCommand } from '../../dist/command.js';

const after = Number(process.env.FAIL_FLUSH_AFTER ?? '0');
let flushes = 0;
await serveCommand(process.argv.slice(2), {
  openJournalFile: async (path) => {
    const file = await openNodeJournalFile(path);
    return {
      ...file,
      async datasync() {
        flushes++;
        if (flushes > after) throw Object.assign(new Error('input/output error'), { code: 'EIO' });
        return file.datasync();
      },
    };
  },
});
