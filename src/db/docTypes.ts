/**
 * The shapes of the schema's documentation (db/comments.ts for each mirror's schema, db/viewComments.ts for its
 * views, db/fleetComments.ts for the fleet's control schema) and how an entry becomes a stored COMMENT.
 */

/** How a column is measured; appended to its comment so that no one has to guess. */
export const UNITS = {
  instant: 'timestamptz, an instant to the microsecond, shown in the session time zone',
  seconds: 'seconds',
  milliseconds: 'milliseconds',
  bytes: 'bytes',
  localDate: 'date in the report time zone, REPORT_TIMEZONE',
} as const;
export type Unit = keyof typeof UNITS;

export interface ColumnDoc {
  text: string;
  unit?: Unit;
}

export interface RelationDoc {
  kind: 'table' | 'view';
  /** The question it answers, or what one row is. */
  about: string;
  /** What identifies a row (the primary key of a table; the columns unique per row of a view). */
  key?: readonly string[];
  /** In the database's column order. */
  columns: Readonly<Record<string, string | ColumnDoc>>;
}

export interface FunctionDoc {
  /** As COMMENT ON FUNCTION takes it: name and argument types. */
  signature: string;
  about: string;
}

/** A join the foreign keys do not declare (or that goes to a view), for docs/schema.md. */
export interface JoinDoc {
  from: `${string}.${string}`;
  to: `${string}.${string}`;
  /** Many rows of `from` to one of `to` ('n:1'), or at most one each ('1:1'). */
  cardinality: 'n:1' | '1:1';
}

/** Column docs with a unit. */
export const i = (text: string): ColumnDoc => ({ text, unit: 'instant' });
export const s = (text: string): ColumnDoc => ({ text, unit: 'seconds' });
export const day = (text: string): ColumnDoc => ({ text, unit: 'localDate' });

/** The comment stored for a relation. */
export function relationComment(doc: RelationDoc): string {
  return doc.key ? `${doc.about} Key: ${doc.key.join(', ')}.` : doc.about;
}

/** The comment stored for a column: its text, and its unit when it has one. */
export function columnComment(doc: string | ColumnDoc): string {
  if (typeof doc === 'string') return doc;
  return doc.unit ? `${doc.text} (${UNITS[doc.unit]})` : doc.text;
}
