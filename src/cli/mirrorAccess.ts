import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { maskSecrets, type Config } from '../config/loadConfig.ts';
import { openDatabase, type Database } from '../db/connect.ts';
import { dataFolderProblem } from '../db/pgliteLock.ts';
import { folderHolder, hasEmbeddedDatabase, type DaemonRuntime, type FolderHolder } from '../db/pgliteRuntime.ts';
import { PASSWORD_FILE } from '../db/socketPassword.ts';
import { openConfiguredDatabase } from './context.ts';
import { ConfigError } from '../errors.ts';
import { sqlAccess } from './sqlAccess.ts';

/**
 * How a command that only looks (`status`, `check`) or that must write reaches the mirror without disturbing it: on
 * PostgreSQL, directly (any number of processes may); with the embedded database, directly when nobody holds its
 * folder — never creating a database that is not there — and otherwise through the daemon that holds it (its HTTP
 * server or its SQL socket, as it recorded them in the folder: db/pgliteRuntime.ts).
 */

export type MirrorPlace =
  /** The embedded database's folder holds no database (`run` or `migrate` creates one). */
  | { kind: 'absent'; dir: string }
  /** Another live process holds the embedded database's folder. */
  | { kind: 'held'; dir: string; holder: FolderHolder }
  /** Opened directly, not migrated (see db/migrationState.ts); the caller closes it. */
  | { kind: 'open'; database: Database };

export async function openMirror(config: Config): Promise<MirrorPlace> {
  if (!config.databaseUrl) {
    const dir = config.pgliteDir;
    if (!hasEmbeddedDatabase(dir)) {
      const problem = dataFolderProblem(dir);
      if (problem) throw new ConfigError([problem]);
      return { kind: 'absent', dir };
    }
    const holder = folderHolder(dir);
    if (holder) return { kind: 'held', dir, holder };
  }
  return { kind: 'open', database: await openConfiguredDatabase(config) };
}

/** Where the configured database is, for a message: the folder, or the URL without its password and the schema. */
export function databasePlace(config: Pick<Config, 'databaseUrl' | 'pgliteDir' | 'dbSchema'>): string {
  return config.databaseUrl
    ? `the database at DATABASE_URL=${maskSecrets(config.databaseUrl)} (DB_SCHEMA=${config.dbSchema})`
    : `the embedded database in ${config.pgliteDir}`;
}

/** Who holds the folder, in words: `ticket-mirror run (pid 42)` or `process 42`. */
export function holderName(holder: FolderHolder): string {
  return holder.daemon ? `ticket-mirror run (pid ${holder.pid})` : `process ${holder.pid}`;
}

/** The daemon's SQL socket as a database handle (one connection), when it serves one and its password is at hand. */
export async function openThroughSocket(config: Config, dir: string, daemon: DaemonRuntime): Promise<Database | null> {
  if (!daemon.sql) return null;
  const password = config.pglitePassword ?? readPasswordFile(dir);
  if (!password) return null;
  const url = `postgres://postgres:${encodeURIComponent(password)}@${daemon.sql.host}:${daemon.sql.port}/postgres`;
  return openDatabase({ databaseUrl: url, schema: daemon.schema, poolSize: 1 });
}

/** The psql line that reaches the daemon's SQL socket, or null when it serves none. */
export function socketPsql(config: Config, daemon: DaemonRuntime | null): string | null {
  if (!daemon?.sql) return null;
  return sqlAccess({ ...config, databaseUrl: undefined, pglitePort: daemon.sql.port })?.psql ?? null;
}

function readPasswordFile(dir: string): string | undefined {
  const file = join(dir, PASSWORD_FILE);
  if (!existsSync(file)) return undefined;
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
