import type { IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Db } from '../db/connect.ts';
import { ping } from '../db/repos/status.ts';
import { BUSY, createLimitedServer, databaseReads, type HttpLimits } from '../daemon/httpLimits.ts';
import { requestPath, requestQuery } from '../daemon/statusServer.ts';
import { safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { FleetWorker } from './worker.ts';

/**
 * `fleet run`'s HTTP server (HTTP_HOST:HTTP_PORT), node:http as the daemon's:
 *
 * - `/healthz` — 200 while the process runs; never touches the database.
 * - `/readyz`  — 200 while the worker runs and the control schema answers; else 503 with a one-line reason.
 * - the routes of `routes` (the fleet's /metrics, /status …), each a function of the request.
 *
 * Every other path is a 404; every method but GET and HEAD a 405. Nothing of a request is echoed back.
 */

export interface Answer {
  status: number;
  type: string;
  body: string;
  headers?: Record<string, string>;
}

/** A route added by the caller: path (exact, without query) → its answer. */
export type Routes = Record<string, (req: IncomingMessage, url: URL) => Promise<Answer>>;

export interface FleetHttpServerOptions {
  host: string;
  /** 0 picks a free port. */
  port: number;
  worker: FleetWorker;
  /** The control schema's handle, for /readyz. */
  db: Db;
  logger: Logger;
  routes?: Routes;
  /** How long /readyz waits for the database. @default 3000 */
  probeTimeoutMs?: number;
  /** What a client may hold (tests). @default HTTP_LIMITS */
  limits?: Partial<HttpLimits>;
}

export interface FleetHttpServer {
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const TEXT = 'text/plain; charset=utf-8';

export async function startFleetHttpServer(o: FleetHttpServerOptions): Promise<FleetHttpServer> {
  let stopping = false;
  const readyz = async (): Promise<Answer> => {
    if (stopping) return { status: 503, type: TEXT, body: 'stopping\n' };
    const timeoutMs = o.probeTimeoutMs ?? 3_000;
    let timer: NodeJS.Timeout | undefined;
    const problem = await Promise.race([
      ping(o.db).then(
        () => null,
        (error: unknown) => safeErrorMessage(error),
      ),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve(`no answer within ${timeoutMs / 1000} s`), timeoutMs))),
    ]).finally(() => clearTimeout(timer));
    if (problem) return { status: 503, type: TEXT, body: `the fleet's database does not answer: ${problem}\n` };
    const running = o.worker.accounts().length;
    return { status: 200, type: TEXT, body: `ready: worker ${o.worker.workerId}, ${running} of ${o.worker.concurrency} slots busy\n` };
  };
  const routes: Routes = {
    '/healthz': async () => ({ status: 200, type: TEXT, body: 'ok\n' }),
    '/readyz': readyz,
    ...o.routes,
  };
  const reads = databaseReads();
  const server = createLimitedServer((req, res) => {
    void (async () => {
      let answer: Answer;
      try {
        // Cut, not parsed, as `run`'s server does: `new URL('//', base)` throws on a target a hostile client may send.
        const path = requestPath(req.url);
        const query = requestQuery(req.url).toString();
        const url = path === null ? null : new URL(`http://localhost${path}${query ? `?${query}` : ''}`);
        const route = url && Object.hasOwn(routes, url.pathname) ? routes[url.pathname] : undefined;
        if (!url) answer = { status: 400, type: TEXT, body: 'bad request target\n' };
        else if (req.method !== 'GET' && req.method !== 'HEAD') answer = { status: 405, type: TEXT, body: 'only GET and HEAD\n', headers: { allow: 'GET, HEAD' } };
        else if (!route) answer = { status: 404, type: TEXT, body: 'not found\n' };
        else if (url.pathname === '/healthz' || url.pathname === '/readyz') answer = await route(req, url);
        else answer = (await reads.run(() => route(req, url))) ?? { ...BUSY, headers: { ...BUSY.headers } };
      } catch (error) {
        o.logger.warn({ err: safeErrorMessage(error) }, 'HTTP request failed');
        answer = { status: 500, type: TEXT, body: 'internal error\n' };
      }
      res.writeHead(answer.status, { 'content-type': answer.type, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff', ...answer.headers });
      res.end(req.method === 'HEAD' ? undefined : answer.body);
    })().catch(() => res.destroy());
  }, o.logger, o.limits);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const host = o.host.includes(':') ? `[${o.host}]` : o.host === '0.0.0.0' ? '127.0.0.1' : o.host;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${host}:${port}`,
    port,
    close() {
      stopping = true;
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}
