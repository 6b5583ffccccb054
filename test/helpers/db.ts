import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { openDatabase, type Database } from '../../src/db/connect.ts';

/** The real PostgreSQL of this run (see globalSetup), or null when none could be found. */
export const postgresUrl: string | null = inject('postgresUrl');

export interface TestDatabase extends Database {
  /** Drops the schema (PostgreSQL) or the data folder (PGlite) after closing. */
  destroy(): Promise<void>;
}

/** A migrated database of its own: a fresh schema on the real PostgreSQL. */
export async function freshPostgres(prefix = 'tm'): Promise<TestDatabase> {
  if (!postgresUrl) throw new Error('no PostgreSQL for this run');
  const schema = `${prefix}_${randomBytes(5).toString('hex')}`;
  const database = await openDatabase({ databaseUrl: postgresUrl, schema });
  await database.migrate();
  return {
    ...database,
    async destroy() {
      await database.close();
      const client = new pg.Client({ connectionString: postgresUrl! });
      await client.connect();
      try {
        await client.query(`drop schema if exists "${schema}" cascade`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A migrated embedded database in a temporary folder. */
export async function freshPglite(): Promise<TestDatabase & { dir: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'tm-pglite-'));
  const database = await openDatabase({ pgliteDir: dir });
  await database.migrate();
  return {
    ...database,
    dir,
    async destroy() {
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Both backends where available: `describe.each(backends)`. */
export const backends: Array<{ name: 'postgres' | 'pglite'; open: () => Promise<TestDatabase> }> = [
  { name: 'pglite', open: freshPglite },
  ...(postgresUrl ? [{ name: 'postgres' as const, open: () => freshPostgres() }] : []),
];
