/** Helpers to run `peg-limits serve` as a real process. */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** The built command, as the tests run it. */
export const CLI = 'dist/cli.js';

/** Starts `peg-limits serve --port 0 …args` (the built command); resolves once it listens. */
export function startServe(
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = {},
): Promise<Proc> {
  return spawnServer('node', [CLI, 'serve', '--port', '0', ...args], env);
}

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'peg-limits-'));
}

export interface Proc {
  readonly child: ChildProcess;
  readonly url: string;
  stdout: string;
  stderr: string;
  /** Resolves with the exit code (or signal) once the process ends. */
  readonly exited: Promise<number | string>;
}

/** Spawns a command and waits for its "listening on URL" line. */
export function spawnServer(
  command: string,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = {},
): Promise<Proc> {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return new Promise((resolve, reject) => {
    const proc = { child, url: '', stdout: '', stderr: '', exited } as Proc & { url: string };
    const timer = setTimeout(
      () =>
        reject(new Error(`no "listening on" line within 30 s:\n${proc.stdout}\n${proc.stderr}`)),
      30_000,
    );
    child.stdout!.on('data', (chunk: Buffer) => {
      proc.stdout += chunk.toString();
      const m = /listening on (http:\/\/\S+)/.exec(proc.stdout);
      if (m && proc.url === '') {
        proc.url = m[1]!;
        clearTimeout(timer);
        resolve(proc);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => {
      proc.stderr += chunk.toString();
    });
    exited.then((code) => {
      clearTimeout(timer);
      if (proc.url === '')
        reject(
          Object.assign(new Error(`exited with ${code} before listening:\n${proc.stderr}`), {
            proc,
          }),
        );
    });
  });
}

/** Runs a command to completion. */
export function runToEnd(
  command: string,
  args: ReadonlyArray<string>,
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | string; stdout: string; stderr: string }> {
  const child = spawn(command, args, {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  return new Promise((resolve) =>
    child.once('exit', (code, signal) => resolve({ code: code ?? signal ?? -1, stdout, stderr })),
  );
}

/** Kills a process group (the server and anything it started). */
export function killGroup(proc: Proc, signal: NodeJS.Signals = 'SIGKILL'): void {
  try {
    process.kill(-proc.child.pid!, signal);
  } catch {
    // already gone
  }
}

/**
 * Polls `check` (which may ask a server or a database) every `every` ms until it holds;
 * resolves with whether it held within `ms`. The caller's own `expect` then says what did
 * not happen.
 */
export async function eventually(
  check: () => boolean | Promise<boolean>,
  ms: number,
  every = 10,
): Promise<boolean> {
  const until = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, every));
  }
  return true;
}

/** Polls `check` until it holds; fails after `ms`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  ms = 10_000,
  every = 10,
): Promise<void> {
  if (!(await eventually(check, ms, every))) throw new Error(`condition not met within ${ms} ms`);
}

/** A port on loopback that was free a moment ago (for a program that takes a fixed port). */
export function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}
