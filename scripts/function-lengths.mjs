#!/usr/bin/env node
// The longest functions of src/, a function's inner functions counted with it (a factory
// closure is as long as everything it holds). `node scripts/function-lengths.mjs [N]`
// prints the N longest (default 10); test/layers.test.ts fails on a function past
// MAX_FUNCTION_LINES that is not one of the factories still to be split, and on one of
// those that grew.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** The most lines a function of src/ may have. */
export const MAX_FUNCTION_LINES = 150;

/** The most lines a function of src/server/ may have: the adapters stay thin. */
export const MAX_SERVER_FUNCTION_LINES = 130;

/** The most lines a class of src/ may have. */
export const MAX_CLASS_LINES = 300;

/**
 * Functions past the bar that wait to be split, each with the lines it may have at most
 * (none now: a new entry is a debt written down, and may only shrink).
 */
export const TO_SPLIT = {};

/** The TypeScript files under `dir`. */
export function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(join(dir, e.name))
      : e.name.endsWith('.ts')
        ? [join(dir, e.name)]
        : [],
  );
}

/** A function's name, or that of what it is assigned to. */
export function nameOf(node) {
  if (node.name !== undefined) return node.name.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent))
    return parent.name.getText();
  return '(anonymous)';
}

// Every node of the files under `dir` that `counts`, named by `name`, with its length in
// lines, longest first.
function lengths(dir, counts, name) {
  const out = [];
  for (const file of sources(dir)) {
    const source = ts.createSourceFile(
      file,
      readFileSync(file, 'utf8'),
      ts.ScriptTarget.Latest,
      true,
    );
    const visit = (node) => {
      if (counts(node)) {
        const first = source.getLineAndCharacterOfPosition(node.getStart()).line;
        const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        out.push({
          file: file.replaceAll('\\', '/'),
          line: first + 1,
          name: name(node),
          lines: last - first + 1,
        });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return out.sort((a, b) => b.lines - a.lines);
}

/** Every function of the files under `dir` with its length in lines, longest first. */
export function functionLengths(dir = 'src') {
  return lengths(dir, (node) => ts.isFunctionLike(node) && node.body !== undefined, nameOf);
}

/** Every class of the files under `dir` with its length in lines, longest first. */
export function classLengths(dir = 'src') {
  return lengths(dir, ts.isClassLike, (node) => node.name?.getText() ?? '(anonymous)');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const n = Number(process.argv[2] ?? 10);
  console.log('| lines | function | where |\n|---|---|---|');
  for (const f of functionLengths().slice(0, n))
    console.log(`| ${f.lines} | \`${f.name}\` | ${f.file}:${f.line} |`);
}
