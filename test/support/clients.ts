/**
 * Four kinds of HTTP client, each sending a request with a body and reporting the status
 * line it got (0 when it got none): curl, Node's `http.request`, `fetch`, and a raw socket
 * that reads while it writes. The early-answer tests run every answer through all four.
 */
import { spawn, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { tempDir } from './proc.js';

/** A request to send: its body is `size` bytes of `{`, or only `size` of them then a stall. */
export interface ClientRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  /** Body bytes sent. */
  readonly size: number;
  /**
   * Send `size` bytes of a longer body (declared `size + 1` bytes, or chunked) and then
   * nothing, never finishing: the server's request time-out must answer.
   */
  readonly stall?: boolean;
  /**
   * A malformed head. curl and the raw socket send a header name with a space in it; Node's
   * `http.request` refuses to send one, so it sends two different `Content-Length` values;
   * `fetch` sends neither (it cannot be made to send a malformed head).
   */
  readonly malformed?: boolean;
}

/** The status the client got, 0 for none, and what went wrong when it got none. */
export interface ClientResult {
  readonly status: number;
  readonly error?: string;
}

export type Client = (base: string, request: ClientRequest) => Promise<ClientResult>;

/** Whether curl is on this machine (Debian package `curl`; `.ci/run` installs it). */
export const CURL_AVAILABLE = spawnSync('curl', ['--version']).status === 0;

const BAD_HEADER = 'Bad Name: x';
// How long curl's stdin stays open in a stall: past a 1 s request time-out, its check
// interval and the 2 s drain after the answer.
const STALLED_STDIN_MS = 5_000;

const bodies = new Map<number, Buffer>();
function body(size: number): Buffer {
  let b = bodies.get(size);
  if (b === undefined) {
    b = Buffer.alloc(size, '{');
    bodies.set(size, b);
  }
  return b;
}

let folder: string | undefined;
function bodyFile(size: number): string {
  folder ??= tempDir();
  const file = join(folder, `body-${size}`);
  writeFileSync(file, body(size));
  return file;
}
const files = new Map<number, string>();

/** curl, as an operator's script would call it. */
export const curl: Client = (base, r) =>
  new Promise((resolve) => {
    const args = ['-sS', '-o', '/dev/null', '-w', '%{http_code}', '-X', r.method];
    for (const [k, v] of Object.entries(r.headers)) args.push('-H', `${k}: ${v}`);
    if (r.malformed === true) args.push('-H', BAD_HEADER);
    if (r.stall === true) args.push('-T', '-');
    else {
      let file = files.get(r.size);
      if (file === undefined) {
        file = bodyFile(r.size);
        files.set(r.size, file);
      }
      args.push('--data-binary', `@${file}`);
    }
    args.push(`${base}${r.path}`);
    const child = spawn('curl', args, { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (err += c.toString()));
    child.stdin.on('error', () => undefined);
    if (r.stall === true) {
      // The body comes from stdin: `size` bytes, then silence. curl reads a pipe without
      // watching the connection, so it reports what it got only once its stdin ends: end
      // it well after the server's time-out and drain (a body completed before the answer
      // would be answered 400 instead, so this cannot hide a miss).
      if (r.size > 0) child.stdin.write(body(r.size));
      setTimeout(() => child.stdin.end(), STALLED_STDIN_MS).unref();
    } else child.stdin.end();
    // The stall is ended by the server's answer; stdin is closed once curl is gone.
    child.once('exit', () => child.stdin.destroy());
    // 'close', not 'exit': the output may still be on its way when the process exits.
    child.once('close', (code) => {
      const status = Number(out.trim());
      resolve(status > 0 ? { status } : { status: 0, error: `curl exit ${code}: ${err.trim()}` });
    });
  });

function settleOnce(resolve: (r: ClientResult) => void) {
  let settled = false;
  return (r: ClientResult) => {
    if (settled) return;
    settled = true;
    resolve(r);
  };
}

/** Node's `http.request`, writing the body in one call as most scripts do. */
export const node: Client = (base, r) =>
  new Promise((resolve) => {
    const done = settleOnce(resolve);
    const url = new URL(base);
    const headers: Record<string, string | number | string[]> = { ...r.headers };
    const length = r.stall === true ? r.size + 1 : r.size;
    headers['content-length'] = r.malformed === true ? [`${length}`, `${length + 1}`] : length;
    const req = httpRequest({
      host: url.hostname,
      port: url.port,
      method: r.method,
      path: r.path,
      headers,
      agent: false,
    });
    req.on('response', (res) => {
      done({ status: res.statusCode ?? 0 });
      res.resume();
      res.on('error', () => undefined);
    });
    req.on('error', (e) => done({ status: 0, error: e.message }));
    if (r.stall === true) {
      if (r.size > 0) req.write(body(r.size));
      req.flushHeaders();
    } else req.end(body(r.size));
  });

/** `fetch` (undici in Node), with a stream body for a stall. */
export const fetchClient: Client = async (base, r) => {
  const init: RequestInit & { duplex?: 'half' } = { method: r.method, headers: r.headers };
  if (r.stall === true) {
    init.body = new ReadableStream<Uint8Array>({
      start(controller) {
        if (r.size > 0) controller.enqueue(new Uint8Array(body(r.size)));
        // …and then nothing more: the stream never closes.
      },
    });
    init.duplex = 'half';
  } else {
    const b = body(r.size);
    init.body = new Uint8Array(b.buffer as ArrayBuffer, b.byteOffset, b.length);
  }
  try {
    const res = await fetch(`${base}${r.path}`, init);
    await res.arrayBuffer().catch(() => undefined);
    return { status: res.status };
  } catch (e) {
    const cause = (e as { cause?: { message?: string } }).cause?.message;
    return { status: 0, error: `${(e as Error).message}${cause ? `: ${cause}` : ''}` };
  }
};

const MiB_PER_TURN = 1024 * 1024;

/**
 * Writes the chunks `next` gives (until it gives none) as fast as the connection takes them,
 * but at most 1 MiB per turn of the event loop, so that the socket's reader sees what the
 * server answers while it writes. A write the kernel takes at once returns true, so a loop
 * of writes alone could send 16 MiB (the server's drain budget after an early answer) on
 * loopback before it ever looks at the answer; the server then resets the connection, and
 * an answer not read by then is lost with it (the next write fails and the socket closes).
 */
export function writeInTurns(socket: Socket, next: () => Uint8Array | string | undefined): void {
  const pump = () => {
    let turn = 0;
    while (!socket.destroyed) {
      const chunk = next();
      if (chunk === undefined) return;
      if (!socket.write(chunk)) return; // 'drain' goes on
      turn += chunk.length;
      if (turn >= MiB_PER_TURN) {
        setImmediate(pump);
        return;
      }
    }
  };
  socket.on('drain', pump);
  pump();
}

/**
 * A raw socket that writes the head and then the body as fast as the connection takes it,
 * reading all along, and stops writing once it has read a status line.
 */
export const raw: Client = (base, r) =>
  new Promise((resolve) => {
    const done = settleOnce(resolve);
    const url = new URL(base);
    let head = `${r.method} ${r.path} HTTP/1.1\r\nHost: ${url.host}\r\n`;
    for (const [k, v] of Object.entries(r.headers)) head += `${k}: ${v}\r\n`;
    if (r.malformed === true) head += `${BAD_HEADER}\r\n`;
    head += `Content-Length: ${r.stall === true ? r.size + 1 : r.size}\r\n\r\n`;
    let received = '';
    let answered = false;
    const socket = connect(Number(url.port), url.hostname, () => {
      socket.write(head);
      const all = body(r.size);
      let at = 0;
      writeInTurns(socket, () => {
        if (answered || at >= all.length) return undefined;
        const chunk = all.subarray(at, at + 65_536);
        at += chunk.length;
        return chunk;
      });
    });
    socket.on('data', (c: Buffer) => {
      received += c.toString('latin1');
      const m = /^HTTP\/1\.1 (\d{3}) /.exec(received);
      if (m && !answered) {
        answered = true;
        done({ status: Number(m[1]) });
        socket.destroy();
      }
    });
    socket.on('error', (e) => done({ status: 0, error: e.message }));
    socket.on('close', () => done({ status: 0, error: `closed after ${received.length} bytes` }));
  });

/** The four clients by name. */
export const CLIENTS: Readonly<Record<string, Client>> = {
  curl,
  node,
  fetch: fetchClient,
  raw,
};
