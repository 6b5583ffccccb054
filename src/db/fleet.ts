import { fileURLToPath } from 'node:url';
import { drizzle as drizzlePg } from 'drizzle-orm/node-postgres';
import { migrate as migratePg } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import { intOption } from '../options.ts';
import { quoteIdent, survivesLostConnections, type Db } from './connect.ts';
import { FLEET_FUNCTIONS, FLEET_RELATIONS } from './fleetComments.ts';
import { applyComments } from './repos/comments.ts';

/**
 * The fleet's control schema (FLEET_SCHEMA): the accounts and the views across them, on PostgreSQL only — a fleet is
 * many processes on many machines around one database, which the embedded one cannot be. Each account's mirror is a
 * Database of its own (db/connect.ts, `openDatabase({ schema: account.schemaName })`).
 */

export const DEFAULT_FLEET_SCHEMA = 'ticket_mirror_fleet';
/** As DB_SCHEMA: a lower-case SQL identifier, so it needs no quoting anywhere. */
export const FLEET_SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export interface FleetDatabase {
  /**
   * The control schema's handle, with search_path = the fleet schema (and TimeZone UTC). Typed as a mirror's `Db` so
   * that repositories taking a `Tx` accept it and its transactions; only `sql` templates are run on it (db/repos/accounts.ts).
   */
  readonly db: Db;
  readonly schema: string;
  readonly databaseUrl: string;
  /** Applies the fleet migrations (migrations/fleet/) and the comments of db/fleetComments.ts; safe from several processes at once. */
  migrate(): Promise<void>;
  close(): Promise<void>;
}

export interface OpenFleetDatabaseOptions {
  databaseUrl: string;
  /** @default 'ticket_mirror_fleet' */
  schema?: string;
  /** @default 2 */
  poolSize?: number;
  /** The sessions' application_name (at most 63 bytes). @default 'ticket-mirror fleet' */
  applicationName?: string;
}

const MIGRATIONS = fileURLToPath(new URL('../../migrations/fleet', import.meta.url));
const MIGRATIONS_TABLE = '__ticket_mirror_fleet_migrations';

export async function openFleetDatabase(options: OpenFleetDatabaseOptions): Promise<FleetDatabase> {
  const schema = options.schema ?? DEFAULT_FLEET_SCHEMA;
  if (!FLEET_SCHEMA_NAME.test(schema)) throw new Error(`fleet schema ${JSON.stringify(schema)} is not a lower-case SQL identifier`);
  if (!/^postgres(ql)?:\/\//.test(options.databaseUrl)) throw new Error('the fleet needs a PostgreSQL URL (postgres://...)');
  const pool = new pg.Pool({
    connectionString: options.databaseUrl,
    max: intOption('poolSize', options.poolSize, 2),
    application_name: (options.applicationName ?? 'ticket-mirror fleet').slice(0, 63),
    options: `-c TimeZone=UTC -c search_path=${schema}`,
    connectionTimeoutMillis: 10_000,
  });
  survivesLostConnections(pool);
  const db = drizzlePg(pool) as unknown as Db;
  return {
    db,
    schema,
    databaseUrl: options.databaseUrl,
    async migrate() {
      const client = await pool.connect();
      const lock = `ticket-mirror:migrate-fleet:${schema}`;
      try {
        // Workers may start together: one migrates, the others wait and then find nothing to do.
        await client.query('select pg_advisory_lock(hashtext($1))', [lock]);
        try {
          await client.query(`create schema if not exists ${quoteIdent(schema)}`);
          // The migrations' functions take this search_path as their own (SET search_path FROM CURRENT).
          await client.query(`set search_path to ${quoteIdent(schema)}`);
          await migratePg(drizzlePg(client), { migrationsFolder: MIGRATIONS, migrationsSchema: schema, migrationsTable: MIGRATIONS_TABLE });
          const handle = drizzlePg(client) as unknown as Db;
          await handle.transaction((tx) => applyComments(tx, { relations: FLEET_RELATIONS, functions: FLEET_FUNCTIONS }));
        } finally {
          await client.query('select pg_advisory_unlock(hashtext($1))', [lock]);
        }
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}
