import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lockHolder } from './pgliteLock.ts';

/**
 * What `run` tells the other commands about itself while it holds the embedded database's folder (PGLITE_DIR), in
 * `ticket-mirror.run.json` there: its pid, and where it serves its status (HTTP_HOST:HTTP_PORT) and the database
 * (PGLITE_PORT). `status` reads the daemon through them instead of opening the folder, which it cannot while the
 * daemon holds it; the write commands say how to reach it. The file holds no secret (the SQL socket's password stays
 * in its own file, or in PGLITE_PASSWORD); it is believed only while the lock names the same live pid.
 */

export const RUNTIME_FILE = 'ticket-mirror.run.json';

export interface DaemonRuntime {
  pid: number;
  /** `starting` until its servers listen (it may be migrating), then `running`. */
  state: 'starting' | 'running';
  /** When it started, ISO 8601. */
  startedAt: string;
  /** The PostgreSQL schema of its tables (DB_SCHEMA). */
  schema: string;
  /** Base URL of its HTTP server (`/status.json`, `/status`, `/metrics`); null when HTTP_PORT is 0. */
  http: string | null;
  /** Its SQL socket; null when PGLITE_PORT is 0. */
  sql: { host: string; port: number } | null;
}

/** Written whole or not at all (a temporary file renamed into place), readable by the owner alone. */
export function writeDaemonRuntime(dir: string, runtime: DaemonRuntime): void {
  const file = join(dir, RUNTIME_FILE);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(runtime, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}

/** Removes the file if it is this process's (a newer daemon may have written its own). */
export function removeDaemonRuntime(dir: string): void {
  if (readRuntimeFile(dir)?.pid === process.pid) rmSync(join(dir, RUNTIME_FILE), { force: true });
}

/** Whether `dir` holds an embedded database: PGlite tells one by PG_VERSION, written last when it is created. */
export function hasEmbeddedDatabase(dir: string): boolean {
  return existsSync(join(dir, 'PG_VERSION'));
}

/** Who holds the data folder: nobody (null), or a live process, with what it said about itself if it is `run`. */
export interface FolderHolder {
  pid: number;
  /** Null when the holder wrote nothing (a `sync`, `migrate` …, or a `run` that has only just taken the folder). */
  daemon: DaemonRuntime | null;
}

export function folderHolder(dir: string): FolderHolder | null {
  const pid = lockHolder(dir);
  if (pid === null) return null;
  const runtime = readRuntimeFile(dir);
  return { pid, daemon: runtime?.pid === pid ? runtime : null };
}

function readRuntimeFile(dir: string): DaemonRuntime | null {
  try {
    const value = JSON.parse(readFileSync(join(dir, RUNTIME_FILE), 'utf8')) as Partial<DaemonRuntime>;
    if (typeof value.pid !== 'number' || (value.state !== 'starting' && value.state !== 'running')) return null;
    return {
      pid: value.pid,
      state: value.state,
      startedAt: String(value.startedAt ?? ''),
      schema: typeof value.schema === 'string' ? value.schema : 'public',
      http: typeof value.http === 'string' ? value.http : null,
      sql: value.sql && typeof value.sql.port === 'number' ? { host: String(value.sql.host ?? '127.0.0.1'), port: value.sql.port } : null,
    };
  } catch {
    return null;
  }
}
