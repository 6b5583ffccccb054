import { randomBytes } from 'node:crypto';
import { closeSync, constants, fchmodSync, fstatSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The password of the embedded database's SQL socket (see sqlSocket.ts): PGLITE_PASSWORD when set, otherwise one
 * generated on first use and kept in `PGLITE_DIR/sql-password`, readable by its owner alone (mode 0600), so that it
 * stays the same across restarts and BI tools keep their saved connections. Whoever can read that file is the user the
 * daemon runs as, who could open the data folder anyway.
 *
 * Creating the file is safe without the data folder's lock (`status` may read it while `run` holds the lock): it is
 * created with O_EXCL, and whoever loses the race reads the winner's. A symbolic link in its place is refused.
 */

export const PASSWORD_FILE = 'sql-password';

export type SocketPassword =
  | { readonly password: string; readonly from: 'PGLITE_PASSWORD' }
  | { readonly password: string; readonly from: 'file'; readonly file: string };

export function socketPassword(o: { configured: string | undefined; pgliteDir: string }): SocketPassword {
  if (o.configured) return { password: o.configured, from: 'PGLITE_PASSWORD' };
  const file = join(o.pgliteDir, PASSWORD_FILE);
  // Read; else write one (or lose the race to another process) and read again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const existing = readOwnerOnly(file);
    if (existing) return { password: existing, from: 'file', file };
    create(file, existing === '');
  }
  throw new Error(`${file}: cannot create the SQL socket's password file`);
}

/** The file's password, '' when the file is empty, null when there is no file; a mode wider than 0600 is narrowed. */
function readOwnerOnly(file: string): string | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const stat = fstatSync(fd);
    if (!stat.isFile()) throw new Error(`${file} is not a regular file`);
    if ((stat.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    return readFileSync(fd, 'utf8').trim();
  } finally {
    closeSync(fd);
  }
}

/** Writes a new password; false when another process created the file first. `replace`: the file exists, empty. */
function create(file: string, replace: boolean): boolean {
  const flags = constants.O_WRONLY | constants.O_NOFOLLOW | (replace ? constants.O_TRUNC : constants.O_CREAT | constants.O_EXCL);
  let fd: number;
  try {
    fd = openSync(file, flags, 0o600);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
  try {
    // The umask can only narrow the mode given to open(); this makes it exactly 0600 whatever the umask.
    fchmodSync(fd, 0o600);
    // 32 characters of base64url: 192 bits, and no character a shell or a connection string would need to quote.
    writeSync(fd, `${randomBytes(24).toString('base64url')}\n`);
    return true;
  } finally {
    closeSync(fd);
  }
}
