import type { TrackedState } from '../../model/ticketState.ts';
import { queryRows, sql, type Tx } from '../connect.ts';
import { boolColumn, textColumn } from './rows.ts';

export interface StateChange {
  ticketId: string;
  state: TrackedState;
  /** The last time the previous state was still observed; null for a ticket's first row. */
  changedAfter: string | null;
}

/**
 * Appends one `ticket_history` row per change and closes each ticket's previous row, in two statements for any number
 * of tickets. The change happened in (changed_after, valid_from].
 */
export async function recordStateChanges(tx: Tx, changes: readonly StateChange[], at: string): Promise<void> {
  if (changes.length === 0) return;
  const ids = textColumn(changes, (c) => c.ticketId);
  await tx.execute(sql`
    update ticket_history set valid_to = ${at}::timestamptz
    where valid_to is null and ticket_id = any(${ids})`);
  await tx.execute(sql`
    insert into ticket_history (ticket_id, status, priority, assigned_to, in_open, in_self, in_unassigned, in_resolved, valid_from, changed_after)
    select r.ticket_id, r.status, r.priority, r.assigned_to::jsonb, r.in_open, r.in_self, r.in_unassigned, r.in_resolved,
      ${at}::timestamptz, r.changed_after
    from unnest(${ids}, ${textColumn(changes, (c) => c.state.status)}, ${textColumn(changes, (c) => c.state.priority)},
      ${textColumn(changes, (c) => (c.state.assignedTo == null ? null : JSON.stringify(c.state.assignedTo)))},
      ${boolColumn(changes, (c) => c.state.inOpen)}, ${boolColumn(changes, (c) => c.state.inSelf)},
      ${boolColumn(changes, (c) => c.state.inUnassigned)}, ${boolColumn(changes, (c) => c.state.inResolved)},
      ${textColumn(changes, (c) => c.changedAfter, 'timestamptz')})
      as r(ticket_id, status, priority, assigned_to, in_open, in_self, in_unassigned, in_resolved, changed_after)`);
}

export interface HistoryRow {
  ticket_id: string;
  status: string | null;
  priority: string | null;
  assigned_to: unknown;
  in_open: boolean;
  in_self: boolean;
  in_unassigned: boolean;
  in_resolved: boolean;
  valid_from: string;
  valid_to: string | null;
  changed_after: string | null;
}

export function historyOf(tx: Tx, ticketId: string): Promise<HistoryRow[]> {
  return queryRows<HistoryRow>(tx, sql`select * from ticket_history where ticket_id = ${ticketId} order by valid_from, id`);
}
