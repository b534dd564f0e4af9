/** The project's files as the structure tests read them. */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';

/** Every file under `dir`, its folders' too, whose name `name` matches (`.ts` by default). */
export function filesUnder(dir: string, name: RegExp = /\.ts$/): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? filesUnder(join(dir, e.name), name)
      : name.test(e.name)
        ? [join(dir, e.name)]
        : [],
  );
}
