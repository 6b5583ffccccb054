import { createServer, type RequestListener, type Server } from 'node:http';
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
