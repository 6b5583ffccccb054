import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, writeSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { ConfigError } from '../errors.ts';

/**
 * PGlite is a single-process database: two processes that open one data folder both write to it and lose each other's
 * writes. A pid file, created with O_EXCL, keeps a second process out. A lock left by a process that died (kill -9) is
 * taken over when that pid no longer runs; a live holder is reported by pid.
 *
 * proper-lockfile was considered and not taken: its staleness is an mtime refreshed by a timer, and PGlite's WASM can
 * hold the event loop long enough for a healthy holder to look stale.
 */
export class DataFolderLockedError extends Error {
  override name = 'DataFolderLockedError';
}

export interface FolderLock {
  release(): void;
}

/** Folders this process holds: a pid file naming our own pid is ours only if we took it (in a container, pid 1 is every run's). */
const held = new Set<string>();

export function lockDataFolder(dir: string): FolderLock {
  privateFolder(dir);
  const file = join(dir, 'ticket-mirror.lock');
  if (held.has(file)) {
    throw new DataFolderLockedError(`the embedded database in ${dir} is already open in this process`);
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx');
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.add(file);
      let released = false;
      return {
        release() {
          if (released) return;
          released = true;
          held.delete(file);
          rmSync(file, { force: true });
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number.parseInt(readHolder(file), 10);
      if (Number.isInteger(holder) && holder !== process.pid && isRunning(holder)) {
        throw new DataFolderLockedError(
          `the embedded database in ${dir} is in use by process ${holder}; stop it, or set PGLITE_DIR to another folder`,
        );
      }
      // The holder is gone (or wrote nothing before dying): the lock is stale.
      rmSync(file, { force: true });
    }
  }
  throw new DataFolderLockedError(`cannot lock ${dir}: another process keeps taking the lock`);
}

/**
 * The pid of the live process that holds `dir` (another one than this), or null when nobody does: for commands that
 * only look (status, check) and must not take the lock, nor create the folder.
 */
export function lockHolder(dir: string): number | null {
  const holder = Number.parseInt(readHolder(join(dir, 'ticket-mirror.lock')), 10);
  return Number.isInteger(holder) && holder !== process.pid && isRunning(holder) ? holder : null;
}

/**
 * Creates the data folder readable by its owner alone (0700), and narrows one that other users could read, as
 * PostgreSQL requires of its data directory: its files hold every ticket, and the SQL socket's password file.
 */
function privateFolder(dir: string): void {
  const problem = dataFolderProblem(dir);
  if (problem) throw new ConfigError([problem]);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const { mode, uid } = statSync(dir);
  if ((mode & 0o077) !== 0 && uid === process.getuid?.()) chmodSync(dir, 0o700);
}

/**
 * Why PGLITE_DIR cannot be the embedded database's folder — it is a file, or a file stands where a folder of its path
 * should be — or null. (mkdir said only "EEXIST: file already exists" or "ENOTDIR", and `status` that `run` would create
 * the database there.)
 */
export function dataFolderProblem(dir: string): string | null {
  for (let path = dir; ; path = dirname(path)) {
    let isFolder: boolean;
    try {
      isFolder = statSync(path).isDirectory();
    } catch {
      // Missing (it will be created), or not to be looked into from here: mkdir says what it finds.
      if (dirname(path) === path) return null;
      continue;
    }
    if (isFolder) return null;
    return path === dir
      ? `PGLITE_DIR=${dir} is a file, not a folder: set PGLITE_DIR to a folder (created if missing)`
      : `PGLITE_DIR=${dir} cannot be a folder: ${path} is a file, not a folder`;
  }
}

function readHolder(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
