/** The types of function-lengths.mjs (plain JavaScript, so that it runs as a script too). */

/** The most lines a function of src/ may have. */
export const MAX_FUNCTION_LINES: number;

/** Factory closures still to be split, by `file name`, with the lines each may have at most. */
export const TO_SPLIT: Readonly<Record<string, number>>;

/** Every function of the files under `dir` with its length in lines, longest first. */
export function functionLengths(
  dir?: string,
): Array<{ file: string; line: number; name: string; lines: number }>;

/** The TypeScript files under `dir`. */
export function sources(dir: string): string[];

/** A function's name, or that of what it is assigned to. */
export function nameOf(node: unknown): string;

/** The most lines a function of src/server/ may have. */
export const MAX_SERVER_FUNCTION_LINES: number;

/** The most lines a class of src/ may have. */
export const MAX_CLASS_LINES: number;

/** Every class of the files under `dir` with its length in lines, longest first. */
export function classLengths(
  dir?: string,
): Array<{ file: string; line: number; name: string; lines: number }>;
