import type { Config } from '../../config/loadConfig.ts';
import type { Database } from '../../db/connect.ts';
import { migrationState, notMigrated } from '../../db/migrationState.ts';
import type { DaemonRuntime } from '../../db/pgliteRuntime.ts';
import { safeErrorMessage } from '../../errors.ts';
import { emptyStatus, formatStatus, mirrorStatus, type MirrorStatus } from '../../sync/status.ts';
import type { CommandContext } from '../context.ts';
import { EXIT, ExitError } from '../exit.ts';
import { databasePlace, holderName, openMirror, openThroughSocket } from '../mirrorAccess.ts';
import { sqlAccess, type SqlAccess } from '../sqlAccess.ts';

/**
 * `ticket-mirror status`: no request is made, and nothing is created or migrated. It reads the database directly —
 * PostgreSQL, or the embedded database when nobody holds it — or, while `run` holds the embedded database, the daemon:
 * its HTTP server's /status.json, else its SQL socket. A folder without a database, or a database without any table of
 * ticket-mirror's, is a mirror not started yet: its empty status, with a line saying so, exit 0. A database an older
 * version migrated, or a holder that cannot be read, is said in one line, exit 1.
 */

/** What `status --json` prints: the mirror's status, how to reach it over SQL, and the daemon it was read from. */
type StatusOutput = MirrorStatus & {
  sql?: SqlAccess;
  daemon?: { pid: number; role?: string; via: 'http' | 'sql'; url: string | null };
};

const HTTP_TIMEOUT_MS = 10_000;

export async function statusCommand({ config }: CommandContext, options: { json?: boolean }): Promise<void> {
  const output = await readStatus(config);
  if (options.json) {
    process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
    return;
  }
  let text = formatStatus(output);
  if (output.daemon) {
    const { pid, via, url } = output.daemon;
    text += `daemon    ticket-mirror run, pid ${pid}; read through its ${via === 'http' ? `HTTP server (${url}/status.json)` : 'SQL socket'}\n`;
  }
  // With the embedded database: how to query it over SQL while `run` serves it (where the password is, not what).
  if (output.sql) text += `sql       ${output.sql.psql}   (while \`run\` serves the embedded database)\n`;
  process.stdout.write(text);
}

async function readStatus(config: Config): Promise<StatusOutput> {
  const place = await openMirror(config);
  switch (place.kind) {
    case 'absent':
      // Nothing to read, nothing wrong: what `run` would start from (exit 0, as the contract has it). Not created here.
      return emptyStatus(config, Date.now(), `there is no embedded database in ${place.dir} yet (PGLITE_DIR): \`ticket-mirror run\` creates it, and so does \`ticket-mirror migrate\``);
    case 'held': {
      const { daemon, pid } = place.holder;
      if (!daemon) {
        throw new ExitError(
          `${holderName(place.holder)} holds the embedded database in ${place.dir} and is not a running daemon (a sync, a migration, or a \`run\` that is only starting): try again in a moment`,
          EXIT.failure,
        );
      }
      if (daemon.state === 'starting') {
        throw new ExitError(`ticket-mirror run (pid ${pid}) is starting on ${place.dir} (it may be migrating the database): try again in a moment`, EXIT.failure);
      }
      return fromDaemon(config, place.dir, daemon);
    }
    case 'open':
      try {
        const status = await directly(config, place.database);
        const sql = sqlAccess(config);
        return sql ? { ...status, sql } : status;
      } finally {
        await place.database.close();
      }
  }
}

/** The status from the database itself, once it is known to be migrated. */
async function directly(config: Config, database: Database): Promise<MirrorStatus> {
  const state = await migrationState(database.db, database.schema);
  const problem = notMigrated(state);
  // A database without any table of ticket-mirror's is a mirror not started yet: its empty status. One migrated by an
  // older version holds a mirror that cannot be read until it is migrated: that is a failure.
  if (problem && state.pending === state.known) {
    return emptyStatus(config, Date.now(), `${databasePlace(config)} is ${problem}: \`ticket-mirror run\` creates the tables, and so does \`ticket-mirror migrate\``);
  }
  if (problem && state.newer) throw new ExitError(`${databasePlace(config)} is ${problem}`, EXIT.failure);
  if (problem) {
    throw new ExitError(
      `${databasePlace(config)} is ${problem}: \`ticket-mirror migrate\` applies the migrations (so does \`run\` when it starts)`,
      EXIT.failure,
    );
  }
  return mirrorStatus(database.db, config, Date.now());
}

/** The status from the daemon that holds the embedded database: its /status.json, else through its SQL socket. */
async function fromDaemon(config: Config, dir: string, daemon: DaemonRuntime): Promise<StatusOutput> {
  const sql = daemon.sql ? sqlAccess({ ...config, databaseUrl: undefined, pglitePort: daemon.sql.port }) : null;
  const tried: string[] = [];
  if (daemon.http) {
    try {
      const response = await fetch(`${daemon.http}/status.json`, { signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) });
      if (!response.ok) throw new Error(`HTTP ${response.status}: ${(await response.text()).trim().slice(0, 200)}`);
      const { daemon: about, ...status } = (await response.json()) as MirrorStatus & { daemon?: { pid: number; role?: string } };
      return { ...status, ...(sql ? { sql } : {}), daemon: { pid: daemon.pid, ...(about?.role ? { role: about.role } : {}), via: 'http', url: daemon.http } };
    } catch (error) {
      tried.push(`its HTTP server ${daemon.http}: ${safeErrorMessage(error)}`);
    }
  } else {
    tried.push('its HTTP server is off (HTTP_PORT=0)');
  }
  let database: Database | null = null;
  try {
    database = await openThroughSocket(config, dir, daemon);
    if (database) {
      const status = await directly(config, database);
      return { ...status, ...(sql ? { sql } : {}), daemon: { pid: daemon.pid, via: 'sql', url: null } };
    }
    tried.push(daemon.sql ? 'its SQL socket: no password at hand (PGLITE_PASSWORD, or the sql-password file)' : 'its SQL socket is off (PGLITE_PORT=0)');
  } catch (error) {
    if (error instanceof ExitError) throw error;
    tried.push(`its SQL socket: ${safeErrorMessage(error)}`);
  } finally {
    await database?.close();
  }
  throw new ExitError(`ticket-mirror run (pid ${daemon.pid}) holds the embedded database in ${dir}, and could not be read: ${tried.join('; ')}`, EXIT.failure);
}
