import { createServer, type RequestListener, type Server } from 'node:http';
import PQueue from 'p-queue';
import type { Logger } from '../logger.ts';

/**
 * What a client of the HTTP port may hold: a status page, a Prometheus scraper and a supervisor's probes need a handful
 * of connections and send a request head in a packet. Node's own defaults let a client that trickles its head hold a
 * connection for 60 s (and 30 s more before the check notices), one that sends nothing and reads nothing for ever, and
 * any number of them: a few thousand such connections (slowloris) took every file descriptor of the process, and the
 * daemon's own database and API sockets with them.
 */
export interface HttpLimits {
  /** Connections open at once; one more is closed on arrival, unanswered, until one of them goes. */
  maxConnections: number;
  /** The whole request head must have arrived within this of the connection's (or the request's) start, ms. */
  headersTimeoutMs: number;
  /** The whole request, body included, ms. */
  requestTimeoutMs: number;
  /**
   * A connection that neither sends nor takes a byte for this long is closed, ms: one kept alive and forgotten, one whose
   * client stopped reading its answer. Time spent computing an answer counts too: this stays far above the slowest
   * route (the database probes give up after 3 s).
   */
  idleTimeoutMs: number;
  /** How often open connections are checked against the two timeouts above, ms. */
  checkEveryMs: number;
  /**
   * Requests one connection may send before Node answers the rest 503 and closes it (`server.maxRequestsPerSocket`): a
   * client that pipelines a thousand requests in one packet has them all handled at once otherwise.
   */
  maxRequestsPerSocket: number;
}

export const HTTP_LIMITS: HttpLimits = {
  maxConnections: 128,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 15_000,
  idleTimeoutMs: 60_000,
  checkEveryMs: 1_000,
  maxRequestsPerSocket: 100,
};

/**
 * node:http's server with the limits above. A flood of connections beyond `maxConnections` is logged once, when it
 * starts, and its end (the next connection accepted) once with how many were turned away: not a line per connection.
 */
export function createLimitedServer(handler: RequestListener, logger: Logger, limits: Partial<HttpLimits> = {}): Server {
  const l = { ...HTTP_LIMITS, ...limits };
  const server = createServer(
    {
      headersTimeout: l.headersTimeoutMs,
      requestTimeout: l.requestTimeoutMs,
      connectionsCheckingInterval: l.checkEveryMs,
    },
    handler,
  );
  server.maxConnections = l.maxConnections;
  server.maxRequestsPerSocket = l.maxRequestsPerSocket;
  server.setTimeout(l.idleTimeoutMs, (socket) => socket.destroy());
  let dropped = 0;
  server.on('drop', () => {
    if (dropped++ === 0) logger.warn({ maxConnections: l.maxConnections }, 'HTTP: too many connections open; new ones are closed until some go');
  });
  server.on('connection', () => {
    if (dropped === 0) return;
    logger.info({ dropped }, 'HTTP: accepting connections again');
    dropped = 0;
  });
  return server;
}

/**
 * The routes that read the database, answered `atOnce` at a time with `waiting` more queued: a thousand requests
 * pipelined in one packet (a connection may send `maxRequestsPerSocket`, 128 connections may be open) held the probes,
 * the sync and the signals for minutes, the embedded database running in this thread. `run` gives null when the queue
 * is full: the caller answers BUSY. The probes (/healthz, /readyz) stay outside, so a supervisor still hears.
 */
export function databaseReads(atOnce = 2, waiting = 8): { run<T>(task: () => Promise<T>): Promise<T> | null } {
  const queue = new PQueue({ concurrency: atOnce });
  return {
    run<T>(task: () => Promise<T>): Promise<T> | null {
      return queue.pending + queue.size >= atOnce + waiting ? null : queue.add(task);
    },
  };
}

/** The answer to a request beyond databaseReads' queue. */
export const BUSY = { status: 503, type: 'text/plain; charset=utf-8', body: 'busy: too many requests at once; try again shortly\n', headers: { 'retry-after': '1' } } as const;
