#!/usr/bin/env node
// Two rules of src/ that a reader checks by eye and a test holds: every export says what it
// is (a TSDoc comment), and no function is a copy of another. `node scripts/source-rules.mjs`
// prints what breaks them; test/layers.test.ts fails on any.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { nameOf, sources } from './function-lengths.mjs';

/** Functions shorter than this many lines may repeat (a one-line guard is not a helper). */
export const MIN_COPY_LINES = 4;

/**
 * Copies kept on purpose, by `file name`, each with why: the copy a group may hold beside
 * the function it copies.
 */
export const DELIBERATE_COPIES = {
  'src/core/sum-tree.ts copyNodeSingle':
    "copyNode's literal at a second allocation site, so that V8 places a single apply's short-lived nodes apart from a big batch's",
};

function parsed(file) {
  return ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
}

const isExported = (node) =>
  ts.canHaveModifiers(node) &&
  (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);

// The names a top-level statement declares.
function declaredNames(node) {
  if (ts.isVariableStatement(node))
    return node.declarationList.declarations.map((d) => d.name.getText());
  return node.name === undefined ? ['default'] : [node.name.getText()];
}

// Whether a TSDoc comment (`/** … */`) stands right before the statement.
function documented(node, text) {
  const ranges = ts.getLeadingCommentRanges(text, node.getFullStart()) ?? [];
  return ranges.some((r) => text.slice(r.pos, r.pos + 3) === '/**' && text[r.pos + 3] !== '/');
}

/** Every declaration `export`ed at the top of a file of `dir` without a TSDoc comment. */
export function undocumentedExports(dir = 'src') {
  const out = [];
  for (const file of sources(dir)) {
    const source = parsed(file);
    const text = source.getFullText();
    for (const node of source.statements) {
      if (!isExported(node) || ts.isExportDeclaration(node)) continue;
      if (documented(node, text)) continue;
      const line = source.getLineAndCharacterOfPosition(node.getStart()).line + 1;
      for (const name of declaredNames(node))
        out.push({ file: file.replaceAll('\\', '/'), line, name });
    }
  }
  return out;
}

// A function's body with its comments and spacing taken out.
function shapeOf(body) {
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, true, ts.LanguageVariant.Standard);
  scanner.setText(body.getText());
  const tokens = [];
  for (let k = scanner.scan(); k !== ts.SyntaxKind.EndOfFileToken; k = scanner.scan())
    tokens.push(scanner.getTokenText());
  return tokens.join(' ');
}

/**
 * Functions of `dir` of at least {@link MIN_COPY_LINES} lines whose bodies are the same
 * token for token in two places or more (the {@link DELIBERATE_COPIES} aside): each group,
 * its places.
 */
export function copiedFunctions(dir = 'src') {
  const byShape = new Map();
  for (const file of sources(dir)) {
    const source = parsed(file);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && node.body !== undefined && ts.isBlock(node.body)) {
        const first = source.getLineAndCharacterOfPosition(node.body.getStart()).line;
        const last = source.getLineAndCharacterOfPosition(node.body.getEnd()).line;
        if (last - first + 1 >= MIN_COPY_LINES) {
          const shape = shapeOf(node.body);
          const where = file.replaceAll('\\', '/');
          const at = { at: `${where}:${first + 1}`, key: `${where} ${nameOf(node)}` };
          byShape.set(shape, [...(byShape.get(shape) ?? []), at]);
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return [...byShape.values()]
    .map((places) => places.filter((p, i) => i === 0 || DELIBERATE_COPIES[p.key] === undefined))
    .filter((places) => places.length > 1)
    .map((places) => places.map((p) => p.at));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  for (const e of undocumentedExports()) console.log(`no TSDoc: ${e.file}:${e.line} ${e.name}`);
  for (const places of copiedFunctions()) console.log(`the same function: ${places.join(', ')}`);
}
