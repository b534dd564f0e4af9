/** The types of source-rules.mjs (plain JavaScript, so that it runs as a script too). */

/** Functions shorter than this many lines may repeat. */
export const MIN_COPY_LINES: number;

/** Copies kept on purpose, by `file name`, each with why. */
export const DELIBERATE_COPIES: Readonly<Record<string, string>>;

/** Every declaration exported at the top of a file of `dir` without a TSDoc comment. */
export function undocumentedExports(
  dir?: string,
): Array<{ file: string; line: number; name: string }>;

/** Functions of `dir` written twice or more, token for token: each group, its places. */
export function copiedFunctions(dir?: string): string[][];
