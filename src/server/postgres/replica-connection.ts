/**
 * A replica's two connections to PostgreSQL: one for queries and the write transaction, one
 * that listens for the other replicas' commits (idle between notifications). When either
 * breaks, both are ended and made again with a backoff (100 ms, doubling to 5 s) until the
 * database answers. `replica.ts` says what a lost connection and one back mean. Node-only.
 */
import type pg from 'pg';
import { connectClient } from './connect.js';
import { CHANNEL } from './tables.js';

/** What the connections tell the replica. */
interface ConnectionEvents {
  /** A notification on the channel, with its payload. */
  notified(payload: string | undefined): void;
  /** Either connection failed or ended. */
  failed(e: unknown): void;
  /**
   * Both are connected and listening: what must hold before the replica goes on (its check
   * that the database is not behind it). It runs before {@link ReplicaConnection.connected}
   * turns true.
   */
  attached(client: pg.Client): Promise<void>;
  /** A reconnection succeeded. */
  back(): void;
}

/** The connections of one replica, made again after they are lost. */
export class ReplicaConnection {
  readonly #url: string;
  readonly #events: ConnectionEvents;
  #client: pg.Client | undefined;
  #listener: pg.Client | undefined;
  #connected = false;
  #stopped = false;
  #backoff = 100;
  #retry: ReturnType<typeof setTimeout> | undefined;

  /** Over `client`, connected already (the snapshot was read on it); `attach` listens. */
  constructor(url: string, client: pg.Client, events: ConnectionEvents) {
    this.#url = url;
    this.#client = client;
    this.#events = events;
  }

  /** The connection for queries, while there is one. */
  get client(): pg.Client | undefined {
    return this.#client;
  }

  /** The listening connection, while there is one. */
  get listener(): pg.Client | undefined {
    return this.#listener;
  }

  /** Whether both are connected and checked. */
  get connected(): boolean {
    return this.#connected;
  }

  /** (Re)connects both clients and listens for new rows. */
  async attach(): Promise<void> {
    const url = this.#url;
    this.#client ??= await connectClient(url);
    const client = this.#client;
    const listener = await connectClient(url);
    this.#listener = listener;
    for (const c of [client, listener]) {
      c.removeAllListeners('error');
      c.on('error', (e) => this.#events.failed(e));
      c.on('end', () =>
        this.#events.failed(Object.assign(new Error('Connection terminated'), { code: '08006' })),
      );
    }
    listener.on('notification', (n) => this.#events.notified(n.payload));
    await listener.query(`LISTEN ${CHANNEL}`);
    await this.#events.attached(client);
    this.#connected = true;
  }

  /** Ends both, and tries again after the backoff unless a try is due already. */
  lose(): void {
    this.#disconnect();
    this.#retry ??= setTimeout(() => this.#reconnect(), this.#backoff);
  }

  /** Tries no more. */
  stop(): void {
    this.#stopped = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
  }

  /** Ends both connections (after {@link stop}). */
  async end(): Promise<void> {
    for (const c of [this.#client, this.#listener]) await c?.end().catch(() => undefined);
  }

  #disconnect(): void {
    this.#connected = false;
    for (const c of [this.#client, this.#listener]) c?.end().catch(() => undefined);
    this.#client = undefined;
    this.#listener = undefined;
  }

  async #reconnect(): Promise<void> {
    this.#retry = undefined;
    if (this.#stopped) return;
    try {
      await this.attach();
      this.#backoff = 100;
      this.#events.back();
    } catch {
      this.#backoff = Math.min(this.#backoff * 2, 5_000);
      this.#disconnect();
      if (!this.#stopped) this.#retry = setTimeout(() => this.#reconnect(), this.#backoff);
    }
  }
}
