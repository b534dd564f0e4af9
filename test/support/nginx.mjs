// Debian's nginx running the configuration docs/operating.md prints ("Behind an HTTP
// cache"), in the foreground on a folder of its own: the tests and bench:nginx run the page's
// own text with three things of this machine put in: the port nginx listens on, the
// server's address and the cache folder. Plain JavaScript: bench:nginx uses it too.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fencedBlock } from './doc-blocks.mjs';

/** Where nginx is (`NGINX_PATH`, else Debian's). */
export const NGINX = process.env.NGINX_PATH ?? '/usr/sbin/nginx';
export const HAVE_NGINX = existsSync(NGINX);
export const NGINX_MISSING = `no nginx at ${NGINX} (apt-get install nginx-light, or set NGINX_PATH)`;

/** The page's configuration with this machine's port, upstream and cache folder put in. */
export function nginxConfig(page, listen, upstream, cacheDir) {
  const block = fencedBlock(page, 'nginx', '/etc/nginx/conf.d/peg-limits.conf');
  const config = block
    .replace('listen 8000;', `listen 127.0.0.1:${listen};`)
    .replace('server 127.0.0.1:8080;', `server ${upstream};`)
    .replace('/var/cache/nginx/peg-limits', cacheDir);
  for (const [was, now] of [
    ['listen 8000;', `127.0.0.1:${listen}`],
    ['server 127.0.0.1:8080;', upstream],
    ['/var/cache/nginx/peg-limits', cacheDir],
  ])
    if (!block.includes(was) || !config.includes(now))
      throw new Error(`the page's nginx configuration no longer has "${was}"`);
  return config;
}

function freePort() {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts nginx in front of `upstream` (`host:port`) with the page's configuration; resolves
 * with its URL and a stop function once it answers.
 */
export async function startNginx(upstream) {
  const dir = mkdtempSync(join(tmpdir(), 'peg-limits-nginx-'));
  for (const d of ['cache', 'client', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, d));
  const port = await freePort();
  const page = readFileSync('docs/operating.md', 'utf8');
  writeFileSync(
    join(dir, 'peg-limits.conf'),
    nginxConfig(page, port, upstream, join(dir, 'cache')),
  );
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      `pid ${dir}/nginx.pid;`,
      `error_log ${dir}/error.log warn;`,
      'events { worker_connections 1024; }',
      'http {',
      '  access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map(
        (t) => `  ${t}_temp_path ${dir}/${t === 'client_body' ? 'client' : t};`,
      ),
      `  include ${dir}/peg-limits.conf;`,
      '}',
      '',
    ].join('\n'),
  );
  const args = ['-p', dir, '-c', join(dir, 'nginx.conf')];
  const check = spawnSync(NGINX, ['-t', ...args], { encoding: 'utf8' });
  if (check.status !== 0) throw new Error(`nginx -t: ${check.stderr}`);
  // One process in the foreground: no user to switch to, nothing left behind.
  const child = spawn(NGINX, [...args, '-g', 'daemon off; master_process off;'], {
    stdio: 'ignore',
    detached: true,
  });
  const url = `http://127.0.0.1:${port}`;
  const until = Date.now() + 10_000;
  for (;;) {
    try {
      await (await fetch(`${url}/healthz`)).text();
      break;
    } catch (e) {
      if (Date.now() > until) throw new Error(`nginx did not answer within 10 s: ${e.message}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }
  return {
    url,
    stop() {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // gone already
      }
    },
  };
}
