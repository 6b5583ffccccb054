import { loadConfig, type Config } from '../config/loadConfig.ts';
import { folderHolder } from '../db/pgliteRuntime.ts';
import { EXIT, ExitError } from './exit.ts';
import { socketPsql } from './mirrorAccess.ts';

/**
 * The commands that must write to the database, and what each says when the daemon (`run`) holds the embedded
 * database: only one process may open it. They are stopped before they start, with what to do instead — stop the
 * daemon, or go through its SQL socket. (`status` and `check` read the daemon instead; on PostgreSQL every command
 * works beside `run`.) A folder held by another process than a daemon keeps the lock's own message.
 */

interface Held {
  pid: number;
  /** The psql line of the daemon's SQL socket; null when it serves none (PGLITE_PORT=0). */
  psql: string | null;
  /** Its HTTP server's base URL; null when it serves none (HTTP_PORT=0). */
  http: string | null;
}

const stop = (pid: number) => `stop it first (kill ${pid}, or Ctrl-C where it runs)`;

export const WHILE_HELD: Readonly<Record<string, (held: Held) => string>> = {
  sync: ({ pid }) => `It syncs by itself (whenever a list or a detail falls due, within the budget) and sends the reply outbox; to sync by hand, ${stop(pid)}.`,
  migrate: ({ pid }) => `It applied every migration it knows when it started; to migrate by hand (after an upgrade, say), ${stop(pid)}, or restart it.`,
  rebuild: ({ pid }) => `${capital(stop(pid))}, then rebuild, then start it again.`,
  reply: ({ pid, psql }) =>
    psql
      ? `To send a reply while it runs, insert it into reply_outbox through its SQL socket and it posts it after its next pass: ${psql} -c "insert into reply_outbox (ticket_id, message) values ('<ticket-id>', '<message>')"; or ${stop(pid)}.`
      : `Its SQL socket is off (PGLITE_PORT=0), through which a reply could go into reply_outbox: ${stop(pid)}, or restart it with PGLITE_PORT set.`,
  attachment: ({ pid }) => `A fresh link costs a request of the budget the daemon keeps: ${stop(pid)}.`,
  report: ({ pid, http }) =>
    http ? `It serves the same report at ${http}/report (?from=YYYY-MM-DD&to=YYYY-MM-DD): save it from there, or ${stop(pid)}.` : `${capital(stop(pid))}.`,
};

/**
 * Throws an ExitError (exit 1) naming the daemon and the way out when `command` must write and `run` holds the
 * embedded database; does nothing otherwise (PostgreSQL, nobody holds it, a command that only reads, or a
 * configuration that does not load: the command reports that itself).
 */
export function refuseWhileHeld(command: string, env: Record<string, string | undefined> = process.env): void {
  const advice = Object.hasOwn(WHILE_HELD, command) ? WHILE_HELD[command] : undefined;
  if (!advice) return;
  let config: Config;
  try {
    config = loadConfig(env);
  } catch {
    return;
  }
  if (config.databaseUrl) return;
  const holder = folderHolder(config.pgliteDir);
  if (!holder?.daemon) return;
  throw new ExitError(
    `the daemon (ticket-mirror run, pid ${holder.pid}) holds the embedded database in ${config.pgliteDir}: \`ticket-mirror ${command}\` cannot open it while it runs\n` +
      `  ${advice({ pid: holder.pid, psql: socketPsql(config, holder.daemon), http: holder.daemon.http })}`,
    EXIT.failure,
  );
}

function capital(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
