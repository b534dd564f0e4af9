/**
 * The lingering close: how an answer given before a request was read whole reaches the
 * client. Node-only.
 *
 * Closing a connection while bytes the client sent are still unread makes the kernel send a
 * reset, and a client still busy writing its body then loses the answer it was sent (it sees
 * `EPIPE` or `ECONNRESET` instead of the 401 or 413). So an early answer is written, the
 * write side is shut (FIN), and what the client still sends is read and thrown away until
 * it stops sending, or a time or byte budget runs out; only then is the connection closed.
 * nginx does the same (`lingering_close`, `lingering_time`, `lingering_timeout`).
 */
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';

/** How long, and how much, a connection is drained after an early answer. */
export interface LingerBudget {
  /** The whole drain, from the answer on (nginx's `lingering_time`). */
  readonly ms: number;
  /** The longest wait for the client's next bytes (nginx's `lingering_timeout`). */
  readonly idleMs: number;
  /** The most bytes read and thrown away; past them the connection is reset at once. */
  readonly bytes: number;
}

// Sockets whose answer is written and that are being drained: nothing else may write to
// them or close them early (a time-out or a second parse error of the same request).
const lingering = new WeakSet<Socket>();

/** Whether the socket has been answered early and is being drained. */
export function isLingering(socket: Socket): boolean {
  return lingering.has(socket);
}

/** The bytes of a whole HTTP/1.1 answer, `Connection: close` included. */
export function rawAnswer(
  status: number,
  headers: Readonly<Record<string, string | number>>,
  body: string,
): Buffer {
  const bytes = Buffer.from(body, 'utf8');
  let head = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\ndate: ${new Date().toUTCString()}\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    const lower = name.toLowerCase();
    if (lower === 'content-length' || lower === 'connection') continue;
    head += `${name}: ${value}\r\n`;
  }
  head += `connection: close\r\ncontent-length: ${bytes.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), bytes]);
}

/**
 * Takes the socket from the HTTP parser, writes `answer` on it, shuts its write side and
 * drains what the client still sends, then closes it. Nothing read is kept. Calling it again
 * on a socket that lingers already does nothing.
 *
 * @returns false when the socket was lingering already (the answer was not written)
 */
export function answerAndLinger(socket: Socket, answer: Buffer, budget: LingerBudget): boolean {
  if (lingering.has(socket) || socket.destroyed) return false;
  lingering.add(socket);
  // The parser reads no more of this connection: its bytes come here and are dropped.
  // (Adding a 'data' listener is also what makes node:http hand the stream back to JS.)
  socket.removeAllListeners('data');
  let drained = 0;
  let done = false;
  const close = () => {
    if (done) return;
    done = true;
    clearTimeout(whole);
    clearTimeout(idle);
    socket.destroy();
  };
  // The client has sent all it will: close once the answer is out (a reset now would be
  // harmless, but a FIN lets the answer finish flushing).
  const closeWhenWritten = () => {
    if (socket.writableFinished) close();
    else socket.once('finish', close);
  };
  const whole = setTimeout(close, budget.ms);
  const idle = setTimeout(close, budget.idleMs);
  socket.on('data', (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > budget.bytes) close();
    else idle.refresh();
  });
  socket.once('end', closeWhenWritten);
  socket.once('close', () => {
    done = true;
    clearTimeout(whole);
    clearTimeout(idle);
  });
  socket.write(answer);
  socket.end();
  socket.resume();
  return true;
}
