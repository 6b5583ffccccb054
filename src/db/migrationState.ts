import { MIGRATIONS_TABLE, NEWER_SCHEMA, newerThanShipped, shippedMigrations, type Db } from './connect.ts';
import { lastMigrationAt } from './repos/migrations.ts';

/**
 * Whether a database is migrated, found without migrating it (`status` and `check` only look): drizzle's own rule —
 * a migration is pending when it was created after the last one applied — against the migrations this code ships.
 */

export interface MigrationState {
  /** Migrations this code ships. */
  known: number;
  /** Of those, not applied yet; all of them when nothing was ever migrated. */
  pending: number;
  /** A migration this code does not ship was applied after its newest: a newer version migrated the schema. */
  newer: boolean;
}

export async function migrationState(db: Db, schema: string): Promise<MigrationState> {
  const shipped = shippedMigrations();
  const last = (await lastMigrationAt(db, schema, MIGRATIONS_TABLE)) ?? 0;
  return { known: shipped.length, pending: shipped.filter((m) => m.folderMillis > last).length, newer: newerThanShipped(last, shipped) };
}

/** A line about a database that is not migrated (or migrated by a newer version), with the fix; null when it is current. */
export function notMigrated(state: MigrationState): string | null {
  if (state.newer) return NEWER_SCHEMA;
  if (state.pending === 0) return null;
  return state.pending === state.known
    ? 'not migrated yet (no table of ticket-mirror in it)'
    : `not migrated: ${state.pending} of ${state.known} migrations not applied yet (an older version's schema)`;
}
