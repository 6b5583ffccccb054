import { queryRows, quoteIdent, sql, type Tx } from '../connect.ts';

/**
 * When the last migration applied in `schema` was created (drizzle's `created_at`, epoch ms), 0 when none was; null
 * when the schema has no migrations table at all (a database nothing has migrated). Reads only.
 */
export async function lastMigrationAt(tx: Tx, schema: string, table: string): Promise<number | null> {
  const qualified = `${quoteIdent(schema)}.${quoteIdent(table)}`;
  const [exists] = await queryRows<{ found: boolean }>(tx, sql`select to_regclass(${qualified}) is not null as found`);
  if (!exists?.found) return null;
  const [row] = await queryRows<{ at: string | number | null }>(tx, sql`select max(created_at) as at from ${sql.raw(qualified)}`);
  return row?.at === null || row?.at === undefined ? 0 : Number(row.at);
}
