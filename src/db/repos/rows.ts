import type { SQL } from 'drizzle-orm';
import { canonicalTimestamp, CLOCK_SET_BACK_MS, SECOND_MS } from '../../time.ts';
import { sql } from '../connect.ts';

/** An instant as `canonicalTimestamp` writes it, formatted by PostgreSQL, whatever the session's time zone. */
const canonical = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

/**
 * The columns the differ reads, as a `MirrorTicket` straight from the driver: for the 100,000 rows of a list's mirror,
 * a second, converted copy would cost as much time and memory as reading them. `to_char` writes any instant from the
 * year 100 on in the canonical form, the very string `ts()` would make of PostgreSQL's output.
 */
export const MIRROR_TICKET_COLUMNS = `id, name, email, status, priority, assigned_to as "assignedTo",
  has_unread_messages as "hasUnreadMessages", ${canonical('created_at')} as "createdAt",
  in_open as "inOpen", in_self as "inSelf", in_unassigned as "inUnassigned", in_resolved as "inResolved",
  ${canonical('detail_due_since')} as "detailDueSince", ${canonical('missing_since')} as "missingSince",
  ${canonical('deleted_at')} as "deletedAt", ${canonical('state_seen_at')} as "stateSeenAt"`;

/** Canonicalises PostgreSQL's timestamp output. */
export function ts(value: string | null): string | null {
  return value === null ? null : canonicalTimestamp(value);
}

/**
 * PostgreSQL array literals, each sent as one `$n::text[]` (or `::timestamptz[]`, `::boolean[]`) parameter however many
 * values there are: drizzle would expand a JavaScript array into one parameter per value, and a jsonb of 100,000
 * objects costs more to build, send and take apart. JavaScript's null is SQL's NULL.
 */
export function textArray(values: readonly (string | null)[]): string {
  if (values.length === 0) return '{}';
  // The usual case, joined without a string per element: no NULL and nothing to escape.
  if (values.every((v) => v !== null && !v.includes('"') && !v.includes('\\'))) return `{"${values.join('","')}"}`;
  return `{${values.map((v) => (v === null ? 'NULL' : `"${v.replace(/["\\]/g, '\\$&')}"`)).join(',')}}`;
}

export function boolArray(values: readonly (boolean | null)[]): string {
  return `{${values.map((v) => (v === null ? 'NULL' : v ? 't' : 'f')).join(',')}}`;
}

/** One column of `rows` as a single `text[]` (or `timestamptz[]`) parameter, for `unnest(...)`. */
export function textColumn<T>(rows: readonly T[], value: (row: T) => string | null, type: 'text' | 'timestamptz' = 'text'): SQL {
  return sql`${textArray(rows.map(value))}::${sql.raw(type)}[]`;
}

/** One column of `rows` as a single `boolean[]` parameter, for `unnest(...)`. */
export function boolColumn<T>(rows: readonly T[], value: (row: T) => boolean | null): SQL {
  return sql`${boolArray(rows.map(value))}::boolean[]`;
}

/**
 * How far an instant may lie ahead of the clock and still be the mirror's own (time.ts CLOCK_SET_BACK_MS), as an SQL
 * interval: one further ahead was written by hand, or before a clock set back, and is not trusted as the latest.
 */
export const AHEAD_OF_CLOCK = sql.raw(`interval '${CLOCK_SET_BACK_MS / SECOND_MS} seconds'`);
