import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { openDatabase, quoteIdent } from '../src/db/connect.ts';
import { openFleetDatabase, type FleetDatabase } from '../src/db/fleet.ts';
import { announceAccount, insertAccount, refreshFleetViews } from '../src/db/repos/accounts.ts';
import { parseFleetKey, sealToken } from '../src/fleet/tokenSeal.ts';
import { pool } from './children.ts';

/**
 * The fleet bench's database: `tm_fleet_bench` on the PostgreSQL that answers, kept between runs so that the account
 * schemas are migrated once (about a second each on this machine) and only emptied after. The control schema and
 * pg-boss's are dropped and made again each run.
 */

export const FLEET_SCHEMA = 'bench_fleet';
/** The tables of an account's mirror the bench empties between runs. */
const MIRROR_TABLES = ['attachments', 'messages', 'ticket_history', 'reply_outbox', 'tickets', 'api_requests', 'sync_runs', 'list_polls'];

export const accountName = (i: number) => `acct_${String(i).padStart(5, '0')}`;
export const accountToken = (i: number) => `bench-token-${i}`;

/** The URL of the bench's own database on the server of `baseUrl`, created when missing. */
export async function benchDatabaseUrl(baseUrl: string, name = 'tm_fleet_bench'): Promise<string> {
  if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`--database ${JSON.stringify(name)}: lower-case letters, digits and _ only`);
  const admin = new pg.Client({ connectionString: baseUrl });
  await admin.connect();
  try {
    const { rows } = await admin.query(`select 1 from pg_database where datname = $1`, [name]);
    if (rows.length === 0) await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(baseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

export interface Provisioned {
  fleet: FleetDatabase;
  fleetKey: string;
  /** Seconds spent migrating the account schemas that were missing, and how many. */
  migratedSeconds: number;
  migrated: number;
  /** Seconds to empty the existing ones. */
  emptiedSeconds: number;
  /** Seconds of one refresh_fleet_views() over every active account. */
  viewsRefreshSeconds: number;
  /** Seconds to register the accounts (active and paused). */
  registerSeconds: number;
}

/**
 * Makes `active` accounts ready to sync (schemas migrated and empty, registered, announced) and `registered − active`
 * more registered paused, with no schema: the engine's load of a large registry.
 */
export async function provision(url: string, o: { active: number; registered: number; apiUrl: string; log: (line: string) => void }): Promise<Provisioned> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  try {
    await admin.query(`drop schema if exists ${quoteIdent(`${FLEET_SCHEMA}_jobs`)} cascade`);
    await admin.query(`drop schema if exists ${quoteIdent(FLEET_SCHEMA)} cascade`);
    const { rows } = await admin.query<{ nspname: string }>(
      `select n.nspname from pg_namespace n join pg_class c on c.relnamespace = n.oid
       where n.nspname like 'tm\\_acct\\_%' and c.relname = 'sync_runs'`,
    );
    const existing = new Set(rows.map((r) => r.nspname));
    const schemas = Array.from({ length: o.active }, (_, i) => `tm_${accountName(i + 1)}`);

    let started = performance.now();
    const present = schemas.filter((s) => existing.has(s));
    // DELETE, not TRUNCATE: the tables are small, and a truncate's new files cost some 80 ms a table.
    for (let i = 0; i < present.length; i += 50) {
      const statements = present.slice(i, i + 50).flatMap((s) => MIRROR_TABLES.map((t) => `delete from ${quoteIdent(s)}.${quoteIdent(t)};`));
      await admin.query(statements.join('\n'));
    }
    const emptiedSeconds = (performance.now() - started) / 1000;

    started = performance.now();
    const missing = schemas.filter((s) => !existing.has(s));
    let done = 0;
    await pool(
      missing.map((schema) => async () => {
        const database = await openDatabase({ databaseUrl: url, schema, poolSize: 1 });
        try {
          await database.migrate();
        } finally {
          await database.close();
        }
        if (++done % 100 === 0) o.log(`migrated ${done}/${missing.length} account schemas`);
      }),
      3,
    );
    const migratedSeconds = (performance.now() - started) / 1000;

    const fleet = await openFleetDatabase({ databaseUrl: url, schema: FLEET_SCHEMA, poolSize: 2 });
    await fleet.migrate();
    const fleetKey = randomBytes(32).toString('base64');
    const key = parseFleetKey(fleetKey);
    started = performance.now();
    for (let i = 1; i <= o.registered; i++) {
      const name = accountName(i);
      const paused = i > o.active ? new Date().toISOString() : null;
      await insertAccount(fleet.db, {
        name,
        schemaName: `tm_${name}`,
        apiUrl: o.apiUrl,
        tokenSealed: sealToken(key, name, accountToken(i)),
        dailyLimit: 1440,
        minuteLimit: 60,
        reserve: 0.1,
        pausedAt: paused,
      });
    }
    const registerSeconds = (performance.now() - started) / 1000;
    started = performance.now();
    await refreshFleetViews(fleet.db);
    const viewsRefreshSeconds = (performance.now() - started) / 1000;
    return { fleet, fleetKey, migratedSeconds, migrated: missing.length, emptiedSeconds, viewsRefreshSeconds, registerSeconds };
  } finally {
    await admin.end();
  }
}

/** Announces the active accounts, as `accounts add` does: a listening worker starts each chain at once. */
export async function announceAll(fleet: FleetDatabase, active: number): Promise<void> {
  for (let i = 1; i <= active; i++) await announceAccount(fleet.db, fleet.schema, accountName(i));
}
