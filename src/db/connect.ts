import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import type { PGlite } from '@electric-sql/pglite';
import { sql, type SQL } from 'drizzle-orm';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import pg from 'pg';
import type { ReportSettings } from '../model/reportSettings.ts';
import { NewerSchemaError } from '../errors.ts';
import { intOption } from '../options.ts';
import { lockDataFolder, type FolderLock } from './pgliteLock.ts';
import { namingClient, StatementNames } from './preparedStatements.ts';
import { applyComments } from './repos/comments.ts';
import { lastMigrationAt } from './repos/migrations.ts';
import { restoreViews, viewDefinitions, type ViewDefinition, type ViewsRestored } from './repos/views.ts';
import { writeReportSettings } from './repos/reportSettings.ts';
import * as schema from './schema.ts';

export type { ViewsRestored };

/**
 * The composition root of the database: PostgreSQL through node-postgres when a URL is given, embedded PGlite
 * otherwise. Both yield the same drizzle type; nothing else in the code branches on the backend.
 */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
/** A database handle or an open transaction: repositories take either, so the caller owns the transaction. */
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0] | Db;

export interface Database {
  readonly db: Db;
  readonly kind: 'postgres' | 'pglite';
  readonly schema: string;
  /** The PGlite instance when embedded (the SQL socket of `run` serves it); undefined on PostgreSQL. */
  readonly pglite?: PGlite;
  /**
   * Applies pending migrations, makes again the BI views a user dropped, then the comments of db/comments.ts and the
   * report settings (when given); a no-op when all is current. Safe to run from several processes at once. Resolves
   * to what it did to the views, for the caller to tell (see logViewsRestored).
   */
  migrate(): Promise<ViewsRestored>;
  close(): Promise<void>;
}

export interface OpenDatabaseOptions {
  databaseUrl?: string | undefined;
  pgliteDir?: string;
  /** PostgreSQL schema holding the tables. @default 'public' */
  schema?: string;
  /** Pool size on PostgreSQL. @default 5 */
  poolSize?: number;
  /** The sessions' application_name on PostgreSQL (at most 63 bytes). @default 'ticket-mirror' */
  applicationName?: string;
  /** Written into report_settings by every migrate (REPORT_* of the configuration). @default the row is left as it is */
  report?: ReportSettings | undefined;
  /** Told before the embedded database is created in an empty folder (initdb: seconds, longer on a busy machine). */
  onCreate?: (dir: string) => void;
  /**
   * On PostgreSQL, how long a statement waits for a lock another session holds before it fails (`lock_timeout`; 0:
   * for ever). Reading the tables never waits on the mirror's writes, but a user's `LOCK TABLE`, an `ALTER`, a
   * `CREATE INDEX` or a transaction left open on rows it updated does: without it a pass waited for that session as
   * long as it lived, and /readyz said "syncing" all along. With it the pass fails, says why, and is tried again after
   * the daemon's back-off. Migrations wait for ever (another replica's, a user's query). The embedded database's
   * sessions take turns instead (sessionScheduler.ts, its hold timeout). @default DB_LOCK_TIMEOUT_MS
   */
  lockTimeoutMs?: number;
  /**
   * On PostgreSQL, told once when the server refused a named prepared statement (a pooler in transaction mode, a table
   * altered by hand) and the process went on without them (preparedStatements.ts).
   */
  onUnprepared?: (error: Error) => void;
}

/** The default of OpenDatabaseOptions.lockTimeoutMs: a minute, as long as the embedded database's hold timeout. */
export const DB_LOCK_TIMEOUT_MS = 60_000;

const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));
export const MIGRATIONS_TABLE = '__ticket_mirror_migrations';

let shipped: ReturnType<typeof readMigrationFiles> | undefined;

/** The migrations this code ships, oldest first (drizzle's reading of the folder and its journal; read once). */
export function shippedMigrations(): ReturnType<typeof readMigrationFiles> {
  shipped ??= readMigrationFiles({ migrationsFolder: MIGRATIONS });
  return shipped;
}

/** The views the shipped migrations leave, each with the statement that last created it (see restoreViews). */
export function shippedViews(): ViewDefinition[] {
  return viewDefinitions(shippedMigrations().flatMap((m) => m.sql));
}

/** Whether a schema whose last migration was created at `last` (epoch ms) was migrated by a newer version than this. */
export function newerThanShipped(last: number, shipped = shippedMigrations()): boolean {
  return shipped.length > 0 && shipped.every((m) => m.folderMillis < last);
}

export const NEWER_SCHEMA = 'migrated by a newer version of ticket-mirror (a migration this one does not know): run that version or a later one';

/**
 * A schema a newer version migrated is refused before this one migrates or writes it: drizzle's migrator finds
 * nothing pending and goes on, and this version wrote tables whose meaning had moved on (a column's rule, a trigger's).
 */
async function refuseNewerSchema(db: Db, schemaName: string): Promise<void> {
  if (newerThanShipped((await lastMigrationAt(db, schemaName, MIGRATIONS_TABLE)) ?? 0)) throw new NewerSchemaError(`the schema ${schemaName} was ${NEWER_SCHEMA}`);
}

export async function openDatabase(options: OpenDatabaseOptions): Promise<Database> {
  const schemaName = options.schema ?? 'public';
  if (options.databaseUrl) {
    return openPostgres(options.databaseUrl, schemaName, {
      max: intOption('poolSize', options.poolSize, 5),
      lockTimeoutMs: intOption('lockTimeoutMs', options.lockTimeoutMs, DB_LOCK_TIMEOUT_MS, 0),
      report: options.report,
      applicationName: options.applicationName ?? 'ticket-mirror',
      onUnprepared: options.onUnprepared,
    });
  }
  if (!options.pgliteDir) throw new Error('openDatabase needs databaseUrl or pgliteDir');
  return openPglite(options.pgliteDir, schemaName, options.report, options.onCreate);
}

/**
 * What every migrate does after the migrations: the BI views a user dropped made again, comments from their one
 * source, and the report settings.
 */
async function afterMigrations(db: Db, report: ReportSettings | undefined): Promise<ViewsRestored> {
  return db.transaction(async (tx) => {
    const views = await restoreViews(tx, shippedViews());
    await applyComments(tx);
    if (report) await writeReportSettings(tx, report);
    return views;
  });
}

/**
 * A connection the server ends (pg_terminate_backend, a restart, a failover) must fail the query that uses it, never
 * the process. pg emits 'error' on the client; while the client is idle in the pool, the pool re-emits it on itself,
 * but while it is checked out — held by a transaction between two statements — the pool's listener is off, and an
 * 'error' with no listener is an uncaught exception: the daemon exited 1 ("terminating connection due to
 * administrator command", 57P01). Every client gets a listener of its own for its whole life; the error still reaches
 * the query in progress, or the next one, as a rejected promise. The pool drops a client that errored.
 */
export function survivesLostConnections(pool: pg.Pool): void {
  pool.on('error', () => {});
  pool.on('connect', (client) => client.on('error', () => {}));
}

async function openPostgres(
  url: string,
  schemaName: string,
  {
    max,
    lockTimeoutMs,
    report,
    applicationName,
    onUnprepared,
  }: { max: number; lockTimeoutMs: number; report: ReportSettings | undefined; applicationName: string; onUnprepared: ((error: Error) => void) | undefined },
): Promise<Database> {
  // A poll of a list of 100,000 tickets allocates some 80 MB that dies within the poll (items, the batches' parameters),
  // much of it after outliving V8's young generation. V8 let the old generation reach ~100 MB between full collections
  // that left ~25 MB: the process grew from ~100 MB to ~260 MB a poll. With the heap grown by a quarter after each full
  // collection instead, it peaks at ~200-220 MB; the extra full collections of a ~25 MB heap cost little (bench/README.md,
  // "The 100,000-item list"). PGlite's process collects sooner still (pgliteOpen.ts).
  setFlagsFromString('--heap-growing-percent=25');
  const pool = new pg.Pool({
    connectionString: url,
    max,
    application_name: applicationName.slice(0, 63),
    // Every session reads and writes instants in UTC, finds the tables in DB_SCHEMA, and waits for another session's
    // lock no longer than lockTimeoutMs.
    options: `-c TimeZone=UTC -c search_path=${schemaName} -c lock_timeout=${lockTimeoutMs}`,
    connectionTimeoutMillis: 10_000,
    // The statements sent again and again are parsed once a session (preparedStatements.ts).
    Client: namingClient(new StatementNames(onUnprepared)),
  });
  survivesLostConnections(pool);
  const db = drizzlePg(pool, { schema }) as unknown as Db;
  return {
    db,
    kind: 'postgres',
    schema: schemaName,
    async migrate() {
      const client = await pool.connect();
      try {
        // Replicas may start together: one migrates, the others wait — for as long as it takes — and then find
        // nothing to do. A migration's DDL waits for the users' queries as long, too.
        await client.query('set lock_timeout = 0');
        await client.query('select pg_advisory_lock(hashtext($1))', [`ticket-mirror:migrate:${schemaName}`]);
        try {
          await client.query(`create schema if not exists ${quoteIdent(schemaName)}`);
          await refuseNewerSchema(drizzlePg(client) as unknown as Db, schemaName);
          await migratePg(drizzlePg(client), {
            migrationsFolder: MIGRATIONS,
            migrationsSchema: schemaName,
            migrationsTable: MIGRATIONS_TABLE,
          });
          return await afterMigrations(drizzlePg(client, { schema }) as unknown as Db, report);
        } finally {
          await client.query('select pg_advisory_unlock(hashtext($1))', [`ticket-mirror:migrate:${schemaName}`]);
        }
      } finally {
        // Back to the pool with the session's lock_timeout; a connection that cannot say so is closed instead.
        const reset = await client.query('reset lock_timeout').then(
          () => undefined,
          (error: unknown) => (error instanceof Error ? error : new Error(String(error))),
        );
        client.release(reset);
      }
    },
    close: () => pool.end(),
  };
}

async function openPglite(dir: string, schemaName: string, report: ReportSettings | undefined, onCreate?: (dir: string) => void): Promise<Database> {
  // Loaded here, not with this module: PGlite's code costs a process on PostgreSQL ~45 MB it never uses.
  const [{ drizzle: drizzlePglite }, { migrate: migratePglite }, { openPgliteFolder }] = await Promise.all([
    import('drizzle-orm/pglite'),
    import('drizzle-orm/pglite/migrator'),
    import('./pgliteOpen.ts'),
  ]);
  const lock: FolderLock = lockDataFolder(dir);
  let client: PGlite;
  try {
    client = await openPgliteFolder(dir, onCreate);
    await client.exec(`set time zone 'UTC'; create schema if not exists ${quoteIdent(schemaName)}; set search_path to ${quoteIdent(schemaName)}`);
  } catch (error) {
    lock.release();
    throw error;
  }
  const db = drizzlePglite(client, { schema }) as unknown as Db;
  let closed = false;
  return {
    db,
    kind: 'pglite',
    schema: schemaName,
    pglite: client,
    async migrate() {
      await refuseNewerSchema(db, schemaName);
      await migratePglite(drizzlePglite(client), {
        migrationsFolder: MIGRATIONS,
        migrationsSchema: schemaName,
        migrationsTable: MIGRATIONS_TABLE,
      });
      return afterMigrations(db, report);
    },
    async close() {
      if (closed) return;
      closed = true;
      try {
        await client.close();
      } finally {
        lock.release();
      }
    },
  };
}

/** Rows of a raw SQL query; both drivers answer with `{ rows }`. */
export async function queryRows<T>(db: Tx, query: SQL): Promise<T[]> {
  const result = (await db.execute(query)) as unknown as { rows: T[] };
  return result.rows;
}

export function quoteIdent(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

export { sql };
