import { fileURLToPath } from 'node:url';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import type { Db } from './connect.ts';
import { lastMigrationAt } from './repos/migrations.ts';

/**
 * Whether a database is migrated, found without migrating it (`status` and `check` only look): drizzle's own rule —
 * a migration is pending when it was created after the last one applied — against the migrations this code ships.
 */

/** The folder and the table that db/connect.ts migrates from and into. */
const MIGRATIONS = fileURLToPath(new URL('../../migrations', import.meta.url));
const MIGRATIONS_TABLE = '__ticket_mirror_migrations';

export interface MigrationState {
  /** Migrations this code ships. */
  known: number;
  /** Of those, not applied yet; all of them when nothing was ever migrated. */
  pending: number;
}

export async function migrationState(db: Db, schema: string): Promise<MigrationState> {
  const shipped = readMigrationFiles({ migrationsFolder: MIGRATIONS });
  const last = (await lastMigrationAt(db, schema, MIGRATIONS_TABLE)) ?? 0;
  return { known: shipped.length, pending: shipped.filter((m) => m.folderMillis > last).length };
}

/** A line about a database that is not migrated, with the fix; null when it is. */
export function notMigrated(state: MigrationState): string | null {
  if (state.pending === 0) return null;
  return state.pending === state.known
    ? 'not migrated yet (no table of ticket-mirror in it)'
    : `not migrated: ${state.pending} of ${state.known} migrations not applied yet (an older version's schema)`;
}
