import type { Clock } from '../clock.ts';
import type { Config } from '../config/loadConfig.ts';
import type { Database, Db } from '../db/connect.ts';
import { socketPassword } from '../db/socketPassword.ts';
import type { EmbeddedDatabaseServer } from '../db/sqlSocket.ts';
import { ConfigError, unlistenableHost } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { SyncEngine } from '../sync/engine.ts';
import type { Claimer } from '../db/repos/outbox.ts';
import { newClaimer } from '../outbox/deliver.ts';
import { createEngine } from './compose.ts';
import type { AfterPass } from './daemon.ts';
import { localLeadership, postgresLeadership, type Leadership } from './leader.ts';
import { DaemonMetrics } from './metrics.ts';
import { Replica } from './replica.ts';
import type { HttpLimits } from './httpLimits.ts';
import { startStatusServer, type StatusServer } from './statusServer.ts';

/**
 * Everything `run` keeps running, put together from the configuration: the SQL socket of the embedded database
 * (PGLITE_PORT), the competition for leadership, the sync daemon of each term, the metrics, and the HTTP server
 * (HTTP_HOST:HTTP_PORT). The database is opened and migrated by the caller, who also closes it after `stop()`.
 */

export interface ServiceOptions {
  config: Config;
  database: Database;
  logger: Logger;
  clock: Clock;
  /**
   * Makes each term's work after every pass (the reply outbox), from the term's engine and the database handle the
   * daemon must use (the SQL socket's, when it serves the embedded database), and the term's outbox claimer (which
   * proves it gone after a crash: see newClaimer), e.g.
   * `({ db, engine, claimer }) => outboxAfterPass({ db, clock, logger, claimer, client: () => engine.client })`.
   */
  afterPass?: (term: { db: Db; engine: SyncEngine; claimer: Claimer }) => AfterPass;
  /** Told of each term's engine as this process becomes the leader, before its first pass (the CLI's progress line). */
  onLeader?: (term: { db: Db; engine: SyncEngine }) => void;
  /** Leadership to compete for. @default an advisory lock on PostgreSQL, local on the embedded database */
  leadership?: Leadership;
  /** See Replica. @default 5000 */
  graceMs?: number;
  /** What a client of the HTTP port may hold (tests). @default HTTP_LIMITS */
  httpLimits?: Partial<HttpLimits>;
}

export interface Service {
  readonly replica: Replica;
  readonly metrics: DaemonMetrics;
  /** The HTTP server, unless HTTP_PORT is 0. */
  readonly http: StatusServer | undefined;
  /** The embedded database's SQL socket, when it is served. */
  readonly sql: EmbeddedDatabaseServer | undefined;
  /** Stops the sync gracefully, then the servers. Idempotent. */
  stop(): Promise<void>;
}

export async function startService(o: ServiceOptions): Promise<Service> {
  const { config, logger, clock } = o;
  let sqlServer: EmbeddedDatabaseServer | undefined;
  let http: StatusServer | undefined;
  try {
    if (o.database.kind === 'pglite' && config.pglitePort > 0) {
      const { password, ...from } = socketPassword({ configured: config.pglitePassword, pgliteDir: config.pgliteDir });
      const passwordHint = from.from === 'file' ? from.file : 'PGLITE_PASSWORD';
      // Loaded only here: with PGlite's code loaded, a daemon on PostgreSQL took ~30 MB more at start.
      const { serveEmbeddedDatabase } = await import('../db/sqlSocket.ts');
      sqlServer = await listening('PGLITE_PORT', config.pglitePort, () =>
        serveEmbeddedDatabase(o.database, { port: config.pglitePort, password, passwordHint, logger }),
      );
    }
    // While the SQL socket serves the embedded database, the daemon's queries must take turns through its handle.
    const database: Database = sqlServer ? { ...o.database, db: sqlServer.db } : o.database;
    const metrics = new DaemonMetrics({ backend: database.kind });
    const replica = new Replica({
      leadership: o.leadership ?? defaultLeadership(config, database, logger),
      engine: (signal, tokenWorked) => createEngine(config, database, logger, clock, signal, tokenWorked),
      clock,
      logger,
      afterPass:
        o.afterPass &&
        ((engine, lease) =>
          o.afterPass!({ db: database.db, engine, claimer: newClaimer({ embedded: database.kind === 'pglite', session: lease.session }) })),
      graceMs: o.graceMs,
    });
    replica.events.on('leader:acquired', ({ engine }) => {
      metrics.observe(engine);
      o.onLeader?.({ db: database.db, engine });
    });
    if (config.httpPort > 0) {
      http = await listening(
        'HTTP_PORT',
        config.httpPort,
        () => startStatusServer({ host: config.httpHost, port: config.httpPort, db: database.db, config, clock, logger, replica, metrics, limits: o.httpLimits }),
        { variable: 'HTTP_HOST', value: config.httpHost },
      );
    }
    replica.start();
    let stopped: Promise<void> | undefined;
    return {
      replica,
      metrics,
      http,
      sql: sqlServer,
      stop() {
        stopped ??= (async () => {
          await replica.stop();
          await http?.close();
          await sqlServer?.close();
        })();
        return stopped;
      },
    };
  } catch (error) {
    await http?.close();
    await sqlServer?.close();
    throw error;
  }
}

function defaultLeadership(config: Config, database: Database, logger: Logger): Leadership {
  if (database.kind === 'pglite' || !config.databaseUrl) return localLeadership();
  return postgresLeadership({ databaseUrl: config.databaseUrl, schema: database.schema, logger });
}

/**
 * Starts a server on a configured port (and host); a busy port, or a host that is not this machine's, is a
 * configuration problem, reported with its variable. (A host that did not resolve was explained as DATABASE_URL's.)
 */
async function listening<T>(variable: string, port: number, start: () => Promise<T>, host?: { variable: string; value: string }): Promise<T> {
  try {
    return await start();
  } catch (error) {
    const hostProblem = host && unlistenableHost(error, host);
    if (hostProblem) throw hostProblem;
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      const { address } = error as { address?: unknown };
      const tried = typeof address === 'string' ? ` (${address}:${port})` : '';
      throw new ConfigError([`${variable}=${port} is in use by another program${tried}: stop it, or set ${variable} to another port (0 turns it off)`]);
    }
    throw error;
  }
}
