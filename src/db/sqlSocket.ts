import { createServer, type AddressInfo, type Socket } from 'node:net';
import type { PGlite, QueryOptions, Results, Transaction } from '@electric-sql/pglite';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from '@electric-sql/pglite-socket';
import { drizzle } from 'drizzle-orm/pglite';
import type { Logger } from '../logger.ts';
import { quoteIdent, type Database, type Db } from './connect.ts';
import { copyFailMessage, errorResponse, FrontendMessageLengths, frontendMessageType, invalidFrontendMessage, ReadyForQueryTracker, SYNC_MESSAGE, TERMINATE, unservableCopy } from './pgWire.ts';
import * as schema from './schema.ts';
import { scramVerifier } from './scram.ts';
import { SessionScheduler, type SessionUser } from './sessionScheduler.ts';
import { SocketAuthentication } from './socketAuth.ts';

/**
 * Serves the embedded database on 127.0.0.1:PGLITE_PORT over the PostgreSQL protocol while the daemon runs, and gives
 * the daemon the one `Db` handle that is safe to use meanwhile.
 *
 * Why not `PGLiteSocketServer` as it comes (@electric-sql/pglite-socket 0.2.17, read in dist/chunk-*.js):
 * - PGlite is ONE backend session. The package's QueryQueueManager runs one frontend *message* at a time, each inside
 *   `db.runExclusive` (PGlite's query mutex only), and keeps a connection's turn only while `db.isInTransaction()`.
 *   The daemon's in-process `pglite.query()` / `transaction()` take PGlite's mutexes but never look at that queue, so
 *   between two messages of a client's `BEGIN; INSERT …` the daemon would read the uncommitted rows, and its writes
 *   would land inside the client's transaction (and vanish on its ROLLBACK). Conversely, `pglite.transaction()` holds
 *   only the transaction mutex between statements, so socket messages could run inside the daemon's transaction.
 * - `isInTransaction()` is false between Parse/Bind/Execute and Sync (an implicit transaction), and during a COPY, so
 *   the package may hand the session to another connection in the middle of someone's protocol cycle.
 * - Over `maxConnections` (default 1) it writes the plain text "Too many connections", which clients cannot parse.
 * Routing the daemon through the socket with a node-postgres pool of 1 would fix only the first point.
 *
 * What this module does instead: it keeps the package's PGLiteSocketHandler (wire framing, SSL refusal, cancel
 * requests), whose `queryQueue` option takes any object with `enqueue` / `clearQueueForHandler` /
 * `clearTransactionIfNeeded`, and gives every handler the same SessionScheduler. The daemon is one more user of that
 * scheduler: each of its queries and transactions is one unit. A user holds the session from its first message until
 * PGlite answers ReadyForQuery with status 'I' (idle), read from the output stream, so a client's open transaction,
 * extended-query cycle or COPY makes the daemon wait instead of interleaving, and the daemon's transaction makes
 * the clients wait. A client that holds the session while others wait longer than `holdTimeoutMs` in all (its own
 * queries meanwhile do not restart the count) is disconnected at its next pause (FATAL 25P03) and its transaction
 * rolled back, so neither a forgotten `BEGIN` in psql nor a tool with autocommit off can stop the mirror.
 *
 * Settings leak, because all connections share the session: a client's `SET search_path`, `SET TIME ZONE`,
 * `SET default_transaction_read_only` … stay for everyone after it. Before each daemon unit that follows another
 * user's, the daemon runs `RESET ALL`, `SET SESSION AUTHORIZATION DEFAULT`, `SET TIME ZONE 'UTC'` and
 * `SET search_path TO <schema>, pg_temp` (pg_temp last, so a client's temporary table cannot shadow a mirror table).
 * Clients in turn see the daemon's settings, which are also the sensible ones for them. Also shared, and not
 * restored: named prepared statements, cursors, LISTEN, temporary tables.
 *
 * Authentication: PGlite's own session is a superuser that accepts any startup message, so every connection first
 * proves it knows the password (SCRAM-SHA-256, see socketAuth.ts) before a byte of it reaches PGlite. Without that any
 * local user could read the mirror and insert into `reply_outbox`, i.e. make the daemon post replies. A connection
 * that has not authenticated within `authTimeoutMs` is closed, so idle sockets cannot hold the connection slots.
 *
 * Warning: while the server runs, use only the returned `db` for the daemon's work, never `database.db` or
 * `database.pglite`, and never the outer `db` inside one of its own transactions (that waits for itself forever).
 */

export interface ServeEmbeddedDatabaseOptions {
  /** Address to listen on. @default '127.0.0.1' */
  host?: string;
  /** TCP port; 0 picks a free one (tests). The composition root does not call this at all when PGLITE_PORT is 0. */
  port: number;
  /** What every client must prove it knows (SCRAM-SHA-256); see socketPassword.ts. */
  password: string;
  /** How long a client has to authenticate after connecting. @default 10_000 */
  authTimeoutMs?: number;
  /** Where the password is kept (a file's path, or PGLITE_PASSWORD), for the log line; never the password. */
  passwordHint?: string;
  logger?: Logger;
  /** Client connections at once; one more is refused with FATAL 53300. @default 16 */
  maxConnections?: number;
  /** How long a client may hold the session (an open transaction) while others wait, however busy it is meanwhile.
   * 0 = forever. @default 60_000 */
  holdTimeoutMs?: number;
  /** The longest message an authenticated client may send (bytes); a longer one ends its connection. @default MAX_MESSAGE_BYTES */
  maxMessageBytes?: number;
}

export interface EmbeddedDatabaseServer {
  /** What psql and BI tools connect to, with the password: `postgres://postgres@127.0.0.1:PORT/postgres` (any user and
   * database name). */
  readonly url: string;
  readonly port: number;
  /** The daemon's handle: each query and transaction waits its turn on the shared session. Usable after close(). */
  readonly db: Db;
  /** For status and tests: open client connections, units waiting their turn, who holds the session between units. */
  stats(): EmbeddedDatabaseStats;
  /** Stops listening and ends every client connection, rolling back what they left open. Idempotent. */
  close(): Promise<void>;
}

export interface EmbeddedDatabaseStats {
  connections: number;
  waiting: number;
  holder: 'daemon' | 'client' | null;
}

interface Connection {
  readonly handler: PGLiteSocketHandler;
  readonly socket: Socket;
  /** Until it says authenticated, the connection's messages are its password check's, never PGlite's. */
  readonly auth: SocketAuthentication;
  readonly authTimer: NodeJS.Timeout;
  readonly output: ReadyForQueryTracker;
  /** From a message sent until PGlite is ready for a query again, outside a transaction block. */
  holding: boolean;
}

const DAEMON = 'daemon' satisfies SessionUser;
/** What a client may send before it has authenticated: a startup message and two SASL messages, with room to spare. */
const MAX_BYTES_BEFORE_AUTH = 128 * 1024;
/**
 * The longest message an authenticated client may send. The handler holds a message whole until its declared length
 * has arrived, and PGlite copies it again: PostgreSQL's 1 GB would take the daemon's memory several times over. 32 MiB
 * is a query far longer than any BI tool writes, or tens of thousands of reply rows in one INSERT.
 */
export const MAX_MESSAGE_BYTES = 32 * 1024 * 1024;

/** Said to a client that asks for COPY … FROM STDIN (psql's \copy … from). */
export const COPY_PROGRAM_REFUSED = 'COPY TO PROGRAM and COPY FROM PROGRAM are not supported by the embedded database: there is no program to run';

export const COPY_FROM_STDIN_REFUSED =
  "COPY FROM STDIN (psql's \\copy ... from) is not supported by the embedded database's SQL socket: insert the rows with INSERT, or run on PostgreSQL (DATABASE_URL)";

export async function serveEmbeddedDatabase(
  database: Database,
  options: ServeEmbeddedDatabaseOptions,
): Promise<EmbeddedDatabaseServer> {
  const pglite = database.pglite;
  if (database.kind !== 'pglite' || !pglite) throw new Error('serveEmbeddedDatabase needs the embedded database');
  await pglite.waitReady;
  const host = options.host ?? '127.0.0.1';
  const maxConnections = options.maxConnections ?? 16;
  const logger = options.logger;
  const connections = new Map<number, Connection>();
  // Derived once: each connection's check then costs a few HMACs, whatever a client sends.
  const verifier = scramVerifier(options.password);
  const authTimeoutMs = options.authTimeoutMs ?? 10_000;
  const maxMessageBytes = options.maxMessageBytes ?? MAX_MESSAGE_BYTES;

  const scheduler = new SessionScheduler({
    holds: (user) => pglite.isInTransaction() || (user !== DAEMON && (connections.get(user)?.holding ?? false)),
    holdTimeoutMs: options.holdTimeoutMs ?? 60_000,
    onHoldTimeout: (user) => {
      if (user === DAEMON) return;
      logger?.warn({ connection: user }, 'SQL socket: a client kept the embedded database in its transaction while others waited; disconnecting it');
      terminate(user, '25P03', 'terminating connection: in a transaction while others waited for the embedded database');
    },
  });

  const restoreDaemonSettings =
    `reset all; set session authorization default; set time zone 'UTC'; ` +
    `set search_path to ${quoteIdent(database.schema)}, pg_temp`;
  const daemonTurn = <T>(work: () => Promise<T>): Promise<T> =>
    scheduler.run(DAEMON, async (previous) => {
      if (previous !== DAEMON) await pglite.exec(restoreDaemonSettings);
      return work();
    });
  const db = drizzle(new TurnTakingClient(pglite, daemonTurn) as unknown as PGlite, { schema }) as unknown as Db;

  /** Ends a connection's unfinished business: a COPY, an extended-query cycle, a transaction block. */
  const abandon = async (): Promise<void> => {
    const discard = () => {};
    await pglite.runExclusive(async () => {
      await pglite.execProtocolRawStream(copyFailMessage('connection closed'), { onRawData: discard });
      await pglite.execProtocolRawStream(SYNC_MESSAGE, { onRawData: discard });
    });
    if (pglite.isInTransaction()) await pglite.exec('rollback');
  };

  /** One frontend message of an authenticated connection, in that connection's turn on the session. */
  const execute = (handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> =>
    scheduler.run(handlerId, async () => {
      const connection = connections.get(handlerId);
      if (!connection) throw new Error('connection closed');
      const readyBefore = connection.output.count;
      if (frontendMessageType(message) !== TERMINATE) connection.holding = true;
      let bytes = 0;
      await pglite.runExclusive(() =>
        pglite.execProtocolRawStream(message, {
          onRawData: (data) => {
            bytes += data.length;
            connection.output.push(data);
            onData(data);
          },
        }),
      );
      if (connection.output.count > readyBefore) connection.holding = connection.output.status !== 'I';
      return bytes;
    });

  /** One message of a connection that has not authenticated: answered here, outside the session's turns. */
  const authenticate = async (handlerId: number, connection: Connection, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> => {
    const step = connection.auth.receive(message);
    if (step.reply) onData(step.reply);
    const sent = step.reply?.length ?? 0;
    if (step.outcome === 'continue') return sent;
    clearTimeout(connection.authTimer);
    if (step.outcome === 'authenticated') {
      logger?.debug({ connection: handlerId, user: connection.auth.user }, 'SQL socket: client authenticated');
      return sent + (await execute(handlerId, step.startup, onData));
    }
    if (step.reason !== 'refused already') {
      const from = `${connection.socket.remoteAddress}:${connection.socket.remotePort}`;
      logger?.warn({ connection: handlerId, from, user: connection.auth.user, reason: step.reason }, 'SQL socket: connection refused');
    }
    void connection.handler.detach(true);
    return sent;
  };

  // The duck-typed QueryQueueManager that PGLiteSocketHandler calls (those three methods only).
  const queue = {
    enqueue(handlerId: number, message: Uint8Array, onData: (data: Uint8Array) => void): Promise<number> {
      const connection = connections.get(handlerId);
      if (!connection) return Promise.reject(new Error('connection closed'));
      if (!connection.auth.authenticated) return authenticate(handlerId, connection, message, onData);
      const invalid = invalidFrontendMessage(message);
      const copy = invalid === null ? unservableCopy(message) : null;
      if (copy !== null) {
        // Never for PGlite, which would end its backend over it, or never answer, and stop the daemon (see unservableCopy).
        const what = copy === 'stdin' ? 'COPY FROM STDIN' : 'COPY TO/FROM PROGRAM';
        logger?.warn({ connection: handlerId }, `SQL socket: a client asked for ${what}, which the embedded database cannot serve; disconnecting it`);
        terminate(handlerId, '0A000', copy === 'stdin' ? COPY_FROM_STDIN_REFUSED : COPY_PROGRAM_REFUSED);
        return Promise.resolve(0);
      }
      if (invalid === null) return execute(handlerId, message, onData);
      // Never for PGlite, which would loop on it forever (see invalidFrontendMessage).
      logger?.warn({ connection: handlerId, reason: invalid }, 'SQL socket: a client broke the protocol; disconnecting it');
      terminate(handlerId, '08P01', invalid);
      return Promise.resolve(0);
    },
    clearQueueForHandler(handlerId: number): void {
      scheduler.cancel(handlerId, new Error('connection closed'));
    },
    async clearTransactionIfNeeded(handlerId: number): Promise<void> {
      // Runs once the session is free or this connection's: only in the latter case is there anything to undo.
      // Never rejects: the handler calls this from a socket 'close' listener, where a rejection would go unhandled.
      await scheduler
        .run(handlerId, async () => {
          try {
            if (scheduler.holder === handlerId) await abandon();
          } finally {
            // Before this unit ends, so the scheduler sees a user that holds nothing any more.
            forget(handlerId);
          }
        })
        .catch((error: unknown) => logger?.error({ err: error, connection: handlerId }, 'SQL socket: could not clean up after a client'))
        .finally(() => forget(handlerId));
    },
  };

  function forget(handlerId: number): void {
    clearTimeout(connections.get(handlerId)?.authTimer);
    connections.delete(handlerId);
  }

  function terminate(handlerId: number, code: string, message: string): void {
    const connection = connections.get(handlerId);
    if (!connection) return;
    // The FATAL goes out before the FIN; not waiting for the write callback, which a client that stopped reading
    // would never let fire. Nothing more is read from it, and it is closed now: the handler detaches only once the
    // session is free, which another client may hold for a minute, and meanwhile buffered whatever this one sent.
    const { socket } = connection;
    socket.pause();
    socket.end(errorResponse('FATAL', code, message));
    setTimeout(() => socket.destroy(), 1_000).unref();
    void connection.handler.detach(true);
  }

  let closing = false;
  /** Refused sockets still saying goodbye, so close() does not wait on a peer that never hangs up. */
  const refused = new Set<Socket>();
  const server = createServer((socket) => {
    socket.on('error', () => {}); // a reset by the peer is the handler's business, not a crash
    if (closing) {
      socket.destroy();
      return;
    }
    if (connections.size >= maxConnections) {
      logger?.warn({ maxConnections }, 'SQL socket: connection refused, too many clients');
      const refusal = errorResponse('FATAL', '53300', `sorry, too many clients already (the embedded database allows ${maxConnections})`);
      refused.add(socket);
      socket.once('close', () => refused.delete(socket));
      socket.end(refusal, () => socket.destroy());
      return;
    }
    const handler = new PGLiteSocketHandler({
      queryQueue: queue as unknown as PGLiteSocketHandlerOptions['queryQueue'],
      closeOnDetach: true,
    });
    const authTimer = setTimeout(() => {
      logger?.warn({ connection: handler.handlerId }, 'SQL socket: a client did not authenticate in time; disconnecting it');
      terminate(handler.handlerId, '57014', 'canceling authentication due to timeout');
    }, authTimeoutMs);
    authTimer.unref();
    const auth = new SocketAuthentication(verifier);
    connections.set(handler.handlerId, { handler, socket, auth, authTimer, output: new ReadyForQueryTracker(), holding: false });
    logger?.debug({ connection: handler.handlerId, from: `${socket.remoteAddress}:${socket.remotePort}` }, 'SQL socket: client connected');
    handler.attach(socket).catch((error: unknown) => {
      logger?.warn({ err: error }, 'SQL socket: could not attach a client');
      forget(handler.handlerId);
      socket.destroy();
    });
    // The handler buffers a message until its declared length has arrived: a client could make it hold up to 2 GB.
    // Before the password, all it may send is 128 kB (PostgreSQL's own limits are 10 kB for a startup packet and 64 kB
    // for an authentication token); after it, one message is at most maxMessageBytes.
    let unauthenticated = 0;
    const lengths = new FrontendMessageLengths();
    const limit = (chunk: Buffer) => {
      const tooLong = lengths.push(chunk, maxMessageBytes);
      if (!auth.authenticated) {
        unauthenticated += chunk.length;
        if (unauthenticated <= MAX_BYTES_BEFORE_AUTH) return;
        socket.off('data', limit);
        logger?.warn({ connection: handler.handlerId }, 'SQL socket: a client sent too much before authenticating; disconnecting it');
        terminate(handler.handlerId, '08P01', 'invalid length of startup or authentication message');
        return;
      }
      if (tooLong === null) return;
      socket.off('data', limit);
      logger?.warn({ connection: handler.handlerId, bytes: tooLong, maxMessageBytes }, 'SQL socket: a client sent a message longer than the embedded database takes; disconnecting it');
      terminate(
        handler.handlerId,
        '54000',
        `a message of ${tooLong} bytes is longer than the embedded database's SQL socket takes (${maxMessageBytes}): send less at once, or use PostgreSQL (DATABASE_URL)`,
      );
    };
    socket.on('data', limit);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => logger?.error({ err: error }, 'SQL socket: server error'));
  const port = (server.address() as AddressInfo).port;
  const url = `postgres://postgres@${host.includes(':') ? `[${host}]` : host}:${port}/postgres`;
  // (pino redacts any `url` field, so the address goes under another name.)
  logger?.info({ address: url, passwordIn: options.passwordHint }, 'embedded database served over the PostgreSQL protocol');

  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    db,
    stats: () => ({
      connections: connections.size,
      waiting: scheduler.waiting,
      holder: scheduler.holder === null ? null : scheduler.holder === DAEMON ? 'daemon' : 'client',
    }),
    close() {
      closed ??= (async () => {
        closing = true;
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await Promise.all([...connections.values()].map((c) => c.handler.detach(true)));
        for (const socket of refused) socket.destroy();
        await stopped;
      })();
      return closed;
    },
  };
}

/**
 * The PGlite surface drizzle's pglite driver uses (query, exec, transaction), each call taking the daemon's turn on
 * the shared session. Inside a transaction drizzle uses PGlite's Transaction object, already within the turn.
 */
class TurnTakingClient {
  readonly #pglite: PGlite;
  readonly #turn: <T>(work: () => Promise<T>) => Promise<T>;

  constructor(pglite: PGlite, turn: <T>(work: () => Promise<T>) => Promise<T>) {
    this.#pglite = pglite;
    this.#turn = turn;
  }

  query<T>(query: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>> {
    return this.#turn(() => this.#pglite.query<T>(query, params, options));
  }

  exec(query: string, options?: QueryOptions): Promise<Array<Results>> {
    return this.#turn(() => this.#pglite.exec(query, options));
  }

  transaction<T>(callback: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.#turn(() => this.#pglite.transaction(callback));
  }
}
