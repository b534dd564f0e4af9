/**
 * The examples of the README and of docs/operating.md, run as written: the TypeScript blocks
 * of the README, each `// value` comment after an expression checked against what the
 * expression gives; and the shell blocks of docs/operating.md, run by bash against the real
 * command, each comment after a `curl` checked against its answer. What a comment claims is
 * read by rule (checkClaim): a status first, error codes, `field value` pairs and
 * `"field":value` fragments; the rest of it is prose. The only changes made to a shell block
 * before it runs: the port 8080 becomes a free one, `./demo-data` a temporary folder, and
 * `npm start` / `npx peg-limits` run this checkout (`scripts/start.mjs`, `dist/cli.js`), as
 * they would once the package is installed.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { inspect } from 'node:util';
import { describe, expect, test } from 'vitest';
import { generateOperatorToken, hashOperatorToken } from '../src/index.js';
import { CURL_AVAILABLE } from './support/clients.js';
import { fencedBlocks } from './support/doc-blocks.mjs';
import { freePort, tempDir } from './support/proc.js';

const REPO = resolve('.');

const blocks = (file: string, lang: string) => fencedBlocks(readFileSync(file, 'utf8'), lang);

/**
 * Whether `output` bears out `claim`: a leading status is the answer's status; every error
 * code it names is in the answer; `field 123`, `field null` and `field "text"` are
 * `"field":123`, `"field":null` and `"field":"text"` there; a `"field":value` fragment is
 * there as written. Returns what is not borne out (empty when all is).
 */
function checkClaim(claim: string, output: string): string[] {
  const missing: string[] = [];
  const status = /^(\d{3})\b/.exec(claim)?.[1];
  if (status !== undefined && !new RegExp(`^HTTP/1\\.1 ${status} `).test(output))
    missing.push(`status ${status} (the answer: ${output.split('\n')[0]})`);
  for (const [code] of claim.matchAll(/\b[a-z]+(?:_[a-z]+)+\b/g))
    if (!output.includes(code)) missing.push(code);
  const prose = claim.replace(/"[A-Za-z]+":[^,…}\]\s]+/g, '');
  // A field is a camelCase name: `change 1` is prose, `pegCap 5` a claim.
  for (const m of prose.matchAll(/\b([a-z]+[A-Z][A-Za-z]*) (\d+|null|"[^"]*")(?=[,.:;\s]|$)/g)) {
    const fragment = `"${m[1]}":${m[2]}`;
    if (!output.includes(fragment)) missing.push(fragment);
  }
  for (const [fragment] of claim.matchAll(/"[A-Za-z]+":[^,…}\]\s]+/g))
    if (!output.includes(fragment)) missing.push(fragment);
  return missing;
}

test('the claim reader: a status, codes, pairs and fragments, and nothing of the prose', () => {
  const answer =
    'HTTP/1.1 404 Not Found\n\n{"code":"account_not_found","pegCap":5,"name":"x","a":null}';
  expect(checkClaim('404 account_not_found: the global limits apply', answer)).toEqual([]);
  expect(checkClaim('pegCap 5, name "x", a null', answer)).toEqual([]);
  expect(checkClaim('{"pegCap":5,…}', answer)).toEqual([]);
  expect(checkClaim('200 {"pegCap":6,…}', answer)).toEqual([
    'status 200 (the answer: HTTP/1.1 404 Not Found)',
    '"pegCap":6',
  ]);
  expect(checkClaim('invalid_token, pegCap 7', answer)).toEqual(['invalid_token', '"pegCap":7']);
  expect(checkClaim('the same limits, as before: change 1, effective 6 blocks', answer)).toEqual(
    [],
  );
});

describe('the README TypeScript examples', () => {
  const examples = blocks('README.md', 'ts');

  test('are there', () => {
    expect(examples.length).toBeGreaterThanOrEqual(2);
  });

  test.each(examples.map((code, i) => [i + 1, code] as const))(
    'example %i gives what its comments show',
    async (n, code) => {
      const checks: Array<{ claim: string; shown: string | undefined }> = [];
      const unreached = Symbol('unreached');
      (globalThis as Record<string, unknown>).__docCheck = (value: unknown, claim: string) => {
        checks.push({
          claim,
          shown: value === unreached ? undefined : inspect(value, { depth: 5, breakLength: 1e9 }),
        });
        return value;
      };
      (globalThis as Record<string, unknown>).__docUnreached = unreached;
      // Each `expression; // value` becomes a check of the value; `if (c) expression; //
      // value` too, where c must hold. Declarations and statements keep their comments.
      const lines = code.split('\n').map((line) => {
        const guarded = /^if \((.+?)\) (?!throw |return )(.+?);\s*\/\/ (.*)$/.exec(line);
        if (guarded)
          return `__docCheck((${guarded[1]}) ? (${guarded[2]}) : __docUnreached, ${JSON.stringify(guarded[3])});`;
        const plain =
          /^(?!const |let |var |if |import |for |while |return |throw )(\S.*?);\s*\/\/ (.*)$/.exec(
            line,
          );
        return plain ? `__docCheck((${plain[1]}), ${JSON.stringify(plain[2])});` : line;
      });
      // A block without its import gets one for the package's names it uses.
      const pkg = await import('../src/index.js');
      const used = Object.keys(pkg).filter(
        (name) =>
          new RegExp(`\\b${name}\\b`).test(code) &&
          !new RegExp(`(const|let|var) ${name}\\b`).test(code),
      );
      const header = code.includes("from 'peg-limits'")
        ? ''
        : `import { ${used.join(', ')} } from 'peg-limits';\n`;
      const declared =
        'declare const __docCheck: <T>(v: T, c: string) => T;\ndeclare const __docUnreached: never;\n';
      mkdirSync('test/.examples', { recursive: true });
      const file = join(REPO, 'test/.examples', `readme-${n}-${Date.now()}.ts`);
      writeFileSync(file, `${header}${declared}${lines.join('\n')}\nexport {};\n`);
      try {
        await import(file);
      } finally {
        rmSync(file);
      }
      expect(checks.length, 'the example shows values').toBeGreaterThan(0);
      for (const { claim, shown } of checks) {
        expect(shown, `reached: // ${claim}`).toBeDefined();
        // The comment starts with the value, then ends or goes on in words.
        expect(
          claim.startsWith(shown!) && /^($|[,:;\s])/.test(claim.slice(shown!.length)),
          `// ${claim} — the value is ${shown}`,
        ).toBe(true);
      }
    },
  );
});

if (!CURL_AVAILABLE)
  console.warn('SKIPPING the docs/operating.md shell examples: no curl (apt-get install curl)');

test('curl is there when CI runs the tests', () => {
  // CI installs curl (.ci/run): there, a missing curl is a failure, not a skip.
  if (process.env.CI === 'true') expect(CURL_AVAILABLE, 'curl under CI').toBe(true);
});

/** Runs a shell block as docs/operating.md shows it; resolves with each curl's answer and claims. */
async function runBlock(
  block: string,
  env: Record<string, string>,
  setup = '',
): Promise<{ answers: string[]; claims: Array<{ after: number; claim: string }>; log: string }> {
  const port = await freePort();
  const out = tempDir();
  const data = tempDir();
  // Comments that follow a curl command (on its last line, or indented on the lines after
  // it) are claims about its answer; a comment at the start of a line is prose.
  let inCurl = false;
  const script = [setup, block]
    .join('\n')
    .split('\n')
    .map((line) => {
      if (/^\S/.test(line) && !line.startsWith('#')) inCurl = line.startsWith('curl ');
      const m = /^(.*?)\s+# (.*)$/.exec(line);
      if (m === null || !inCurl || (/^\s*$/.test(m[1]!) === false && !/['"\]}\w)]$/.test(m[1]!)))
        return line;
      const claim = `__claim '${m[2]!.replaceAll("'", `'\\''`)}'`;
      return /^\s*$/.test(m[1]!) ? claim : `${m[1]}; ${claim}`;
    })
    .join('\n')
    .replaceAll('8080', String(port))
    .replaceAll('./demo-data', data);
  const preamble = `
set -e
N=0
npx() { if [ "$1" = peg-limits ]; then shift; node "${REPO}/dist/cli.js" "$@"; else command npx "$@"; fi; }
npm() {
  if [ "$1" != start ]; then command npm "$@"; return; fi
  shift; [ "$1" = -- ] && shift
  if [ "$BASH_SUBSHELL" -gt 0 ]; then exec node "${REPO}/scripts/start.mjs" "$@"; fi
  node "${REPO}/scripts/start.mjs" "$@"
}
curl() {
  N=$((N+1))
  command curl --retry 40 --retry-connrefused --retry-delay 1 --retry-max-time 40 "$@" > "${out}/answer-$N"
  cat "${out}/answer-$N"; echo
}
__claim() { printf '%s\\t%s\\n' "$N" "$1" >> "${out}/claims"; }
`;
  const child = spawn('bash', ['-c', `${preamble}\n${script}\nkill %1 2>/dev/null; wait`], {
    cwd: REPO,
    env: { ...process.env, ...env },
    detached: true,
  });
  let log = '';
  child.stdout.on('data', (c) => (log += c));
  child.stderr.on('data', (c) => (log += c));
  const code = await new Promise<number | null>((r) => child.once('exit', r));
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    // The group has ended.
  }
  expect(code, log).toBe(0);
  const answers: string[] = [];
  for (const f of readdirSync(out).filter((x) => x.startsWith('answer-')))
    answers[Number(f.slice(7)) - 1] = readFileSync(join(out, f), 'utf8').replaceAll('\r', '');
  let claims: Array<{ after: number; claim: string }> = [];
  try {
    claims = readFileSync(join(out, 'claims'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => {
        const [n, ...rest] = l.split('\t');
        return { after: Number(n), claim: rest.join('\t') };
      });
  } catch {
    // No claims.
  }
  return { answers, claims, log };
}

describe.skipIf(!CURL_AVAILABLE)('the docs/operating.md shell examples', () => {
  const examples = blocks('docs/operating.md', 'sh');

  test('the walkthrough runs as written, and each curl answers what its comment says', async () => {
    const walkthrough = examples.find((b) =>
      b.includes('npm start -- --port 8080 --data ./demo-data'),
    );
    expect(walkthrough).toBeDefined();
    const { answers, claims, log } = await runBlock(walkthrough!, {});
    expect(claims.length, log).toBeGreaterThanOrEqual(6);
    for (const { after, claim } of claims)
      expect(checkClaim(claim, answers[after - 1] ?? ''), `curl ${after}: # ${claim}`).toEqual([]);
  });

  // The server of the governors' examples, started as the page says (`--config`, with the
  // production configuration it prints, the token hashes filled in), and a block so that a
  // change has a height to wait from.
  function governorsServer() {
    const page = readFileSync('docs/operating.md', 'utf8');
    const printed = page.slice(page.indexOf('```json\n{\n  "limits"') + 8);
    const tokens: Record<string, string> = {
      feeder: generateOperatorToken(),
      'gov-alice': generateOperatorToken(),
      'gov-bob': generateOperatorToken(),
    };
    let config = printed.slice(0, printed.indexOf('```'));
    for (const [name, token] of Object.entries(tokens))
      config = config.replace(
        new RegExp(`("name": "${name}", "tokenHash": )"sha256:…"`),
        `$1"${hashOperatorToken(token)}"`,
      );
    config = config.replace(/,\s*"throttleKeys": \[[^\]]*\]/, '');
    const file = join(tempDir(), 'config.json');
    writeFileSync(file, config);
    const setup = `
npm start -- --port 8080 --config ${file} --data ${tempDir()} &
curl -s localhost:8080/admin/events -H "authorization: Bearer $GOV_ALICE" -H 'content-type: application/json' -d '{"type":"blockConnected","height":870000}' > /dev/null
N=0
`;
    return { setup, env: { GOV_ALICE: tokens['gov-alice']!, GOV_BOB: tokens['gov-bob']! } };
  }

  test('the governors example runs as written against the production configuration it prints', async () => {
    const governors = examples.find((b) => b.includes('$GOV_ALICE'));
    expect(governors).toBeDefined();
    const { setup, env } = governorsServer();
    const { answers, claims, log } = await runBlock(governors!, env, setup);
    expect(claims.length, log).toBeGreaterThanOrEqual(3);
    for (const { after, claim } of claims)
      expect(checkClaim(claim, answers[after - 1] ?? ''), `curl ${after}: # ${claim}`).toEqual([]);
  });

  test('the cancel, run instead of the approval, cancels the change', async () => {
    const governors = examples.find((b) => b.includes('$GOV_ALICE'));
    const cancel = examples.find((b) => b.includes('-X DELETE'));
    expect(cancel).toBeDefined();
    const proposal = governors!
      .split('\n')
      .filter((l) => !l.includes('/approve'))
      .join('\n');
    const { setup, env } = governorsServer();
    const { answers, claims, log } = await runBlock(`${proposal}\n${cancel}`, env, setup);
    expect(claims.length, log).toBeGreaterThanOrEqual(3);
    for (const { after, claim } of claims)
      expect(checkClaim(claim, answers[after - 1] ?? ''), `curl ${after}: # ${claim}`).toEqual([]);
  });
});
