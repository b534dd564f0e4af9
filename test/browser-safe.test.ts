import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { expect, test } from 'vitest';

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
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(/(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/g)) {
      const spec = m[1]!;
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
  expect([...bare].sort()).toEqual(['@noble/hashes/sha2', 'big.js', 'lossless-json']);
});
