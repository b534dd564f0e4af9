/**
 * How the server writes an answer: the headers every answer carries (the log position it
 * reflects; while the store is out of reach, that reads come from the last state), an
 * answer to a request read whole, and an early answer (given while the client may still
 * send its body), which lingers before the connection closes. A read of an unchanged state
 * answers with the same response object, so its bytes and head are made once. Node-only.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { HttpResponse } from 'peg-limits';
import { answerAndLinger, isLingering, type LingerBudget, rawAnswer } from './linger.js';
import type { Logged } from './request-log.js';

/** What the answers need of the server. */
interface AnswerSource {
  /** The log position of the state reads see. */
  readonly position: () => number;
  /** Whether the store takes no writes now. */
  readonly storeUnavailable: () => boolean;
  /** The drain budget of an early answer. */
  readonly linger: LingerBudget;
  /** Where each answered request is told (metrics, the request log). */
  readonly logged: Logged;
}

/** The server's two ways to answer. */
interface Answers {
  /** An answer to a request read whole: the connection may be kept alive. */
  send(
    req: IncomingMessage,
    res: ServerResponse,
    response: HttpResponse,
    started: number,
    route: string,
  ): void;
  /**
   * An answer given while the client may still be sending its body: written straight to the
   * socket, which then lingers (drained within budget) before it is closed, so that the
   * client reads the answer rather than a reset.
   */
  early(req: IncomingMessage, response: HttpResponse, started: number, route: string): void;
}

/** Writes the service's answers on node:http's responses, and the early ones before a body is read. */
export function createAnswers(source: AnswerSource): Answers {
  const { position: currentPosition, storeUnavailable, linger, logged } = source;
  // The length in bytes of the last body sent: a cached read answers with the same string
  // object, so its UTF-8 length is counted once, not once per request.
  let lastBody = '';
  let lastLength = 0;
  function lengthOf(body: string): number {
    if (body !== lastBody) {
      lastBody = body;
      lastLength = Buffer.byteLength(body, 'utf8');
    }
    return lastLength;
  }

  // The headers every answer carries besides its own (and its length).
  function headersOf(response: HttpResponse): Record<string, string | number> {
    const headers: Record<string, string | number> = {
      ...response.headers,
      // The log position the answer reflects; and, while the database is out of reach,
      // that reads come from the last state this replica has.
      'peg-limits-position': currentPosition(),
    };
    if (storeUnavailable()) headers['peg-limits-store'] = 'unavailable';
    return headers;
  }

  // The last answer sent and its head as a flat list of names and values: a read of an
  // unchanged state answers with the same response object, so its head is made once.
  let lastResponse: HttpResponse | undefined;
  let lastHead: Array<string | number> = [];
  let lastHeadPosition = -1;
  function headOf(response: HttpResponse, length: number): Array<string | number> {
    const position = currentPosition();
    if (response !== lastResponse || position !== lastHeadPosition || storeUnavailable()) {
      const head: Array<string | number> = [];
      for (const [name, value] of Object.entries(headersOf(response))) head.push(name, value);
      // A 304 has no body, and a length would be read as the body's (RFC 9110 §8.6).
      if (response.status !== 304) head.push('content-length', length);
      lastResponse = response;
      lastHeadPosition = position;
      lastHead = head;
    }
    return lastHead;
  }

  return {
    send(req, res, response, started, route) {
      if (isLingering(req.socket)) return;
      // The body as text: node:http then writes head and body as one string, one call.
      const body = response.body;
      res.writeHead(response.status, headOf(response, lengthOf(body)) as unknown as string[]);
      res.end(body, 'utf8');
      logged(req, response.status, started, route);
    },
    early(req, response, started, route) {
      const answer = rawAnswer(response.status, headersOf(response), response.body);
      if (answerAndLinger(req.socket, answer, linger)) logged(req, response.status, started, route);
    },
  };
}
