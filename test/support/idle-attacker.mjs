// Holds connections open against a server on loopback, as an attacker locking clients out
// would: `idle` that never send a byte, then `slow` slowloris ones that send a header line
// every second and never finish, then `streams` GET /events streams (each read as it comes,
// and open once its head has come: last, so that they take every slot idle ones held).
// Prints "ready N" once every connection is open (N: how many the server has closed by then),
// then holds them until it is killed.
// usage: node idle-attacker.mjs PORT IDLE SLOW [STREAMS]
import { connect } from 'node:net';

const [port, idle, slow, streams = 0] = process.argv.slice(2).map(Number);
let closed = 0;
const open = (onConnect) =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      onConnect?.(socket);
      resolve();
    });
    socket.on('error', () => resolve());
    socket.on('close', () => closed++);
  });
for (let i = 0; i < idle; i += 100)
  await Promise.all(Array.from({ length: Math.min(100, idle - i) }, () => open()));
for (let i = 0; i < slow; i++)
  await open((s) => {
    s.write('GET /limits HTTP/1.1\r\nHost: x\r\n');
    const timer = setInterval(
      () => (s.destroyed ? clearInterval(timer) : s.write('X-Slow: 1\r\n')),
      1000,
    );
  });
// A stream counts once the server has answered its head.
const stream = () =>
  new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write('GET /events HTTP/1.1\r\nHost: x\r\n\r\n'),
    );
    let head = '';
    socket.on('data', (c) => {
      if (head.length < 12) {
        head += c.toString('latin1');
        if (head.length >= 12) resolve();
      }
    });
    socket.on('error', () => resolve());
    socket.on('close', () => {
      closed++;
      resolve();
    });
  });
for (let i = 0; i < streams; i += 50)
  await Promise.all(Array.from({ length: Math.min(50, streams - i) }, stream));
// Let the server see the last of them.
setTimeout(() => process.stdout.write(`ready ${closed}\n`), 200);
setInterval(() => undefined, 1 << 30);
