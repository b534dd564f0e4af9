/**
 * The folders are the layers (see docs/design.md): an import only ever points
 * down, the core entry is browser-safe, and the core has no import cycles.
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, test } from 'vitest';
import {
  classLengths,
  functionLengths,
  MAX_CLASS_LINES,
  MAX_FUNCTION_LINES,
  MAX_SERVER_FUNCTION_LINES,
  TO_SPLIT,
} from '../scripts/function-lengths.mjs';
import { copiedFunctions, undocumentedExports } from '../scripts/source-rules.mjs';
import { filesUnder } from './support/files.js';
import { TOKEN } from './support/tokens.js';

const IMPORT = /(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/g;

function importsOf(file: string): string[] {
  return [...readFileSync(file, 'utf8').matchAll(IMPORT)].map((m) => m[1]!);
}

function local(file: string, spec: string): string {
  return relative('.', join(dirname(file), spec.replace(/\.js$/, '.ts')));
}

const sources = (dir: string): string[] => filesUnder(dir);

// Follows the relative imports from an entry and collects every bare specifier it reaches.
function reachableImports(entry: string): { files: string[]; bare: Set<string> } {
  const files: string[] = [];
  const bare = new Set<string>();
  const todo = [resolve(entry)];
  const seen = new Set<string>();
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    files.push(file);
    for (const spec of importsOf(file)) {
      if (spec.startsWith('.')) todo.push(join(dirname(file), spec.replace(/\.js$/, '.ts')));
      else bare.add(spec);
    }
  }
  return { files, bare };
}

test('the core entry is browser-safe: no node: imports are reachable from src/index.ts', () => {
  const { files, bare } = reachableImports('src/index.ts');
  expect(files.length).toBeGreaterThan(5);
  expect(
    [...bare].filter(
      (s) => s.startsWith('node:') || ['fs', 'path', 'http', 'crypto', 'os'].includes(s),
    ),
  ).toEqual([]);
  expect([...bare].sort()).toEqual(['@noble/hashes/sha2', 'lossless-json']);
});

describe('imports only point down', () => {
  test('src/core imports nothing outside src/core, and no package but its own dependencies', () => {
    for (const file of sources('src/core')) {
      for (const spec of importsOf(file)) {
        if (spec.startsWith('.')) expect(local(file, spec), file).toMatch(/^src\/core\//);
        else expect(['@noble/hashes/sha2'], `${file}: ${spec}`).toContain(spec);
      }
    }
  });

  test('src/stacks imports only src/stacks and src/core, and nothing of Node', () => {
    for (const file of sources('src/stacks')) {
      for (const spec of importsOf(file)) {
        if (spec.startsWith('.')) expect(local(file, spec), file).toMatch(/^src\/(core|stacks)\//);
        else expect(spec, file).not.toMatch(/^node:/);
      }
    }
  });

  test('src/http imports only src/http and src/core, and nothing of Node', () => {
    for (const file of sources('src/http')) {
      for (const spec of importsOf(file)) {
        if (spec.startsWith('.')) expect(local(file, spec), file).toMatch(/^src\/(core|http)\//);
        else expect(spec, file).not.toMatch(/^node:/);
      }
    }
  });

  test("src/client imports only the core and the wire's JSON, and nothing of Node", () => {
    for (const file of sources('src/client')) {
      for (const spec of importsOf(file)) {
        if (spec.startsWith('.'))
          expect(local(file, spec), file).toMatch(/^src\/(core\/|client\/|http\/json\.ts$)/);
        else expect(spec, file).not.toMatch(/^node:/);
      }
    }
  });

  test('src/server and the command reach the core through the package entry and the internal one only', () => {
    for (const file of [...sources('src/server'), 'src/cli.ts', 'src/command.ts']) {
      for (const spec of importsOf(file)) {
        if (spec.startsWith('.'))
          expect(local(file, spec), file).toMatch(/^src\/(server\/|internal\.ts$|command\.ts$)/);
      }
    }
  });

  test("a folder of src/server imports another only through that folder's index, and only one below it", () => {
    // From the bottom up; data-folder and postgres are side by side and import neither.
    const order = [
      'ops',
      'record',
      'data-folder',
      'postgres',
      'stacks',
      'bitcoin',
      'node-http',
      'cli',
    ];
    const below: Record<string, ReadonlyArray<string>> = {
      ops: [],
      record: ['ops'],
      'data-folder': ['ops', 'record'],
      postgres: ['ops', 'record'],
      stacks: ['ops', 'record', 'data-folder', 'postgres'],
      bitcoin: ['ops'],
      'node-http': ['ops', 'record', 'stacks', 'bitcoin'],
      cli: ['ops', 'record', 'data-folder', 'postgres', 'stacks', 'bitcoin', 'node-http'],
    };
    const folders = readdirSync('src/server', { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.sort()).toEqual([...order].sort());
    const wrong: string[] = [];
    for (const folder of order) {
      for (const file of sources(`src/server/${folder}`)) {
        for (const spec of importsOf(file).filter((s) => s.startsWith('.'))) {
          const target = local(file, spec).replaceAll('\\', '/');
          const m = /^src\/server\/([a-z-]+)\/([a-z-]+)\.ts$/.exec(target);
          if (m === null || m[1] === folder) continue;
          if (!below[folder]!.includes(m[1]!) || m[2] !== 'index')
            wrong.push(`${file} imports ${target}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  test("no two files of src/ share a name, apart from the folders' index.ts", () => {
    const names = sources('src')
      .map((f) => f.split(/[\\/]/).pop()!)
      .filter((n) => n !== 'index.ts');
    expect(names.filter((n, i) => names.indexOf(n) !== i)).toEqual([]);
  });

  test('the internal entry adds to the public one: no name is exported by both', () => {
    const names = (file: string) =>
      new Set(
        [...readFileSync(file, 'utf8').matchAll(/export (?:type )?\{([^}]*)\}/g)].flatMap((m) =>
          m[1]!
            .split(',')
            .map((n) => n.replace(/\btype\b/, '').trim())
            .filter((n) => n !== ''),
        ),
      );
    const pub = names('src/index.ts');
    const internal = names('src/internal.ts');
    expect(internal.size).toBeGreaterThan(10);
    expect([...internal].filter((n) => pub.has(n))).toEqual([]);
  });

  test('the core has no import cycles', () => {
    const graph = new Map(
      sources('src/core').map((f) => [
        f,
        importsOf(f)
          .filter((s) => s.startsWith('.'))
          .map((s) => local(f, s)),
      ]),
    );
    const done = new Set<string>();
    const visit = (file: string, stack: string[]): void => {
      if (stack.includes(file)) throw new Error(`import cycle: ${[...stack, file].join(' → ')}`);
      if (done.has(file)) return;
      for (const next of graph.get(file) ?? []) visit(next, [...stack, file]);
      done.add(file);
    };
    for (const file of graph.keys()) visit(file, []);
    expect(done.size).toBe(graph.size);
  });
});

// The OpenAPI document is data (every path, every answer, in one object): it may run longer.
const DOCUMENT_DATA = new Set(['src/http/documents/openapi.ts']);

test('no module of src/ is over 450 lines, the OpenAPI document data aside (600): a module that grows past it is split by concept', () => {
  const over = sources('src')
    .map((file) => ({
      file: file.replaceAll('\\', '/'),
      lines: readFileSync(file, 'utf8').split('\n').length - 1,
    }))
    .filter((m) => m.lines > (DOCUMENT_DATA.has(m.file) ? 600 : 450));
  expect(over).toEqual([]);
});

test('loosening lives in one core module: the policy, the detection and what a batch loosens are declared in core/loosening.ts alone, and the entries re-export them from there', () => {
  const declaration =
    /^(?:export\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type)\s+(\w*[Ll]oosen\w*)/gm;
  const elsewhere = sources('src')
    .map((f) => f.replaceAll('\\', '/'))
    // The dashboard's script is browser JavaScript in a string, not a module of its own.
    .filter((f) => f !== 'src/core/loosening.ts' && f !== 'src/http/documents/dashboard-script.ts')
    .flatMap((f) => [...readFileSync(f, 'utf8').matchAll(declaration)].map((m) => `${f} ${m[1]}`));
  expect(elsewhere).toEqual([]);
  const own = [...readFileSync('src/core/loosening.ts', 'utf8').matchAll(declaration)].map(
    (m) => m[1],
  );
  expect(own).toEqual(
    expect.arrayContaining([
      'loosenings',
      'loosens',
      'loosenedBy',
      'LooseningPolicy',
      'looseningWaits',
    ]),
  );
  for (const entry of ['src/index.ts', 'src/internal.ts'])
    for (const m of readFileSync(entry, 'utf8').matchAll(
      /export\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'([^']+)'/g,
    ))
      if (/[Ll]oosen/.test(m[1]!)) expect(m[2], entry).toBe('./core/loosening.js');
});

test('every export of src/ has a TSDoc comment', () => {
  expect(
    undocumentedExports('src').map((e) => `${e.file}:${e.line} ${e.name}`),
    'document these',
  ).toEqual([]);
});

test('no function of src/ is a copy of another, the copies kept on purpose aside', () => {
  expect(copiedFunctions('src')).toEqual([]);
});

test('the copy check finds a helper written twice, and the TSDoc check an export without one', () => {
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-rules-'));
  try {
    const helper = (name: string) =>
      `export function ${name}(value: unknown): string | undefined {\n  if (typeof value !== 'string') return undefined;\n  // a comment of its own\n  return value.toLowerCase();\n}\n`;
    writeFileSync(join(dir, 'a.ts'), `/** Documented. */\n${helper('first')}`);
    writeFileSync(join(dir, 'b.ts'), helper('second'));
    expect(copiedFunctions(dir)).toHaveLength(1);
    expect(undocumentedExports(dir).map((e) => e.name)).toEqual(['second']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("docs/design.md's module table has a row for every source file, and no row for a file that is gone", () => {
  const design = readFileSync('docs/design.md', 'utf8');
  const rows = [...design.matchAll(/^\| `((?:[a-z-]+\/)*)([a-z-]+\.ts)` \|/gm)].map(
    (m) => `${m[1] ?? ''}${m[2]}`,
  );
  const files = sources('src').map((f) => f.slice('src/'.length).replaceAll('\\', '/'));
  expect(files.filter((f) => !rows.includes(f)).sort(), 'files without a row').toEqual([]);
  expect(rows.filter((r) => !files.includes(r)).sort(), 'rows without a file').toEqual([]);
});

test('no function of src/ is over 150 lines, its inner functions counted with it, apart from the factories still to be split, none of which grows', () => {
  const long = functionLengths('src').filter((f) => f.lines > MAX_FUNCTION_LINES);
  const unlisted = long.filter((f) => TO_SPLIT[`${f.file} ${f.name}`] === undefined);
  expect(
    unlisted.map((f) => `${f.file}:${f.line} ${f.name}: ${f.lines} lines`),
    'split these',
  ).toEqual([]);
  const grown = long.filter((f) => f.lines > (TO_SPLIT[`${f.file} ${f.name}`] ?? Infinity));
  expect(
    grown.map((f) => `${f.file}:${f.line} ${f.name}: ${f.lines} lines`),
    'these grew',
  ).toEqual([]);
  // One split comes off the list (and its figure down when it shrinks): the list says
  // what is left to do.
  const left = Object.keys(TO_SPLIT).filter(
    (key) => !long.some((f) => `${f.file} ${f.name}` === key),
  );
  expect(left, 'split already: take these off the list').toEqual([]);
});

test('the internal entry exports only what the adapters import from it', () => {
  const entry = readFileSync('src/internal.ts', 'utf8');
  const names = [...entry.matchAll(/export\s*(?:type\s*)?\{([^}]*)\}/g)].flatMap((m) =>
    m[1]!
      .split(',')
      .map((x) => x.trim().replace(/^type\s+/, ''))
      .filter((x) => x !== ''),
  );
  const adapters = [...sources('src/server'), 'src/command.ts', 'src/cli.ts']
    .map((f) => readFileSync(f, 'utf8'))
    .filter((text) => /from '(\.\.\/)+internal\.js'|from '\.\/internal\.js'/.test(text));
  const imported = new Set(
    adapters.flatMap((text) =>
      [
        ...text.matchAll(
          /import\s*(?:type\s*)?\{([^}]*)\}\s*from\s*'(?:\.\/|(?:\.\.\/)+)internal\.js'/g,
        ),
      ].flatMap((m) => m[1]!.split(',').map((x) => x.trim().replace(/^type\s+/, ''))),
    ),
  );
  expect(names.filter((n) => !imported.has(n)).sort()).toEqual([]);
});

test('nothing of src/ is exported that no file imports (src/, test/ or bench/)', () => {
  const slash = (p: string) => p.replaceAll('\\', '/');
  const declared =
    /^export\s+(?:declare\s+)?(?:async\s+)?(?:function\*?|const|let|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm;
  // A re-export counts as an export of the file that makes it, apart from the entries and
  // the folders' index files, which exist to re-export.
  const reexported = /^export\s+(?:type\s+)?\{([^}]*)\}\s+from/gm;
  const entry = (f: string) =>
    /(^|\/)index\.ts$/.test(f) || ['src/internal.ts', 'src/command.ts'].includes(f);
  const exported = sources('src').flatMap((f) => {
    const text = readFileSync(f, 'utf8');
    return [
      ...[...text.matchAll(declared)].map((m) => m[1]!),
      ...(entry(slash(f))
        ? []
        : [...text.matchAll(reexported)].flatMap((m) =>
            m[1]!.split(',').map(
              (n) =>
                n
                  .trim()
                  .replace(/^type\s+/, '')
                  .split(/\s+as\s+/)
                  .pop()!,
            ),
          )),
    ]
      .filter((n) => n !== '')
      .map((n) => `${slash(f)}#${n}`);
  });
  const used = new Set<string>();
  const statement =
    /(?:import|export)\s+(?:type\s+)?(\*(?:\s+as\s+\w+)?|\{[^}]*\})\s+from\s+['"](\.[^'"]+)['"]|const\s+\{([^}]*)\}\s*=\s*await\s+import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
  const importers = [
    ...sources('src'),
    ...filesUnder('test', /\.(ts|mts|mjs)$/),
    ...filesUnder('bench', /\.mjs$/),
  ];
  for (const f of importers) {
    for (const m of readFileSync(f, 'utf8').matchAll(statement)) {
      const spec = m[2] ?? m[4]!;
      const target = slash(relative('.', resolve(dirname(f), spec))).replace(/\.js$/, '.ts');
      const what = m[1] ?? `{${m[3]}}`;
      if (what.startsWith('*')) {
        for (const k of exported) if (k.startsWith(`${target}#`)) used.add(k);
        continue;
      }
      for (const name of what.slice(1, -1).split(',')) {
        const bare = name
          .trim()
          .replace(/^type\s+/, '')
          .split(/\s+as\s+|\s*:\s*/)[0]!;
        if (bare !== '') used.add(`${target}#${bare}`);
      }
    }
  }
  expect(exported.length).toBeGreaterThan(100);
  expect(exported.filter((k) => !used.has(k))).toEqual([]);
});

test('every file of the project a comment or a document names is there', () => {
  const docs = [
    'README.md',
    ...readdirSync('docs')
      .filter((f) => f.endsWith('.md'))
      .map((f) => `docs/${f}`),
  ];
  const notes = readdirSync('docs/notes').map((f) => `docs/notes/${f}`);
  const named = [...sources('src'), ...docs, ...notes].flatMap((f) => [
    ...readFileSync(f, 'utf8').matchAll(/\b(?:src|test|bench|scripts)\/[\w/.-]+\.(?:ts|mjs)\b/g),
  ]);
  expect(named.length).toBeGreaterThan(10);
  expect([...new Set(named.map((m) => m[0]))].filter((p) => !existsSync(p))).toEqual([]);
});

test('the tests share one operator token and one in-process server: test/support/tokens.ts holds the token, test/support/in-process.ts the server no test file writes again', () => {
  const tests = filesUnder('test').filter((f) => /\.(ts|mts|mjs)$/.test(f));
  const token = tests.filter(
    (f) =>
      !f.replaceAll('\\', '/').endsWith('support/tokens.ts') &&
      readFileSync(f, 'utf8').includes(`'${TOKEN}'`),
  );
  expect(token, 'import TOKEN from test/support/tokens.ts').toEqual([]);
  const ownServe = tests.filter(
    (f) =>
      !f.replaceAll('\\', '/').endsWith('support/in-process.ts') &&
      /startServer\(\{\s*log:\s*await openDataLog\(/.test(readFileSync(f, 'utf8')),
  );
  expect(ownServe, 'use serveInProcess from test/support/in-process.ts').toEqual([]);
});

test("a test lives in a folder of src/'s shape: the folder of the layer it exercises, or the root for the whole project", () => {
  const slash = (p: string) => p.replaceAll('\\', '/');
  const folders = new Set(sources('src').map((f) => slash(dirname(f)).replace(/^src/, 'test')));
  const tests = filesUnder('test', /\.test\.ts$/).map(slash);
  expect(tests.length).toBeGreaterThan(60);
  expect(tests.filter((f) => dirname(f) !== 'test' && !folders.has(dirname(f)))).toEqual([]);
});

test('a test says one claim: no test or describe name of test/ joins claims with a semicolon', () => {
  const name = /\b(?:test|it|describe)(?:\.each\([^)]*\))?\(\s*(['"`])((?:(?!\1)[^\\]|\\.)*)\1/g;
  const names = filesUnder('test', /\.test\.ts$/).flatMap((f) =>
    [...readFileSync(f, 'utf8').matchAll(name)].map((m) => `${f}: ${m[2]}`),
  );
  expect(names.length).toBeGreaterThan(500);
  expect(names.filter((n) => n.slice(n.indexOf(': ') + 2).includes(';'))).toEqual([]);
});

// Runs `check` over modules written to a folder of their own (`at(name)`: a module's path),
// then removes the folder.
function withFiles(files: Record<string, string>, check: (at: (name: string) => string) => void) {
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-rules-'));
  try {
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    check((name) => join(dir, name));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// A module parsed, and where a node of it stands (`file:line`).
function parsed(file: string): { sf: ts.SourceFile; at: (node: ts.Node) => string } {
  const sf = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
  return {
    sf,
    at: (node) => `${file}:${sf.getLineAndCharacterOfPosition(node.getStart(sf)).line + 1}`,
  };
}

describe('each layer owns its routes, and the Stacks feed applies its batches through the service port', () => {
  // The nodes of a module that name `pattern`, outside what a `@deprecated` declaration (a
  // 1.0.0 name kept for the API report, read by nothing) holds.
  function named(file: string, pattern: RegExp): string[] {
    const { sf, at } = parsed(file);
    const found: string[] = [];
    const deprecated = (node: ts.Node) =>
      ts.getJSDocTags(node).some((t) => t.tagName.text === 'deprecated');
    const visit = (node: ts.Node, kept: boolean): void => {
      const keptHere = kept || deprecated(node);
      if (
        !keptHere &&
        (ts.isIdentifier(node) ||
          ts.isStringLiteralLike(node) ||
          ts.isTemplateHead(node) ||
          ts.isTemplateMiddle(node) ||
          ts.isTemplateTail(node)) &&
        pattern.test(node.text)
      ) {
        found.push(`${at(node)} ${node.text.slice(0, 60)}`);
      }
      ts.forEachChild(node, (child) => visit(child, keptHere));
    };
    visit(sf, false);
    return found;
  }

  test('nothing in src/http names the Stacks feed, its held blocks or its route, but the OpenAPI document (the whole server described)', () => {
    const feed = /stacks ?feed|held ?blocks?\b|^held$|new_?block|\/admin\/held|observer/i;
    const files = sources('src/http').filter((f) => !/documents[\\/]/.test(f));
    expect(files.length).toBeGreaterThan(15);
    expect(files.flatMap((f) => named(f, feed))).toEqual([]);
  });

  test('no module of src/server/stacks builds an HTTP request, a header or a bearer string for its own service: it calls the port', () => {
    // Its own service's paths and headers (the node's RPC has its own, no concern here).
    const http = /^\/admin\/(events|changes)|^Bearer|^peg-limits-(request-id|override)$/i;
    const calls = /\bservice\.handle\(|\.handle\(\{/;
    const files = sources('src/server/stacks');
    expect(files.flatMap((f) => named(f, http))).toEqual([]);
    expect(files.filter((f) => calls.test(readFileSync(f, 'utf8')))).toEqual([]);
    // The feed applies what it maps through the port, and reads outcomes as values.
    expect(readFileSync('src/server/stacks/feed-steps.ts', 'utf8')).toMatch(/\.applyBatch\(\{/);
  });

  test("the rules catch what they look for: a route naming the feed, a request built for the service's own port", () => {
    const dir = mkdtempSync(join(tmpdir(), 'peg-limits-layers-'));
    try {
      writeFileSync(
        join(dir, 'a.ts'),
        "export const a = { pattern: '/admin/held', feed: stacksFeed };\n",
      );
      writeFileSync(
        join(dir, 'b.ts'),
        [
          '/** @deprecated */',
          'export interface Old { readonly stacksFeed?: unknown }',
          // A template with a placeholder, as a bearer string is built: the rule reads its head.
          'export const b = `Bearer $' + "{'x'}`;",
          '',
        ].join('\n'),
      );
      expect(named(join(dir, 'a.ts'), /stacks ?feed|\/admin\/held/i)).toHaveLength(2);
      expect(named(join(dir, 'b.ts'), /stacks ?feed/i)).toEqual([]);
      expect(named(join(dir, 'b.ts'), /^Bearer/)).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the Stacks feed returns data, and only its listeners speak HTTP', () => {
  // The listeners: the observer's port, and the feed's routes on the service's port.
  const LISTENERS = new Set(['observer.ts', 'feed-routes.ts']);
  const HTTP_ANSWER =
    /^(HttpResponse|problem|batchAnswer|refusalStatus|json|okJson|bodyNotJson|blockAnswer|heldAnswer)$/;

  // What a module names of HTTP answers, and the answers it writes out (`{ status, headers, body }`).
  function answersIn(file: string): string[] {
    const { sf, at } = parsed(file);
    const found: string[] = [];
    const visit = (node: ts.Node): void => {
      if (ts.isIdentifier(node) && HTTP_ANSWER.test(node.text))
        found.push(`${at(node)} ${node.text}`);
      if (ts.isObjectLiteralExpression(node)) {
        const keys = node.properties.map((p) => p.name?.getText(sf));
        if (['status', 'headers', 'body'].every((k) => keys.includes(k)))
          found.push(`${at(node)} an answer written out`);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    return found;
  }

  // Functions a class hands out in an object that call back into it (`{ warn: (l) =>
  // this.#warn(l) }`): a bundle of callbacks into its maker.
  function callbacksOut(file: string): string[] {
    const { sf, at } = parsed(file);
    const found: string[] = [];
    const usesThis = (node: ts.Node): boolean =>
      node.kind === ts.SyntaxKind.ThisKeyword || ts.forEachChild(node, usesThis) === true;
    const visit = (node: ts.Node, inClass: boolean): void => {
      if (inClass && ts.isObjectLiteralExpression(node))
        for (const p of node.properties) {
          const fn = ts.isPropertyAssignment(p) ? p.initializer : p;
          const isFunction =
            ts.isArrowFunction(fn) || ts.isFunctionExpression(fn) || ts.isMethodDeclaration(fn);
          if (isFunction && usesThis(fn)) found.push(`${at(p)} ${p.name?.getText(sf)}`);
        }
      ts.forEachChild(node, (child) => visit(child, inClass || ts.isClassLike(node)));
    };
    visit(sf, false);
    return found;
  }

  test('no module of src/server/stacks but its listeners names or writes an HTTP answer', () => {
    const files = sources('src/server/stacks').filter(
      (f) => !LISTENERS.has(f.split(/[\\/]/).pop()!),
    );
    expect(files.length).toBeGreaterThan(6);
    expect(files.flatMap(answersIn)).toEqual([]);
  });

  test('no class of src/server/stacks hands out a bundle of callbacks into itself', () => {
    expect(sources('src/server/stacks').flatMap(callbacksOut)).toEqual([]);
  });

  test('the rules catch what they look for: an answer written out in a step, a bundle of callbacks', () => {
    withFiles(
      {
        'step.ts':
          "export function step(): HttpResponse { return { status: 200, headers: {}, body: '' }; }\n",
        'feed.ts':
          'export class Feed {\n  #warn(line: string) {}\n  core() { return { warn: (line: string) => this.#warn(line) }; }\n}\n',
      },
      (at) => {
        expect(answersIn(at('step.ts'))).toHaveLength(2);
        expect(callbacksOut(at('feed.ts'))).toHaveLength(1);
        expect(answersIn(at('feed.ts'))).toEqual([]);
      },
    );
  });
});

describe('what never shipped is not kept', () => {
  // The qualified names of the @deprecated declarations of a module: `Interface.member`, or
  // the name of a function, a constant, a type.
  function deprecatedIn(file: string): string[] {
    const { sf } = parsed(file);
    const found: string[] = [];
    const named = (node: ts.Node): string | undefined => {
      const name = (node as { name?: ts.Node }).name;
      return name === undefined ? undefined : name.getText(sf);
    };
    // The named declaration a member belongs to (an interface, a class, a type alias).
    const owner = (node: ts.Node): string | undefined => {
      for (let p = node.parent; p !== undefined; p = p.parent)
        if (ts.isInterfaceDeclaration(p) || ts.isClassLike(p) || ts.isTypeAliasDeclaration(p))
          return named(p);
      return undefined;
    };
    const visit = (node: ts.Node): void => {
      if (ts.getJSDocTags(node).some((t) => t.tagName.text === 'deprecated')) {
        const name =
          named(node) ??
          named((node as ts.VariableStatement).declarationList?.declarations[0] ?? node);
        const parent = ts.isSourceFile(node.parent) ? undefined : owner(node);
        found.push(parent === undefined ? `${name}` : `${parent}.${name}`);
      }
      ts.forEachChild(node, visit);
    };
    visit(sf);
    return found;
  }

  test('nothing is @deprecated that 1.0.0 did not have: a name added since is removed, not deprecated', () => {
    const shipped = new Set(
      readFileSync('etc/api-1.0.0.names', 'utf8')
        .split('\n')
        .filter((l) => l !== '' && !l.startsWith('#')),
    );
    expect(shipped.size).toBeGreaterThan(300);
    const deprecated = sources('src').flatMap(deprecatedIn);
    expect(deprecated).toEqual(
      expect.arrayContaining(['HandleResult.audit', 'checkLooseningPolicy']),
    );
    expect(deprecated.filter((n) => !shipped.has(n))).toEqual([]);
  });

  test('the rule reads a deprecated member as its owner names it', () => {
    withFiles(
      {
        'a.ts':
          '/** @deprecated */\nexport function old(): void {}\nexport interface Options {\n  /** @deprecated */\n  readonly stacksFeed?: unknown;\n}\n',
      },
      (at) => expect(deprecatedIn(at('a.ts'))).toEqual(['old', 'Options.stacksFeed']),
    );
  });
});

test('no class of src/ is over 300 lines, and no function of src/server/ over 130', () => {
  expect(
    classLengths('src')
      .filter((c) => c.lines > MAX_CLASS_LINES)
      .map((c) => `${c.file}:${c.line} ${c.name}: ${c.lines} lines`),
  ).toEqual([]);
  expect(
    functionLengths('src/server')
      .filter((f) => f.lines > MAX_SERVER_FUNCTION_LINES)
      .map((f) => `${f.file}:${f.line} ${f.name}: ${f.lines} lines`),
  ).toEqual([]);
});
