import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { Db } from '../db/connect.ts';
import { ping } from '../db/repos/status.ts';
import { ListActivity } from '../db/repos/work.ts';
import { coerceError, safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { localDate, PeriodError, periodFromQuery } from '../report/period.ts';
import { loadReportData, ReportSettingsError, reportTimeZone } from '../report/reportData.ts';
import { renderReportPage } from '../report/reportPage.ts';
import { mirrorStatus } from '../sync/status.ts';
import { BUSY, createLimitedServer, databaseReads, type HttpLimits } from './httpLimits.ts';
import type { DaemonMetrics } from './metrics.ts';
import { readiness } from './readiness.ts';
import type { Replica } from './replica.ts';
import { loadStatusPageData } from './statusData.ts';
import { renderStatusPage } from './statusPage.ts';

/**
 * The daemon's HTTP server (node:http; four read-only routes, no framework needed):
 *
 * - `/healthz` — 200 while the process runs: a liveness probe that never touches the database.
 * - `/readyz`  — 200 or 503 with a one-line reason: the database answers, and a leader's last pass neither failed
 *                nor met a rejected token (see readiness.ts).
 * - `/metrics` — Prometheus text; 503 when the database does not answer, as the mirror's gauges would be stale.
 * - `/status`  — the HTML status page (`/` redirects there).
 * - `/status.json` — what `ticket-mirror status --json` prints, and this process's pid and role: how `status` reads a
 *                daemon that holds the embedded database.
 * - `/report`  — the support report for `?from=&to=` (whole days; a bad period is a 400 saying why).
 */

export interface StatusServerOptions {
  host: string;
  /** 0 picks a free port (tests); the caller does not start the server at all when HTTP_PORT is 0. */
  port: number;
  db: Db;
  config: Pick<Config, 'dailyLimit' | 'minuteLimit' | 'reserve'>;
  clock: Clock;
  logger: Logger;
  replica: Replica;
  metrics: DaemonMetrics;
  /** How long the readiness probe waits for the database. @default 3000 */
  probeTimeoutMs?: number;
  /** What a client may hold (tests). @default HTTP_LIMITS */
  limits?: Partial<HttpLimits>;
}

export interface StatusServer {
  readonly url: string;
  readonly port: number;
  /** Stops listening and drops open connections. Idempotent. */
  close(): Promise<void>;
}

interface Answer {
  status: number;
  type: string;
  body: string;
  headers?: Record<string, string>;
}

const TEXT = 'text/plain; charset=utf-8';
// The page inlines its CSS and SVG and runs no script; nothing else may load.
const PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";
// The same for the report, whose form (GET, to itself) chooses the period.
const REPORT_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

export async function startStatusServer(o: StatusServerOptions): Promise<StatusServer> {
  const probeDatabase = async (): Promise<string | null> => {
    const timeoutMs = o.probeTimeoutMs ?? 3_000;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer within ${timeoutMs / 1000} s (busy or unreachable)`), timeoutMs);
    });
    try {
      return await Promise.race([ping(o.db).then(() => null), timeout]);
    } catch (error) {
      return safeErrorMessage(error);
    } finally {
      clearTimeout(timer);
    }
  };

  const reads = databaseReads();
  // The lists' activity, kept from one request to the next: a scrape every few seconds reads only the polls since.
  const activity = new ListActivity();
  const routes: Record<string, (query: URLSearchParams) => Promise<Answer>> = {
    '/healthz': async () => ({ status: 200, type: TEXT, body: 'ok\n' }),
    '/readyz': async () => {
      const r = readiness(o.replica.health, await probeDatabase());
      return { status: r.ready ? 200 : 503, type: TEXT, body: `${r.ready ? 'ready' : 'not ready'}: ${r.reason}\n` };
    },
    '/metrics': async () => {
      o.metrics.update(await mirrorStatus(o.db, o.config, o.clock.now(), activity), o.replica.role === 'leader');
      return { status: 200, type: o.metrics.contentType, body: await o.metrics.text() };
    },
    '/status.json': async () => {
      const status = await mirrorStatus(o.db, o.config, o.clock.now(), activity);
      const body = { ...status, daemon: { pid: process.pid, role: o.replica.role } };
      return { status: 200, type: 'application/json; charset=utf-8', body: `${JSON.stringify(body, null, 2)}\n` };
    },
    '/status': async () => {
      const health = o.replica.health;
      const data = await loadStatusPageData(o.db, o.config, o.clock.now(), health, readiness(health, null), activity);
      return { status: 200, type: 'text/html; charset=utf-8', body: renderStatusPage(data), headers: { 'content-security-policy': PAGE_POLICY } };
    },
    '/report': async (query) => {
      const now = o.clock.now();
      let timeZone;
      try {
        timeZone = await reportTimeZone(o.db);
      } catch (error) {
        if (error instanceof ReportSettingsError) return { status: 500, type: TEXT, body: `${error.message}\n` };
        throw error;
      }
      const today = localDate(now, timeZone);
      let period;
      try {
        period = periodFromQuery(query, today);
      } catch (error) {
        if (error instanceof PeriodError) return { status: 400, type: TEXT, body: `bad period: ${error.message}\n` };
        throw error;
      }
      const data = await loadReportData(o.db, period, timeZone, now);
      const body = renderReportPage(data, { form: { today } });
      return { status: 200, type: 'text/html; charset=utf-8', body, headers: { 'content-security-policy': REPORT_POLICY } };
    },
    '/': async () => ({ status: 302, type: TEXT, body: 'see /status\n', headers: { location: '/status' } }),
  };

  const answerFor = async (req: IncomingMessage): Promise<Answer> => {
    const path = requestPath(req.url);
    if (path === null) return { status: 400, type: TEXT, body: 'bad request target\n' };
    const route = Object.hasOwn(routes, path) ? routes[path] : undefined;
    if (!route) return { status: 404, type: TEXT, body: 'not found: try /status, /report, /metrics, /healthz or /readyz\n' };
    if (req.method !== 'GET' && req.method !== 'HEAD') return { status: 405, type: TEXT, body: 'only GET\n', headers: { allow: 'GET, HEAD' } };
    // Every route but the probes reads the database, the report most of all (see databaseReads).
    const probe = path === '/healthz' || path === '/readyz';
    const answer = probe ? route(requestQuery(req.url)) : reads.run(() => route(requestQuery(req.url)));
    if (answer === null) return { ...BUSY, headers: { ...BUSY.headers } };
    try {
      return await answer;
    } catch (error) {
      o.logger.warn({ path, err: safeErrorMessage(error) }, 'status server: could not answer');
      return { status: 503, type: TEXT, body: `unavailable: ${safeErrorMessage(error)}\n` };
    }
  };

  // Everything a request can make throw is inside this promise's chain, and the chain ends in a catch: a request,
  // however malformed, is answered or its socket closed, and never becomes an unhandled rejection (which would end
  // the process).
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    answerFor(req)
      .then((answer) => {
        res.writeHead(answer.status, { 'content-type': answer.type, 'cache-control': 'no-store', ...answer.headers });
        res.end(req.method === 'HEAD' ? undefined : answer.body);
      })
      .catch((error: unknown) => {
        o.logger.warn({ err: coerceError(error).message }, 'status server: request failed');
        if (res.headersSent) res.destroy();
        else res.writeHead(500, { 'content-type': TEXT, connection: 'close' }).end('internal error\n');
      })
      .catch(() => res.destroy());
  };

  const server = createLimitedServer(handle, o.logger, o.limits);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.on('error', (error) => o.logger.error({ err: error }, 'status server error'));
  const port = (server.address() as AddressInfo).port;
  const url = `http://${o.host.includes(':') ? `[${o.host}]` : o.host}:${port}`;
  o.logger.info({ url: `${url}/status` }, 'health, metrics and status page served');

  let closed: Promise<void> | undefined;
  return {
    url,
    port,
    close() {
      closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/**
 * The path of a request target, without its query; null for a target this server cannot route. The origin form
 * (`/path?query`) is cut, not parsed: `new URL('//', base)` would read `//` as an empty authority and throw. The
 * absolute form (`http://host/path`) is parsed, and refused when it does not parse; `*` and the authority form are
 * refused.
 */
export function requestPath(target: string | undefined): string | null {
  if (!target) return null;
  if (target.startsWith('/')) return target.replace(/[?#][\s\S]*$/, '');
  if (!/^https?:\/\//i.test(target) || !URL.canParse(target)) return null;
  return new URL(target).pathname;
}

/**
 * The query parameters of a request target that `requestPath` accepted (empty when it has none). URLSearchParams
 * never throws: a malformed escape stays as written, and the route's own validation refuses it.
 */
export function requestQuery(target: string | undefined): URLSearchParams {
  const query = target?.match(/^[^?#]*\?([^#]*)/)?.[1] ?? '';
  return new URLSearchParams(query);
}
