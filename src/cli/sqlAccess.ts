import { join } from 'node:path';
import type { Config } from '../config/loadConfig.ts';
import { PASSWORD_FILE } from '../db/socketPassword.ts';

/**
 * How psql and BI tools reach the embedded database while `run` serves it (PGLITE_PORT), for `status` and `demo`:
 * where the password is — the file `run` keeps in PGLITE_DIR, or the PGLITE_PASSWORD variable — never the password.
 */
export interface SqlAccess {
  readonly host: string;
  readonly port: number;
  readonly user: string;
  readonly database: string;
  /** The file holding the password (created by the first `run`), unless PGLITE_PASSWORD is set. */
  readonly passwordFile?: string;
  /** Set when the password is PGLITE_PASSWORD's value. */
  readonly passwordVariable?: 'PGLITE_PASSWORD';
  /** A psql command line that connects. */
  readonly psql: string;
}

/** Null when nothing is served: PostgreSQL (DATABASE_URL) or PGLITE_PORT=0. */
export function sqlAccess(config: Pick<Config, 'databaseUrl' | 'pglitePort' | 'pglitePassword' | 'pgliteDir'>): SqlAccess | null {
  if (config.databaseUrl || config.pglitePort === 0) return null;
  const where = { host: '127.0.0.1', port: config.pglitePort, user: 'postgres', database: 'postgres' };
  const psql = `psql -h ${where.host} -p ${where.port} -U ${where.user} -d ${where.database}`;
  if (config.pglitePassword) return { ...where, passwordVariable: 'PGLITE_PASSWORD', psql: `PGPASSWORD="$PGLITE_PASSWORD" ${psql}` };
  const passwordFile = join(config.pgliteDir, PASSWORD_FILE);
  return { ...where, passwordFile, psql: `PGPASSWORD="$(cat ${shellQuote(passwordFile)})" ${psql}` };
}

function shellQuote(value: string): string {
  return /^[\w/.,:@%+=-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}
