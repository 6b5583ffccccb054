import { sql } from 'drizzle-orm';
import { check, type AnyPgColumn } from 'drizzle-orm/pg-core';

/** The first and the last instant of the years 0001–9999 that the mirror's instants span (time.ts), as SQL literals. */
export const FIRST_INSTANT = "'0001-01-01T00:00:00Z'";
export const LAST_INSTANT = "'9999-12-31T23:59:59.999999Z'";

/**
 * The instants of a table lie in the years 0001–9999 that the mirror's instants span (time.ts), or are null. The
 * tables are the user's to write, and PostgreSQL holds more (`infinity`, a date BC, a year 200000): one such row, read
 * by the planner or the budget, stopped every pass. The insert that would write one fails instead, naming the table.
 * reply_outbox has none: `infinity` is a person's way to hold a reply there (repos/outboxDue.ts).
 */
export const instantsInSpan = (table: string, columns: readonly AnyPgColumn[]) =>
  check(
    `${table}_instants_check`,
    sql.join(
      columns.map((c) => sql`${c} between ${sql.raw(FIRST_INSTANT)} and ${sql.raw(LAST_INSTANT)}`),
      sql` and `,
    ),
  );
