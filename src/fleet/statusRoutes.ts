import { drizzle } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { systemClock, type Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import { survivesLostConnections, type Db } from '../db/connect.ts';
import { safeErrorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { Account } from '../db/repos/accounts.ts';
import type { MirrorFigures } from '../db/repos/fleetStatus.ts';
import { loadFleetStatus, readMirrorFigures, type FleetStatus } from './fleetStatus.ts';
import type { Answer, Routes } from './httpServer.ts';
import { jobsSchemaOf } from './jobQueue.ts';
import { FleetMetrics } from './metrics.ts';
import { queueReader, type QueueReader } from './queueStatus.ts';
import { renderFleetPage } from './statusPage.ts';
import type { FleetWorker } from './worker.ts';

/**
 * The routes `fleet run` adds to its HTTP server (httpServer.ts keeps /healthz and /readyz):
 *
 * - `/metrics` — Prometheus text (metrics.ts): the fleet as read from PostgreSQL, and what this worker did.
 * - `/status`  — the HTML page with the account table, worst first (`/` redirects there).
 * - `/status.json` — what `fleet status --json` prints, and this worker's id, pid and the accounts it runs now.
 *
 * The fleet's state is read at most once per `maxAgeMs` (15 s), one read serving the requests that arrive meanwhile, and
 * the accounts' mirrors — ledgers, backfill, last clean pass: most of a read's cost, ~3 s of the database's CPU for
 * 1,000 accounts (README, fleet status) — at most once per `figuresMaxAgeMs` (60 s): several scrapers and browsers must
 * not multiply it. Lag and budget are computed at each read from what was read. Its statements go one at a time
 * (`concurrency` 1), on one connection.
 */

export interface FleetStatusRoutesOptions {
  worker: Pick<FleetWorker, 'workerId' | 'concurrency' | 'events' | 'accounts'>;
  /** The control schema's handle and name (db/fleet.ts). */
  fleet: { db: Db; schema: string };
  /** FLEET_METRICS_ACCOUNTS: accounts with a label of their own. @default 200 */
  metricsAccounts?: number;
  clock: Clock;
  logger: Logger;
  /** pg-boss, for its queue counts. @default a reader over the fleet database's pool (queueStatus.ts) */
  queues?: QueueReader;
  /** A status read is reused this long (a Prometheus scrape interval). @default 15000 */
  maxAgeMs?: number;
  /**
   * The mirrors' figures (ledgers, backfill) are reused this long: a budget may then miss the requests of the last
   * minute, a backfill count lag by as much. @default 60000
   */
  figuresMaxAgeMs?: number;
}

const TEXT = 'text/plain; charset=utf-8';
// As the daemon's page: inline CSS, no script, nothing else may load.
const PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function fleetStatusRoutes(o: FleetStatusRoutesOptions): { routes: Routes; metrics: FleetMetrics } {
  const { db, schema } = o.fleet;
  const jobsSchema = jobsSchemaOf(schema);
  const queues = o.queues ?? queueReader(db, jobsSchema);
  const metrics = new FleetMetrics({ accountsLimit: o.metricsAccounts ?? 200 });
  metrics.observe(o.worker.events);
  const maxAgeMs = o.maxAgeMs ?? 15_000;
  const figuresMaxAgeMs = o.figuresMaxAgeMs ?? 60_000;

  // Two caches: the mirrors' figures (ledgers, backfill, last clean pass: most of the cost) for figuresMaxAgeMs, and
  // the whole status for maxAgeMs. Each account's lag and budget are still computed at the read's instant.
  let figures: { at: number; map: Promise<Map<string, MirrorFigures>> } | undefined;
  const cachedFigures = (now: number) => (accounts: readonly Account[]) => {
    if (!figures || now - figures.at >= figuresMaxAgeMs || now < figures.at) {
      const entry = { at: now, map: readMirrorFigures(db, accounts, now, { concurrency: 1 }) };
      figures = entry;
      entry.map.catch(() => {
        if (figures === entry) figures = undefined;
      });
    }
    return figures.map;
  };
  let cached: { at: number; status: Promise<FleetStatus> } | undefined;
  const fleetStatus = (): Promise<FleetStatus> => {
    const now = o.clock.now();
    if (!cached || now - cached.at >= maxAgeMs || now < cached.at) {
      const status = loadFleetStatus({ db, schema, jobsSchema, queues, now, figures: cachedFigures(now) });
      const entry = { at: now, status };
      cached = entry;
      // A failed read is not kept: the next request tries again.
      status.catch(() => {
        if (cached === entry) cached = undefined;
      });
    }
    return cached.status;
  };

  /** A route whose database read may fail: 503 and the reason, told safely, as the daemon's server answers. */
  const guarded =
    (path: string, answer: () => Promise<Answer>) =>
    async (): Promise<Answer> => {
      try {
        return await answer();
      } catch (error) {
        o.logger.warn({ path, err: safeErrorMessage(error) }, 'fleet status: could not answer');
        return { status: 503, type: TEXT, body: `unavailable: ${safeErrorMessage(error)}\n` };
      }
    };

  const worker = () => ({ id: o.worker.workerId, concurrency: o.worker.concurrency, running: o.worker.accounts() });
  const routes: Routes = {
    '/metrics': guarded('/metrics', async () => {
      metrics.update(await fleetStatus());
      return { status: 200, type: metrics.contentType, body: await metrics.text() };
    }),
    '/status.json': guarded('/status.json', async () => {
      const body = { ...(await fleetStatus()), worker: { pid: process.pid, ...worker() } };
      return { status: 200, type: 'application/json; charset=utf-8', body: `${JSON.stringify(body, null, 2)}\n` };
    }),
    '/status': guarded('/status', async () => {
      const body = renderFleetPage({ status: await fleetStatus(), worker: worker() });
      return { status: 200, type: 'text/html; charset=utf-8', body, headers: { 'content-security-policy': PAGE_POLICY } };
    }),
    '/': async () => ({ status: 302, type: TEXT, body: 'see /status\n', headers: { location: '/status' } }),
  };
  return { routes, metrics };
}

/**
 * `fleet run`'s seam (cli/commands/fleet.ts, FleetRoutesFactory): these routes for its worker, on the system clock,
 * reading through a connection of their own. It is kept open (no idle timeout): with a schema per account, a fresh
 * session first loads the catalog entries of every account's tables it reads — on 1,000 accounts that costs more than
 * the reading itself (README, fleet status) — and the worker's own pool is not slowed by these reads.
 */
export async function fleetStatusRoutesFactory(o: {
  worker: FleetWorker;
  ctx: { config: Pick<Config, 'fleetMetricsAccounts'>; logger: Logger };
  fleet: { databaseUrl: string; schema: string };
}): Promise<{ routes: Routes; close: () => Promise<void> }> {
  const pool = new pg.Pool({
    connectionString: o.fleet.databaseUrl,
    max: 1,
    idleTimeoutMillis: 0,
    application_name: 'ticket-mirror fleet status',
    options: `-c TimeZone=UTC -c search_path=${o.fleet.schema}`,
    connectionTimeoutMillis: 10_000,
  });
  survivesLostConnections(pool);
  const { routes } = fleetStatusRoutes({
    worker: o.worker,
    fleet: { db: drizzle(pool) as unknown as Db, schema: o.fleet.schema },
    metricsAccounts: o.ctx.config.fleetMetricsAccounts,
    clock: systemClock,
    logger: o.ctx.logger,
  });
  return { routes, close: () => pool.end() };
}
