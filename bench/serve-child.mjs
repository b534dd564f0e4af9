// A server for the load figures, in a process of its own: `node bench/serve-child.mjs MODE
// ARG`. MODE `peg-limits` runs startServer on the data folder ARG (group commit on, or off
// with a third argument `serial`; metrics on, or off with `no-metrics`); MODE `replica` runs it on the PostgreSQL log at ARG;
// MODE `floor` answers every request with the status, headers and body in the file ARG, the
// way the thinnest node:http server would (reading the request body first). MODE
// `sync-floor` is the floor of a durable write: it appends each request's body as a line to
// a file in the folder ARG and answers 200 once one fdatasync covers it, the requests that
// came during a flush sharing the next (group commit), and nothing else.
// Prints `listening on URL` like the command.
import { readFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { createServer } from 'node:http';
import { join } from 'node:path';
import { createLimitsState } from '../dist/index.js';
import { openDataLog, openPgLog, startServer } from '../dist/server.js';
import { LOAD_TOKEN } from './util.mjs';

const [mode, arg, option] = process.argv.slice(2);
if (mode === 'floor') {
  const { status, type, headers, body } = JSON.parse(readFileSync(arg, 'utf8'));
  const bytes = Buffer.from(body, 'utf8');
  // The same head as the answer it stands for (node:http adds the date and keep-alive).
  const head = { ...(headers ?? { 'content-type': type }), 'content-length': bytes.length };
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(status, head);
      res.end(bytes);
    });
  });
  server.listen(0, '127.0.0.1', () =>
    console.log(`listening on http://127.0.0.1:${server.address().port}`),
  );
  // Stopped by SIGINT, it exits as a program does (a profiler writes its profile then).
  process.on('SIGINT', () => process.exit(0));
} else if (mode === 'sync-floor') {
  const file = await open(join(arg, 'floor.jsonl'), 'a');
  let waiting = [];
  let flushing = false;
  const flush = async () => {
    flushing = true;
    while (waiting.length > 0) {
      const group = waiting;
      waiting = [];
      await file.datasync();
      for (const done of group) done();
    }
    flushing = false;
  };
  const ok = Buffer.from('{"ok":true}');
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', async () => {
      chunks.push(Buffer.from('\n'));
      await file.write(Buffer.concat(chunks));
      waiting.push(() => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': ok.length });
        res.end(ok);
      });
      if (!flushing) void flush();
    });
  });
  server.listen(0, '127.0.0.1', () =>
    console.log(`listening on http://127.0.0.1:${server.address().port}`),
  );
} else {
  const initial = createLimitsState({
    limits: { rollingWithdrawalBlocks: 144n, rollingWithdrawalCap: 10n ** 15n },
  });
  const server = await startServer({
    log:
      mode === 'replica'
        ? await openPgLog({ url: arg, initial })
        : await openDataLog({ dir: arg, initial, groupCommit: option !== 'serial' }),
    metrics: option !== 'no-metrics',
    port: 0,
    adminToken: LOAD_TOKEN,
    connectionLimits: { maxConnections: 10_000 },
  });
  console.log(`listening on ${server.url}`);
  process.on('SIGTERM', () => server.close().then(() => process.exit(0)));
}
