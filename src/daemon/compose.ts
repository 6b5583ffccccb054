import type { Clock } from '../clock.ts';
import { configWarnings, requireApi, type Config } from '../config/loadConfig.ts';
import type { Database } from '../db/connect.ts';
import type { Logger } from '../logger.ts';
import { SyncEngine } from '../sync/engine.ts';
import type { PassSummary } from '../sync/events.ts';

/**
 * The composition root of the sync core: one engine from the configuration. `tokenWorked`: the API's JSON already came
 * back for this token in this process (see ApiClientOptions.tokenWorked).
 */
export function createEngine(
  config: Config,
  database: Database,
  logger: Logger,
  clock: Clock,
  signal?: AbortSignal,
  tokenWorked = false,
): SyncEngine {
  const api = requireApi(config);
  // Where the token is about to be used: an unsafe way to send it is said before the first request.
  for (const warning of configWarnings(config)) logger.warn({ variable: warning.split('=', 1)[0] }, warning);
  for (const note of config.notes) logger.info({ variable: note.split(' ', 1)[0] }, note);
  const engine = new SyncEngine({
    db: database.db,
    apiUrl: api.apiUrl,
    apiToken: api.apiToken,
    clock,
    limits: { daily: config.dailyLimit, minute: config.minuteLimit, reserve: config.reserve },
    logger,
    maxResponseBytes: config.maxResponseBytes,
    tokenWorked,
    ...(signal ? { signal } : {}),
  });
  logPasses(engine, logger);
  return engine;
}

/**
 * One log line per pass that did anything: what it did and what it spent. At debug, when each pass starts; at trace,
 * every request and every detail fetched.
 */
export function logPasses(engine: SyncEngine, logger: Logger): void {
  engine.events.on('pass:started', ({ plan }) =>
    logger.debug({ polls: plan.polls, due: plan.due, backfill: plan.backfill, revalidate: plan.revalidate }, 'sync pass started'),
  );
  engine.events.on('request:sent', (r) =>
    logger.trace({ kind: r.kind, method: r.method, path: r.path, status: r.status, durationMs: r.durationMs, ratelimitRemaining: r.ratelimitRemaining }, 'request'),
  );
  engine.events.on('detail:fetched', ({ id, changed, kind }) => logger.trace({ ticket: id, changed, kind }, 'ticket detail stored'));
  engine.events.on('pass:finished', (s: PassSummary) => {
    if (s.requests === 0 && s.errors.length === 0) return;
    const budget = engine.gate.snapshot(s.finishedAt);
    const line = {
      requests: s.requests,
      polls: s.polls,
      details: s.detailsFetched,
      changed: s.ticketsChanged,
      deleted: s.deleted,
      missing: s.missing,
      budgetLeft24h: budget.dailyLeft,
      ...(s.errors.length ? { errors: s.errors.slice(0, 5) } : {}),
    };
    // A pass that threw (a refused token, a failure) is reported by whoever ran it — the daemon's log, `sync`'s one
    // line on stderr — so its summary is only for debugging; a 429 or server trouble ends a pass quietly, and is told here.
    if (s.stoppedBy === 'rate_limited' || s.stoppedBy === 'server_error') logger.warn({ ...line, stoppedBy: s.stoppedBy }, 'sync pass ended early');
    else if (s.stoppedBy) logger.debug({ ...line, stoppedBy: s.stoppedBy }, 'sync pass ended early');
    else logger.info(line, 'sync pass');
  });
  engine.events.on('budget:low', ({ dailyLeft, dailyAllowed }) =>
    logger.warn({ dailyLeft, dailyAllowed }, 'request budget low: background work paused until the window frees up'),
  );
}
