import { isDeepStrictEqual } from 'node:util';
import { queryRows, sql, type Db } from '../src/db/connect.ts';
import type { SimulatorModel } from '../src/simulator/index.ts';
import { canonicalTimestamp } from '../src/time.ts';
import { mirrorTickets, normaliseTruth } from '../test/helpers/truth.ts';

/**
 * Is the mirror an exact copy of the service? Every ticket the simulator holds is compared with the mirror's row, its
 * current messages and attachments, field by field in the API's shape (timestamps to the microsecond); the mirror
 * must hold no other live ticket: the integration tests' comparison (test/helpers/truth.ts).
 */
export interface Exactness {
  exact: boolean;
  /** Tickets the service has. */
  tickets: number;
  /** Of those, mirrored with any difference, or not at all. */
  differing: number;
  /** Live tickets in the mirror that the service no longer has (deleted there, not marked here). */
  extra: number;
  /**
   * Tickets whose list-visible state differs: a list field (name, email, status, unread flag, created_at) or the
   * membership of a list; a ticket the service deleted counts unless the mirror has it in no list.
   */
  listStateDiffering: number;
}

type Row = Record<string, unknown>;

export async function compareWithTruth(db: Db, model: SimulatorModel): Promise<Exactness> {
  const truth = new Map(model.groundTruth().map((t) => [t.id, normaliseTruth(t)]));
  const mirror = await mirrorTickets(db);
  let differing = 0;
  for (const [id, t] of truth) if (!isDeepStrictEqual(mirror.get(id), t)) differing++;
  const extra = [...mirror.keys()].filter((id) => !truth.has(id)).length;
  const listStateDiffering = await listStateDifferences(db, model);
  return { exact: differing === 0 && extra === 0, tickets: truth.size, differing, extra, listStateDiffering };
}

async function listStateDifferences(db: Db, model: SimulatorModel): Promise<number> {
  const groups = (['open', 'self', 'unassigned', 'resolved'] as const).map((g) => new Set(model.list(g).map((t) => t.id)));
  const rows = await queryRows<Row>(
    db,
    sql`select id, name, email, status, has_unread_messages, created_at, in_open, in_self, in_unassigned, in_resolved from tickets`,
  );
  const mirror = new Map(rows.map((r) => [String(r.id), r]));
  let differing = 0;
  for (const t of model.groundTruth()) {
    const r = mirror.get(t.id);
    mirror.delete(t.id);
    const same =
      r !== undefined &&
      r.name === t.name &&
      r.email === t.email &&
      r.status === t.status &&
      r.has_unread_messages === t.has_unread_messages &&
      canonicalTimestamp(String(r.created_at)) === t.created_at &&
      [r.in_open, r.in_self, r.in_unassigned, r.in_resolved].every((flag, i) => flag === groups[i]!.has(t.id));
    if (!same) differing++;
  }
  // Deleted in the service: the mirror keeps the row, in no list.
  for (const r of mirror.values()) if (r.in_open || r.in_self || r.in_unassigned || r.in_resolved) differing++;
  return differing;
}
