/**
 * The servers a PostgreSQL connection string names (libpq's host lists and
 * `target_session_attrs`, which the `pg` driver does not read). Pure; the failover test in
 * `replicas-faults.test.ts` connects through such a list for real.
 */
import { describe, expect, test } from 'vitest';
import { PgLogError, serversOf } from '../../../src/server/postgres/connect.js';

const params = (url: string) => Object.fromEntries(new URL(url).searchParams);

describe('serversOf', () => {
  test('one server and no target_session_attrs: the string as it was', () => {
    const url = 'postgres://limits:secret@db/limits?sslmode=require';
    expect(serversOf(url)).toEqual({ urls: [url], names: ['db'], wants: 'any' });
  });

  test('a host list: one string per server, in order, without target_session_attrs', () => {
    const s = serversOf(
      'postgres://limits:secret@db1:5432,db2:5433/limits?target_session_attrs=read-write&sslmode=require',
    );
    expect(s).toEqual({
      urls: [
        'postgres://limits:secret@db1:5432/limits?sslmode=require',
        'postgres://limits:secret@db2:5433/limits?sslmode=require',
      ],
      names: ['db1:5432', 'db2:5433'],
      wants: 'read-write',
    });
  });

  test('Unix sockets: the host and port parameters as lists, or one port for all', () => {
    const s = serversOf(
      'postgres://postgres@localhost/t0?host=%2Frun%2Fa,%2Frun%2Fb&port=5432,5433&target_session_attrs=primary',
    );
    expect(s.wants).toBe('primary');
    expect(s.names).toEqual(['/run/a:5432', '/run/b:5433']);
    expect(s.urls.map(params)).toEqual([
      { host: '/run/a', port: '5432' },
      { host: '/run/b', port: '5433' },
    ]);
    expect(s.urls.every((u) => u.startsWith('postgres://postgres@localhost/t0?'))).toBe(true);
    const one = serversOf('postgres://postgres@localhost/t0?host=%2Frun%2Fa,%2Frun%2Fb&port=6000');
    expect(one.urls.map(params)).toEqual([
      { host: '/run/a', port: '6000' },
      { host: '/run/b', port: '6000' },
    ]);
    expect(one.wants).toBe('any');
  });

  test('target_session_attrs=any on one server is the one thing taken out of the connection string', () => {
    expect(serversOf('postgres://u@db/l?target_session_attrs=any&application_name=x')).toEqual({
      urls: ['postgres://u@db/l?application_name=x'],
      names: ['db'],
      wants: 'any',
    });
  });

  test('bad input: a kind this release does not know, and lists of hosts and ports that differ', () => {
    expect(() => serversOf('postgres://u@db1,db2/l?target_session_attrs=standby')).toThrow(
      new PgLogError(
        'target_session_attrs=standby is not supported here: use any, read-write or primary',
      ),
    );
    expect(() => serversOf('postgres://u@localhost/l?host=%2Fa,%2Fb&port=1,2,3')).toThrow(
      /2 hosts but 3 ports: give one port, or one for each host/,
    );
  });
});
