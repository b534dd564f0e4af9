/** Where Debian's Chromium is for the browser tests (`.ci/run` installs it), if anywhere. */
import { existsSync } from 'node:fs';

export const CHROMIUM = [
  process.env.CHROMIUM_PATH,
  '/usr/bin/chromium',
  '/usr/bin/chromium-browser',
].find((p) => p !== undefined && p !== '' && existsSync(p));
