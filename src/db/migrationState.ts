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
  /** A migration this code does not ship was applied after its newest: a newer version migrated the schema. */
  newer: boolean;
}

export async function migrationState(db: Db, schema: string): Promise<MigrationState> {
  const shipped = readMigrationFiles({ migrationsFolder: MIGRATIONS });
  const last = (await lastMigrationAt(db, schema, MIGRATIONS_TABLE)) ?? 0;
  const newest = Math.max(0, ...shipped.map((m) => m.folderMillis));
  return { known: shipped.length, pending: shipped.filter((m) => m.folderMillis > last).length, newer: last > newest };
}

/**
 * A schema a newer version migrated is refused before this one migrates or writes it: drizzle's migrator found nothing
 * pending and went on, and this version wrote tables whose meaning had moved on (a column's rule, a trigger's).
 */
export class NewerSchemaError extends Error {
  override name = 'NewerSchemaError';
}

export async function refuseNewerSchema(db: Db, schema: string): Promise<void> {
  const problem = newerSchema(await migrationState(db, schema), schema);
  if (problem) throw new NewerSchemaError(problem);
}

function newerSchema(state: MigrationState, schema: string): string | null {
  return state.newer
    ? `the schema ${schema} was migrated by a newer version of ticket-mirror (a migration this one does not know): run that version or a later one`
    : null;
}

/** A line about a database that is not migrated (or migrated by a newer version), with the fix; null when it is current. */
export function notMigrated(state: MigrationState): string | null {
  if (state.newer) return 'migrated by a newer version of ticket-mirror (a migration this one does not know): run that version or a later one';
  if (state.pending === 0) return null;
  return state.pending === state.known
    ? 'not migrated yet (no table of ticket-mirror in it)'
    : `not migrated: ${state.pending} of ${state.known} migrations not applied yet (an older version's schema)`;
}
