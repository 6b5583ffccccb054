import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { coerceError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { msOption } from '../options.ts';

/**
 * Leadership among `run` processes that share one database: exactly one syncs, the others stand by.
 *
 * On PostgreSQL the leader holds a session-level advisory lock on a connection of its own, outside the pool: a
 * pooled connection can be returned, recycled or replaced behind our back, and the lock would go with it. The lock
 * lives exactly as long as that session, so a leader that dies — `kill -9` included — frees it as soon as PostgreSQL
 * sees the connection close, and a standby, which tries the lock every `pollMs`, takes over.
 *
 * Invariant: a leader stops syncing before anyone else can start. It learns of a dead connection at once from the
 * driver's 'error' / 'end' events, and of a silent one (a network partition) from a heartbeat that fails or does not
 * answer within `heartbeatTimeoutMs`. PostgreSQL, for its part, only lets go of the lock once its TCP keepalives give
 * up on the session (set below to about 25 s), which is later than the leader's own verdict (at most
 * heartbeatMs + heartbeatTimeoutMs = 10 s). A standby then needs at most `pollMs` more: a takeover within 30 s.
 *
 * On the embedded database only one process can open the data folder (see pgliteLock.ts): leadership is local.
 */

export interface Lease {
  /** Aborted the moment leadership is lost; its reason says why. Never aborted by `release()`. */
  readonly lost: AbortSignal;
  /**
   * On PostgreSQL, the session that holds the lock, as pg_stat_activity shows it: while it is there, this process may
   * be sending; once it is gone, it no longer is (the reply outbox settles its rows early on that proof).
   */
  readonly session?: LeaderSession;
  /** Gives leadership up. Idempotent. */
  release(): Promise<void>;
}

export interface LeaderSession {
  pid: number;
  /** backend_start, canonical (YYYY-MM-DDTHH:MM:SS.ffffffZ). */
  startedAt: string;
}

export interface Leadership {
  /** Resolves once this process leads; rejects with the signal's reason if it is aborted first. */
  acquire(signal: AbortSignal): Promise<Lease>;
}

/** The embedded database: the process that opened it is the only one, hence the leader. */
export function localLeadership(): Leadership {
  return {
    async acquire(signal) {
      signal.throwIfAborted();
      return { lost: new AbortController().signal, release: async () => {} };
    },
  };
}

export interface PostgresLeadershipOptions {
  databaseUrl: string;
  /** One leader per schema: DB_SCHEMA names a mirror. */
  schema: string;
  logger: Logger;
  /** How often a standby tries the lock. @default 5000 */
  pollMs?: number;
  /** How often the leader checks its lock connection. @default 5000 */
  heartbeatMs?: number;
  /** A heartbeat unanswered for this long counts as a lost connection. @default 5000 */
  heartbeatTimeoutMs?: number;
}

/** Leadership through `pg_try_advisory_lock` on a dedicated connection. */
export function postgresLeadership(options: PostgresLeadershipOptions): Leadership {
  const { logger, schema } = options;
  const pollMs = msOption('pollMs', options.pollMs, 5_000, 1);
  const heartbeatMs = msOption('heartbeatMs', options.heartbeatMs, 5_000, 1);
  const heartbeatTimeoutMs = msOption('heartbeatTimeoutMs', options.heartbeatTimeoutMs, 5_000, 1);
  const key = syncLockKey(schema);
  // Named after the schema, so an operator (or a test) can find the leader's session in pg_stat_activity.
  const connect = () => lockConnection(options.databaseUrl, `ticket-mirror leader ${schema}`, heartbeatTimeoutMs);

  // A process whose lock connection just failed lets the standbys try first: its own path to PostgreSQL is suspect.
  let lostLast = false;
  const onLost = () => {
    lostLast = true;
  };

  return {
    async acquire(signal) {
      if (lostLast) {
        lostLast = false;
        await sleep(3 * pollMs, undefined, { signal }).catch(() => {
          throw signal.reason;
        });
      }
      let unreachable = false;
      for (;;) {
        signal.throwIfAborted();
        let client: pg.Client | undefined;
        try {
          client = await connect();
          if (unreachable) logger.info('leader election: PostgreSQL answers again');
          unreachable = false;
          for (;;) {
            signal.throwIfAborted();
            const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock(hashtext($1)) as locked', [key]);
            if (rows[0]?.locked) return hold(client, heartbeatMs, logger, onLost, await sessionOf(client));
            await sleep(pollMs, undefined, { signal });
          }
        } catch (error) {
          await client?.end().catch(() => {});
          if (signal.aborted) throw signal.reason;
          if (!unreachable) logger.warn({ err: coerceError(error).message }, 'leader election: cannot reach PostgreSQL; trying again');
          unreachable = true;
          await sleep(pollMs, undefined, { signal }).catch(() => {
            throw signal.reason;
          });
        }
      }
    },
  };
}

/** The advisory lock that makes one syncer per schema: `run`'s leader and a fleet worker's pass of the account take it. */
export function syncLockKey(schema: string): string {
  return `ticket-mirror:sync:${schema}`;
}

/** A connection of its own for a session lock, outside any pool (see postgresLeadership). */
export async function lockConnection(databaseUrl: string, applicationName: string, queryTimeoutMs: number): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: databaseUrl,
    application_name: applicationName.slice(0, 63),
    // The server's side of the bargain above: drop a vanished peer's session, and so its lock, after about 25 s
    // (10 s idle, then 3 unanswered probes 5 s apart); and never end an idle lock holder for being idle.
    options: '-c tcp_keepalives_idle=10 -c tcp_keepalives_interval=5 -c tcp_keepalives_count=3 -c idle_session_timeout=0',
    keepAlive: true,
    connectionTimeoutMillis: 10_000,
    query_timeout: queryTimeoutMs,
  });
  // Without a listener, a connection that fails while idle would crash the process.
  client.on('error', () => {});
  await client.connect();
  return client;
}

/** The lock connection's own backend, as another session sees it in pg_stat_activity. */
export async function sessionOf(client: pg.Client): Promise<LeaderSession> {
  const { rows } = await client.query<{ pid: number; started: string }>(
    `select pid, to_char(backend_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as started
     from pg_stat_activity where pid = pg_backend_pid()`,
  );
  return { pid: rows[0]!.pid, startedAt: rows[0]!.started };
}

/** Watches the lock's connection until it fails or the lease is released. */
function hold(
  client: pg.Client,
  heartbeatMs: number,
  logger: Logger,
  onLost: () => void,
  session: LeaderSession,
  lostMessage = 'leadership lost: the lock connection failed; stopping the sync',
): Lease {
  const lost = new AbortController();
  let released = false;
  let timer: NodeJS.Timeout | undefined;

  const lose = (reason: string) => {
    if (released || lost.signal.aborted) return;
    clearTimeout(timer);
    logger.error({ reason }, lostMessage);
    onLost();
    lost.abort(new Error(`leadership lost: ${reason}`));
    void client.end().catch(() => {});
  };
  client.on('error', (error) => lose(error.message));
  client.on('end', () => lose('the connection to PostgreSQL closed'));

  // The session is the lock: pg.Client never reconnects silently, so a connection that answers still holds it.
  const beat = () => {
    timer = setTimeout(() => {
      client.query('select 1').then(beat, (error: unknown) => lose(`heartbeat failed: ${coerceError(error).message}`));
    }, heartbeatMs);
  };
  beat();

  return {
    lost: lost.signal,
    session,
    async release() {
      if (released) return;
      released = true;
      clearTimeout(timer);
      // Ending the session releases the lock; a standby's next try gets it.
      await client.end().catch(() => {});
    },
  };
}
