import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDatabase, quoteIdent, type Database } from '../src/db/connect.ts';

/**
 * Where the benchmark's databases live. A real PostgreSQL when one answers — DATABASE_URL, else TEST_DATABASE_URL,
 * else the local default — with a fresh schema per use, dropped afterwards; otherwise embedded PGlite in a temporary
 * folder, removed afterwards.
 */

export const LOCAL_POSTGRES = 'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchDatabase extends Database {
  /** Closes the database and drops its schema (PostgreSQL) or deletes its folder (PGlite). */
  destroy(): Promise<void>;
}

/** The PostgreSQL URL to use, or null when none answers within a few seconds. */
export async function findPostgres(env: NodeJS.ProcessEnv = process.env): Promise<string | null> {
  const candidates = [env.DATABASE_URL, env.TEST_DATABASE_URL, LOCAL_POSTGRES].filter((u): u is string => !!u);
  for (const url of candidates) {
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3_000 });
    try {
      await client.connect();
      await client.query('select 1');
      return url;
    } catch {
      // Try the next one.
    } finally {
      await client.end().catch(() => {});
    }
  }
  return null;
}

/**
 * A migrated database of its own on PostgreSQL (schema `bench_<label>_<random>`). `asyncCommit` turns off
 * synchronous_commit for its sessions: a commit no longer waits for the disk, which changes how long a virtual run
 * takes and nothing it measures (never for the local-cost measurements, whose wall time is the point).
 */
export async function freshPostgres(url: string, label: string, opts: { asyncCommit?: boolean } = {}): Promise<BenchDatabase> {
  const schema = `bench_${label}_${randomBytes(4).toString('hex')}`;
  const database = await openDatabase({ databaseUrl: url, schema });
  if (opts.asyncCommit) {
    // The pool connects lazily and builds every client from its options: each session, the migration's included,
    // starts with the setting.
    const pool = (database.db as unknown as { $client: { options: { options?: string } } }).$client;
    pool.options.options = `${pool.options.options ?? ''} -c synchronous_commit=off`.trim();
  }
  await database.migrate();
  return {
    ...database,
    async destroy() {
      await database.close();
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`drop schema if exists ${quoteIdent(schema)} cascade`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A migrated embedded database in a temporary folder. */
export async function freshPglite(): Promise<BenchDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'tm-bench-'));
  const database = await openDatabase({ pgliteDir: dir });
  await database.migrate();
  return {
    ...database,
    async destroy() {
      await database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function freshDatabase(postgresUrl: string | null, label: string, opts: { asyncCommit?: boolean } = {}): Promise<BenchDatabase> {
  return postgresUrl ? freshPostgres(postgresUrl, label, opts) : freshPglite();
}
